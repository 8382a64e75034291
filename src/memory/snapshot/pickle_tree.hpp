// Internals of the pickle value tree shared by its front ends (pickle_read.cpp,
// pickle_json.cpp) and document_builder (pickle_value.cpp): the node storage every front end
// appends to, with the limits checked as nodes are added, and the UTF-8 check of strings.
// Errors are reported as builder::failure, which each front end turns into a parse_error at
// its current position. Not thread-safe: one builder per document being built.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "keel/memory/pickle.hpp"

namespace keel::memory::pickle::detail {

// True when s[0, n) is UTF-8 as Python's pickle writes it (surrogates allowed).
bool valid_utf8(const unsigned char* s, std::size_t n);

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

}  // namespace keel::memory::pickle::detail
