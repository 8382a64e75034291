// What call-site attribution knows about one frame (frame_facts.hpp).
#include "frame_facts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <utility>

namespace keel::memory::callsite_detail {
namespace {

// Path components with '\' read as '/', a drive letter dropped, "." skipped and ".." applied.
std::vector<std::string> components(std::string_view path) {
  std::string p(path);
  std::replace(p.begin(), p.end(), '\\', '/');
  if (p.size() >= 2 && p[1] == ':' && std::isalpha(static_cast<unsigned char>(p[0]))) p.erase(0, 2);
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= p.size()) {
    std::size_t end = p.find('/', start);
    if (end == std::string::npos) end = p.size();
    const std::string_view part(p.data() + start, end - start);
    if (part == "..") {
      if (!out.empty()) out.pop_back();
    } else if (!part.empty() && part != ".") {
      out.emplace_back(part);
    }
    start = end + 1;
  }
  return out;
}

// "python3", "python3.11": a lib/pythonX.Y directory of a Python install.
bool is_python_version_dir(std::string_view s) {
  if (!s.starts_with("python") || s.size() == 6) return false;
  for (char c : s.substr(6)) {
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.') return false;
  }
  return true;
}

bool is_internal_package(std::string_view top) {
  static constexpr std::string_view k_internal[] = {
      "torch",     "functorch",          "triton",  "einops",    "accelerate", "IPython",
      "ipykernel", "ipykernel_launcher", "tornado", "traitlets", "ray",        "zmq"};
  return std::find(std::begin(k_internal), std::end(k_internal), top) != std::end(k_internal);
}

}  // namespace

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

std::string join(const std::vector<std::string>& parts, std::size_t from) {
  std::string out;
  for (std::size_t i = from; i < parts.size(); ++i) {
    if (!out.empty()) out += '/';
    out += parts[i];
  }
  return out;
}

std::string_view stem(std::string_view file) {
  if (file.ends_with(".py")) file.remove_suffix(3);
  return file;
}

path_info classify_path(std::string_view filename) {
  path_info info;
  if (filename.starts_with('<')) {
    // "<frozen runpy>" is the standard library; "<string>", "<eval_with_key>.3" stay as they are.
    if (filename.starts_with("<frozen ") && filename.ends_with('>')) {
      info.kind = path_kind::stdlib;
      std::string name(filename.substr(8, filename.size() - 9));
      info.module = "stdlib:" + name.substr(0, name.find('.'));
      info.rel = {std::string(filename)};
      info.internal = true;
    } else {
      info.kind = path_kind::special;
      info.module = std::string(filename);
      info.rel = {std::string(filename)};
    }
    return info;
  }
  const std::vector<std::string> comps = components(filename);
  if (comps.empty()) {
    info.module = "??";
    info.rel = {"??"};
    return info;
  }
  // site-packages / dist-packages: the path inside it.
  for (std::size_t i = comps.size(); i-- > 0;) {
    const std::string c = lower(comps[i]);
    if ((c == "site-packages" || c == "dist-packages") && i + 1 < comps.size()) {
      std::size_t from = i + 1;
      while (from + 1 < comps.size() && comps[from].ends_with(".egg")) ++from;
      info.kind = path_kind::package;
      info.rel.assign(comps.begin() + static_cast<std::ptrdiff_t>(from), comps.end());
      break;
    }
  }
  if (info.kind != path_kind::package) {
    // The standard library: lib/pythonX.Y/... (POSIX), or .../Python3xx/Lib/... and
    // .../cpython-3.x-.../lib/... (Windows installs).
    for (std::size_t j = 0; j + 1 < comps.size(); ++j) {
      const std::string c = lower(comps[j]);
      if (c != "lib" && c != "lib64") continue;
      std::size_t from = 0;
      if (j + 2 < comps.size() && is_python_version_dir(comps[j + 1])) {
        from = j + 2;
      } else if (j > 0 && (lower(comps[j - 1]).starts_with("python") ||
                           lower(comps[j - 1]).starts_with("cpython"))) {
        from = j + 1;
      }
      if (from != 0) {
        info.kind = path_kind::stdlib;
        info.rel.assign(comps.begin() + static_cast<std::ptrdiff_t>(from), comps.end());
        break;
      }
    }
  }
  const auto models_dir = [](const std::vector<std::string>& parts, std::size_t first) {
    for (std::size_t i = parts.size() - 1; i-- > first;) {
      if (parts[i] == "models") return i;
    }
    return std::string::npos;
  };
  switch (info.kind) {
    case path_kind::package: {
      const std::string top(stem(info.rel[0]));
      const bool model_file = models_dir(info.rel, 1) != std::string::npos;
      info.module = model_file ? join(info.rel) : top;
      // Model zoos: the models/ directory is model code, the rest (modeling_utils,
      // integrations, cache_utils, pipelines, generic wrappers) is their plumbing.
      info.internal = is_internal_package(top) ||
                      (!model_file && (top == "transformers" || top == "diffusers"));
      break;
    }
    case path_kind::stdlib:
      info.module = "stdlib:" + std::string(stem(info.rel[0]));
      info.internal = true;
      break;
    default: {
      const auto torch_dir = std::find(comps.begin(), comps.end() - 1, "torch");
      if (torch_dir != comps.end() - 1) {
        info.rel.assign(torch_dir, comps.end());
        info.module = "torch";
        info.internal = true;
        break;
      }
      const std::size_t m = models_dir(comps, 1);
      const std::size_t from =
          m != std::string::npos ? m - 1 : (comps.size() >= 2 ? comps.size() - 2 : 0);
      info.rel.assign(comps.begin() + static_cast<std::ptrdiff_t>(from), comps.end());
      info.module = join(info.rel);
      break;
    }
  }
  return info;
}

bool is_python_frame(const frame& f) {
  return f.filename.ends_with(".py") || f.filename.starts_with('<');
}

// A native function name without its argument list and return type:
// "void at::foo<int>(at::Tensor const&) const" -> "at::foo<int>".
std::string short_native_name(std::string_view name) {
  std::string_view s = name;
  if (s.ends_with(" const")) s.remove_suffix(6);
  if (s.ends_with(')')) {
    int depth = 0;
    for (std::size_t i = s.size(); i-- > 0;) {
      if (s[i] == ')') ++depth;
      if (s[i] == '(' && --depth == 0) {
        s = s.substr(0, i);
        break;
      }
    }
  }
  int depth = 0;
  std::size_t last_space = std::string_view::npos;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '<' || c == '(') ++depth;
    if ((c == '>' || c == ')') && depth > 0) --depth;
    if (c == ' ' && depth == 0) last_space = i;
  }
  if (last_space != std::string_view::npos) s = s.substr(last_space + 1);
  // Template arguments dropped: "at::detail::_empty_generic<long>" -> "at::detail::_empty_generic".
  std::string out;
  depth = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool op = s.substr(0, i).ends_with("operator");
    if (c == '<' && !op) {
      ++depth;
    } else if (c == '>' && depth > 0) {
      --depth;
    } else if (depth == 0) {
      out += c;
    }
  }
  return out.empty() ? std::string(s) : out;
}

std::string native_module(std::string_view function) {
  const std::string name = short_native_name(function);
  const std::size_t colons = name.find("::");
  if (colons == std::string::npos || colons == 0) return "native";
  const std::string ns = name.substr(0, colons);
  if (ns == "at" || ns == "c10" || ns == "torch" || ns == "caffe2") return "native:torch";
  if (ns.find_first_of("() <>") != std::string::npos) return "native";
  return "native:" + ns;
}

std::string native_file(std::string_view filename) {
  const std::vector<std::string> comps = components(filename);
  return comps.empty() ? "??" : comps.back();
}

// memory_viz's _frame_filter: frames it hides.
bool memory_viz_hides(const frame& f) {
  static constexpr std::string_view k_functions[] = {
      "unwind::unwind",    "CapturedTraceback::gather",
      "gather_with_cpp",   "_start",
      "__libc_start_main", "PyEval_",
      "PyObject_",         "PyFunction_"};
  static constexpr std::string_view k_files[] = {"core/boxing",
                                                 "/Register",
                                                 "/Redispatch",
                                                 "pythonrun.c",
                                                 "Modules/main.c",
                                                 "Objects/call.c",
                                                 "Objects/methodobject.c",
                                                 "pycore_ceval.h",
                                                 "ceval.c",
                                                 "cpython/abstract.h"};
  for (std::string_view part : k_functions) {
    if (contains(f.name, part)) return true;
  }
  for (std::string_view part : k_files) {
    if (contains(f.filename, part)) return true;
  }
  return false;
}

std::vector<frame_facts> facts_of(const frame_stack& frames) {
  std::vector<frame_facts> out;
  out.reserve(frames.size());
  for (const frame& f : frames) {
    frame_facts x;
    x.python = is_python_frame(f);
    x.name = f.name;
    if (x.python) {
      x.path = classify_path(f.filename);
      x.rel = join(x.path.rel);
    } else {
      x.native = short_native_name(f.name);
    }
    out.push_back(std::move(x));
  }
  return out;
}

}  // namespace keel::memory::callsite_detail
