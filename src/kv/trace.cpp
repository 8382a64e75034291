// Trace loading. The lines are parsed by a small JSON reader written for this flat format
// (one object of numbers and integer arrays per line): Mooncake traces are ~1 MB of numbers,
// and building a DOM per line took longer than replaying the trace. It accepts any valid JSON
// object, skipping keys it does not know, and reports errors as file:line:column.
#include "keel/kv/trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <optional>
#include <unordered_map>

#include "keel/core/error.hpp"
#include "keel/core/input_file.hpp"
#include "keel/kv/block_hash.hpp"

namespace keel::kv {
namespace {

class line_reader {
 public:
  line_reader(std::string_view text, const std::string& source, std::size_t line)
      : begin_(text.data()),
        p_(text.data()),
        end_(text.data() + text.size()),
        source_(source),
        line_(line) {}

  [[noreturn]] void fail(const std::string& message) const {
    throw parse_error(source_, line_, static_cast<std::size_t>(p_ - begin_) + 1, message);
  }
  void ws() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\r' || *p_ == '\n')) ++p_;
  }
  bool peek(char c) {
    ws();
    return p_ < end_ && *p_ == c;
  }
  void expect(char c) {
    if (!peek(c)) fail(fmt::format("expected '{}'", c));
    ++p_;
  }
  bool at_end() {
    ws();
    return p_ == end_;
  }

  // A string: its text, with escapes decoded into `scratch` when it has any (so that a key
  // spelled "time\u0073tamp" is "timestamp", as JSON says). Refuses what JSON refuses: control
  // characters, unknown escapes, \u without four hex digits, unpaired surrogates, bytes that
  // are not UTF-8.
  std::string_view string(std::string& scratch) {
    expect('"');
    const char* start = p_;
    const char* run = p_;  // the start of the text since the last escape
    bool escaped = false;
    scratch.clear();
    while (p_ < end_ && *p_ != '"') {
      const auto c = static_cast<unsigned char>(*p_);
      if (c < 0x20) fail("control character in string");
      if (c >= 0x80) {
        utf8();
        continue;
      }
      if (c != '\\') {
        ++p_;
        continue;
      }
      scratch.append(run, p_);
      escaped = true;
      ++p_;
      if (p_ == end_) fail("bad escape in string");
      const char e = *p_++;
      switch (e) {
        case '"':
        case '\\':
        case '/': scratch += e; break;
        case 'b': scratch += '\b'; break;
        case 'f': scratch += '\f'; break;
        case 'n': scratch += '\n'; break;
        case 'r': scratch += '\r'; break;
        case 't': scratch += '\t'; break;
        case 'u': {
          std::uint32_t cp = hex4();
          if (cp >= 0xdc00 && cp <= 0xdfff) fail("unpaired surrogate in string");
          if (cp >= 0xd800 && cp <= 0xdbff) {
            if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u')
              fail("unpaired surrogate in string");
            p_ += 2;
            const std::uint32_t low = hex4();
            if (low < 0xdc00 || low > 0xdfff) fail("unpaired surrogate in string");
            cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
          }
          append_utf8(scratch, cp);
          break;
        }
        default: --p_; fail("bad escape in string");
      }
      run = p_;
    }
    if (p_ == end_) fail("unterminated string");
    const std::string_view raw(start, static_cast<std::size_t>(p_++ - start));
    if (!escaped) return raw;
    scratch.append(run, p_ - 1);
    return scratch;
  }

  // A JSON number's value. `as_uint` gets it when it is written as an integer (no fraction or
  // exponent) in [0, 2^64), "-0" included. A number beyond the range of a double is refused.
  double number(std::optional<std::uint64_t>& as_uint) {
    ws();
    const char* start = p_;
    const bool minus = p_ < end_ && *p_ == '-';
    if (minus) ++p_;
    const char* digits = p_;
    while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    if (p_ == digits) fail("expected a number");
    if (*digits == '0' && p_ - digits > 1) fail("leading zero in number");
    bool integral = true;
    if (p_ < end_ && *p_ == '.') {
      integral = false;
      const char* f = ++p_;
      while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
      if (p_ == f) fail("expected digits after '.'");
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
      integral = false;
      ++p_;
      if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      const char* x = p_;
      while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
      if (p_ == x) fail("expected digits in exponent");
    }
    as_uint.reset();
    if (integral) {
      std::uint64_t v = 0;
      const auto r = std::from_chars(digits, p_, v);
      if (r.ec == std::errc() && (!minus || v == 0)) as_uint = v;  // else: keep the double
    }
    double value = 0;
    if (std::from_chars(start, p_, value).ec != std::errc()) {
      // Out of range: strtod tells underflow (a tiny value, kept) from overflow (refused).
      value = std::strtod(std::string(start, p_).c_str(), nullptr);
      if (!std::isfinite(value)) {
        p_ = start;
        fail("number out of range");
      }
    }
    return value;
  }

  // A non-negative integer that fits `max`; `what` names it in errors.
  std::uint64_t uint(const char* what, std::uint64_t max) {
    ws();
    const char* at = p_;
    std::optional<std::uint64_t> v;
    number(v);
    if (!v || *v > max) {
      p_ = at;
      fail(fmt::format("{} must be an integer in [0, {}]", what, max));
    }
    return *v;
  }

  // A non-negative number up to k_max_trace_number (fractions truncated), for lengths and
  // timestamps.
  std::uint64_t count(std::string_view key) {
    ws();
    const char* at = p_;
    std::optional<std::uint64_t> v;
    const double d = number(v);
    const auto max = static_cast<double>(k_max_trace_number);
    if (v ? *v > k_max_trace_number : !(d >= 0 && d <= max)) {
      p_ = at;
      fail(fmt::format("\"{}\" must be a non-negative number up to 2^53", key));
    }
    return v ? *v : static_cast<std::uint64_t>(d);
  }

  template <class T>
  void uint_array(std::vector<T>& out, const char* what, std::uint64_t max) {
    out.clear();
    expect('[');
    if (peek(']')) {
      ++p_;
      return;
    }
    for (;;) {
      out.push_back(static_cast<T>(uint(what, max)));
      if (peek(',')) {
        ++p_;
        continue;
      }
      expect(']');
      return;
    }
  }

  void skip_value(int depth = 0) {
    if (depth > 64) fail("nesting too deep");
    ws();
    if (p_ == end_) fail("expected a value");
    switch (*p_) {
      case '"': string(scratch_); return;
      case '{':
      case '[': {
        const char close = *p_ == '{' ? '}' : ']';
        const bool object = close == '}';
        ++p_;
        if (peek(close)) {
          ++p_;
          return;
        }
        for (;;) {
          if (object) {
            string(scratch_);
            expect(':');
          }
          skip_value(depth + 1);
          if (peek(',')) {
            ++p_;
            continue;
          }
          expect(close);
          return;
        }
      }
      default: break;
    }
    for (const std::string_view word : {"true", "false", "null"}) {
      if (static_cast<std::size_t>(end_ - p_) >= word.size() &&
          std::string_view(p_, word.size()) == word) {
        p_ += word.size();
        return;
      }
    }
    std::optional<std::uint64_t> v;
    number(v);
  }

  // Four hex digits of a \u escape.
  std::uint32_t hex4() {
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i, ++p_) {
      if (p_ == end_) fail("bad \\u escape in string");
      const char c = *p_;
      v <<= 4;
      if (c >= '0' && c <= '9') {
        v |= static_cast<std::uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        v |= static_cast<std::uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        v |= static_cast<std::uint32_t>(c - 'A' + 10);
      } else {
        fail("bad \\u escape in string");
      }
    }
    return v;
  }

  // One well-formed UTF-8 sequence of two to four bytes (RFC 3629: no overlong forms, no
  // surrogates, nothing above U+10FFFF).
  void utf8() {
    const auto b0 = static_cast<unsigned char>(*p_);
    int more = 0;
    unsigned char lo = 0x80, hi = 0xbf;  // the range of the second byte
    if (b0 >= 0xc2 && b0 <= 0xdf) {
      more = 1;
    } else if (b0 >= 0xe0 && b0 <= 0xef) {
      more = 2;
      if (b0 == 0xe0) lo = 0xa0;
      if (b0 == 0xed) hi = 0x9f;
    } else if (b0 >= 0xf0 && b0 <= 0xf4) {
      more = 3;
      if (b0 == 0xf0) lo = 0x90;
      if (b0 == 0xf4) hi = 0x8f;
    } else {
      fail("invalid UTF-8 in string");
    }
    ++p_;
    for (int i = 0; i < more; ++i, ++p_) {
      if (p_ == end_) fail("invalid UTF-8 in string");
      const auto b = static_cast<unsigned char>(*p_);
      if (b < (i == 0 ? lo : 0x80) || b > (i == 0 ? hi : 0xbf)) fail("invalid UTF-8 in string");
    }
  }

  static void append_utf8(std::string& out, std::uint32_t cp) {
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

 private:
  const char* begin_;
  const char* p_;
  const char* end_;
  const std::string& source_;
  std::size_t line_;
  std::string scratch_;  // decoded strings that skip_value reads and drops
};

// Where a hash id sits in its chain: after `parent`, or first in a request.
struct chain_link {
  block_hash parent;
  bool first;
  std::size_t line;
  std::string describe() const {
    return first ? std::string("starts a request") : fmt::format("follows {}", parent);
  }
};

}  // namespace

trace parse_trace(std::istream& in, const std::string& source, std::size_t block_size) {
  if (block_size == 0) throw keel::invalid_argument("trace: block size must be positive");
  trace t;
  t.source = source;
  t.block_size = block_size;
  std::string text;
  std::size_t line_no = 0;
  std::vector<std::uint32_t> tokens;
  std::string key_text;
  std::unordered_map<block_hash, chain_link> links;  // each hash id's parent, first seen
  while (std::getline(in, text)) {
    ++line_no;
    line_reader rd(text, source, line_no);
    if (rd.at_end()) continue;
    trace_request r;
    std::optional<std::uint64_t> timestamp, input_length;
    bool have_ids = false, have_tokens = false;
    rd.expect('{');
    if (!rd.peek('}')) {
      for (;;) {
        const std::string_view key = rd.string(key_text);
        rd.expect(':');
        if (key == "timestamp") {
          timestamp = rd.count(key);
        } else if (key == "input_length") {
          input_length = rd.count(key);
        } else if (key == "output_length") {
          r.output_length = rd.count(key);
        } else if (key == "hash_ids") {
          rd.uint_array(r.hashes, "a hash id", ~std::uint64_t{0});
          have_ids = true;
        } else if (key == "tokens") {
          rd.uint_array(tokens, "a token id", 0xffffffffULL);
          have_tokens = true;
        } else {
          rd.skip_value();
        }
        if (rd.peek(',')) {
          rd.expect(',');
          continue;
        }
        break;
      }
    }
    rd.expect('}');
    if (!rd.at_end()) rd.fail("trailing characters after the object");
    auto fail = [&](const std::string& message) { throw parse_error(source, line_no, 1, message); };
    if (!timestamp) fail("missing \"timestamp\"");
    r.timestamp_ms = *timestamp;
    if (have_ids) {
      if (!input_length) fail("missing \"input_length\"");
      r.input_length = *input_length;
      const std::uint64_t want = r.input_length / block_size + (r.input_length % block_size != 0);
      if (r.hashes.size() != want) {
        fail(
            fmt::format("{} hash_ids for input_length {} but that is {} blocks of {} tokens "
                        "(Mooncake traces use --block-size 512)",
                        r.hashes.size(), r.input_length, want, block_size));
      }
    } else if (have_tokens) {
      r.input_length = input_length.value_or(tokens.size());
      if (r.input_length != tokens.size()) {
        fail(fmt::format("input_length {} but {} tokens", r.input_length, tokens.size()));
      }
      r.hashes = hash_blocks(tokens, block_size);
    } else {
      fail("a request needs \"hash_ids\" or \"tokens\"");
    }
    if (r.input_length == 0) fail("input_length is 0");
    // Hash ids are chained: an id stands for its whole prefix, so it has one parent (or none,
    // first in a request) throughout the trace. The two prefix indexes depend on it: the flat
    // table would find an id under another parent that the radix tree cannot.
    for (std::size_t j = 0; j < r.hashes.size(); ++j) {
      const chain_link want{j == 0 ? 0 : r.hashes[j - 1], j == 0, line_no};
      const auto [it, fresh] = links.try_emplace(r.hashes[j], want);
      const chain_link& seen = it->second;
      if (!fresh && (seen.first != want.first || (!want.first && seen.parent != want.parent))) {
        fail(
            fmt::format("hash id {} {} here but {} on line {} (hash ids are chained: an id "
                        "stands for its whole prefix)",
                        r.hashes[j], want.describe(), seen.describe(), seen.line));
      }
    }
    t.requests.push_back(std::move(r));
  }
  if (in.bad()) throw keel::io_error(fmt::format("{}: read error", source));
  std::stable_sort(t.requests.begin(), t.requests.end(),
                   [](const trace_request& a, const trace_request& b) {
                     return a.timestamp_ms < b.timestamp_ms;
                   });
  return t;
}

trace load_trace(const std::string& path, std::size_t block_size) {
  const std::unique_ptr<std::istream> in = open_input_file(path);
  return parse_trace(*in, path, block_size);
}

}  // namespace keel::kv
