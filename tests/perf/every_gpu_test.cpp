// Every predictor on every GPU of the database, for every type of the model, with and without
// tensor cores: each answers a finite time or a keel::invalid_argument saying which rate is
// unknown, and a rate it borrows from another unit (fp32 for a bf16 kernel, fp16 tensor cores
// for fp8) says so in its note. Nothing crashes, nothing falls back silently.
#include "keel/core/error.hpp"
#include "keel/perf/gpu_database.hpp"
#include "keel/perf/report.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <string>

namespace keel::perf {
namespace {

const std::string data_dir = std::string(KEEL_SOURCE_DIR) + "/tests/data/perf/";

// The key prefix of the unit a type runs on when nothing is borrowed.
std::string own_unit(dtype t) {
  switch (t) {
    case dtype::f64: return "fp64";
    case dtype::f32: return "fp32";
    case dtype::tf32: return "tf32";
    case dtype::f16: return "fp16";
    case dtype::bf16: return "bf16";
    case dtype::f8: return "fp8";
    case dtype::i8: return "int8";
    case dtype::f4: return "fp4";
    default: return "?";
  }
}

// The rate a predictor used: one the GPU has, of the requested kind of unit, and a borrowed
// unit only with a note saying so.
void expect_honest(const gpu_spec& g, dtype t, bool tensor, const peak_rate& p,
                   const std::string& where) {
  EXPECT_TRUE(g.rate(p.key)) << where << ": used " << p.key << ", which " << g.name << " lacks";
  EXPECT_DOUBLE_EQ(p.tflops, *g.rate(p.key)) << where;
  EXPECT_GT(p.tflops, 0) << where;
  if (!tensor) EXPECT_EQ(p.key.find("_tensor"), std::string::npos) << where << ": " << p.key;
  if (!p.key.starts_with(own_unit(t))) {
    EXPECT_FALSE(p.note.empty()) << where << ": " << p.key << " used for " << name_of(t)
                                 << " without a note";
  }
}

// An error is acceptable only when it names the GPU and says the rate is unknown.
void expect_unknown_rate(const invalid_argument& e, const gpu_spec& g, const std::string& where) {
  const std::string m = e.what();
  EXPECT_NE(m.find(g.name), std::string::npos) << where << ": " << m;
  EXPECT_NE(m.find("unknown"), std::string::npos) << where << ": " << m;
}

// A prediction's time: a plain number, or an optional one that is empty for a model that does
// not fit the device (which is an answer, not a failure).
bool time_ok(double s) { return std::isfinite(s) && s > 0; }
bool time_ok(const std::optional<double>& s) { return !s || time_ok(*s); }

op_request op_for(const std::string& kind) {
  op_request r;
  r.kind = kind;
  if (kind == "gemm") r.mnk = {1024, 1024, 1024};
  if (kind == "spmv") r.rows = 1e5, r.nnz = 1e6;
  if (kind == "conv2d") r.input = "1x64x56x56", r.out_channels = 64;
  if (kind == "attention") r.heads = 8, r.seq = 512;
  if (kind == "elementwise") r.elements = 1e6;
  return r;
}

TEST(EveryGpu, PeakIsANumberOrAnUnknownRateForEveryType) {
  for (const gpu_spec& g : gpu_database::builtin().gpus()) {
    for (dtype t : k_model_dtypes) {
      for (bool tensor : {true, false}) {
        const std::string where =
            g.name + " " + std::string(name_of(t)) + (tensor ? "" : " --no-tensor");
        try {
          expect_honest(g, t, tensor, g.peak(t, tensor), where);
        } catch (const invalid_argument& e) {
          expect_unknown_rate(e, g, where);
        }
      }
    }
  }
}

TEST(EveryGpu, EveryOpKindOnEveryGpuAndType) {
  for (const gpu_spec& g : gpu_database::builtin().gpus()) {
    for (const std::string& kind : op_kinds()) {
      for (dtype t : k_model_dtypes) {
        for (bool tensor : {true, false}) {
          op_request r = op_for(kind);
          r.gpu = g.name;
          r.dtype = std::string(name_of(t));
          r.tensor = tensor;
          const std::string where = g.name + " " + kind + " " + r.dtype;
          try {
            const op_result res = run_op(r);
            EXPECT_TRUE(std::isfinite(res.point.seconds) && res.point.seconds > 0) << where;
            expect_honest(g, t, tensor, res.peak, where);
          } catch (const invalid_argument& e) {
            expect_unknown_rate(e, g, where);
          }
        }
      }
    }
  }
}

TEST(EveryGpu, LlmPrefillAndDecodeOnEveryGpuAndType) {
  for (const gpu_spec& g : gpu_database::builtin().gpus()) {
    for (dtype t : k_model_dtypes) {
      for (const char* phase : {"prefill", "decode"}) {
        llm_request r;
        r.config = "gpt2";
        r.gpu = g.name;
        r.dtype = std::string(name_of(t));
        r.phase = phase;
        const std::string where = g.name + " gpt2 " + phase + " " + r.dtype;
        try {
          const llm_result res = run_llm(r);
          EXPECT_TRUE(time_ok(res.report.seconds)) << where;
        } catch (const invalid_argument& e) {
          expect_unknown_rate(e, g, where);
        }
      }
    }
  }
}

TEST(EveryGpu, OnnxModelOnEveryGpu) {
  for (const gpu_spec& g : gpu_database::builtin().gpus()) {
    for (bool tensor : {true, false}) {
      model_request r;
      r.path = data_dir + "tiny.onnx";
      r.gpu = g.name;
      r.tensor = tensor;
      const std::string where = g.name + " tiny.onnx";
      try {
        const model_result res = run_model(r);
        EXPECT_TRUE(time_ok(res.report.seconds)) << where;
      } catch (const invalid_argument& e) {
        expect_unknown_rate(e, g, where);
      }
    }
  }
}

// B200's datasheet rows had no FP32: fp32 and the vector half of an LLM failed on it.
TEST(EveryGpu, B200HasItsPublishedFp32) {
  const gpu_spec& b200 = gpu_database::builtin().at("b200");
  EXPECT_DOUBLE_EQ(*b200.rate("fp32"), 75);
  const peak_rate vec = b200.peak(dtype::bf16, false);
  EXPECT_EQ(vec.key, "fp32");
  EXPECT_NE(vec.note.find("no non-tensor bf16 rate"), std::string::npos) << vec.note;
}

}  // namespace
}  // namespace keel::perf
