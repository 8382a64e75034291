#include "keel/core/config_string.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "keel/core/error.hpp"

namespace keel {
namespace {

struct lexer {
  std::string_view text;
  std::string_view origin;
  std::size_t pos = 0;

  void skip_space() {
    while (pos < text.size() && std::isspace(static_cast<unsigned char>(text[pos]))) ++pos;
  }
  bool at_end() {
    skip_space();
    return pos >= text.size();
  }
  char peek() {
    skip_space();
    return pos < text.size() ? text[pos] : '\0';
  }
  static bool is_punct(char c) { return c == ',' || c == ':' || c == '[' || c == ']'; }
  std::string word() {
    skip_space();
    const std::size_t start = pos;
    while (pos < text.size() && !is_punct(text[pos]) &&
           !std::isspace(static_cast<unsigned char>(text[pos]))) {
      ++pos;
    }
    return std::string(text.substr(start, pos - start));
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw invalid_argument(fmt::format("{}: {} at column {} of '{}'", origin, what, pos + 1, text));
  }
  void expect(char c, const std::string& context) {
    if (peek() != c) {
      fail(pos < text.size() ? fmt::format("expected '{}' {}, found '{}'", c, context, text[pos])
                             : fmt::format("expected '{}' {}, found the end", c, context));
    }
    ++pos;
  }
};

std::string describe(const config_item& item) {
  if (!item.is_list) return item.value;
  std::string out = "[";
  for (std::size_t i = 0; i < item.list.size(); ++i) {
    if (i) out += ',';
    out += item.list[i].key;
    if (item.list[i].value) out += ':' + *item.list[i].value;
  }
  return out + ']';
}

[[noreturn]] void bad_value(const config_item& item, std::string_view origin,
                            std::string_view allowed) {
  throw invalid_argument(fmt::format("{}: invalid value '{}' for {}: expected {}", origin,
                                     describe(item), item.key, allowed));
}

}  // namespace

config_string config_string::parse(std::string_view text,
                                   std::span<const std::string_view> valid_keys,
                                   std::string_view origin) {
  config_string out;
  out.origin_ = std::string(origin);
  lexer lex{text, origin};
  if (lex.at_end()) return out;
  while (true) {
    lex.skip_space();
    config_item item;
    item.column = lex.pos + 1;
    item.key = lex.word();
    if (item.key.empty()) lex.fail("expected a key");
    bool known = false;
    for (std::string_view k : valid_keys) known = known || k == item.key;
    if (!known) {
      throw invalid_argument(fmt::format("{}: unknown key '{}'; valid keys: {}", origin, item.key,
                                         fmt::join(valid_keys, ", ")));
    }
    if (out.find(item.key) != nullptr) {
      throw invalid_argument(fmt::format("{}: key '{}' given twice", origin, item.key));
    }
    lex.expect(':', fmt::format("after key '{}'", item.key));
    if (lex.peek() == '[') {
      ++lex.pos;
      item.is_list = true;
      if (lex.peek() != ']') {
        while (true) {
          config_elem elem;
          elem.key = lex.word();
          if (elem.key.empty()) lex.fail(fmt::format("expected a list element for '{}'", item.key));
          if (lex.peek() == ':') {
            ++lex.pos;
            elem.value = lex.word();
            if (elem.value->empty()) {
              lex.fail(fmt::format("expected a value after '{}:' in '{}'", elem.key, item.key));
            }
          }
          item.list.push_back(std::move(elem));
          if (lex.peek() != ',') break;
          ++lex.pos;
        }
      }
      lex.expect(']', fmt::format("to close the list of '{}'", item.key));
    } else {
      item.value = lex.word();
      if (item.value.empty()) lex.fail(fmt::format("expected a value for '{}'", item.key));
    }
    out.items_.push_back(std::move(item));
    if (lex.at_end()) break;
    lex.expect(',', "between items");
  }
  return out;
}

const config_item* config_string::find(std::string_view key) const noexcept {
  for (const config_item& item : items_) {
    if (item.key == key) return &item;
  }
  return nullptr;
}

const std::string& config_word(const config_item& item, std::string_view origin) {
  if (item.is_list) bad_value(item, origin, "a single value, not a list");
  return item.value;
}

bool config_bool(const config_item& item, std::string_view origin) {
  std::string v = config_word(item, origin);
  for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (v == "true" || v == "1" || v == "yes" || v == "on") return true;
  if (v == "false" || v == "0" || v == "no" || v == "off") return false;
  bad_value(item, origin, "True or False");
}

double config_double(const config_item& item, double lo, double hi, bool lo_open, bool hi_open,
                     std::string_view origin) {
  const std::string& v = config_word(item, origin);
  const std::string allowed =
      fmt::format("a number in {}{}, {}{}", lo_open ? '(' : '[', lo, hi, hi_open ? ')' : ']');
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || end != v.c_str() + v.size() || !std::isfinite(x))
    bad_value(item, origin, allowed);
  if (x < lo || x > hi || (lo_open && x == lo) || (hi_open && x == hi)) {
    bad_value(item, origin, allowed);
  }
  return x;
}

std::uint64_t config_uint(const config_item& item, std::uint64_t lo, std::uint64_t hi,
                          std::string_view origin) {
  const std::string& v = config_word(item, origin);
  std::uint64_t x = 0;
  const auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc() || ptr != v.data() + v.size() || x < lo || x > hi) {
    bad_value(item, origin, fmt::format("an integer in [{}, {}]", lo, hi));
  }
  return x;
}

}  // namespace keel
