// What call-site attribution (callsites.cpp) knows about one frame: a Python frame's path
// classified (site-packages, the standard library, a special file such as "<string>") with its
// display path and module, a native frame's short function name, and the frames
// torch.cuda._memory_viz hides. Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "keel/memory/callsites.hpp"

namespace keel::memory::callsite_detail {

std::string lower(std::string_view s);
bool contains(std::string_view s, std::string_view part);
std::string join(const std::vector<std::string>& parts, std::size_t from = 0);
std::string_view stem(std::string_view file);

enum class path_kind { package, stdlib, other, special };

struct path_info {
  path_kind kind = path_kind::other;
  std::vector<std::string> rel;  // the display path's components
  std::string module;
  bool internal = false;
};

path_info classify_path(std::string_view filename);
bool is_python_frame(const frame& f);
// A native function name without its argument list and return type:
// "void at::foo<int>(at::Tensor const&) const" -> "at::foo<int>".
std::string short_native_name(std::string_view name);
std::string native_module(std::string_view function);
std::string native_file(std::string_view filename);
// memory_viz's _frame_filter: frames it hides.
bool memory_viz_hides(const frame& f);

// What the rules need to know about one frame.
struct frame_facts {
  bool python = false;
  path_info path;         // Python frames only
  std::string rel;        // path.rel joined (Python frames)
  std::string native;     // short name (native frames)
  std::string_view name;  // the recorded function name
};

std::vector<frame_facts> facts_of(const frame_stack& frames);

}  // namespace keel::memory::callsite_detail
