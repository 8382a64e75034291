// Trace loading. The lines are parsed by a small JSON reader written for this flat format
// (one object of numbers and integer arrays per line): Mooncake traces are ~1 MB of numbers,
// and building a DOM per line took longer than replaying the trace. It accepts any valid JSON
// object, skipping keys it does not know, and reports errors as file:line:column.
#include "keel/kv/trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <memory>
#include <optional>

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

  // A string's raw text (escapes validated, not decoded: keys are compared as written).
  std::string_view string() {
    expect('"');
    const char* start = p_;
    while (p_ < end_ && *p_ != '"') {
      if (static_cast<unsigned char>(*p_) < 0x20) fail("control character in string");
      if (*p_ == '\\') {
        ++p_;
        if (p_ == end_ || std::string_view("\"\\/bfnrtu").find(*p_) == std::string_view::npos) {
          fail("bad escape in string");
        }
      }
      ++p_;
    }
    if (p_ == end_) fail("unterminated string");
    return {start, static_cast<std::size_t>(p_++ - start)};
  }

  // A JSON number; `integral` tells whether it had no fraction or exponent.
  double number(bool& integral, std::uint64_t& as_uint, bool& negative) {
    ws();
    const char* start = p_;
    negative = p_ < end_ && *p_ == '-';
    if (negative) ++p_;
    const char* digits = p_;
    while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    if (p_ == digits) fail("expected a number");
    if (*digits == '0' && p_ - digits > 1) fail("leading zero in number");
    integral = true;
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
    as_uint = 0;
    if (integral && !negative) {
      const auto r = std::from_chars(digits, p_, as_uint);
      if (r.ec != std::errc()) integral = false;  // too large for 64 bits: keep the double
    }
    double value = 0;
    std::from_chars(start, p_, value);
    return value;
  }

  // A non-negative integer that fits `max`; `what` names it in errors.
  std::uint64_t uint(const char* what, std::uint64_t max) {
    ws();
    const char* at = p_;
    bool integral = false, negative = false;
    std::uint64_t v = 0;
    number(integral, v, negative);
    if (!integral || negative || v > max) {
      p_ = at;
      fail(fmt::format("{} must be an integer in [0, {}]", what, max));
    }
    return v;
  }

  // A non-negative number (fractions truncated), for lengths and timestamps.
  std::uint64_t count(std::string_view key) {
    ws();
    const char* at = p_;
    bool integral = false, negative = false;
    std::uint64_t v = 0;
    const double d = number(integral, v, negative);
    if (negative || !(d < 1.8e19)) {
      p_ = at;
      fail(fmt::format("\"{}\" must be a non-negative number", key));
    }
    return integral ? v : static_cast<std::uint64_t>(d);
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
      case '"': string(); return;
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
            string();
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
    bool integral = false, negative = false;
    std::uint64_t v = 0;
    number(integral, v, negative);
  }

 private:
  const char* begin_;
  const char* p_;
  const char* end_;
  const std::string& source_;
  std::size_t line_;
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
        const std::string_view key = rd.string();
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
      const std::size_t want = (r.input_length + block_size - 1) / block_size;
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
