#include "keel/comm/bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "keel/comm/dispatch.hpp"
#include "keel/comm/selftest.hpp"
#include "keel/core/error.hpp"

namespace keel::comm {

double busbw_factor(collective c, int n) noexcept {
  switch (c) {
    case collective::allreduce: return 2.0 * (n - 1) / n;
    case collective::reduce_scatter:
    case collective::allgather:
    case collective::alltoall: return static_cast<double>(n - 1) / n;
    default: return 1.0;
  }
}

bench_result run_bench(communicator& c, const bench_options& o,
                       const std::function<void(const bench_row&)>& on_row) {
  using steady = std::chrono::steady_clock;
  const int n = c.size(), me = c.rank();
  if (o.coll == collective::barrier)
    throw keel::invalid_argument("bench: a barrier has no bytes to measure");
  if (o.min_bytes > o.max_bytes)
    throw keel::invalid_argument("bench: min_bytes is larger than max_bytes");
  if (o.root < 0 || o.root >= n)
    throw keel::invalid_argument(fmt::format("root {} is not a rank of {}", o.root, n));
  const std::size_t E = dtype_size(o.type);
  const bool per_rank = is_per_rank(o.coll);
  call_options co;
  co.algo = o.algo;
  bench_result result;
  double bw_sum = 0;
  int bw_count = 0;
  std::vector<std::byte> in, out;
  for (double sz = static_cast<double>(o.min_bytes);
       sz <= static_cast<double>(o.max_bytes) * 1.0000001; sz = std::max(sz * o.factor, sz + 1)) {
    const std::size_t bytes_req = static_cast<std::size_t>(sz);
    bench_row row;
    row.count = bytes_req / E / (per_rank ? n : 1);
    row.bytes = row.count * E * (per_rank ? n : 1);
    row.root = (o.coll == collective::reduce || o.coll == collective::broadcast) ? o.root : -1;
    const std::size_t count = row.count;
    in.assign(input_count(o.coll, count, n) * E, std::byte{1});
    out.assign(output_count(o.coll, count, n) * E, std::byte{0});
    for (bench_timing* res : {&row.out_of_place, &row.in_place}) {
      const bool inplace = res == &row.in_place;
      std::byte* ip = in.data();
      std::byte* op = out.data();
      // In place as nccl-tests does it: the output buffer, or the rank's slice of it.
      const std::byte* src = inplace ? op : ip;
      std::byte* dst = op;
      if (inplace && o.coll == collective::reduce_scatter) {
        src = ip;
        dst = ip + me * count * E;
      } else if (inplace && o.coll == collective::allgather) {
        src = op + me * count * E;
      } else if (o.coll == collective::sendrecv) {
        src = ip;
      }
      auto once = [&] { run_collective(c, o.coll, src, dst, count, o.type, o.op, o.root, co); };
      for (int i = 0; i < o.warmup; ++i) once();
      c.barrier();
      const auto t0 = steady::now();
      for (int i = 0; i < o.iters; ++i) once();
      double us = std::chrono::duration<double, std::micro>(steady::now() - t0).count() / o.iters;
      c.allreduce(&us, &us, 1, dtype::f64, reduce_op::max);
      std::int64_t wrong = 0;
      if (o.check) {
        test_case t{o.coll, o.algo, o.type, o.op, count, o.root, inplace};
        wrong = static_cast<std::int64_t>(run_case(c, t, co));
        c.allreduce(&wrong, &wrong, 1, dtype::i64, reduce_op::sum);
      }
      res->time_us = us;
      res->algbw = us > 0 ? static_cast<double>(row.bytes) / (us * 1e3) : 0;
      res->busbw = res->algbw * busbw_factor(o.coll, n);
      res->wrong = wrong;
      result.wrong += wrong;
      bw_sum += res->busbw;
      ++bw_count;
    }
    result.rows.push_back(row);
    if (on_row) on_row(row);
    if (bytes_req >= o.max_bytes) break;
  }
  result.avg_busbw = bw_count ? bw_sum / bw_count : 0;
  return result;
}

}  // namespace keel::comm
