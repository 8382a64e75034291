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

}  // namespace keel::comm
