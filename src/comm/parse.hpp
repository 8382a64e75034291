// Strict number parsing for keel::comm's inputs (internal): environment variables and the
// values ranks publish in the rendezvous store.
//
// Both parsers read the whole text with std::from_chars: no leading blanks, sign or "0x"
// the format does not allow, no trailing characters, no silent wrap-around or saturation
// (what std::stoi, std::atoi and strtol let through: atoi("5ms") is 5, atoi("x") is 0,
// stoi("99999999999") throws std::out_of_range). A bad value is one line that names where
// it came from. Pure functions, thread-safe.
#pragma once

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>

#include "keel/core/error.hpp"

namespace keel::comm::detail {

// Environment variable `name` holding `text`: a decimal integer in [lo, hi]. Throws
// keel::invalid_argument "NAME='text' is not an integer in [lo, hi]".
inline long env_integer(std::string_view name, std::string_view text, long lo, long hi) {
  long value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < lo ||
      value > hi) {
    throw keel::invalid_argument(
        fmt::format("{}='{}' is not an integer in [{}, {}]", name, text.substr(0, 64), lo, hi));
  }
  return value;
}

// A value rank `rank` published in the store (an integer in `base`, or a finite floating-point
// number); `what` names it. Throws keel::backend_error "bootstrap: rank R published a bad
// WHAT in the store: 'text'" (another rank's bytes are not the caller's argument).
template <class T>
T parse_published(std::string_view text, const char* what, int rank, int base = 10) {
  T value{};
  std::from_chars_result r{};
  if constexpr (std::is_floating_point_v<T>) {
    r = std::from_chars(text.data(), text.data() + text.size(), value);
    if (r.ec == std::errc() && !std::isfinite(value)) r.ec = std::errc::result_out_of_range;
  } else {
    r = std::from_chars(text.data(), text.data() + text.size(), value, base);
  }
  if (text.empty() || r.ec != std::errc() || r.ptr != text.data() + text.size()) {
    throw keel::backend_error(
        fmt::format("bootstrap: rank {} published a bad {} in the store: '{}'", rank, what,
                    text.substr(0, 64)));
  }
  return value;
}

}  // namespace keel::comm::detail
