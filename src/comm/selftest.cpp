#include "keel/comm/selftest.hpp"

#include "keel/comm/dispatch.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace keel::comm {
namespace {

std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

bool is_float(dtype t) {
  return t == dtype::f32 || t == dtype::f64 || t == dtype::f16 || t == dtype::bf16;
}

// The input value of `rank` at element `i`.
double value(dtype t, reduce_op op, int rank, std::size_t i) {
  const std::uint64_t h = mix((static_cast<std::uint64_t>(rank) << 40) ^ i);
  if (op == reduce_op::prod) {
    if (is_float(t)) {
      static const double choices[] = {1, -1, 2, -2, 0.5, -0.5};
      return choices[h % 6];
    }
    return t == dtype::u8 ? static_cast<double>(h % 4) : static_cast<double>(h % 7) - 3;
  }
  if (t == dtype::u8) return static_cast<double>(h % 16);
  return static_cast<double>(h % 17) - 8;
}

void store_value(std::byte* p, dtype t, double v) {
  switch (t) {
    case dtype::f32: {
      const float x = static_cast<float>(v);
      std::memcpy(p, &x, 4);
      break;
    }
    case dtype::f64: std::memcpy(p, &v, 8); break;
    case dtype::f16: {
      const auto x = float_to_half(static_cast<float>(v));
      std::memcpy(p, &x, 2);
      break;
    }
    case dtype::bf16: {
      const auto x = float_to_bf16(static_cast<float>(v));
      std::memcpy(p, &x, 2);
      break;
    }
    case dtype::i32: {
      const auto x = static_cast<std::int32_t>(static_cast<std::int64_t>(v));
      std::memcpy(p, &x, 4);
      break;
    }
    case dtype::i64: {
      const auto x = static_cast<std::int64_t>(v);
      std::memcpy(p, &x, 8);
      break;
    }
    case dtype::u8: {
      const auto x = static_cast<std::uint8_t>(static_cast<std::int64_t>(v));
      std::memcpy(p, &x, 1);
      break;
    }
    default: break;  // not a buffer type (k_all_dtypes only)
  }
}

double load_value(const std::byte* p, dtype t) {
  switch (t) {
    case dtype::f32: {
      float x;
      std::memcpy(&x, p, 4);
      return x;
    }
    case dtype::f64: {
      double x;
      std::memcpy(&x, p, 8);
      return x;
    }
    case dtype::f16: {
      std::uint16_t x;
      std::memcpy(&x, p, 2);
      return half_to_float(x);
    }
    case dtype::bf16: {
      std::uint16_t x;
      std::memcpy(&x, p, 2);
      return bf16_to_float(x);
    }
    case dtype::i32: {
      std::int32_t x;
      std::memcpy(&x, p, 4);
      return x;
    }
    case dtype::i64: {
      std::int64_t x;
      std::memcpy(&x, p, 8);
      return static_cast<double>(x);
    }
    case dtype::u8: {
      std::uint8_t x;
      std::memcpy(&x, p, 1);
      return x;
    }
    default: break;  // not a buffer type (k_all_dtypes only)
  }
  return 0;
}

// The reduction over ranks of element i, in exact (wrapping, for integers) arithmetic.
void store_reduced(std::byte* p, dtype t, reduce_op op, int size, std::size_t i) {
  if (is_float(t)) {
    double acc = value(t, op, 0, i);
    for (int r = 1; r < size; ++r) {
      const double v = value(t, op, r, i);
      switch (op) {
        case reduce_op::sum:
        case reduce_op::avg: acc += v; break;
        case reduce_op::prod: acc *= v; break;
        case reduce_op::min: acc = std::min(acc, v); break;
        case reduce_op::max: acc = std::max(acc, v); break;
      }
    }
    if (op == reduce_op::avg) acc /= size;
    store_value(p, t, acc);
    return;
  }
  std::uint64_t acc = static_cast<std::uint64_t>(static_cast<std::int64_t>(value(t, op, 0, i)));
  std::int64_t lo = static_cast<std::int64_t>(value(t, op, 0, i)), hi = lo;
  for (int r = 1; r < size; ++r) {
    const auto v = static_cast<std::int64_t>(value(t, op, r, i));
    if (op == reduce_op::prod)
      acc *= static_cast<std::uint64_t>(v);
    else
      acc += static_cast<std::uint64_t>(v);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  std::int64_t result = 0;
  switch (op) {
    case reduce_op::sum:
    case reduce_op::prod: result = static_cast<std::int64_t>(acc); break;
    case reduce_op::min: result = lo; break;
    case reduce_op::max: result = hi; break;
    case reduce_op::avg: {
      // The library sums in the element type (wrapping) and then divides.
      switch (t) {
        case dtype::i32:
          result = static_cast<std::int32_t>(static_cast<std::uint32_t>(acc)) / size;
          break;
        case dtype::u8: result = static_cast<std::uint8_t>(acc) / size; break;
        default: result = static_cast<std::int64_t>(acc) / size; break;
      }
      break;
    }
  }
  switch (t) {
    case dtype::i32: {
      const auto x = static_cast<std::int32_t>(static_cast<std::uint32_t>(result));
      std::memcpy(p, &x, 4);
      break;
    }
    case dtype::u8: {
      const auto x = static_cast<std::uint8_t>(result);
      std::memcpy(p, &x, 1);
      break;
    }
    default: std::memcpy(p, &result, 8); break;
  }
}

bool reduces(collective c) { return is_reduction(c); }

std::size_t input_elems(const test_case& t, int size) { return input_count(t.coll, t.count, size); }

std::size_t output_elems(const test_case& t, int size) {
  return output_count(t.coll, t.count, size);
}

}  // namespace

std::string describe(const test_case& t) {
  return fmt::format("{} {} {} {} count={} root={}{}", to_string(t.coll), to_string(t.algo),
                     short_name(t.type), reduces(t.coll) ? to_string(t.op) : "-", t.count, t.root,
                     t.in_place ? " in-place" : "");
}

void make_case_buffers(const test_case& t, int rank, int size, std::vector<std::byte>& input,
                       std::vector<std::byte>& expected) {
  const std::size_t E = dtype_size(t.type);
  const std::size_t in_n = input_elems(t, size), out_n = output_elems(t, size);
  input.assign(in_n * E, std::byte{0});
  for (std::size_t i = 0; i < in_n; ++i) {
    store_value(input.data() + i * E, t.type, value(t.type, t.op, rank, i));
  }
  expected.assign(out_n * E, std::byte{0});
  for (std::size_t i = 0; i < out_n; ++i) {
    std::byte* p = expected.data() + i * E;
    switch (t.coll) {
      case collective::allreduce: store_reduced(p, t.type, t.op, size, i); break;
      case collective::reduce:
        if (rank == t.root) store_reduced(p, t.type, t.op, size, i);
        break;
      case collective::reduce_scatter:
        store_reduced(p, t.type, t.op, size, rank * t.count + i);
        break;
      case collective::broadcast: store_value(p, t.type, value(t.type, t.op, t.root, i)); break;
      case collective::allgather:
        store_value(p, t.type, value(t.type, t.op, static_cast<int>(i / t.count), i % t.count));
        break;
      case collective::alltoall:
        store_value(
            p, t.type,
            value(t.type, t.op, static_cast<int>(i / t.count), rank * t.count + i % t.count));
        break;
      default: break;
    }
  }
}

std::size_t count_wrong(const test_case& t, int rank, int size,
                        const std::vector<std::byte>& output,
                        const std::vector<std::byte>& expected) {
  if (t.coll == collective::reduce && rank != t.root) return 0;
  const std::size_t E = dtype_size(t.type);
  const std::size_t n = output_elems(t, size);
  if (output.size() < n * E) return n;
  if (!is_float(t.type) || t.op != reduce_op::avg || !reduces(t.coll)) {
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < n; ++i) {
      wrong += std::memcmp(output.data() + i * E, expected.data() + i * E, E) != 0;
    }
    return wrong;
  }
  const double eps = t.type == dtype::f64   ? 1e-12
                     : t.type == dtype::f32 ? 1e-6
                     : t.type == dtype::f16 ? 2e-3
                                            : 1.6e-2;
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double got = load_value(output.data() + i * E, t.type);
    const double want = load_value(expected.data() + i * E, t.type);
    wrong += !(std::fabs(got - want) <= eps * std::max(1.0, std::fabs(want)));
  }
  return wrong;
}

std::size_t run_case(communicator& c, const test_case& t, call_options o) {
  const int rank = c.rank(), size = c.size();
  const std::size_t E = dtype_size(t.type);
  std::vector<std::byte> input, expected;
  make_case_buffers(t, rank, size, input, expected);
  o.algo = t.algo;
  std::vector<std::byte> output(output_elems(t, size) * E, std::byte{0x5a});
  std::vector<std::byte> big;  // in-place reduce_scatter / allgather work in one buffer
  const std::byte* in = input.data();
  std::byte* out = output.data();
  if (t.in_place) {
    switch (t.coll) {
      case collective::reduce:  // in place on the root only
        if (rank == t.root) {
          output = input;
          in = out = output.data();
        }
        break;
      case collective::broadcast:
        if (rank == t.root) output = input;
        in = out = output.data();
        break;
      case collective::reduce_scatter:
        big = input;
        in = big.data();
        out = big.data() + rank * t.count * E;
        break;
      case collective::allgather:
        if (t.count) std::memcpy(output.data() + rank * t.count * E, input.data(), t.count * E);
        in = output.data() + rank * t.count * E;
        out = output.data();
        break;
      case collective::sendrecv:
      case collective::barrier: break;
      default:
        output = input;
        in = out = output.data();
        break;
    }
  }
  run_collective(c, t.coll, in, out, t.count, t.type, t.op, t.root, o);
  switch (t.coll) {
    case collective::barrier: return 0;
    case collective::sendrecv: {
      // The ring's expectation: rank-1's input, as a broadcast from it would deliver.
      if (size == 1) return 0;
      test_case bc = t;
      bc.coll = collective::broadcast;
      bc.root = (rank - 1 + size) % size;
      std::vector<std::byte> in2, want;
      make_case_buffers(bc, rank, size, in2, want);
      return count_wrong(bc, rank, size, output, want);
    }
    case collective::reduce_scatter:
      if (t.in_place && t.count) std::memcpy(output.data(), out, t.count * E);
      break;
    default: break;
  }
  return count_wrong(t, rank, size, output, expected);
}

verify_report run_verify(communicator& c, bool full, std::size_t max_bytes) {
  const auto t0 = std::chrono::steady_clock::now();
  verify_report report;
  const auto cases = case_matrix(c.size(), full, max_bytes);
  report.cases = cases.size();
  for (const test_case& t : cases) {
    std::int64_t wrong = static_cast<std::int64_t>(run_case(c, t));
    c.allreduce(&wrong, &wrong, 1, dtype::i64, reduce_op::sum);
    if (wrong) report.failed.push_back(fmt::format("{}: {} wrong", describe(t), wrong));
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

std::vector<test_case> case_matrix(int size, bool full, std::size_t max_bytes) {
  std::vector<test_case> cases;
  const collective colls[] = {collective::allreduce, collective::reduce,
                              collective::broadcast, collective::reduce_scatter,
                              collective::allgather, collective::alltoall,
                              collective::sendrecv,  collective::barrier};
  // Sizes in elements: empty, tiny, not divisible by the rank count, a few chunks.
  std::vector<std::size_t> counts = {0, 1, 7, 1023, 100003};
  if (full) {
    for (std::size_t b = 1 << 20; b <= max_bytes; b *= 4) counts.push_back(b / 4 + 3);
  }
  std::size_t rotate = 0;
  for (collective c : colls) {
    std::vector<algorithm> algos = algorithms_for(c);
    if (algos.empty()) algos.push_back(algorithm::auto_select);
    algos.push_back(algorithm::auto_select);
    for (algorithm a : algos) {
      if (c == collective::reduce_scatter && a == algorithm::rabenseifner && (size & (size - 1))) {
        continue;  // needs a power of two; auto falls back to ring
      }
      for (dtype t : k_all_dtypes) {
        const bool reduces_data = c == collective::allreduce || c == collective::reduce ||
                                  c == collective::reduce_scatter;
        std::vector<reduce_op> ops;
        if (full && reduces_data)
          ops.assign(std::begin(k_all_reduce_ops), std::end(k_all_reduce_ops));
        else
          ops.push_back(k_all_reduce_ops[rotate % 5]);
        const bool per_rank = c == collective::reduce_scatter || c == collective::allgather ||
                              c == collective::alltoall;
        const auto count_of = [&](std::size_t n) {
          return per_rank && n > 1 ? std::max<std::size_t>(1, n / size) : n;
        };
        // The sizes whose buffers fit max_bytes (0 always does); the rotated slice picks
        // among these, so a small max_bytes narrows the sizes, not the matrix.
        std::vector<std::size_t> fitting;
        for (std::size_t n : counts)
          if (count_of(n) * dtype_size(t) * (per_rank ? size : 1) <= max_bytes)
            fitting.push_back(n);
        for (reduce_op op : ops) {
          std::vector<std::size_t> sizes;
          if (full)
            sizes = fitting;
          else
            sizes.push_back(fitting[rotate % fitting.size()]);
          for (std::size_t n : sizes) {
            const std::size_t count = count_of(n);
            test_case tc;
            tc.coll = c;
            tc.algo = a;
            tc.type = t;
            tc.op = op;
            tc.count = count;
            tc.root = static_cast<int>(rotate % size);
            tc.in_place = (rotate / 3) % 2 == 1 && c != collective::sendrecv;
            cases.push_back(tc);
            ++rotate;
          }
        }
      }
    }
  }
  return cases;
}

}  // namespace keel::comm
