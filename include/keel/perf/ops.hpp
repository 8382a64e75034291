// keel::perf ops — minimum FLOPs and DRAM bytes of the kernels deep-learning code spends its
// time in: GEMM, CSR SpMV, 2-D convolution, attention, and elementwise maps.
//
// Counts follow the conventions of the spec (../shared/specs/perf-model.md): a multiply-add
// is 2 FLOPs; bytes are the compulsory traffic (each operand read once, each result written
// once) unless a shape field says otherwise (SpMV's x reuse, attention without a fused
// kernel). Each function validates its shape (positive sizes, divisibility) and throws
// keel::invalid_argument naming the bad field. Pure functions; thread-safe.
#pragma once

#include "keel/perf/dtype.hpp"
#include "keel/perf/roofline.hpp"

#include <cstdint>
#include <optional>

namespace keel::perf {

// C[m,n] = A[m,k] B[k,n], `batch` independent products.
struct gemm_shape {
  double m = 0, n = 0, k = 0, batch = 1;
};
op_cost gemm_cost(const gemm_shape& s, dtype t);

// y = A x with A in CSR: values (dtype), column indices and row pointers (index_bytes each).
// x_reuse = true: every x element read from DRAM once (perfect cache); false: one x read per
// nonzero (no reuse, the worst case of a scattered pattern).
struct spmv_shape {
  double rows = 0, cols = 0, nnz = 0;
  double index_bytes = 4;
  bool x_reuse = true;
};
op_cost spmv_cost(const spmv_shape& s, dtype t);

// NCHW input, K filters of (C/groups) x R x S, output N x K x P x Q.
struct conv2d_shape {
  std::int64_t n = 1, c = 0, h = 0, w = 0, k = 0, r = 1, s = 1;
  std::int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1;
  std::int64_t groups = 1;
  bool bias = false;
  std::int64_t out_h() const;
  std::int64_t out_w() const;
  double macs() const;
};
op_cost conv2d_cost(const conv2d_shape& s, dtype t);

// softmax(Q K^T / sqrt(d)) V for `batch` x `heads` query heads sharing `kv_heads` K/V heads.
// flash = a fused kernel (scores stay on chip); otherwise the score and probability matrices
// make a round trip through DRAM. causal halves the useful score work when `causal_skip`.
struct attention_shape {
  double batch = 1, heads = 0, kv_heads = 0, q_len = 0, kv_len = 0, head_dim = 0;
  bool flash = true;
  bool causal_skip = false;
};
// `kv` is the K/V storage type when it differs from `t` (an fp8 KV cache).
op_cost attention_cost(const attention_shape& s, dtype t, std::optional<dtype> kv = std::nullopt);

// `elements` outputs, each reading `inputs` and writing `outputs` values with
// `flops_per_element` operations.
struct elementwise_shape {
  double elements = 0, inputs = 1, outputs = 1, flops_per_element = 1;
};
op_cost elementwise_cost(const elementwise_shape& s, dtype t);

}  // namespace keel::perf
