// Op counts and the roofline, checked against hand-computed values.
#include "keel/perf/ops.hpp"
#include "keel/core/error.hpp"
#include "keel/perf/gpu_database.hpp"
#include "keel/perf/roofline.hpp"

#include <gtest/gtest.h>

namespace keel::perf {
namespace {

TEST(Roofline, BoundSwitchesAtTheRidge) {
  // 100 FLOP/s peak, 10 B/s: ridge 10 FLOP/byte.
  const roofline_point mem = evaluate({50, 10}, 100, 10);  // AI 5
  EXPECT_EQ(mem.limit, bound::memory);
  EXPECT_DOUBLE_EQ(mem.ridge, 10);
  EXPECT_DOUBLE_EQ(mem.seconds, 1.0);
  EXPECT_DOUBLE_EQ(mem.fraction_of_peak, 0.5);
  const roofline_point cmp = evaluate({1000, 10}, 100, 10);  // AI 100
  EXPECT_EQ(cmp.limit, bound::compute);
  EXPECT_DOUBLE_EQ(cmp.seconds, 10.0);
  EXPECT_DOUBLE_EQ(cmp.fraction_of_peak, 1.0);
  EXPECT_THROW(evaluate({1, 1}, 0, 1), invalid_argument);
}

TEST(Ops, GemmCountsTwoFlopsPerMac) {
  const op_cost c = gemm_cost({1024, 2048, 512}, dtype::bf16);
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 1024 * 2048 * 512);
  EXPECT_DOUBLE_EQ(c.bytes, (1024.0 * 512 + 512.0 * 2048 + 1024.0 * 2048) * 2);
  EXPECT_THROW(gemm_cost({0, 1, 1}, dtype::f32), invalid_argument);
}

TEST(Ops, SpmvFp64IsFarBelowEveryRidge) {
  const op_cost c = spmv_cost({1e6, 1e6, 1e7}, dtype::f64);
  EXPECT_DOUBLE_EQ(c.flops, 2e7);
  // 12 bytes per nonzero + row pointers + x once + y once.
  EXPECT_DOUBLE_EQ(c.bytes, 1e7 * 12 + (1e6 + 1) * 4 + 1e6 * 8 + 1e6 * 8);
  for (const gpu_spec& g : gpu_database::builtin().gpus()) {
    const peak_rate p = g.peak(dtype::f64);
    const roofline_point r = evaluate(c, p.tflops * 1e12, g.bandwidth_bytes_per_s());
    EXPECT_EQ(r.limit, bound::memory) << g.name;
  }
  const op_cost worst = spmv_cost({1e6, 1e6, 1e7, 4, false}, dtype::f64);
  EXPECT_DOUBLE_EQ(worst.bytes - c.bytes, (1e7 - 1e6) * 8);
}

TEST(Ops, Conv2dMatchesResNetStem) {
  // ResNet-50 conv1: 3->64, 7x7, stride 2, pad 3, 224x224 -> 112x112: 118.0 MMACs.
  conv2d_shape s;
  s.c = 3, s.h = 224, s.w = 224, s.k = 64, s.r = 7, s.s = 7, s.stride_h = s.stride_w = 2;
  s.pad_h = s.pad_w = 3;
  EXPECT_EQ(s.out_h(), 112);
  EXPECT_DOUBLE_EQ(s.macs(), 64.0 * 112 * 112 * 3 * 49);
  // Depthwise: groups = channels.
  conv2d_shape dw;
  dw.c = dw.k = dw.groups = 32, dw.h = dw.w = 10, dw.r = dw.s = 3, dw.pad_h = dw.pad_w = 1;
  EXPECT_DOUBLE_EQ(dw.macs(), 32.0 * 100 * 9);
  dw.groups = 3;
  EXPECT_THROW(conv2d_cost(dw, dtype::f32), invalid_argument);
}

TEST(Ops, AttentionFlashSavesTheScoreRoundTrip) {
  attention_shape s;
  s.heads = s.kv_heads = 32, s.q_len = s.kv_len = 128, s.head_dim = 128;
  const op_cost flash = attention_cost(s, dtype::f16);
  EXPECT_DOUBLE_EQ(flash.flops, 4.0 * 32 * 128 * 128 * 128 + 5.0 * 32 * 128 * 128);
  s.flash = false;
  const op_cost unfused = attention_cost(s, dtype::f16);
  EXPECT_DOUBLE_EQ(unfused.bytes - flash.bytes, 4.0 * 32 * 128 * 128 * 2);
  // GQA with an fp8 KV cache reads fewer K/V bytes.
  s.flash = true, s.kv_heads = 8;
  EXPECT_LT(attention_cost(s, dtype::f16, dtype::f8).bytes, flash.bytes);
}

TEST(Ops, Elementwise) {
  const op_cost c = elementwise_cost({1e6, 2, 1, 1}, dtype::f32);
  EXPECT_DOUBLE_EQ(c.flops, 1e6);
  EXPECT_DOUBLE_EQ(c.bytes, 12e6);
}

}  // namespace
}  // namespace keel::perf
