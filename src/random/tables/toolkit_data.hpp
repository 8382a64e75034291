// Internal: how keel finds the NVIDIA data it reads at run time instead of shipping it
// (MTGP32's parameter sets, the double erfcinv's coefficients). The source is the file named
// by an environment variable, in keel's own text format, or else a header of the CUDA
// toolkit's include directory ($KEEL_CUDA_INCLUDE_DIR, else the one CMake found when keel was
// configured), parsed as text: nothing of it is compiled in. A lookup never throws: a missing
// or unusable source gives null tables and a one-line description of why.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <istream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "keel/core/error.hpp"
#include "keel/core/input_file.hpp"

namespace keel::random::detail {

inline std::string slurp(std::istream& in) {
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// One line of keel's text format: its whitespace-separated fields, where each starts (its
// 1-based column) and the line's 1-based number.
struct data_line {
  std::vector<std::string> fields;
  std::vector<std::size_t> columns;
  std::size_t number = 0;
};

// Calls on_line(const data_line&) for every line of `in` that is neither blank nor a '#'
// comment; returns the number of lines read (for messages about what is missing at the end).
template <class OnLine>
std::size_t for_each_data_line(std::istream& in, OnLine on_line) {
  constexpr std::string_view space = " \t\r\v\f";
  data_line l;
  for (std::string text; std::getline(in, text);) {
    ++l.number;
    l.fields.clear();
    l.columns.clear();
    for (std::size_t at = text.find_first_not_of(space); at != std::string::npos;) {
      const std::size_t end = std::min(text.find_first_of(space, at), text.size());
      l.fields.push_back(text.substr(at, end - at));
      l.columns.push_back(at + 1);
      at = text.find_first_not_of(space, end);
    }
    if (!l.fields.empty() && l.fields[0][0] != '#') on_line(std::as_const(l));
  }
  return l.number;
}

// Lookup is {std::shared_ptr<const T> tables; std::string description;}; read(in, path,
// keel_format) returns a T or throws keel::error. `what` names the data in messages, `hint`
// says what to set, `suffix` is appended to every failure (e.g. what happens without it).
template <class Lookup, class Read>
Lookup find_toolkit_data(const char* env_file, const char* header_name, std::string_view what,
                         std::string_view hint, std::string_view suffix, Read read) {
  using tables = std::remove_const_t<typename decltype(Lookup::tables)::element_type>;
  Lookup r;
  const auto fail = [&](const std::string& why) {
    r.tables.reset();
    r.description = fmt::format("{} {}{}", what, why, suffix);
    return r;
  };
  try {
    std::string path;
    const char* file = std::getenv(env_file);
    const bool keel_format = file && *file;
    if (keel_format) {
      path = file;
    } else {
      std::string dir;
      if (const char* env = std::getenv("KEEL_CUDA_INCLUDE_DIR"); env && *env) dir = env;
#ifdef KEEL_CUDA_INCLUDE_DIR
      else
        dir = KEEL_CUDA_INCLUDE_DIR;
#endif
      if (dir.empty()) return fail(fmt::format("not found: {}", hint));
      path = dir + "/" + header_name;
      std::error_code ec;
      if (!std::filesystem::exists(path, ec)) {
        return fail(fmt::format("not found: no {} ({})", path, hint));
      }
    }
    // keel::read_input_file: a regular file within KEEL_MAX_INPUT_BYTES (KEEL_MTGP32_PARAMS
    // =/dev/zero or a FIFO is refused before a byte is read).
    std::istringstream in(read_input_file(path));
    r.tables = std::make_shared<const tables>(read(in, path, keel_format));
    r.description = path;
  } catch (const keel::error& e) {
    return fail(fmt::format("unusable: {}", e.what()));
  }
  return r;
}

}  // namespace keel::random::detail
