#include "keel/core/error.hpp"

#include <fmt/format.h>

namespace keel {

parse_error::parse_error(const std::string& source, std::size_t line, std::size_t column,
                         const std::string& message)
    : parse_error(fmt::format("{}:{}:{}: {}", source, line, column, message), source, line, column,
                  0, message) {}

parse_error parse_error::in_text(const std::string& source, std::string_view text,
                                 std::size_t offset, const std::string& message) {
  std::size_t line = 1, column = 1;
  for (std::size_t k = 0; k < offset && k < text.size(); ++k) {
    if (text[k] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return parse_error(source, line, column, message);
}

parse_error parse_error::at_offset(const std::string& source, std::uint64_t offset,
                                   const std::string& message) {
  return parse_error(fmt::format("{}: byte {}: {}", source, offset, message), source, 0, 0, offset,
                     message);
}

parse_error parse_error::in_object(const std::string& source, const std::string& message) {
  return parse_error(fmt::format("{}: {}", source, message), source, 0, 0, 0, message);
}

parse_error::parse_error(const std::string& what, const std::string& source, std::size_t line,
                         std::size_t column, std::uint64_t offset, const std::string& message)
    : error_of(what),
      source_(source),
      line_(line),
      column_(column),
      offset_(offset),
      message_(message) {}

}  // namespace keel
