// The JSON front end (RFC 8259) onto the same value tree as the pickle reader
// (keel/memory/pickle.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstring>
#include <limits>

#include "keel/core/error.hpp"
#include "keel/memory/pickle.hpp"
#include "pickle_tree.hpp"

namespace keel::memory::pickle {
namespace detail {

class json_reader {
 public:
  json_reader(document& doc, const limits& lim, std::string_view text)
      : doc_(doc), b_(doc, lim), lim_(lim), s_(text) {}

  std::uint32_t run() {
    skip_ws();
    const std::uint32_t root = parse_value();
    skip_ws();
    if (pos_ != s_.size()) fail("unexpected text after the JSON document");
    return root;
  }

  [[noreturn]] void fail_at(std::size_t offset, const std::string& message) {
    throw doc_.text_error(offset, message);
  }
  template <class... A>
  [[noreturn]] void fail(fmt::format_string<A...> f, A&&... args) {
    fail_at(pos_, fmt::format(f, std::forward<A>(args)...));
  }
  std::size_t pos() const { return pos_; }

 private:
  // Containers are built with an explicit stack of frames: no recursion on input depth.
  struct open_frame {
    std::uint32_t node;
    std::size_t items_begin;  // into items_
    bool is_object;
  };

  std::uint32_t parse_value() {
    std::vector<open_frame> open;
    for (;;) {
      skip_ws();
      if (pos_ >= s_.size()) fail("truncated: a value is expected");
      std::uint32_t v;
      const char c = s_[pos_];
      if (c == '{' || c == '[') {
        const bool obj = c == '{';
        if (open.size() + 1 > lim_.max_depth)
          fail("nesting deeper than {} levels (limit)", lim_.max_depth);
        open.push_back({b_.add(obj ? kind::dict : kind::list, pos_), items_.size(), obj});
        ++pos_;
        skip_ws();
        if (pos_ < s_.size() && s_[pos_] == (obj ? '}' : ']')) {
          ++pos_;
          v = close(open);
        } else {
          if (obj) object_key();
          continue;
        }
      } else {
        v = scalar();
      }
      // Deliver v to the enclosing container; close containers as they end.
      for (;;) {
        if (open.empty()) return v;
        items_.push_back(v);
        skip_ws();
        if (pos_ >= s_.size()) fail("truncated: ',' or a closing bracket is expected");
        const char d = s_[pos_];
        const bool obj = open.back().is_object;
        if (d == ',') {
          ++pos_;
          if (obj) object_key();
          break;
        }
        if (d == (obj ? '}' : ']')) {
          ++pos_;
          v = close(open);
          continue;
        }
        fail("expected ',' or '{}'", obj ? '}' : ']');
      }
    }
  }

  std::uint32_t close(std::vector<open_frame>& open) {
    const open_frame f = open.back();
    open.pop_back();
    b_.append(f.node, items_.data() + f.items_begin, items_.size() - f.items_begin);
    items_.resize(f.items_begin);
    return f.node;
  }

  void object_key() {
    skip_ws();
    if (pos_ >= s_.size() || s_[pos_] != '"') fail("expected a string key");
    items_.push_back(string_value());
    skip_ws();
    if (pos_ >= s_.size() || s_[pos_] != ':') fail("expected ':'");
    ++pos_;
  }

  std::uint32_t scalar() {
    const char c = s_[pos_];
    if (c == '"') return string_value();
    if (literal("null")) return b_.add(kind::none, pos_ - 4);
    if (literal("true")) return b_.add(kind::boolean, pos_ - 4, 1);
    if (literal("false")) return b_.add(kind::boolean, pos_ - 5, 0);
    if (c == '-' || (c >= '0' && c <= '9')) return number();
    fail("unexpected character '{}'", c);
  }

  bool literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  std::uint32_t number() {
    const std::size_t start = pos_;
    bool integral = true;
    if (s_[pos_] == '-') ++pos_;
    auto digits = [&] {
      const std::size_t d = pos_;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
      if (pos_ == d) fail("a digit is expected");
    };
    if (pos_ < s_.size() && s_[pos_] == '0') {
      ++pos_;
    } else {
      digits();
    }
    if (pos_ < s_.size() && s_[pos_] == '.') {
      integral = false;
      ++pos_;
      digits();
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      integral = false;
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      digits();
    }
    const char* first = s_.data() + start;
    const char* last = s_.data() + pos_;
    if (integral) {
      if (*first == '-') {
        std::int64_t v;
        if (auto r = std::from_chars(first, last, v); r.ec == std::errc() && r.ptr == last)
          return b_.add_int(static_cast<std::uint64_t>(v), false, start);
      } else {
        std::uint64_t v;
        if (auto r = std::from_chars(first, last, v); r.ec == std::errc() && r.ptr == last)
          return b_.add_int(v, (v >> 63) != 0, start);
      }
    }
    double d;
    const auto r = std::from_chars(first, last, d);
    if (r.ec != std::errc() || r.ptr != last) fail_at(start, "number out of range");
    return b_.add(kind::floating, start, std::bit_cast<std::uint64_t>(d));
  }

  std::uint32_t string_value() {
    const std::size_t start = pos_++;
    const std::size_t begin = doc_.data_.size();
    for (;;) {
      std::size_t run = pos_;
      while (run < s_.size() && s_[run] != '"' && s_[run] != '\\' &&
             static_cast<unsigned char>(s_[run]) >= 0x20)
        ++run;
      doc_.data_.append(s_.data() + pos_, run - pos_);
      pos_ = run;
      if (pos_ >= s_.size()) fail_at(start, "truncated: unterminated string");
      const char c = s_[pos_];
      if (c == '"') {
        ++pos_;
        break;
      }
      if (c != '\\') fail("control character in a string");
      if (++pos_ >= s_.size()) fail_at(start, "truncated: unterminated string");
      const char e = s_[pos_++];
      switch (e) {
        case '"': doc_.data_ += '"'; break;
        case '\\': doc_.data_ += '\\'; break;
        case '/': doc_.data_ += '/'; break;
        case 'b': doc_.data_ += '\b'; break;
        case 'f': doc_.data_ += '\f'; break;
        case 'n': doc_.data_ += '\n'; break;
        case 'r': doc_.data_ += '\r'; break;
        case 't': doc_.data_ += '\t'; break;
        case 'u': {
          std::uint32_t cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00 && s_.substr(pos_, 2) == "\\u") {
            const std::size_t save = pos_;
            pos_ += 2;
            const std::uint32_t lo = hex4();
            if (lo >= 0xDC00 && lo < 0xE000) {
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else {
              pos_ = save;
            }
          }
          put_utf8(cp);
          break;
        }
        default: fail_at(pos_ - 2, fmt::format("invalid escape '\\{}'", e));
      }
      if (doc_.data_.size() - begin > lim_.max_string_length)
        fail_at(start,
                fmt::format("a string longer than the limit of {} bytes", lim_.max_string_length));
    }
    if (!valid_utf8(reinterpret_cast<const unsigned char*>(doc_.data_.data()) + begin,
                    doc_.data_.size() - begin))
      fail_at(start, "string is not valid UTF-8");
    return b_.add_string(kind::string, start, begin, doc_.data_.size() - begin);
  }

  std::uint32_t hex4() {
    if (s_.size() - pos_ < 4) fail("truncated \\u escape");
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = s_[pos_++];
      v <<= 4;
      if (h >= '0' && h <= '9')
        v |= static_cast<std::uint32_t>(h - '0');
      else if (h >= 'a' && h <= 'f')
        v |= static_cast<std::uint32_t>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F')
        v |= static_cast<std::uint32_t>(h - 'A' + 10);
      else
        fail_at(pos_ - 1, "invalid hex digit in a \\u escape");
    }
    return v;
  }

  void put_utf8(std::uint32_t cp) {
    auto& o = doc_.data_;
    if (cp < 0x80) {
      o += static_cast<char>(cp);
    } else if (cp < 0x800) {
      o += static_cast<char>(0xC0 | (cp >> 6));
      o += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      o += static_cast<char>(0xE0 | (cp >> 12));
      o += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      o += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      o += static_cast<char>(0xF0 | (cp >> 18));
      o += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      o += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      o += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  void skip_ws() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == '\t'))
      ++pos_;
  }

  document& doc_;
  builder b_;
  const limits& lim_;
  std::string_view s_;
  std::size_t pos_ = 0;
  std::vector<std::uint32_t> items_;
};

}  // namespace detail

document parse_json(std::string_view text, std::string_view source, const limits& lim) {
  using namespace detail;
  document doc;
  doc.source_ = std::string(source);
  doc.text_ = true;
  doc.text_copy_.assign(text);
  json_reader reader(doc, lim, text);
  try {
    doc.root_ = reader.run();
  } catch (const builder::failure& f) {
    reader.fail_at(reader.pos(), f.message);
  }
  return doc;
}

}  // namespace keel::memory::pickle
