#include "keel/core/json_reader.hpp"

#include <fmt/format.h>
#include <locale.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <system_error>

#include "keel/core/error.hpp"

namespace keel {
namespace {

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

// strtod in the "C" locale (whatever the program's locale), for the numbers from_chars leaves
// out of range: it tells overflow (infinite, refused) from underflow (the nearest double).
double strtod_c(const char* first, const char* last) {
  static const locale_t c_locale = newlocale(LC_ALL_MASK, "C", locale_t{});
  const std::string copy(first, last);
  return strtod_l(copy.c_str(), nullptr, c_locale);
}

bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

}  // namespace

json_reader::json_reader(std::string_view text, std::string_view source,
                         const json_reader_options& options)
    : begin_(text.data()),
      p_(text.data()),
      end_(text.data() + text.size()),
      source_(source),
      options_(options) {}

void json_reader::reset(std::string_view text, std::size_t first_line) {
  begin_ = p_ = text.data();
  end_ = text.data() + text.size();
  options_.first_line = first_line;
  state_ = state::value;
  stack_.clear();
  token_ = 0;
  string_ = {};
}

void json_reader::fail(std::size_t offset, const std::string& message) const {
  std::size_t line = options_.first_line, column = 1;
  for (const char* q = begin_; q < end_ && at(q) < offset; ++q) {
    if (*q == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  throw parse_error(std::string(source_), line, column, message);
}

double json_reader::as_double() const noexcept {
  switch (number_) {
    case json_number::unsigned_integer: return static_cast<double>(unsigned_);
    case json_number::signed_integer: return static_cast<double>(as_signed());
    case json_number::floating: break;
  }
  return double_;
}

json_event json_reader::next() {
  skip_ws();
  switch (state_) {
    case state::value: return value();
    case state::first_key:
      if (p_ < end_ && *p_ == '}') return close('}');
      return key();
    case state::first_item:
      if (p_ < end_ && *p_ == ']') return close(']');
      return value();
    case state::after_value: {
      if (stack_.empty()) {
        token_ = at(p_);
        if (p_ != end_) fail(token_, "trailing characters after the JSON document");
        state_ = state::done;
        return json_event::end;
      }
      const bool object = stack_.back();
      if (p_ < end_ && *p_ == ',') {
        ++p_;
        skip_ws();
        return object ? key() : value();
      }
      if (p_ < end_ && *p_ == (object ? '}' : ']')) return close(*p_);
      fail(at(p_), object ? "expected '}' or ','" : "expected ']' or ','");
    }
    case state::done: break;
  }
  token_ = at(p_);
  return json_event::end;
}

void json_reader::skip() {
  if (state_ != state::first_key && state_ != state::first_item) return;
  const std::size_t outer = stack_.size() - 1;
  while (stack_.size() > outer) next();
}

json_event json_reader::value() {
  token_ = at(p_);
  if (p_ == end_) fail(token_, "expected a value");
  const char c = *p_;
  if (c == '{' || c == '[') {
    if (stack_.size() >= options_.max_depth)
      fail(token_, fmt::format("nesting deeper than {} levels (limit)", options_.max_depth));
    const bool object = c == '{';
    stack_.push_back(object);
    ++p_;
    state_ = object ? state::first_key : state::first_item;
    return object ? json_event::begin_object : json_event::begin_array;
  }
  state_ = state::after_value;
  if (c == '"') {
    read_string();
    return json_event::string;
  }
  if (c == '-' || is_digit(c)) {
    read_number();
    return json_event::number;
  }
  const auto literal = [&](std::string_view word) {
    if (static_cast<std::size_t>(end_ - p_) < word.size() ||
        std::string_view(p_, word.size()) != word)
      return false;
    p_ += word.size();
    return true;
  };
  if (c == 't' && literal("true")) {
    bool_ = true;
    return json_event::boolean;
  }
  if (c == 'f' && literal("false")) {
    bool_ = false;
    return json_event::boolean;
  }
  if (c == 'n' && literal("null")) return json_event::null;
  fail(token_, "expected a value");
}

json_event json_reader::key() {
  token_ = at(p_);
  if (p_ == end_ || *p_ != '"')
    fail(token_,
         state_ == state::first_key ? "expected a string key or '}'" : "expected a string key");
  read_string();
  skip_ws();
  if (p_ == end_ || *p_ != ':') fail(at(p_), "expected ':'");
  ++p_;
  state_ = state::value;
  return json_event::key;
}

json_event json_reader::close(char c) {
  token_ = at(p_);
  ++p_;
  stack_.pop_back();
  state_ = state::after_value;
  return c == '}' ? json_event::end_object : json_event::end_array;
}

void json_reader::read_string() {
  const char* start = p_++;
  const char* run = p_;  // the text since the last escape
  bool escaped = false;
  for (;;) {
    while (p_ < end_) {
      const auto c = static_cast<unsigned char>(*p_);
      if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) break;
      ++p_;
    }
    if (p_ == end_) fail(at(start), "unterminated string");
    const auto c = static_cast<unsigned char>(*p_);
    if (c == '"') break;
    if (c < 0x20) fail(at(p_), "control character in string");
    if (c >= 0x80) {
      read_utf8();
      continue;
    }
    if (!escaped) scratch_.clear();
    escaped = true;
    scratch_.append(run, p_);
    if (++p_ == end_) fail(at(start), "unterminated string");
    const char e = *p_++;
    switch (e) {
      case '"':
      case '\\':
      case '/': scratch_ += e; break;
      case 'b': scratch_ += '\b'; break;
      case 'f': scratch_ += '\f'; break;
      case 'n': scratch_ += '\n'; break;
      case 'r': scratch_ += '\r'; break;
      case 't': scratch_ += '\t'; break;
      case 'u': {
        const bool keep = options_.surrogates == json_surrogates::keep;
        std::uint32_t cp = hex4();
        if (cp >= 0xd800 && cp <= 0xdbff) {
          if (end_ - p_ >= 2 && p_[0] == '\\' && p_[1] == 'u') {
            const char* second = p_;
            p_ += 2;
            const std::uint32_t low = hex4();
            if (low >= 0xdc00 && low <= 0xdfff) {
              cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
            } else if (keep) {
              p_ = second;  // the next escape stands on its own
            } else {
              fail(at(p_), "unpaired surrogate in string");
            }
          } else if (!keep) {
            fail(at(p_), "unpaired surrogate in string");
          }
        } else if (cp >= 0xdc00 && cp <= 0xdfff && !keep) {
          fail(at(p_), "unpaired surrogate in string");
        }
        append_utf8(scratch_, cp);
        break;
      }
      default: fail(at(p_ - 1), "bad escape in string");
    }
    run = p_;
  }
  if (escaped) {
    scratch_.append(run, p_);
    string_ = scratch_;
  } else {
    string_ = std::string_view(start + 1, static_cast<std::size_t>(p_ - start - 1));
  }
  ++p_;  // the closing quote
}

// Four hex digits of a \u escape.
std::uint32_t json_reader::hex4() {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i, ++p_) {
    if (p_ == end_) fail(at(p_), "bad \\u escape in string");
    const char c = *p_;
    v <<= 4;
    if (c >= '0' && c <= '9') {
      v |= static_cast<std::uint32_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      v |= static_cast<std::uint32_t>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      v |= static_cast<std::uint32_t>(c - 'A' + 10);
    } else {
      fail(at(p_), "bad \\u escape in string");
    }
  }
  return v;
}

// One well-formed UTF-8 sequence of two to four bytes (RFC 3629: no overlong forms, nothing
// above U+10FFFF, no surrogates unless json_surrogates::keep).
void json_reader::read_utf8() {
  const auto b0 = static_cast<unsigned char>(*p_);
  int more = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // the range of the second byte
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    more = 1;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    more = 2;
    if (b0 == 0xe0) lo = 0xa0;
    if (b0 == 0xed && options_.surrogates == json_surrogates::refuse) hi = 0x9f;
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    more = 3;
    if (b0 == 0xf0) lo = 0x90;
    if (b0 == 0xf4) hi = 0x8f;
  } else {
    fail(at(p_), "invalid UTF-8 in string");
  }
  ++p_;
  for (int i = 0; i < more; ++i, ++p_) {
    if (p_ == end_) fail(at(p_), "invalid UTF-8 in string");
    const auto b = static_cast<unsigned char>(*p_);
    if (b < (i == 0 ? lo : 0x80) || b > (i == 0 ? hi : 0xbf))
      fail(at(p_), "invalid UTF-8 in string");
  }
}

void json_reader::read_number() {
  const char* start = p_;
  const bool minus = *p_ == '-';
  if (minus) ++p_;
  const char* digits = p_;
  while (p_ < end_ && is_digit(*p_)) ++p_;
  if (p_ == digits) fail(at(p_), "expected a digit after '-'");
  if (*digits == '0' && p_ - digits > 1) fail(at(start), "leading zero in number");
  bool integral = true;
  if (p_ < end_ && *p_ == '.') {
    integral = false;
    const char* f = ++p_;
    while (p_ < end_ && is_digit(*p_)) ++p_;
    if (p_ == f) fail(at(p_), "expected digits after '.'");
  }
  if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
    integral = false;
    ++p_;
    if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
    const char* x = p_;
    while (p_ < end_ && is_digit(*p_)) ++p_;
    if (p_ == x) fail(at(p_), "expected digits in exponent");
  }
  if (integral) {
    std::uint64_t v = 0;
    if (std::from_chars(digits, p_, v).ec == std::errc()) {
      if (!minus || v == 0) {
        number_ = json_number::unsigned_integer;
        unsigned_ = v;
        return;
      }
      if (v <= std::uint64_t{1} << 63) {
        number_ = json_number::signed_integer;
        unsigned_ = ~v + 1;  // two's complement of -v
        return;
      }
    }
  }
  number_ = json_number::floating;
  if (std::from_chars(start, p_, double_).ec != std::errc()) {
    double_ = strtod_c(start, p_);
    if (!std::isfinite(double_)) fail(at(start), "number out of range");
  }
}

}  // namespace keel
