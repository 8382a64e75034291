// The restricted pickle reader: protocol 0-5 opcodes onto the value tree (keel/memory/pickle.hpp).
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
        case 0x8e:                                       // BINBYTES8
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

}  // namespace keel::memory::pickle
