#include "keel/comm/types.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <string>

#include "keel/core/error.hpp"

namespace keel::comm {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

template <class T, std::size_t N>
T parse_from(std::string_view what, std::string_view name,
             const std::pair<std::string_view, T> (&table)[N]) {
  const std::string key = lower(name);
  std::string valid;
  for (const auto& [n, v] : table) {
    if (key == n) return v;
    if (!valid.empty()) valid += ", ";
    valid += n;
  }
  throw keel::invalid_argument(fmt::format("unknown {} '{}' (valid: {})", what, name, valid));
}

}  // namespace

std::size_t dtype_size(dtype t) noexcept {
  switch (t) {
    case dtype::f64:
    case dtype::i64: return 8;
    case dtype::f32:
    case dtype::i32: return 4;
    case dtype::f16:
    case dtype::bf16: return 2;
    case dtype::u8: return 1;
  }
  return 1;
}

std::string_view to_string(dtype t) noexcept {
  switch (t) {
    case dtype::f32: return "float";
    case dtype::f64: return "double";
    case dtype::f16: return "half";
    case dtype::bf16: return "bfloat16";
    case dtype::i32: return "int32";
    case dtype::i64: return "int64";
    case dtype::u8: return "uint8";
  }
  return "?";
}

std::string_view short_name(dtype t) noexcept {
  switch (t) {
    case dtype::f32: return "f32";
    case dtype::f64: return "f64";
    case dtype::f16: return "f16";
    case dtype::bf16: return "bf16";
    case dtype::i32: return "i32";
    case dtype::i64: return "i64";
    case dtype::u8: return "u8";
  }
  return "?";
}

std::string_view to_string(reduce_op op) noexcept {
  switch (op) {
    case reduce_op::sum: return "sum";
    case reduce_op::prod: return "prod";
    case reduce_op::min: return "min";
    case reduce_op::max: return "max";
    case reduce_op::avg: return "avg";
  }
  return "?";
}

std::string_view to_string(collective c) noexcept {
  switch (c) {
    case collective::allreduce: return "allreduce";
    case collective::reduce: return "reduce";
    case collective::broadcast: return "broadcast";
    case collective::reduce_scatter: return "reduce_scatter";
    case collective::allgather: return "allgather";
    case collective::alltoall: return "alltoall";
    case collective::sendrecv: return "sendrecv";
    case collective::barrier: return "barrier";
  }
  return "?";
}

std::string_view to_string(algorithm a) noexcept {
  switch (a) {
    case algorithm::auto_select: return "auto";
    case algorithm::ring: return "ring";
    case algorithm::tree: return "tree";
    case algorithm::rd: return "rd";
    case algorithm::rabenseifner: return "rabenseifner";
    case algorithm::reducer: return "reducer";
    case algorithm::direct: return "direct";
  }
  return "?";
}

std::string_view to_string(transport t) noexcept {
  switch (t) {
    case transport::auto_select: return "auto";
    case transport::shm: return "shm";
    case transport::tcp: return "tcp";
  }
  return "?";
}

dtype parse_dtype(std::string_view name) {
  static const std::pair<std::string_view, dtype> table[] = {
      {"float", dtype::f32},     {"f32", dtype::f32},   {"float32", dtype::f32},
      {"double", dtype::f64},    {"f64", dtype::f64},   {"float64", dtype::f64},
      {"half", dtype::f16},      {"f16", dtype::f16},   {"float16", dtype::f16},
      {"bfloat16", dtype::bf16}, {"bf16", dtype::bf16}, {"int32", dtype::i32},
      {"i32", dtype::i32},       {"int", dtype::i32},   {"int64", dtype::i64},
      {"i64", dtype::i64},       {"uint8", dtype::u8},  {"u8", dtype::u8}};
  return parse_from("dtype", name, table);
}

reduce_op parse_reduce_op(std::string_view name) {
  static const std::pair<std::string_view, reduce_op> table[] = {{"sum", reduce_op::sum},
                                                                 {"prod", reduce_op::prod},
                                                                 {"min", reduce_op::min},
                                                                 {"max", reduce_op::max},
                                                                 {"avg", reduce_op::avg}};
  return parse_from("reduction", name, table);
}

collective parse_collective(std::string_view name) {
  static const std::pair<std::string_view, collective> table[] = {
      {"allreduce", collective::allreduce},
      {"reduce", collective::reduce},
      {"broadcast", collective::broadcast},
      {"reduce_scatter", collective::reduce_scatter},
      {"reducescatter", collective::reduce_scatter},
      {"allgather", collective::allgather},
      {"all_gather", collective::allgather},
      {"alltoall", collective::alltoall},
      {"sendrecv", collective::sendrecv},
      {"barrier", collective::barrier}};
  return parse_from("collective", name, table);
}

algorithm parse_algorithm(std::string_view name) {
  static const std::pair<std::string_view, algorithm> table[] = {
      {"auto", algorithm::auto_select},
      {"ring", algorithm::ring},
      {"tree", algorithm::tree},
      {"rd", algorithm::rd},
      {"rabenseifner", algorithm::rabenseifner},
      {"reducer", algorithm::reducer},
      {"direct", algorithm::direct}};
  return parse_from("algorithm", name, table);
}

transport parse_transport(std::string_view name) {
  static const std::pair<std::string_view, transport> table[] = {
      {"auto", transport::auto_select}, {"shm", transport::shm}, {"tcp", transport::tcp}};
  return parse_from("transport", name, table);
}

std::vector<algorithm> algorithms_for(collective c) {
  using a = algorithm;
  switch (c) {
    case collective::allreduce: return {a::ring, a::tree, a::rd, a::rabenseifner, a::reducer};
    case collective::reduce: return {a::ring, a::tree, a::reducer};
    case collective::broadcast: return {a::ring, a::tree, a::rd, a::direct};
    case collective::reduce_scatter: return {a::ring, a::rabenseifner, a::reducer, a::direct};
    case collective::allgather: return {a::ring, a::rd, a::direct};
    case collective::alltoall: return {a::direct};
    case collective::barrier: return {a::rd};
    case collective::sendrecv: return {};
  }
  return {};
}

float half_to_float(std::uint16_t h) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t mant = h & 0x3ffu;
  std::uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalize
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      bits = sign | ((127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

std::uint16_t float_to_half(float f) noexcept {
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  const std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u);   // NaN
  if (abs >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (abs < 0x38800000u) {               // subnormal or zero in half
    if (abs < 0x33000000u) return sign;  // rounds to zero
    const std::uint32_t e = abs >> 23;
    const std::uint32_t m = (abs & 0x7fffffu) | 0x800000u;
    const std::uint32_t shift = 126 - e;  // 14 + (113 - e) - 1 ... bits to drop
    std::uint32_t r = m >> shift;
    const std::uint32_t rem = m & ((1u << shift) - 1);
    const std::uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u))) ++r;
    return static_cast<std::uint16_t>(sign | r);
  }
  std::uint32_t r = abs - 0x38000000u;  // rebias exponent by (127-15) << 23
  r += 0xfffu + ((r >> 13) & 1u);
  return static_cast<std::uint16_t>(sign | (r >> 13));
}

}  // namespace keel::comm
