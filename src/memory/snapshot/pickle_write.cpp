// The pickle writer: protocol 4, as CPython writes it (keel/memory/pickle.hpp).
#include <fmt/format.h>

#include <bit>
#include <cstring>
#include <limits>
#include <ostream>

#include "keel/core/error.hpp"
#include "keel/memory/pickle.hpp"

namespace keel::memory::pickle {

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
