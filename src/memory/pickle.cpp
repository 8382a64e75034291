// The restricted pickle reader, the JSON front end onto the same tree, and the writer.
#include "keel/memory/pickle.hpp"

#include "keel/core/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstring>
#include <limits>
#include <ostream>

namespace keel::memory::pickle {

std::string_view to_string(kind k) noexcept {
  switch (k) {
    case kind::none: return "None";
    case kind::boolean: return "bool";
    case kind::integer: return "int";
    case kind::floating: return "float";
    case kind::string: return "str";
    case kind::bytes: return "bytes";
    case kind::list: return "list";
    case kind::tuple: return "tuple";
    case kind::dict: return "dict";
  }
  return "?";
}

// ---------------------------------------------------------------------------------------
// value

namespace detail {
void wrong_kind(const value& v, std::string_view wanted) {
  throw keel::invalid_argument(
      fmt::format("pickle value is a {}, not {}", to_string(v.type()), wanted));
}
void index_out_of_range() { throw keel::invalid_argument("pickle container index out of range"); }
}  // namespace detail
using detail::wrong_kind;

bool value::is_container() const noexcept {
  const kind k = type();
  return k == kind::list || k == kind::tuple || k == kind::dict;
}

bool value::as_bool() const {
  if (!is(kind::boolean)) wrong_kind(*this, "bool");
  return doc_->nodes_[index_].a != 0;
}

std::int64_t value::as_int() const {
  const auto& n = doc_->nodes_[index_];
  if (n.type != kind::integer) wrong_kind(*this, "int");
  if (n.big_unsigned) throw keel::invalid_argument("integer does not fit in int64");
  return static_cast<std::int64_t>(n.a);
}

std::uint64_t value::as_uint64() const {
  const auto& n = doc_->nodes_[index_];
  if (n.type != kind::integer) wrong_kind(*this, "int");
  if (!n.big_unsigned && static_cast<std::int64_t>(n.a) < 0)
    throw keel::invalid_argument("negative integer where an unsigned one is expected");
  return n.a;
}

bool value::is_big_unsigned() const noexcept { return doc_->nodes_[index_].big_unsigned; }

double value::as_double() const {
  const auto& n = doc_->nodes_[index_];
  if (n.type == kind::floating) return std::bit_cast<double>(n.a);
  if (n.type == kind::integer)
    return n.big_unsigned ? static_cast<double>(n.a)
                          : static_cast<double>(static_cast<std::int64_t>(n.a));
  wrong_kind(*this, "float");
}

value value::key(std::size_t i) const {
  const auto& n = doc_->nodes_[index_];
  if (n.type != kind::dict) wrong_kind(*this, "dict");
  if (2 * i >= n.count) throw keel::invalid_argument("pickle dict index out of range");
  return value(doc_, doc_->children_[n.a + 2 * i]);
}

value value::item(std::size_t i) const {
  const auto& n = doc_->nodes_[index_];
  if (n.type != kind::dict) wrong_kind(*this, "dict");
  if (2 * i >= n.count) throw keel::invalid_argument("pickle dict index out of range");
  return value(doc_, doc_->children_[n.a + 2 * i + 1]);
}

parse_error document::text_error(std::uint64_t offset, const std::string& message) const {
  return parse_error::in_text(source_, text_copy_, static_cast<std::size_t>(offset), message);
}

namespace detail {

// ---------------------------------------------------------------------------------------
// builder: node storage shared by both front ends. Errors are reported through `fail`,
// which the front end turns into a parse_error at the current position.

class builder {
 public:
  builder(document& doc, const limits& lim) : doc_(doc), lim_(lim) {}

  std::uint32_t add(kind k, std::uint64_t offset, std::uint64_t a = 0, std::uint64_t b = 0) {
    if (doc_.nodes_.size() >= lim_.max_elements ||
        doc_.nodes_.size() >= std::numeric_limits<std::uint32_t>::max())
      fail("more than {} values (limit)", lim_.max_elements);
    document::node n{};
    n.type = k;
    n.a = a;
    n.b = b;
    n.offset = offset;
    doc_.nodes_.push_back(n);
    return static_cast<std::uint32_t>(doc_.nodes_.size() - 1);
  }
  std::uint32_t add_int(std::uint64_t bits, bool big_unsigned, std::uint64_t offset) {
    const std::uint32_t i = add(kind::integer, offset, bits);
    doc_.nodes_[i].big_unsigned = big_unsigned;
    return i;
  }

  // Appends `items` to container `target` (dicts: key, value, key, value ...).
  void append(std::uint32_t target, const std::uint32_t* items, std::size_t n) {
    if (n == 0) return;
    auto& t = doc_.nodes_[target];
    if (t.nested)
      fail(
          "a {} is modified after it was put inside another container (recursive "
          "structures are not supported)",
          to_string(t.type));
    placed_ += n;
    if (placed_ > lim_.max_elements)
      fail("more than {} container slots (limit)", lim_.max_elements);
    doc_.slots_ = static_cast<std::size_t>(placed_);
    std::uint32_t height = t.height;
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t c = items[i];
      if (c == target) fail("a {} cannot contain itself", to_string(t.type));
      auto& child = doc_.nodes_[c];
      if (child.type == kind::list || child.type == kind::dict || child.type == kind::tuple) {
        child.nested = true;
        height = std::max<std::uint32_t>(height, child.height + 1u);
      }
    }
    if (height + 1 > lim_.max_depth) fail("nesting deeper than {} levels (limit)", lim_.max_depth);
    auto& tt = doc_.nodes_[target];
    tt.height = static_cast<std::uint16_t>(height);
    auto& ch = doc_.children_;
    const std::uint64_t need = std::uint64_t{tt.count} + n;
    if (need > tt.b) {
      const std::uint64_t cap = std::max<std::uint64_t>(need, 2 * std::uint64_t{tt.count});
      if (tt.a + tt.b == ch.size() && tt.b > 0) {
        ch.resize(tt.a + cap);
      } else {
        const std::uint64_t begin = ch.size();
        ch.resize(begin + cap);
        std::copy_n(ch.begin() + static_cast<std::ptrdiff_t>(tt.a), tt.count,
                    ch.begin() + static_cast<std::ptrdiff_t>(begin));
        tt.a = begin;
      }
      tt.b = cap;
    }
    std::copy_n(items, n, ch.begin() + static_cast<std::ptrdiff_t>(tt.a + tt.count));
    tt.count = static_cast<std::uint32_t>(need);
  }

  // A new container holding exactly `items`.
  std::uint32_t make(kind k, std::uint64_t offset, const std::uint32_t* items, std::size_t n) {
    const std::uint32_t node = add(k, offset);
    append(node, items, n);
    return node;
  }

  std::uint32_t add_string(kind k, std::uint64_t offset, std::uint64_t data_offset,
                           std::uint64_t length) {
    if (length > lim_.max_string_length)
      fail("a {} of {} bytes is longer than the limit of {}", to_string(k), length,
           lim_.max_string_length);
    return add(k, offset, data_offset, length);
  }

  kind type(std::uint32_t n) const { return doc_.nodes_[n].type; }

  template <class... A>
  [[noreturn]] void fail(fmt::format_string<A...> f, A&&... args) {
    throw failure{fmt::format(f, std::forward<A>(args)...)};
  }
  struct failure {
    std::string message;
  };

 private:
  document& doc_;
  const limits& lim_;
  std::uint64_t placed_ = 0;
};

// ---------------------------------------------------------------------------------------
// pickle

namespace {

// Opcode names, for messages.
std::string_view opcode_name(std::uint8_t op) {
  switch (op) {
    case '(': return "MARK";
    case '.': return "STOP";
    case '0': return "POP";
    case '1': return "POP_MARK";
    case '2': return "DUP";
    case 'F': return "FLOAT";
    case 'I': return "INT";
    case 'J': return "BININT";
    case 'K': return "BININT1";
    case 'L': return "LONG";
    case 'M': return "BININT2";
    case 'N': return "NONE";
    case 'P': return "PERSID";
    case 'Q': return "BINPERSID";
    case 'R': return "REDUCE";
    case 'S': return "STRING";
    case 'T': return "BINSTRING";
    case 'U': return "SHORT_BINSTRING";
    case 'V': return "UNICODE";
    case 'X': return "BINUNICODE";
    case 'a': return "APPEND";
    case 'b': return "BUILD";
    case 'c': return "GLOBAL";
    case 'd': return "DICT";
    case '}': return "EMPTY_DICT";
    case 'e': return "APPENDS";
    case 'g': return "GET";
    case 'h': return "BINGET";
    case 'i': return "INST";
    case 'j': return "LONG_BINGET";
    case 'l': return "LIST";
    case ']': return "EMPTY_LIST";
    case 'o': return "OBJ";
    case 'p': return "PUT";
    case 'q': return "BINPUT";
    case 'r': return "LONG_BINPUT";
    case 's': return "SETITEM";
    case 't': return "TUPLE";
    case ')': return "EMPTY_TUPLE";
    case 'u': return "SETITEMS";
    case 'G': return "BINFLOAT";
    case 0x80: return "PROTO";
    case 0x81: return "NEWOBJ";
    case 0x82: return "EXT1";
    case 0x83: return "EXT2";
    case 0x84: return "EXT4";
    case 0x85: return "TUPLE1";
    case 0x86: return "TUPLE2";
    case 0x87: return "TUPLE3";
    case 0x88: return "NEWTRUE";
    case 0x89: return "NEWFALSE";
    case 0x8a: return "LONG1";
    case 0x8b: return "LONG4";
    case 0x8c: return "SHORT_BINUNICODE";
    case 0x8d: return "BINUNICODE8";
    case 0x8e: return "BINBYTES8";
    case 0x8f: return "EMPTY_SET";
    case 0x90: return "ADDITEMS";
    case 0x91: return "FROZENSET";
    case 0x92: return "NEWOBJ_EX";
    case 0x93: return "STACK_GLOBAL";
    case 0x94: return "MEMOIZE";
    case 0x95: return "FRAME";
    case 0x96: return "BYTEARRAY8";
    case 0x97: return "NEXT_BUFFER";
    case 0x98: return "READONLY_BUFFER";
    case 'B': return "BINBYTES";
    case 'C': return "SHORT_BINBYTES";
    default: return {};
  }
}

bool valid_utf8(const unsigned char* s, std::size_t n) {
  std::size_t i = 0;
  while (i < n) {
    const unsigned char c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t len;
    std::uint32_t cp;
    if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (n - i < len) return false;
    for (std::size_t k = 1; k < len; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    // Overlong forms and values past U+10FFFF are invalid; surrogates are allowed, as
    // Python's pickle writes them with 'surrogatepass'.
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        cp > 0x10FFFF)
      return false;
    i += len;
  }
  return true;
}

}  // namespace

class pickle_reader {
 public:
  pickle_reader(document& doc, const limits& lim, std::size_t size)
      : doc_(doc),
        b_(doc, lim),
        p_(reinterpret_cast<const unsigned char*>(doc.data_.data())),
        n_(size) {}

  std::uint32_t run() {
    for (;;) {
      if (pos_ >= n_) fail_at(pos_, "truncated: the pickle ends without STOP");
      op_ = pos_;
      const std::uint8_t op = p_[pos_++];
      switch (op) {
        case 0x80: {  // PROTO
          const std::uint8_t v = u8();
          if (v > 5) fail("unsupported pickle protocol {} (2 to 5 are read)", v);
          break;
        }
        case 0x95: {  // FRAME: only a length prefix; frames impose no structure here
          const std::uint64_t len = le(8);
          if (len > n_ - pos_)
            fail("FRAME of {} bytes is longer than the {} that remain", len, n_ - pos_);
          break;
        }
        case '.': {  // STOP
          if (!marks_.empty()) fail("STOP with an open MARK");
          if (stack_.size() != 1)
            fail("STOP with {} values on the stack (expected 1)", stack_.size());
          return stack_.back();
        }
        case '(': marks_.push_back(stack_.size()); break;
        case '0':  // POP
          if (stack_.size() > floor()) {
            stack_.pop_back();
          } else {
            pop_mark();
          }
          break;
        case '1':  // POP_MARK
          stack_.resize(pop_mark());
          break;
        case '2':  // DUP
          need_items(1);
          push(stack_.back());
          break;

        case 'N': push(b_.add(kind::none, op_)); break;
        case 0x88: push(b_.add(kind::boolean, op_, 1)); break;
        case 0x89: push(b_.add(kind::boolean, op_, 0)); break;
        case 'J': {
          std::int32_t v;
          const std::uint64_t raw = le(4);
          v = static_cast<std::int32_t>(static_cast<std::uint32_t>(raw));
          push(b_.add_int(static_cast<std::uint64_t>(static_cast<std::int64_t>(v)), false, op_));
          break;
        }
        case 'K': push(b_.add_int(u8(), false, op_)); break;
        case 'M': push(b_.add_int(le(2), false, op_)); break;
        case 0x8a: long_int(u8()); break;       // LONG1
        case 0x8b: long_int(length(4)); break;  // LONG4
        case 'G': {                             // BINFLOAT, big endian
          need(8);
          std::uint64_t bits = 0;
          for (int i = 0; i < 8; ++i) bits = (bits << 8) | p_[pos_ + i];
          pos_ += 8;
          push(b_.add(kind::floating, op_, bits));
          break;
        }

        case 'X': str(kind::string, length(4)); break;   // BINUNICODE
        case 0x8c: str(kind::string, u8()); break;       // SHORT_BINUNICODE
        case 0x8d: str(kind::string, length(8)); break;  // BINUNICODE8
        case 'T': str(kind::string, length(4)); break;   // BINSTRING (Python 2 str)
        case 'U': str(kind::string, u8()); break;        // SHORT_BINSTRING
        case 'B': str(kind::bytes, length(4)); break;    // BINBYTES
        case 'C': str(kind::bytes, u8()); break;         // SHORT_BINBYTES
        case 0x8e: str(kind::bytes, length(8)); break;   // BINBYTES8
        case 0x96: str(kind::bytes, length(8)); break;   // BYTEARRAY8

        case ']': push(b_.add(kind::list, op_)); break;
        case '}': push(b_.add(kind::dict, op_)); break;
        case ')': push(b_.add(kind::tuple, op_)); break;
        case 'l': from_mark(kind::list); break;
        case 't': from_mark(kind::tuple); break;
        case 'd': {
          const std::size_t m = pop_mark();
          if ((stack_.size() - m) % 2) fail("DICT with an odd number of items");
          check_keys(m);
          const std::uint32_t d = b_.make(kind::dict, op_, stack_.data() + m, stack_.size() - m);
          stack_.resize(m);
          push(d);
          break;
        }
        case 0x85: tuple_n(1); break;
        case 0x86: tuple_n(2); break;
        case 0x87: tuple_n(3); break;
        case 'a': {  // APPEND
          need_items(2);
          const std::uint32_t item = stack_.back();
          stack_.pop_back();
          b_.append(target(kind::list), &item, 1);
          break;
        }
        case 'e': {  // APPENDS
          const std::size_t m = pop_mark();
          if (m == floor() || m == 0) fail("APPENDS without a list below the MARK");
          b_.append(target_at(m - 1, kind::list), stack_.data() + m, stack_.size() - m);
          stack_.resize(m);
          break;
        }
        case 's': {  // SETITEM
          need_items(3);
          check_keys(stack_.size() - 2);
          b_.append(target_at(stack_.size() - 3, kind::dict), stack_.data() + stack_.size() - 2, 2);
          stack_.resize(stack_.size() - 2);
          break;
        }
        case 'u': {  // SETITEMS
          const std::size_t m = pop_mark();
          if (m == floor() || m == 0) fail("SETITEMS without a dict below the MARK");
          if ((stack_.size() - m) % 2) fail("SETITEMS with an odd number of items");
          check_keys(m);
          b_.append(target_at(m - 1, kind::dict), stack_.data() + m, stack_.size() - m);
          stack_.resize(m);
          break;
        }

        case 0x94: memo_put(memo_.size()); break;  // MEMOIZE
        case 'q': memo_put(u8()); break;           // BINPUT
        case 'r': memo_put(le(4)); break;          // LONG_BINPUT
        case 'h': memo_get(u8()); break;           // BINGET
        case 'j': memo_get(le(4)); break;          // LONG_BINGET

        case 'c':
        case 0x93:
        case 'R':
        case 'b':
        case 'i':
        case 'o':
        case 0x81:
        case 0x92:
        case 0x82:
        case 0x83:
        case 0x84:
        case 'P':
        case 'Q':
          fail(
              "refused opcode {} (0x{:02x}): it names or constructs a Python object, and a "
              "snapshot holds only plain data",
              opcode_name(op), op);
        case 0x8f:
        case 0x90:
        case 0x91:
        case 0x97:
        case 0x98:
        case 'F':
        case 'I':
        case 'L':
        case 'S':
        case 'V':
        case 'g':
        case 'p':
          fail("unsupported opcode {} (0x{:02x}): only protocol 2-5 plain-data opcodes are read",
               opcode_name(op), op);
        default: fail("unknown opcode 0x{:02x}", op);
      }
    }
  }

  template <class... A>
  [[noreturn]] void fail(fmt::format_string<A...> f, A&&... args) {
    fail_at(op_, fmt::format(f, std::forward<A>(args)...));
  }
  [[noreturn]] void fail_at(std::uint64_t offset, const std::string& message) {
    throw parse_error::at_offset(doc_.source_, offset, message);
  }
  std::uint64_t op_offset() const { return op_; }

 private:
  std::size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  void need(std::size_t k) {
    if (n_ - pos_ < k)
      fail("truncated: {} needs {} more bytes, {} remain", opcode_name(p_[op_]), k, n_ - pos_);
  }
  std::uint8_t u8() {
    need(1);
    return p_[pos_++];
  }
  std::uint64_t le(int k) {
    need(static_cast<std::size_t>(k));
    std::uint64_t v = 0;
    for (int i = k - 1; i >= 0; --i) v = (v << 8) | p_[pos_ + static_cast<std::size_t>(i)];
    pos_ += static_cast<std::size_t>(k);
    return v;
  }
  // A length prefix; it must fit in the bytes that remain.
  std::uint64_t length(int k) {
    const std::uint64_t len = le(k);
    if (len > n_ - pos_)
      fail("{} claims {} bytes but only {} remain", opcode_name(p_[op_]), len, n_ - pos_);
    return len;
  }
  void push(std::uint32_t v) { stack_.push_back(v); }
  void need_items(std::size_t k) {
    if (stack_.size() - floor() < k)
      fail("{} needs {} values on the stack above the last MARK", opcode_name(p_[op_]), k);
  }
  std::size_t pop_mark() {
    if (marks_.empty()) fail("{} without a MARK", opcode_name(p_[op_]));
    const std::size_t m = marks_.back();
    marks_.pop_back();
    return m;
  }
  std::uint32_t target(kind k) { return target_at(stack_.size() - 1, k); }
  std::uint32_t target_at(std::size_t i, kind k) {
    if (i < floor() || i >= stack_.size())
      fail("{} without a {} below", opcode_name(p_[op_]), to_string(k));
    const std::uint32_t t = stack_[i];
    if (b_.type(t) != k)
      fail("{} applied to a {} (only {} is supported)", opcode_name(p_[op_]), to_string(b_.type(t)),
           to_string(k));
    return t;
  }
  void check_keys(std::size_t from) {
    for (std::size_t i = from; i < stack_.size(); i += 2) {
      const kind k = b_.type(stack_[i]);
      if (k == kind::list || k == kind::dict) fail("unhashable dict key of type {}", to_string(k));
    }
  }
  void from_mark(kind k) {
    const std::size_t m = pop_mark();
    const std::uint32_t node = b_.make(k, op_, stack_.data() + m, stack_.size() - m);
    stack_.resize(m);
    push(node);
  }
  void tuple_n(std::size_t k) {
    need_items(k);
    const std::size_t m = stack_.size() - k;
    const std::uint32_t node = b_.make(kind::tuple, op_, stack_.data() + m, k);
    stack_.resize(m);
    push(node);
  }
  void str(kind k, std::uint64_t len) {
    need(len);
    if (k == kind::string && !valid_utf8(p_ + pos_, len))
      fail("{} is not valid UTF-8", opcode_name(p_[op_]));
    push(b_.add_string(k, op_, pos_, len));
    pos_ += len;
  }
  void long_int(std::uint64_t len) {
    need(len);
    const unsigned char* d = p_ + pos_;
    pos_ += len;
    if (len == 0) {
      push(b_.add_int(0, false, op_));
      return;
    }
    const bool negative = (d[len - 1] & 0x80) != 0;
    // Strip sign-extension bytes, then the value must fit in 8 bytes (or 9 for a uint64
    // whose top bit is set, which Python writes with an extra 0x00).
    std::size_t used = len;
    const unsigned char ext = negative ? 0xFF : 0x00;
    while (used > 1 && d[used - 1] == ext && ((d[used - 2] & 0x80) != 0) == negative) --used;
    bool big = false;
    if (used > 8) {
      if (!negative && used == 9 && d[8] == 0x00) {
        big = true;
        used = 8;
      } else {
        fail("integer of {} bytes does not fit in 64 bits", len);
      }
    }
    std::uint64_t v = negative ? ~std::uint64_t{0} : 0;
    for (std::size_t i = 0; i < used; ++i) {
      v &= ~(std::uint64_t{0xFF} << (8 * i));
      v |= std::uint64_t{d[i]} << (8 * i);
    }
    if (big && (v >> 63) == 0) big = false;
    push(b_.add_int(v, big, op_));
  }
  void memo_put(std::uint64_t idx) {
    need_items(1);
    // A memo index names one of the values built so far, so it is below the input size;
    // larger ones would only serve to make the memo table large.
    if (idx > n_) fail("memo index {} is larger than the input", idx);
    if (idx >= memo_.size()) memo_.resize(idx + 1, k_unset);
    memo_[idx] = stack_.back();
  }
  void memo_get(std::uint64_t idx) {
    if (idx >= memo_.size() || memo_[idx] == k_unset) fail("memo index {} was never stored", idx);
    push(memo_[idx]);
  }

  static constexpr std::uint32_t k_unset = std::numeric_limits<std::uint32_t>::max();
  document& doc_;
  builder b_;
  const unsigned char* p_;
  std::size_t n_;
  std::size_t pos_ = 0;
  std::size_t op_ = 0;
  std::vector<std::uint32_t> stack_;
  std::vector<std::size_t> marks_;
  std::vector<std::uint32_t> memo_;
};

}  // namespace detail

document parse(std::span<const std::byte> bytes, std::string_view source, const limits& lim) {
  using namespace detail;
  document doc;
  doc.source_ = std::string(source);
  doc.data_.assign(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  doc.nodes_.reserve(bytes.size() / 16 + 16);
  doc.children_.reserve(bytes.size() / 4 + 16);
  pickle_reader reader(doc, lim, bytes.size());
  try {
    doc.root_ = reader.run();
  } catch (const builder::failure& f) {
    reader.fail_at(reader.op_offset(), f.message);
  }
  return doc;
}

// ---------------------------------------------------------------------------------------
// JSON

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

// ---------------------------------------------------------------------------------------
// document_builder

struct document_builder::state {
  state(std::string_view source, const limits& l) : lim(l), b(doc, lim) {
    doc.source_ = std::string(source);
    doc.built_ = true;
  }
  document doc;
  limits lim;
  detail::builder b;
};

document_builder::document_builder(std::string_view source, const limits& lim)
    : state_(std::make_unique<state>(source, lim)) {}
document_builder::~document_builder() = default;

namespace {
template <class F>
document_builder::node building(const document& doc, F f) {
  try {
    return f();
  } catch (const detail::builder::failure& e) {
    throw parse_error::in_object(doc.source(), e.message);
  }
}
}  // namespace

void document_builder::reserve(std::size_t values, std::size_t slots) {
  state_->doc.nodes_.reserve(std::min(values, state_->lim.max_elements));
  state_->doc.children_.reserve(std::min(slots, state_->lim.max_elements));
}

document_builder::node document_builder::none() {
  return building(state_->doc, [&] { return state_->b.add(kind::none, state_->doc.node_count()); });
}
document_builder::node document_builder::boolean(bool v) {
  return building(state_->doc, [&] {
    return state_->b.add(kind::boolean, state_->doc.node_count(), v ? 1 : 0);
  });
}
document_builder::node document_builder::integer(std::int64_t v) {
  return building(state_->doc, [&] {
    return state_->b.add_int(static_cast<std::uint64_t>(v), false, state_->doc.node_count());
  });
}
document_builder::node document_builder::unsigned_integer(std::uint64_t v) {
  return building(state_->doc,
                  [&] { return state_->b.add_int(v, v >> 63 != 0, state_->doc.node_count()); });
}
document_builder::node document_builder::floating(double v) {
  return building(state_->doc, [&] {
    std::uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    return state_->b.add(kind::floating, state_->doc.node_count(), bits);
  });
}
document_builder::node document_builder::string(std::string_view v) {
  return building(state_->doc, [&] {
    const std::uint64_t at = state_->doc.data_.size();
    const node n = state_->b.add_string(kind::string, state_->doc.node_count(), at, v.size());
    state_->doc.data_.append(v);
    return n;
  });
}
document_builder::node document_builder::bytes(std::string_view v) {
  return building(state_->doc, [&] {
    const std::uint64_t at = state_->doc.data_.size();
    const node n = state_->b.add_string(kind::bytes, state_->doc.node_count(), at, v.size());
    state_->doc.data_.append(v);
    return n;
  });
}
document_builder::node document_builder::list(std::span<const node> items) {
  return building(state_->doc, [&] {
    return state_->b.make(kind::list, state_->doc.node_count(), items.data(), items.size());
  });
}
document_builder::node document_builder::tuple(std::span<const node> items) {
  return building(state_->doc, [&] {
    return state_->b.make(kind::tuple, state_->doc.node_count(), items.data(), items.size());
  });
}
document_builder::node document_builder::dict(std::span<const node> keys_and_values) {
  if (keys_and_values.size() % 2 != 0)
    throw invalid_argument("document_builder::dict: an odd number of keys and values");
  return building(state_->doc, [&] {
    return state_->b.make(kind::dict, state_->doc.node_count(), keys_and_values.data(),
                          keys_and_values.size());
  });
}

document document_builder::finish(node root) {
  if (root >= state_->doc.node_count())
    throw invalid_argument("document_builder::finish: no such value");
  state_->doc.root_ = root;
  document out = std::move(state_->doc);
  state_ = std::make_unique<state>(out.source(), state_->lim);
  return out;
}

// ---------------------------------------------------------------------------------------
// writer

namespace {
constexpr std::uint8_t k_mark = '(', k_stop = '.', k_none = 'N', k_true = 0x88, k_false = 0x89,
                       k_binint = 'J', k_binint1 = 'K', k_binint2 = 'M', k_long1 = 0x8a,
                       k_binfloat = 'G', k_short_binunicode = 0x8c, k_binunicode = 'X',
                       k_binunicode8 = 0x8d, k_short_binbytes = 'C', k_binbytes = 'B',
                       k_binbytes8 = 0x8e, k_empty_list = ']', k_appends = 'e', k_empty_dict = '}',
                       k_setitems = 'u', k_tuple = 't', k_memoize = 0x94, k_binget = 'h',
                       k_long_binget = 'j', k_proto = 0x80;
constexpr std::size_t k_batch = 1000;  // items per APPENDS/SETITEMS, as CPython writes
}  // namespace

writer::writer(std::ostream& out) : out_(out) {
  put_op(k_proto);
  put_op(4);
}

void writer::put_op(std::uint8_t op) { out_.put(static_cast<char>(op)); }
void writer::put_raw(const void* p, std::size_t n) {
  out_.write(static_cast<const char*>(p), static_cast<std::streamsize>(n));
}
void writer::put_le(std::uint64_t v, std::size_t n) {
  std::uint8_t b[8];
  for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<std::uint8_t>(v >> (8 * i));
  put_raw(b, n);
}
// A str or bytes payload with the shortest of the three length prefixes.
void writer::put_sized(std::string_view v, std::uint8_t op1, std::uint8_t op4, std::uint8_t op8) {
  const std::uint64_t n = v.size();
  if (n < 256) {
    put_op(op1);
    put_le(n, 1);
  } else if (n <= 0xFFFFFFFFu) {
    put_op(op4);
    put_le(n, 4);
  } else {
    put_op(op8);
    put_le(n, 8);
  }
  put_raw(v.data(), v.size());
}

void writer::before_item() {
  if (open_.empty()) return;
  auto& c = open_.back();
  const std::size_t per_batch = c.type == kind::dict ? 2 * k_batch : k_batch;
  if (c.type != kind::tuple && c.batch == per_batch) {
    put_op(c.type == kind::dict ? k_setitems : k_appends);
    put_op(k_mark);
    c.batch = 0;
  }
}

void writer::item_done() {
  if (open_.empty()) {
    ++top_level_;
    return;
  }
  ++open_.back().batch;
}

void writer::none() {
  before_item();
  put_op(k_none);
  item_done();
}
void writer::boolean(bool v) {
  before_item();
  put_op(v ? k_true : k_false);
  item_done();
}
void writer::integer(std::int64_t v) {
  before_item();
  if (v >= 0 && v < 256) {
    put_op(k_binint1);
    put_le(static_cast<std::uint64_t>(v), 1);
  } else if (v >= 0 && v < 65536) {
    put_op(k_binint2);
    put_le(static_cast<std::uint64_t>(v), 2);
  } else if (v >= std::numeric_limits<std::int32_t>::min() &&
             v <= std::numeric_limits<std::int32_t>::max()) {
    put_op(k_binint);
    put_le(static_cast<std::uint64_t>(v), 4);  // two's complement, low 4 bytes
  } else {
    // LONG1 with the shortest two's complement encoding.
    const auto u = static_cast<std::uint64_t>(v);
    std::size_t n = 8;
    const std::uint64_t ext = v < 0 ? 0xFF : 0x00;
    while (n > 1 && ((u >> (8 * (n - 1))) & 0xFF) == ext &&
           (((u >> (8 * (n - 2))) & 0x80) != 0) == (v < 0))
      --n;
    put_op(k_long1);
    put_le(n, 1);
    put_le(u, n);
  }
  item_done();
}
void writer::unsigned_integer(std::uint64_t v) {
  if (v <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    integer(static_cast<std::int64_t>(v));
    return;
  }
  before_item();
  put_op(k_long1);  // 9 bytes: the value and a 0x00 that keeps it positive
  put_le(9, 1);
  put_le(v, 8);
  put_le(0, 1);
  item_done();
}
void writer::floating(double v) {
  before_item();
  const auto bits = std::bit_cast<std::uint64_t>(v);
  put_op(k_binfloat);  // big endian
  for (int i = 7; i >= 0; --i) put_le(bits >> (8 * i), 1);
  item_done();
}
void writer::string(std::string_view v) {
  before_item();
  if (auto it = strings_.find(v); it != strings_.end()) {
    put_get(it->second);
  } else {
    put_sized(v, k_short_binunicode, k_binunicode, k_binunicode8);
    put_op(k_memoize);
    strings_.emplace(std::string(v), memo_next_++);
  }
  item_done();
}
void writer::bytes(std::string_view v) {
  before_item();
  put_sized(v, k_short_binbytes, k_binbytes, k_binbytes8);
  item_done();
}
void writer::begin_list() {
  before_item();
  put_op(k_empty_list);
  put_op(k_mark);
  open_.push_back({kind::list});
}
void writer::begin_dict() {
  before_item();
  put_op(k_empty_dict);
  put_op(k_mark);
  open_.push_back({kind::dict});
}
void writer::begin_tuple() {
  before_item();
  put_op(k_mark);
  open_.push_back({kind::tuple});
}
void writer::end_list() {
  if (open_.empty() || open_.back().type != kind::list)
    throw keel::invalid_argument("pickle writer: end_list without begin_list");
  put_op(k_appends);  // an empty trailing batch is harmless
  open_.pop_back();
  item_done();
}
void writer::end_dict() {
  if (open_.empty() || open_.back().type != kind::dict || open_.back().batch % 2)
    throw keel::invalid_argument(
        "pickle writer: end_dict without begin_dict or with a key and no value");
  put_op(k_setitems);
  open_.pop_back();
  item_done();
}
void writer::end_tuple() {
  if (open_.empty() || open_.back().type != kind::tuple)
    throw keel::invalid_argument("pickle writer: end_tuple without begin_tuple");
  put_op(k_tuple);
  open_.pop_back();
  item_done();
}
std::uint32_t writer::memoize() {
  put_op(k_memoize);
  return memo_next_++;
}
void writer::get(std::uint32_t memo_index) {
  before_item();
  put_get(memo_index);
  item_done();
}
void writer::put_get(std::uint32_t memo_index) {
  if (memo_index >= memo_next_) throw keel::invalid_argument("pickle writer: unknown memo index");
  if (memo_index < 256) {
    put_op(k_binget);
    put_le(memo_index, 1);
  } else {
    put_op(k_long_binget);
    put_le(memo_index, 4);
  }
}
void writer::finish() {
  if (!open_.empty() || top_level_ != 1)
    throw keel::invalid_argument(
        "pickle writer: finish() needs exactly one complete top-level value");
  put_op(k_stop);
}

}  // namespace keel::memory::pickle
