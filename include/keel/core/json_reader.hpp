// json_reader — keel's one JSON reader (RFC 8259): a pull parser that hands out the events of
// one JSON text (begin/end of objects and arrays, keys, scalars) without building a tree.
//
// Consumers build what they need from the events: the kv trace loader picks the few fields of
// a JSONL line, the memory snapshot front end builds its pickle value tree under its own
// limits. The reader checks the whole grammar, whatever the consumer looks at: structure,
// strings (escapes decoded, \u with four hex digits, surrogates paired, raw bytes well-formed
// UTF-8 per RFC 3629, no control characters), numbers (no leading zeros; a value beyond a
// double, such as 1e400, is refused, one that underflows is read as the nearest double) and
// literals. Containers may nest json_reader_options::max_depth levels (the outermost counts as
// one); the reader keeps an explicit stack and never recurses on input depth. Storage grows
// with the input only: the stack and one buffer for the decoded string.
//
// Numbers are delivered exactly: an integer written without fraction or exponent is an
// unsigned (in [0, 2^64), "-0" included) or a signed (in [-2^63, 0)) integer, never rounded;
// anything else, wider integers included, is a finite double.
//
// With json_surrogates::keep, a \u escape of an unpaired UTF-16 surrogate is decoded to its
// three-byte form and such bytes are accepted raw (WTF-8, as Python's pickle writes them with
// 'surrogatepass'); paired escapes are always joined into one code point.
//
// Every error is a keel::parse_error "source:line:column: message" (1-based, the column in
// bytes) at the byte where the text goes wrong (for an unterminated string its opening quote,
// for a number out of range or with a leading zero its first character), counted from line
// json_reader_options::first_line so that a JSON-lines reader can pass one line at a time. Keys
// are delivered as written, a repeated one each time. The text and source are borrowed and
// must outlive the reader. Not thread-safe: one reader per text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace keel {

enum class json_event : std::uint8_t {
  begin_object,
  end_object,
  begin_array,
  end_array,
  key,      // an object's key: string()
  string,   // string()
  number,   // number_type(), as_unsigned() / as_signed() / as_double()
  boolean,  // as_bool()
  null,
  end,  // the text is complete (nothing but whitespace after the value)
};

enum class json_number : std::uint8_t {
  unsigned_integer,  // as_unsigned(): [0, 2^64)
  signed_integer,    // as_signed(): [-2^63, 0)
  floating,          // as_double(): finite
};

enum class json_surrogates : std::uint8_t { refuse, keep };  // lone ones

struct json_reader_options {
  std::size_t max_depth = 64;  // containers nested in one another, the outermost included
  json_surrogates surrogates = json_surrogates::refuse;
  std::size_t first_line = 1;  // the line number of the text's first line in its source
};

class json_reader {
 public:
  json_reader(std::string_view text, std::string_view source,
              const json_reader_options& options = {});
  json_reader(const json_reader&) = delete;  // string() may point into the reader
  json_reader& operator=(const json_reader&) = delete;

  // Starts over on another text whose first line is `first_line`, keeping the options and
  // the buffers (a JSON-lines reader calls it once a line).
  void reset(std::string_view text, std::size_t first_line);

  // The next event. Throws keel::parse_error where the text stops being JSON; after
  // event::end it returns event::end again.
  json_event next();

  // Reads through the value whose first event next() just returned: after begin_object or
  // begin_array, up to and including the matching end event; after a scalar, nothing.
  void skip();

  // Of the event just returned. offset(): the byte in the text where its token starts.
  std::size_t offset() const noexcept { return token_; }
  // Open containers, counting one just begun and not one just ended.
  std::size_t depth() const noexcept { return stack_.size(); }
  // key or string: the decoded text, valid until the next call of next() or skip().
  std::string_view string() const noexcept { return string_; }
  json_number number_type() const noexcept { return number_; }
  std::uint64_t as_unsigned() const noexcept { return unsigned_; }
  std::int64_t as_signed() const noexcept { return static_cast<std::int64_t>(unsigned_); }
  double as_double() const noexcept;  // any number: integers converted
  bool as_bool() const noexcept { return bool_; }

  // A parse_error at byte `offset` of the text, for the consumer's own checks (a key of the
  // wrong type, a value out of its range), in the reader's format.
  [[noreturn]] void fail(std::size_t offset, const std::string& message) const;

 private:
  enum class state : std::uint8_t { value, first_key, first_item, after_value, done };
  json_event value();
  json_event key();
  json_event close(char c);
  void read_string();
  void read_number();
  void read_utf8();
  std::uint32_t hex4();
  void skip_ws() noexcept {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }
  std::size_t at(const char* p) const noexcept { return static_cast<std::size_t>(p - begin_); }

  const char* begin_;
  const char* p_;
  const char* end_;
  std::string_view source_;
  json_reader_options options_;
  state state_ = state::value;
  std::vector<bool> stack_;  // open containers: true for an object
  std::size_t token_ = 0;
  std::string_view string_;
  std::string scratch_;  // decoded strings that have escapes
  json_number number_ = json_number::unsigned_integer;
  std::uint64_t unsigned_ = 0;
  double double_ = 0;
  bool bool_ = false;
};

}  // namespace keel
