// The pickle value tree: kind names, value accessors, document_builder, and the UTF-8 check
// the front ends share.
#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "keel/core/enum_names.hpp"
#include "keel/core/error.hpp"
#include "keel/memory/pickle.hpp"
#include "pickle_tree.hpp"

namespace keel::memory::pickle {

namespace {
constexpr enum_entry<kind> k_kind_entries[] = {
    {kind::none, "None"},      {kind::boolean, "bool"}, {kind::integer, "int"},
    {kind::floating, "float"}, {kind::string, "str"},   {kind::bytes, "bytes"},
    {kind::list, "list"},      {kind::tuple, "tuple"},  {kind::dict, "dict"},
};
constexpr enum_names<kind> k_kind_names{"kind", k_kind_entries, name_case::exact, "?"};
}  // namespace

std::string_view to_string(kind k) noexcept { return k_kind_names.name(k); }

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

}  // namespace detail

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

}  // namespace keel::memory::pickle
