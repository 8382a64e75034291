#include "algorithm_table.hpp"

#include <algorithm>
#include <cmath>

namespace keel::comm::detail {
namespace {

using a_t = algorithm;
using c_t = collective;

// The model's shorthands for a job of n ranks and a message of S bytes.
struct terms {
  double a, b, g, S;
  int n;
  double L;     // ceil(log2 n)
  int p2;       // the largest power of two <= n
  bool fold;    // n is not a power of two: extra ranks fold in first
  double f;     // (n - 1) / n, the share of the data a rank sends in a ring
  double fill;  // one chunk's pipeline fill per hop
};

terms at(const cost_inputs& in, double S) {
  terms t{};
  t.a = in.alpha;
  t.b = in.beta;
  t.g = in.gamma;
  t.S = S;
  t.n = in.n;
  t.L = in.n <= 1 ? 0 : std::ceil(std::log2(in.n));
  t.p2 = 1;
  while (t.p2 * 2 <= in.n) t.p2 *= 2;
  t.fold = t.p2 != in.n;
  t.f = (in.n - 1.0) / in.n;
  t.fill = std::min(S, in.chunk) * in.beta;
  return t;
}

bool power_of_two(int n) { return (n & (n - 1)) == 0; }

double free_of_charge(const cost_inputs&, double) { return 0; }

// n - 1 messages posted at once, (n - 1)/n of S sent per rank: allgather's and alltoall's
// direct algorithms (one block to every peer, or a block per peer).
double direct_sends(const cost_inputs& in, double S) {
  const terms t = at(in, S);
  return (t.n - 1) * t.a * 1.5 + t.f * S * t.b;
}

// clang-format off
constexpr algorithm_entry k_table[] = {
    // allreduce
    {c_t::allreduce, a_t::ring, nullptr, [](const cost_inputs& in, double S) {
       const terms t = at(in, S);
       return 2 * (t.n - 1) * t.a + 2 * t.f * S * t.b + t.f * S * t.g;
     }, allreduce_ring},
    {c_t::allreduce, a_t::tree, nullptr, [](const cost_inputs& in, double S) {
       const terms t = at(in, S);
       return 2 * t.L * (t.a + t.fill) + (t.n <= 2 ? S : 2 * S) * t.b +
              (t.n <= 2 ? 0.5 : 1.0) * S * t.g;
     }, allreduce_tree},
    {c_t::allreduce, a_t::rd, nullptr, [](const cost_inputs& in, double S) {
       const terms t = at(in, S);
       return (t.L + (t.fold ? 2 : 0)) * (t.a + S * t.b) + (t.L + t.fold) * S * t.g;
     }, allreduce_rd},
    {c_t::allreduce, a_t::rabenseifner, nullptr, [](const cost_inputs& in, double S) {
       const terms t = at(in, S);
       return 2 * t.L * t.a + 2.0 * (t.p2 - 1) / t.p2 * S * t.b + (t.p2 - 1.0) / t.p2 * S * t.g +
              (t.fold ? 2 * (t.a + S * t.b) + S * t.g : 0);
     }, allreduce_rabenseifner},
    {c_t::allreduce, a_t::reducer, nullptr, [](const cost_inputs& in, double S) {
       const terms t = at(in, S);
       return 2 * t.a + 2 * (t.n - 1) * S * t.b + (t.n - 1) * S * t.g;
     }, allreduce_reducer},
    // reduce
    {c_t::reduce, a_t::ring, nullptr, [](const cost_inputs& in, double S) {
       const terms t = at(in, S);
       return (t.n - 1) * (t.a + t.fill) + S * t.b + S * t.g;
     }, reduce_ring},
    {c_t::reduce, a_t::tree, nullptr, [](const cost_inputs& in, double S) {
       const terms t = at(in, S);
       return t.L * (t.a + t.fill) + 2 * S * t.b + 2 * S * t.g;
     }, reduce_tree},
    {c_t::reduce, a_t::reducer, nullptr, [](const cost_inputs& in, double S) {
       const terms t = at(in, S);
       return t.a + (t.n - 1) * S * (t.b + t.g);
     }, reduce_reducer},
    // broadcast
    {c_t::broadcast, a_t::ring, nullptr, [](const cost_inputs& in, double S) {
       const terms t = at(in, S);
       return (t.n - 1) * (t.a + t.fill) + S * t.b;
     }, broadcast_ring},
    {c_t::broadcast, a_t::tree, nullptr, [](const cost_inputs& in, double S) {
       const terms t = at(in, S);
       return t.L * (t.a + t.fill) + 2 * S * t.b;
     }, broadcast_tree},
    {c_t::broadcast, a_t::rd, nullptr, [](const cost_inputs& in, double S) {
       const terms t = at(in, S);
       return t.L * (t.a + S * t.b);
     }, broadcast_rd},
    {c_t::broadcast, a_t::direct, nullptr, [](const cost_inputs& in, double S) {
       const terms t = at(in, S);
       return t.a + (t.n - 1) * S * t.b;
     }, broadcast_direct},
    // reduce_scatter
    {c_t::reduce_scatter, a_t::ring, nullptr, [](const cost_inputs& in, double S) {
       const terms t = at(in, S);
       return (t.n - 1) * t.a + t.f * S * (t.b + t.g);
     }, reduce_scatter_ring},
    {c_t::reduce_scatter, a_t::rabenseifner, power_of_two, [](const cost_inputs& in, double S) {
       const terms t = at(in, S);
       return t.L * t.a + t.f * S * (t.b + t.g);
     }, reduce_scatter_rabenseifner},
    {c_t::reduce_scatter, a_t::reducer, nullptr, [](const cost_inputs& in, double S) {
       const terms t = at(in, S);
       return 2 * t.a + (t.n - 1) * S * (t.b + t.g) + t.f * S * t.b;
     }, reduce_scatter_reducer},
    {c_t::reduce_scatter, a_t::direct, nullptr, [](const cost_inputs& in, double S) {
       const terms t = at(in, S);
       return (t.n - 1) * t.a * 1.5 + t.f * S * (t.b + t.g);
     }, reduce_scatter_direct},
    // allgather
    {c_t::allgather, a_t::ring, nullptr, [](const cost_inputs& in, double S) {
       const terms t = at(in, S);
       return (t.n - 1) * t.a + t.f * S * t.b;
     }, allgather_ring},
    {c_t::allgather, a_t::rd, nullptr, [](const cost_inputs& in, double S) {
       const terms t = at(in, S);
       return t.L * t.a + t.f * S * t.b + S * t.b;  // + Bruck's rotation copy
     }, allgather_rd},
    {c_t::allgather, a_t::direct, nullptr, direct_sends, allgather_direct},
    // alltoall: every rank sends each other rank its block, all at once; barrier: no data
    {c_t::alltoall, a_t::direct, nullptr, direct_sends, alltoall_direct},
    {c_t::barrier, a_t::rd, nullptr, free_of_charge, barrier_rd},
};
// clang-format on

}  // namespace

std::span<const algorithm_entry> algorithm_table() noexcept { return k_table; }

const algorithm_entry* find_algorithm(collective c, algorithm a) noexcept {
  for (const algorithm_entry& e : k_table) {
    if (e.coll == c && e.algo == a) return &e;
  }
  return nullptr;
}

bool algorithm_applies(collective c, algorithm a, int n) noexcept {
  const algorithm_entry* e = find_algorithm(c, a);
  return e != nullptr && (e->applies == nullptr || e->applies(n));
}

}  // namespace keel::comm::detail
