#include "keel/perf/ops.hpp"

#include "keel/core/error.hpp"

#include <fmt/format.h>

#include <cmath>

namespace keel::perf {
namespace {

void positive(double v, const char* field) {
  if (!(v > 0) || !std::isfinite(v))
    throw invalid_argument(fmt::format("{} must be positive (got {})", field, v));
}

}  // namespace

op_cost gemm_cost(const gemm_shape& s, dtype t) {
  positive(s.m, "m");
  positive(s.n, "n");
  positive(s.k, "k");
  positive(s.batch, "batch");
  const double b = bytes_of(t);
  return {2 * s.m * s.n * s.k * s.batch, (s.m * s.k + s.k * s.n + s.m * s.n) * b * s.batch};
}

op_cost spmv_cost(const spmv_shape& s, dtype t) {
  positive(s.rows, "rows");
  positive(s.cols, "cols");
  positive(s.nnz, "nnz");
  positive(s.index_bytes, "index bytes");
  const double b = bytes_of(t);
  const double x_reads = s.x_reuse ? std::min(s.cols, s.nnz) : s.nnz;
  const double bytes = s.nnz * (b + s.index_bytes)     // values + column indices
                       + (s.rows + 1) * s.index_bytes  // row pointers
                       + x_reads * b                   // x
                       + s.rows * b;                   // y written
  return {2 * s.nnz, bytes};
}

std::int64_t conv2d_shape::out_h() const {
  return (h + 2 * pad_h - dilation_h * (r - 1) - 1) / stride_h + 1;
}
std::int64_t conv2d_shape::out_w() const {
  return (w + 2 * pad_w - dilation_w * (s - 1) - 1) / stride_w + 1;
}
double conv2d_shape::macs() const {
  const std::int64_t per_group = c / groups;  // exact: conv2d_cost checks that groups divides c
  return static_cast<double>(n) * k * out_h() * out_w() * static_cast<double>(per_group) * r * s;
}

op_cost conv2d_cost(const conv2d_shape& s, dtype t) {
  for (auto [v, f] : {std::pair{s.n, "batch"},
                      {s.c, "in channels"},
                      {s.h, "height"},
                      {s.w, "width"},
                      {s.k, "out channels"},
                      {s.r, "kernel height"},
                      {s.s, "kernel width"},
                      {s.stride_h, "stride"},
                      {s.stride_w, "stride"},
                      {s.groups, "groups"},
                      {s.dilation_h, "dilation"},
                      {s.dilation_w, "dilation"}}) {
    positive(static_cast<double>(v), f);
  }
  if (s.pad_h < 0 || s.pad_w < 0) throw invalid_argument("padding must be >= 0");
  if (s.c % s.groups || s.k % s.groups) {
    throw invalid_argument(fmt::format("groups {} must divide in channels {} and out channels {}",
                                       s.groups, s.c, s.k));
  }
  if (s.out_h() < 1 || s.out_w() < 1) throw invalid_argument("kernel larger than the padded input");
  const double b = bytes_of(t);
  const double out = static_cast<double>(s.n) * s.k * s.out_h() * s.out_w();
  const double in = static_cast<double>(s.n) * s.c * s.h * s.w;
  const std::int64_t per_group = s.c / s.groups;  // exact: checked above
  const double weights =
      static_cast<double>(s.k) * static_cast<double>(per_group) * s.r * s.s + (s.bias ? s.k : 0);
  return {2 * s.macs() + (s.bias ? out : 0), (in + weights + out) * b};
}

op_cost attention_cost(const attention_shape& s, dtype t, std::optional<dtype> kv) {
  positive(s.batch, "batch");
  positive(s.heads, "heads");
  positive(s.kv_heads, "kv heads");
  positive(s.q_len, "query length");
  positive(s.kv_len, "kv length");
  positive(s.head_dim, "head dim");
  if (std::fmod(s.heads, s.kv_heads) != 0) throw invalid_argument("kv heads must divide heads");
  const double b = bytes_of(t);
  const double kvb = bytes_of(kv.value_or(t));
  const double scores = s.batch * s.heads * s.q_len * s.kv_len * (s.causal_skip ? 0.5 : 1.0);
  op_cost c;
  c.flops = 2 * scores * s.head_dim    // Q K^T
            + 2 * scores * s.head_dim  // P V
            + 5 * scores;              // scale, max, exp, sum, divide
  const double q_and_o = 2 * s.batch * s.heads * s.q_len * s.head_dim * b;
  const double k_and_v = 2 * s.batch * s.kv_heads * s.kv_len * s.head_dim * kvb;
  c.bytes = q_and_o + k_and_v;
  if (!s.flash) c.bytes += 4 * scores * b;  // write S, read S, write P, read P
  return c;
}

op_cost elementwise_cost(const elementwise_shape& s, dtype t) {
  positive(s.elements, "elements");
  if (s.inputs < 0 || s.outputs < 0 || s.flops_per_element < 0) {
    throw invalid_argument("inputs, outputs and flops per element must be >= 0");
  }
  return {s.elements * s.flops_per_element, s.elements * (s.inputs + s.outputs) * bytes_of(t)};
}

}  // namespace keel::perf
