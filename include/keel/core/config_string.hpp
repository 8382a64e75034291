// config_string — the `key:value,key:value` syntax of PYTORCH_CUDA_ALLOC_CONF.
//
// Grammar (spaces around tokens are ignored):
//   config := "" | item ("," item)*
//   item   := key ":" value
//   value  := word | "[" [elem ("," elem)*] "]"
//   elem   := word [":" word]            e.g. [256:1,512:2,>:8] or [1,2,4]
// A word is any run of characters other than , : [ ] and space. Keys are matched exactly
// against the list given to parse(); an unknown or repeated key, a missing value or an
// unbalanced bracket throws keel::invalid_argument naming the key (or the column) and, for
// unknown keys, listing the valid ones. The typed accessors below throw invalid_argument
// naming the key, the value and what is allowed. Parsed objects are immutable values.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace keel {

struct config_elem {
  std::string key;
  std::optional<std::string> value;  // absent for a bare list element
};

struct config_item {
  std::string key;
  std::string value;  // the word, when !is_list
  bool is_list = false;
  std::vector<config_elem> list;  // the elements, when is_list
  std::size_t column = 0;         // 1-based column of the key in the source text
};

class config_string {
 public:
  // Parses `text`. `origin` names the source in error messages (e.g. "KEEL_ALLOC_CONF").
  static config_string parse(std::string_view text, std::span<const std::string_view> valid_keys,
                             std::string_view origin = "config");

  const std::vector<config_item>& items() const noexcept { return items_; }
  const config_item* find(std::string_view key) const noexcept;
  const std::string& origin() const noexcept { return origin_; }

 private:
  std::vector<config_item> items_;
  std::string origin_;
};

// True/False in any case, 1/0, yes/no, on/off.
bool config_bool(const config_item& item, std::string_view origin = "config");
// A finite number in [lo, hi] (or the open interval where the flags say so).
double config_double(const config_item& item, double lo, double hi, bool lo_open, bool hi_open,
                     std::string_view origin = "config");
// A non-negative integer in [lo, hi].
std::uint64_t config_uint(const config_item& item, std::uint64_t lo, std::uint64_t hi,
                          std::string_view origin = "config");
// A scalar, rejecting a list value.
const std::string& config_word(const config_item& item, std::string_view origin = "config");

}  // namespace keel
