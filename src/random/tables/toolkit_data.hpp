// Internal: the one way keel finds the NVIDIA data it reads at run time instead of shipping
// it (MTGP32's parameter sets, the double erfcinv's coefficients, the scrambled Sobol'
// tables). A table has two sources, tried in order: the file named by an environment
// variable, in keel's own format (written by `keel rand export-tables`), else the toolkit
// itself — a header of the CUDA toolkit's include directory ($KEEL_CUDA_INCLUDE_DIR, else the
// one CMake found when keel was configured) parsed as text (toolkit_header), or libcurand's
// own tables (tables/curand_library.hpp). Nothing of it is compiled in. A lookup never
// throws: a missing or unusable source gives null tables and a one-line description of why.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <istream>
#include <iterator>
#include <memory>
#include <sstream>
#include <stdexcept>
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

// The toolkit's source of a table: from_toolkit(std::string& source) returns the tables (a T)
// and sets `source` to where they came from, throws toolkit_missing when the toolkit has no
// such source here (the message says what to set), or throws keel::error when it is unusable.
struct toolkit_missing : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The toolkit source that parses the header `header_name` of the CUDA include directory:
// parse(std::istream&, const std::string& path) returns a T or throws keel::error; `hint`
// says what to set when the header is not there.
template <class Parse>
auto toolkit_header(const char* header_name, std::string_view hint, Parse parse) {
  return [header_name, hint, parse](std::string& source) {
    std::string dir;
    if (const char* env = std::getenv("KEEL_CUDA_INCLUDE_DIR"); env && *env)
      dir = env;
#ifdef KEEL_CUDA_INCLUDE_DIR
    else
      dir = KEEL_CUDA_INCLUDE_DIR;
#endif
    if (dir.empty()) throw toolkit_missing(std::string(hint));
    source = dir + "/" + header_name;
    std::error_code ec;
    if (!std::filesystem::exists(source, ec))
      throw toolkit_missing(fmt::format("no {} ({})", source, hint));
    // keel::read_input_file: a regular file within KEEL_MAX_INPUT_BYTES.
    std::istringstream in(read_input_file(source));
    return parse(in, source);
  };
}

// Lookup is {std::shared_ptr<const T> tables; std::string description;}. read_file(path)
// reads keel's format from the file $env_file names (a T, or throws keel::error; a
// /dev/zero or FIFO is refused by keel::read_input_file before a byte is read). `what` names
// the data in messages; `suffix` is appended to every failure (e.g. what happens without it).
template <class Lookup, class ReadFile, class FromToolkit>
Lookup find_toolkit_data(const char* env_file, std::string_view what, std::string_view suffix,
                         ReadFile read_file, FromToolkit from_toolkit) {
  using tables = std::remove_const_t<typename decltype(Lookup::tables)::element_type>;
  Lookup r;
  const auto fail = [&](const std::string& why) {
    r.tables.reset();
    r.description = fmt::format("{} {}{}", what, why, suffix);
    return r;
  };
  const char* file = std::getenv(env_file);
  try {
    std::string source;
    if (file && *file) {
      source = file;
      r.tables = std::make_shared<const tables>(read_file(source));
    } else {
      r.tables = std::make_shared<const tables>(from_toolkit(source));
    }
    r.description = source;
  } catch (const toolkit_missing& e) {
    return fail(fmt::format("not found: {}", e.what()));
  } catch (const keel::error& e) {
    return fail(fmt::format("unusable: {}{}", file && *file ? fmt::format("{}: ", env_file) : "",
                            e.what()));
  }
  return r;
}

// read_file for keel's text formats: parse(std::istream&, const std::string& path).
template <class Parse>
auto text_file(Parse parse) {
  return [parse](const std::string& path) {
    std::istringstream in(read_input_file(path));
    return parse(in, path);
  };
}

}  // namespace keel::random::detail
