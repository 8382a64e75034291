// pickle — a restricted reader and a small writer for Python pickles of plain data.
//
// read: parses pickle protocols 2-5 into an immutable tree of plain values (None, bool, int,
// float, str, bytes, list, tuple, dict) and never executes anything. Only the opcodes that
// build those values are accepted, with the memo (MEMOIZE/PUT/GET), FRAME, MARK, POP, DUP,
// PROTO and STOP. Every opcode that could name or construct an object (GLOBAL, STACK_GLOBAL,
// REDUCE, BUILD, INST, OBJ, NEWOBJ, NEWOBJ_EX, EXT1/2/4, PERSID, BINPERSID) is refused with a
// keel::parse_error that names the opcode and its byte offset; so are sets, out-of-band
// buffers and the text opcodes of protocol 0. parse_json() reads JSON text into the same tree,
// with keel's JSON reader (keel/core/json_reader.hpp).
//
// Hostile input cannot exhaust memory or stack: every length is checked against the bytes
// that remain before anything is allocated, all storage grows in proportion to the input,
// nesting is limited (limits::max_depth, checked as values are nested; the reader itself does
// not recurse), and so are the number of values and the length of one string. Shared
// references (the memo) are kept shared: value::id() identifies a node, so a consumer can
// cache work per node and a tree that repeats one list a million times costs one list. A
// container may not be modified once it is inside another container, so the tree is acyclic
// (Python writes that pattern only for self-referencing structures).
//
// Integers: pickles carry arbitrary-precision ints; values in [-2^63, 2^64) are accepted and
// anything wider is a parse_error. A document and its values are immutable; concurrent reads
// are safe. A value is a (document, index) handle valid while its document lives.
//
// write: `writer` emits protocol 4 that Python's standard unpickler loads, memoizing strings
// and any container the caller marks, so repeated frames cost a few bytes each.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "keel/core/error.hpp"
#include "keel/memory/detail/huge_page_allocator.hpp"

namespace keel::memory::pickle {

enum class kind : std::uint8_t {
  none,
  boolean,
  integer,
  floating,
  string,
  bytes,
  list,
  tuple,
  dict
};

std::string_view to_string(kind k) noexcept;

struct limits {
  std::size_t max_depth = 100;                           // nesting levels of containers
  std::size_t max_elements = std::size_t{1} << 27;       // values plus container slots, in total
  std::size_t max_string_length = std::size_t{1} << 30;  // bytes in one str/bytes value
};

class document;
class value;
namespace detail {
class builder;
[[noreturn]] void wrong_kind(const value& v, std::string_view wanted);
[[noreturn]] void index_out_of_range();
class pickle_reader;
}  // namespace detail

// A handle to one node of a document. Accessors that do not match the kind throw
// keel::invalid_argument (the snapshot reader checks kinds first and reports parse_errors).
class value {
 public:
  kind type() const noexcept;
  bool is(kind k) const noexcept { return type() == k; }
  bool is_container() const noexcept;

  bool as_bool() const;
  // Integer value; as_int throws for values >= 2^63, as_uint64 for negative ones.
  std::int64_t as_int() const;
  std::uint64_t as_uint64() const;
  bool is_big_unsigned() const noexcept;  // an integer in [2^63, 2^64)
  double as_double() const;               // floats and integers
  std::string_view as_string() const;     // str or bytes

  // Containers: number of elements (dict: number of pairs).
  std::size_t size() const;
  value operator[](std::size_t i) const;  // list/tuple element i
  value key(std::size_t i) const;         // dict pair i
  value item(std::size_t i) const;        // dict pair i
  // The value of the last pair whose key is the str `name` (as Python's dict keeps).
  std::optional<value> get(std::string_view name) const;

  std::uint32_t id() const noexcept { return index_; }  // identity of the node
  std::uint64_t offset() const noexcept;                // byte offset where it was built
  const document& doc() const noexcept { return *doc_; }

 private:
  friend class document;
  value(const document* doc, std::uint32_t index) : doc_(doc), index_(index) {}
  const document* doc_;
  std::uint32_t index_;
};

class document {
 public:
  value root() const { return value(this, root_); }
  std::size_t node_count() const noexcept { return nodes_.size(); }
  // Container slots filled (list/tuple elements, dict keys and values), shared ones included:
  // with node_count() the size of the tree as written, what limits::max_elements bounds.
  std::size_t slot_count() const noexcept { return slots_; }
  const std::string& source() const noexcept { return source_; }
  // True when offsets are positions in JSON text (parse_json), so that errors can be
  // reported as line:column.
  bool is_text() const noexcept { return text_; }
  // True when a program built it (document_builder): offsets are value numbers, not bytes.
  bool is_built() const noexcept { return built_; }
  // The error "source:line:column: message" for a byte offset in the JSON text this document
  // was read from.
  parse_error text_error(std::uint64_t offset, const std::string& message) const;

  struct node {
    kind type;
    bool nested = false;        // already inside a container (frozen)
    bool big_unsigned = false;  // integer holds a uint64 >= 2^63
    std::uint16_t height = 0;   // containers: 1 + height of the deepest child
    std::uint32_t count = 0;    // containers: slots used (dict: 2 per pair)
    std::uint64_t a = 0;        // int bits / double bits / string offset / children begin
    std::uint64_t b = 0;        // string length / children capacity
    std::uint64_t offset = 0;   // input byte offset
  };

 private:
  friend class value;
  friend class detail::builder;
  friend class detail::pickle_reader;
  friend document parse(std::span<const std::byte>, std::string_view, const limits&);
  friend document parse_json(std::string_view, std::string_view, const limits&);
  friend class document_builder;
  std::string source_;
  template <class T>
  using big_array = std::vector<T, memory::detail::huge_page_allocator<T>>;
  std::basic_string<char, std::char_traits<char>, memory::detail::huge_page_allocator<char>>
      data_;  // the input (pickle) or decoded strings (JSON)
  std::string text_copy_;
  bool text_ = false;
  bool built_ = false;
  big_array<node> nodes_;
  big_array<std::uint32_t> children_;
  std::size_t slots_ = 0;
  std::uint32_t root_ = 0;
};

// Hot accessors, inline: the snapshot reader calls them a few million times per file.

inline kind value::type() const noexcept { return doc_->nodes_[index_].type; }

inline std::uint64_t value::offset() const noexcept { return doc_->nodes_[index_].offset; }

inline std::string_view value::as_string() const {
  const auto& n = doc_->nodes_[index_];
  if (n.type != kind::string && n.type != kind::bytes) detail::wrong_kind(*this, "str");
  return std::string_view(doc_->data_).substr(n.a, n.b);
}

inline std::size_t value::size() const {
  const auto& n = doc_->nodes_[index_];
  if (n.type == kind::dict) return n.count / 2;
  if (n.type == kind::list || n.type == kind::tuple) return n.count;
  detail::wrong_kind(*this, "container");
}

inline value value::operator[](std::size_t i) const {
  const auto& n = doc_->nodes_[index_];
  if (n.type != kind::list && n.type != kind::tuple) detail::wrong_kind(*this, "list or tuple");
  if (i >= n.count) detail::index_out_of_range();
  return value(doc_, doc_->children_[n.a + i]);
}

inline std::optional<value> value::get(std::string_view name) const {
  const auto& n = doc_->nodes_[index_];
  if (n.type != kind::dict) detail::wrong_kind(*this, "dict");
  const std::uint32_t* c = doc_->children_.data() + n.a;
  for (std::uint32_t i = n.count; i >= 2; i -= 2) {
    const auto& k = doc_->nodes_[c[i - 2]];
    if (k.type == kind::string && k.b == name.size() &&
        std::memcmp(doc_->data_.data() + k.a, name.data(), name.size()) == 0)
      return value(doc_, c[i - 1]);
  }
  return std::nullopt;
}

// Parses one pickle. Trailing bytes after STOP are ignored, as Python's pickle.load does.
// Throws keel::parse_error ("source: byte N: message").
document parse(std::span<const std::byte> bytes, std::string_view source, const limits& lim = {});

// Parses one JSON document (RFC 8259, as keel/core/json_reader.hpp reads it, lone surrogate
// escapes kept) into the same tree: objects become dicts, arrays lists, numbers integers
// when integral and in [-2^63, 2^64), else floats. Throws keel::parse_error
// ("source:line:column: message").
document parse_json(std::string_view text, std::string_view source, const limits& lim = {});

// Builds a document from values a program already holds (the Python package converts the dict
// torch.cuda.memory._snapshot() returns with it, without a pickle in between). Values are added
// bottom-up and named by the node number returned; a node may be placed in several containers
// (shared, as the memo shares) but a container never inside itself. The limits apply as in
// parse(); a failure throws keel::parse_error ("source: value N: message"). One use: finish()
// hands the document out and leaves the builder empty.
class document_builder {
 public:
  using node = std::uint32_t;
  explicit document_builder(std::string_view source, const limits& lim = {});
  ~document_builder();
  document_builder(const document_builder&) = delete;
  document_builder& operator=(const document_builder&) = delete;

  // Room for `values` values and `slots` container slots, so a large document grows once.
  void reserve(std::size_t values, std::size_t slots);

  node none();
  node boolean(bool v);
  node integer(std::int64_t v);
  node unsigned_integer(std::uint64_t v);  // any value; >= 2^63 is kept as a big unsigned
  node floating(double v);
  node string(std::string_view v);
  node bytes(std::string_view v);
  node list(std::span<const node> items);
  node tuple(std::span<const node> items);
  node dict(std::span<const node> keys_and_values);  // key, value, key, value, ...

  document finish(node root);

 private:
  struct state;
  std::unique_ptr<state> state_;
};

// Streams a protocol-4 pickle. Call the value functions in pre-order; begin_* / end_* bracket
// containers (dict contents alternate key, value). finish() writes STOP; the writer checks
// that containers are balanced and that exactly one top-level value was written.
class writer {
 public:
  explicit writer(std::ostream& out);

  void none();
  void boolean(bool v);
  void integer(std::int64_t v);
  void unsigned_integer(std::uint64_t v);
  void floating(double v);
  void string(std::string_view v);  // memoized: a repeated string costs a memo reference
  void bytes(std::string_view v);
  void begin_list();
  void end_list();
  void begin_dict();
  void end_dict();
  void begin_tuple();
  void end_tuple();

  // Memoizes the value just completed and returns its memo index; get() pushes it again
  // (Python then shares one object).
  std::uint32_t memoize();
  void get(std::uint32_t memo_index);

  void finish();

 private:
  void put_op(std::uint8_t op);
  void put_raw(const void* p, std::size_t n);
  void put_le(std::uint64_t v, std::size_t n);
  void put_sized(std::string_view v, std::uint8_t op1, std::uint8_t op4, std::uint8_t op8);
  void before_item();
  void item_done();
  void put_get(std::uint32_t memo_index);
  struct open_container {
    kind type;
    std::size_t batch = 0;  // items since the last MARK
  };
  std::ostream& out_;
  std::vector<open_container> open_;
  struct string_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept {
      return std::hash<std::string_view>{}(s);
    }
  };
  std::unordered_map<std::string, std::uint32_t, string_hash, std::equal_to<>> strings_;
  std::uint32_t memo_next_ = 0;
  std::size_t top_level_ = 0;
};

}  // namespace keel::memory::pickle
