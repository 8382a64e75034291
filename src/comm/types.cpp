#include "keel/comm/types.hpp"

#include <fmt/format.h>

#include <cstring>

#include "algorithm_table.hpp"
#include "keel/core/enum_names.hpp"

namespace keel::comm {
namespace {

// Each table: the canonical names first (to_string's), then the accepted spellings. Names are
// matched ignoring case.
constexpr enum_entry<reduce_op> k_reduce_entries[] = {{reduce_op::sum, "sum"},
                                                      {reduce_op::prod, "prod"},
                                                      {reduce_op::min, "min"},
                                                      {reduce_op::max, "max"},
                                                      {reduce_op::avg, "avg"}};
constexpr enum_names<reduce_op> k_reduce_names{"reduction", k_reduce_entries, name_case::ignore,
                                               "?"};

constexpr enum_entry<collective> k_collective_entries[] = {
    {collective::allreduce, "allreduce"},
    {collective::reduce, "reduce"},
    {collective::broadcast, "broadcast"},
    {collective::reduce_scatter, "reduce_scatter"},
    {collective::allgather, "allgather"},
    {collective::alltoall, "alltoall"},
    {collective::sendrecv, "sendrecv"},
    {collective::barrier, "barrier"},
    {collective::reduce_scatter, "reducescatter"},
    {collective::allgather, "all_gather"}};
constexpr enum_names<collective> k_collective_names{"collective", k_collective_entries,
                                                    name_case::ignore, "?"};

constexpr enum_entry<algorithm> k_algorithm_entries[] = {{algorithm::auto_select, "auto"},
                                                         {algorithm::ring, "ring"},
                                                         {algorithm::tree, "tree"},
                                                         {algorithm::rd, "rd"},
                                                         {algorithm::rabenseifner, "rabenseifner"},
                                                         {algorithm::reducer, "reducer"},
                                                         {algorithm::direct, "direct"}};
constexpr enum_names<algorithm> k_algorithm_names{"algorithm", k_algorithm_entries,
                                                  name_case::ignore, "?"};

constexpr enum_entry<transport> k_transport_entries[] = {
    {transport::auto_select, "auto"}, {transport::shm, "shm"}, {transport::tcp, "tcp"}};
constexpr enum_names<transport> k_transport_names{"transport", k_transport_entries,
                                                  name_case::ignore, "?"};

}  // namespace

std::size_t dtype_size(dtype t) noexcept { return bits_of(t) / 8; }

std::string_view to_string(dtype t) noexcept { return nccl_name(t); }
std::string_view to_string(reduce_op op) noexcept { return k_reduce_names.name(op); }
std::string_view to_string(collective c) noexcept { return k_collective_names.name(c); }
std::string_view to_string(algorithm a) noexcept { return k_algorithm_names.name(a); }
std::string_view to_string(transport t) noexcept { return k_transport_names.name(t); }

dtype parse_dtype(std::string_view name) {
  return keel::parse_dtype(name, k_all_dtypes, dtype_style::nccl);
}
reduce_op parse_reduce_op(std::string_view name) { return k_reduce_names.parse(name); }
collective parse_collective(std::string_view name) { return k_collective_names.parse(name); }
algorithm parse_algorithm(std::string_view name) { return k_algorithm_names.parse(name); }
transport parse_transport(std::string_view name) { return k_transport_names.parse(name); }

std::vector<algorithm> algorithms_for(collective c) {
  std::vector<algorithm> out;
  for (const auto& e : detail::algorithm_table()) {
    if (e.coll == c) out.push_back(e.algo);
  }
  return out;
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
