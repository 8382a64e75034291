// The GPU database: every entry sourced, the reference numbers of the spec, the version
// tables, derivations, and the pick ranking.
#include "keel/perf/gpu_database.hpp"
#include "keel/core/error.hpp"
#include "keel/perf/gpu_pick.hpp"

#include <gtest/gtest.h>

#include <set>

namespace keel::perf {
namespace {

const gpu_database& db() { return gpu_database::builtin(); }

TEST(GpuDatabase, HasThirtyPlusSourcedGpusFromKeplerToBlackwell) {
  EXPECT_GE(db().gpus().size(), 30u);
  std::set<std::string> archs;
  for (const gpu_spec& g : db().gpus()) {
    archs.insert(g.arch);
    EXPECT_FALSE(g.sources.empty()) << g.name;
    for (const source_ref& s : g.sources) {
      EXPECT_TRUE(s.url.starts_with("https://")) << g.name << " " << s.id;
      EXPECT_FALSE(s.title.empty()) << g.name;
    }
    EXPECT_GT(g.bandwidth_gbs, 0) << g.name;
    EXPECT_GT(g.memory_gb, 0) << g.name;
  }
  for (const char* a : {"Kepler", "Maxwell", "Pascal", "Volta", "Turing", "Ampere", "Ada Lovelace",
                        "Hopper", "Blackwell"}) {
    EXPECT_TRUE(archs.contains(a)) << a;
  }
}

TEST(GpuDatabase, ReferenceNumbersFromVendorSheets) {
  const gpu_spec& h100 = db().at("h100-sxm");
  EXPECT_EQ(h100.cc, (version{9, 0}));
  EXPECT_DOUBLE_EQ(*h100.rate("fp64"), 34);
  EXPECT_DOUBLE_EQ(*h100.rate("fp64_tensor"), 67);
  EXPECT_DOUBLE_EQ(*h100.rate("bf16_tensor"), 989.5);
  EXPECT_DOUBLE_EQ(h100.bandwidth_gbs, 3350);
  EXPECT_DOUBLE_EQ(db().at("h200-sxm").bandwidth_gbs, 4800);
  EXPECT_DOUBLE_EQ(db().at("a100-sxm4-80gb").bandwidth_gbs, 2039);
  EXPECT_DOUBLE_EQ(db().at("a100-sxm4-40gb").bandwidth_gbs, 1555);
  EXPECT_DOUBLE_EQ(*db().at("v100-sxm2").rate("fp16_tensor"), 125);
  EXPECT_DOUBLE_EQ(db().at("titan-v").bandwidth_gbs, 652.8);
  EXPECT_DOUBLE_EQ(*db().at("rtx-4090").rate("fp32"), 82.6);
  EXPECT_DOUBLE_EQ(*db().at("rtx-4090").rate("fp16_tensor"), 165.2);
  EXPECT_DOUBLE_EQ(db().at("gtx-1050").bandwidth_gbs, 112);
}

TEST(GpuDatabase, DerivesCudaCoreRatesFromTheProgrammingGuide) {
  // CC 7.5: 2 FP64 results per clock per SM against 64 FP32: 1/32.
  const gpu_spec& g = db().at("rtx-2080-ti");
  EXPECT_FALSE(g.tflops.contains("fp64"));
  ASSERT_TRUE(g.rate("fp64"));
  EXPECT_NEAR(*g.rate("fp64"), 13.4 / 32, 1e-12);
  EXPECT_NE(g.derived_how.at("fp64").find("CUDA C++ Programming Guide"), std::string::npos);
  // CC 6.1 fp16 runs at 1/64 of fp32.
  EXPECT_NEAR(*db().at("gtx-1050").rate("fp16"), 1.862 / 64, 1e-12);
}

TEST(GpuDatabase, PeakPicksTensorCoresAndFallsBackHonestly) {
  const gpu_spec& v100 = db().at("v100-sxm2");
  EXPECT_EQ(v100.peak(dtype::f16).key, "fp16_tensor");
  EXPECT_EQ(v100.peak(dtype::f16, false).key, "fp16");
  const peak_rate bf16 = v100.peak(dtype::bf16);
  EXPECT_EQ(bf16.key, "fp32");
  EXPECT_NE(bf16.note.find("before compute capability 8.0"), std::string::npos);
  EXPECT_EQ(db().at("h100-sxm").peak(dtype::f64).key, "fp64_tensor");
  EXPECT_EQ(db().at("titan-v").peak(dtype::f64).key, "fp64");
}

TEST(GpuDatabase, NamesAreForgivingButUnknownNamesSuggest) {
  EXPECT_EQ(db().find("RTX_2080_Ti")->name, "rtx-2080-ti");
  EXPECT_EQ(db().find("nonexistent"), nullptr);
  try {
    db().at("h100");
    FAIL();
  } catch (const invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("h100-sxm"), std::string::npos);
  }
}

TEST(GpuSupport, Cuda13DroppedPascalCuda12KeepsIt) {
  const gpu_spec& g = db().at("gtx-1050");
  const support_answer no = db().cuda_support(g, parse_version("13.0"));
  EXPECT_FALSE(no.supported());
  EXPECT_EQ(no.state, support_state::unsupported);
  EXPECT_NE(no.reason.find("7.5"), std::string::npos);
  ASSERT_FALSE(no.sources.empty());
  EXPECT_NE(no.sources[0].url.find("13.0"), std::string::npos);
  const support_answer yes = db().cuda_support(g, parse_version("12.4"));
  EXPECT_TRUE(yes.supported());
  EXPECT_FALSE(yes.sources.empty());
  EXPECT_TRUE(db().cuda_support(db().at("rtx-2080-ti"), parse_version("13.0")).supported());
  EXPECT_FALSE(db().cuda_support(db().at("tesla-k80"), parse_version("12.0")).supported());
  EXPECT_TRUE(db().cuda_support(db().at("tesla-k80"), parse_version("11.8")).supported());
  // Newer than the release: no native support.
  EXPECT_FALSE(db().cuda_support(db().at("rtx-4090"), parse_version("11.0")).supported());
  // Outside the table: unknown, never "no".
  const support_answer unknown = db().cuda_support(g, parse_version("5.5"));
  EXPECT_EQ(unknown.state, support_state::unknown);
  EXPECT_FALSE(unknown.known());
  EXPECT_EQ(unknown.reason.rfind("the table has no row for CUDA 5.5", 0), 0u) << unknown.reason;
}

TEST(GpuSupport, CudnnByVersion) {
  const gpu_spec& g = db().at("gtx-1050");
  EXPECT_TRUE(db().cudnn_support(g, parse_version("7.6")).supported());
  EXPECT_TRUE(db().cudnn_support(g, parse_version("8.9")).supported());
  EXPECT_TRUE(db().cudnn_support(g, parse_version("9.10")).supported());
  EXPECT_FALSE(db().cudnn_support(g, parse_version("9.12")).supported());
  EXPECT_FALSE(db().cudnn_support(db().at("gtx-680"), parse_version("9.0")).supported());
}

// cuDNN 8.4 and 8.5 (NVIDIA's support matrices: Kepler through Ampere) have rows; a release
// the table lacks is unknown, not unsupported.
TEST(GpuSupport, CudnnRowsAndUnknownReleases) {
  const gpu_spec& g = db().at("gtx-1050");
  for (const char* v : {"8.4", "8.5"}) {
    const support_answer a = db().cudnn_support(g, parse_version(v));
    EXPECT_EQ(a.state, support_state::supported) << v << ": " << a.reason;
    ASSERT_FALSE(a.sources.empty()) << v;
    EXPECT_NE(a.sources[0].url.find(std::string("cudnn-8") + v[2] + "0"), std::string::npos);
  }
  EXPECT_EQ(db().cudnn_support(db().at("a100-sxm4-80gb"), parse_version("8.4")).state,
            support_state::supported);
  EXPECT_EQ(db().cudnn_support(db().at("h100-sxm"), parse_version("8.5")).state,
            support_state::unsupported);
  const support_answer u = db().cudnn_support(g, parse_version("8.7"));
  EXPECT_EQ(u.state, support_state::unknown);
  EXPECT_EQ(u.reason.rfind("the table has no row for cuDNN 8.7", 0), 0u) << u.reason;
  EXPECT_TRUE(u.sources.empty());
}

TEST(GpuPick, RanksWithinBudgetWithReasons) {
  const pick_result r = pick_gpus(db(), 2000.0, {"fp16", "memory=24GiB"});
  ASSERT_FALSE(r.ranked.empty());
  EXPECT_EQ(r.ranked[0].gpu->name, "rtx-4090");
  for (const pick_candidate& c : r.ranked) {
    EXPECT_LE(*c.gpu->price_usd, 2000);
    EXPECT_GE(c.gpu->memory_gb, 24);
    EXPECT_FALSE(c.reasons.empty());
  }
  const pick_result fp64 = pick_gpus(db(), 3000.0, {"fp64"});
  ASSERT_FALSE(fp64.ranked.empty());
  EXPECT_EQ(fp64.ranked[0].gpu->name, "titan-v");
  EXPECT_THROW(pick_gpus(db(), 100.0, {"warp-drive"}), invalid_argument);
}

TEST(GpuDatabase, LoadRejectsUnsourcedEntries) {
  const std::string doc = R"({"sources": {}, "compute_capabilities": [], "cuda": [], "cudnn": [],
    "gpus": [{"name": "x", "display": "X", "arch": "A", "segment": "s", "cc": "8.0", "year": 1,
              "tflops": {"fp32": 1}, "memory_gb": 1, "memory_type": "m", "bandwidth_gbs": 1,
              "source": []}]})";
  EXPECT_THROW(gpu_database::load(doc, "test"), invalid_argument);
  EXPECT_THROW(gpu_database::load("{", "test"), parse_error);
}

}  // namespace
}  // namespace keel::perf
