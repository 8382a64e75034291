// keel::enum_names — the one table that names an enum's values, both ways.
//
// A module lists each value with its name once, in a static array; the first entry for a value
// is its name, later entries for the same value are accepted aliases (e.g. "warning" for warn).
// name() is noexcept and returns `fallback` for a value outside the table; parse() matches
// exactly (or ignoring ASCII case when the table says so) and throws keel::invalid_argument
// "unknown <what> '<text>': expected a, b or c" naming the canonical names only. Tables are
// constexpr data: thread-safe, no allocation until an error message is built.
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "keel/core/error.hpp"

namespace keel {

template <class E>
struct enum_entry {
  E value;
  std::string_view name;
};

enum class name_case { exact, ignore };

template <class E>
class enum_names {
 public:
  template <std::size_t N>
  constexpr enum_names(std::string_view what, const enum_entry<E> (&entries)[N],
                       name_case match = name_case::exact, std::string_view fallback = "unknown")
      : what_(what), entries_(entries), match_(match), fallback_(fallback) {}

  constexpr std::string_view name(E value) const noexcept {
    for (const enum_entry<E>& e : entries_)
      if (e.value == value) return e.name;
    return fallback_;
  }

  constexpr std::optional<E> find(std::string_view text) const noexcept {
    for (const enum_entry<E>& e : entries_)
      if (same(e.name, text)) return e.value;
    return std::nullopt;
  }

  E parse(std::string_view text) const {
    if (const std::optional<E> v = find(text)) return *v;
    throw invalid_argument(fmt::format("unknown {} '{}': expected {}", what_, text, expected()));
  }

  // The canonical names, "a, b or c".
  std::string expected() const {
    std::string out;
    std::size_t listed = 0, total = 0;
    for (std::size_t i = 0; i < entries_.size(); ++i) total += canonical(i);
    for (std::size_t i = 0; i < entries_.size(); ++i) {
      if (!canonical(i)) continue;
      if (listed++ > 0) out += listed == total ? " or " : ", ";
      out += entries_[i].name;
    }
    return out;
  }

  constexpr std::span<const enum_entry<E>> entries() const noexcept { return entries_; }

 private:
  constexpr bool canonical(std::size_t i) const noexcept {
    for (std::size_t j = 0; j < i; ++j)
      if (entries_[j].value == entries_[i].value) return false;
    return true;
  }
  constexpr bool same(std::string_view a, std::string_view b) const noexcept {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
      char x = a[i], y = b[i];
      if (match_ == name_case::ignore) {
        if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
        if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
      }
      if (x != y) return false;
    }
    return true;
  }

  std::string_view what_;
  std::span<const enum_entry<E>> entries_;
  name_case match_;
  std::string_view fallback_;
};

}  // namespace keel
