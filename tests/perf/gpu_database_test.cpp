// The GPU database: every entry sourced, the reference numbers of the spec, the version
// tables, derivations, and the pick ranking.
#include "keel/perf/gpu_database.hpp"
#include "keel/core/error.hpp"
#include "keel/perf/gpu_pick.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
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

// NVLink totals and PCIe bandwidth per direction, as the datasheets print them (H100: "NVLink
// 900GB/s, PCIe Gen5 128GB/s" both ways), for the parallelism model's collectives.
TEST(GpuDatabase, InterconnectFromDatasheets) {
  const gpu_spec& h100 = db().at("h100-sxm");
  ASSERT_TRUE(h100.nvlink_gbs);
  EXPECT_DOUBLE_EQ(*h100.nvlink_gbs, 900);
  ASSERT_TRUE(h100.pcie_gbs);
  EXPECT_DOUBLE_EQ(*h100.pcie_gbs, 64);
  EXPECT_DOUBLE_EQ(*db().at("a100-sxm4-80gb").nvlink_gbs, 600);
  EXPECT_DOUBLE_EQ(*db().at("a100-sxm4-80gb").pcie_gbs, 32);
  EXPECT_DOUBLE_EQ(*db().at("v100-sxm2").nvlink_gbs, 300);
  EXPECT_DOUBLE_EQ(*db().at("v100-pcie").pcie_gbs, 16);
  EXPECT_DOUBLE_EQ(*db().at("b200").nvlink_gbs, 1800);
  EXPECT_DOUBLE_EQ(*db().at("rtx-3090").nvlink_gbs, 112.5);
  EXPECT_FALSE(db().at("rtx-4090").nvlink_gbs);  // no NVLink on Ada GeForce
  EXPECT_DOUBLE_EQ(*db().at("rtx-4090").pcie_gbs, 32);
  EXPECT_FALSE(db().at("gtx-1050-mobile").pcie_gbs);  // the laptop maker picks the link
  for (const gpu_spec& g : db().gpus()) {
    if (g.nvlink_gbs) EXPECT_GT(*g.nvlink_gbs, 0) << g.name;
    if (g.pcie_gbs) {
      EXPECT_GE(*g.pcie_gbs, 8) << g.name;
      EXPECT_LE(*g.pcie_gbs, 128) << g.name;
    }
  }
  const nlohmann::json j = to_json(h100);
  EXPECT_EQ(j.at("pcie"), "5.0 x16");
  EXPECT_DOUBLE_EQ(j.at("nvlink_gbs").get<double>(), 900);
  EXPECT_TRUE(to_json(db().at("rtx-4090")).at("nvlink_gbs").is_null());
}

TEST(GpuDatabase, LoadRejectsAnUnlistedPcieGeneration) {
  const std::string doc = R"({"sources": {"s": {"title": "T", "url": "https://x"}},
    "pcie_generations": [{"gen": 4, "gt_per_s": 16, "source": ["s"]}],
    "compute_capabilities": [], "cuda": [], "cudnn": [],
    "gpus": [{"name": "x", "display": "X", "arch": "A", "segment": "s", "cc": "8.0", "year": 1,
              "tflops": {"fp32": 1}, "memory_gb": 1, "memory_type": "m", "bandwidth_gbs": 1,
              "pcie_gen": GEN, "pcie_lanes": 8, "source": ["s"]}]})";
  auto with_gen = [&](const char* gen) {
    std::string d = doc;
    d.replace(d.find("GEN"), 3, gen);
    return d;
  };
  EXPECT_DOUBLE_EQ(*gpu_database::load(with_gen("4"), "test").gpus()[0].pcie_gbs, 16);
  try {
    gpu_database::load(with_gen("7"), "test");
    FAIL();
  } catch (const invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("PCIe generation 7"), std::string::npos) << e.what();
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

// PyTorch's cu128 wheels dropped Maxwell and Pascal (and, from 2.11, Volta); the cu126 wheels
// keep them. A cubin for X.y runs on X.z, z >= y (a GTX 1050, 6.1, runs the sm_60 code).
TEST(GpuSupport, PytorchWheelsByArchitecture) {
  const auto state = [](const char* gpu, const char* release, const char* wheel) {
    return db().pytorch_support(db().at(gpu), parse_version(release), wheel).state;
  };
  EXPECT_EQ(state("gtx-1050", "2.8", "cu128"), support_state::unsupported);
  EXPECT_EQ(state("gtx-1050", "2.8", "cu126"), support_state::supported);
  EXPECT_EQ(state("gtx-1050", "2.13", "cu126"), support_state::supported);
  EXPECT_EQ(state("gtx-1050", "2.13", "cu130"), support_state::unsupported);
  EXPECT_EQ(state("v100-sxm2", "2.10", "cu128"), support_state::supported);
  EXPECT_EQ(state("v100-sxm2", "2.11", "cu128"), support_state::unsupported);
  EXPECT_EQ(state("rtx-4090", "2.11", "cu128"), support_state::supported);  // sm_86 code
  EXPECT_EQ(state("rtx-5090", "2.8", "cu126"), support_state::unsupported);
  EXPECT_EQ(state("rtx-5090", "2.8", "cu128"), support_state::supported);
  EXPECT_EQ(state("tesla-k80", "2.0", "cu118"), support_state::supported);
  EXPECT_EQ(state("gtx-680", "2.0", "cu118"), support_state::unsupported);  // 3.0 < sm_37
  const support_answer a = db().pytorch_support(db().at("gtx-1050"), parse_version("2.8"), "cu128");
  EXPECT_NE(a.reason.find("sm_70"), std::string::npos) << a.reason;
  EXPECT_NE(a.reason.find("compute capability 6.1"), std::string::npos) << a.reason;
  ASSERT_FALSE(a.sources.empty());
  EXPECT_NE(a.sources[0].url.find("github.com/pytorch/pytorch"), std::string::npos);
  const support_answer ptx =
      db().pytorch_support(db().at("rtx-5090"), parse_version("2.13"), "cu130");
  EXPECT_EQ(ptx.state, support_state::supported);
  const support_answer u = db().pytorch_support(db().at("gtx-1050"), parse_version("2.5"), "cu124");
  EXPECT_EQ(u.state, support_state::unknown);
  EXPECT_EQ(u.reason.rfind("the table has no row for PyTorch 2.5 cu124", 0), 0u) << u.reason;
}

TEST(GpuPick, NeedsAPytorchWheel) {
  const pick_result r = pick_gpus(db(), std::nullopt, {"pytorch=2.8+cu128"});
  for (const pick_candidate& c : r.ranked) EXPECT_GE(c.gpu->cc, (version{7, 0})) << c.gpu->name;
  bool pascal_rejected = false;
  for (const pick_rejection& x : r.rejected) {
    if (x.gpu->name == "gtx-1080") pascal_rejected = x.reason.find("sm_70") != std::string::npos;
  }
  EXPECT_TRUE(pascal_rejected);
  const pick_result u = pick_gpus(db(), std::nullopt, {"pytorch=2.5+cu124"});
  EXPECT_TRUE(u.ranked.empty());
  ASSERT_FALSE(u.rejected.empty());
  EXPECT_EQ(u.rejected[0].reason.rfind("unknown: the table has no row for PyTorch 2.5 cu124", 0),
            0u);
  EXPECT_THROW(pick_gpus(db(), std::nullopt, {"pytorch=2.8"}), invalid_argument);
}

TEST(GpuSupport, LastDriverBranchPerArchitecture) {
  const support_answer no = db().driver_support(db().at("gtx-1050"), 590);
  EXPECT_EQ(no.state, support_state::unsupported);
  EXPECT_NE(no.reason.find("R580 is the last driver branch for Maxwell, Pascal and Volta"),
            std::string::npos)
      << no.reason;
  ASSERT_FALSE(no.sources.empty());
  EXPECT_EQ(db().driver_support(db().at("tesla-k80"), 495).state, support_state::unsupported);
  EXPECT_EQ(db().driver_support(db().at("gtx-1050"), 580).state, support_state::unknown);
  EXPECT_EQ(db().driver_support(db().at("rtx-4090"), 590).state, support_state::unknown);
}

TEST(GpuPick, RanksWithinBudgetWithReasons) {
  const pick_result r = pick_gpus(db(), 2000.0, {"fp16", "memory=24GiB"});
  ASSERT_GE(r.ranked.size(), 2u);
  EXPECT_EQ(r.ranked[0].gpu->name, "rtx-5090");
  EXPECT_EQ(r.ranked[1].gpu->name, "rtx-4090");
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

// GeForce cards whose datasheets print tensor rates only as sparse or per-SM figures carry
// them as derived rates: an fp16 GEMM is bounded by the tensor cores, not by FP32, and `pick
// --need fp16` keeps them.
TEST(GpuDatabase, GeforceTensorRatesAreDerivedFromPublishedFigures) {
  const gpu_spec& g5090 = db().at("rtx-5090");
  EXPECT_FALSE(g5090.tflops.contains("fp16_tensor"));
  ASSERT_TRUE(g5090.rate("fp16_tensor"));
  EXPECT_DOUBLE_EQ(*g5090.rate("fp16_tensor"), 209.5);  // 3352 sparse FP4 AI TOPS / 16
  EXPECT_NE(g5090.derived_how.at("fp16_tensor").find("3352 AI TOPS"), std::string::npos);
  EXPECT_EQ(g5090.peak(dtype::f16).key, "fp16_tensor");
  EXPECT_NEAR(*db().at("rtx-5080").rate("fp16_tensor"), 112.6, 0.05);
  // GA106: the RTX 3090's 512 FLOP/clock/SM x 28 SMs x 1777 MHz.
  EXPECT_NEAR(*db().at("rtx-3060").rate("fp16_tensor"), 25.48, 0.01);
  EXPECT_NEAR(*db().at("rtx-3060").rate("tf32_tensor"), 12.74, 0.01);
  const pick_result fp16 = pick_gpus(db(), std::nullopt, {"fp16"});
  for (const char* name : {"rtx-3060", "rtx-5080", "rtx-5090"}) {
    EXPECT_TRUE(std::any_of(fp16.ranked.begin(), fp16.ranked.end(), [&](const pick_candidate& c) {
      return c.gpu->name == name;
    })) << name;
  }
  // A derived rate written in the document must not shadow a published one.
  const std::string doc = R"({"sources": {"s": {"title": "T", "url": "https://x"}},
    "compute_capabilities": [], "cuda": [], "cudnn": [],
    "gpus": [{"name": "x", "display": "X", "arch": "A", "segment": "s", "cc": "8.0", "year": 1,
              "tflops": {"fp32": 1, "fp16_tensor": 2},
              "derived": {"fp16_tensor": {"tflops": 3, "how": "h"}},
              "memory_gb": 1, "memory_type": "m", "bandwidth_gbs": 1, "source": ["s"]}]})";
  EXPECT_THROW(gpu_database::load(doc, "test"), invalid_argument);
}

// `--prices FILE`: the user's prices in their currency replace launch USD for the budget and
// the value ranking; launch USD stays in the reasons.
TEST(GpuPick, RanksByAUserPriceList) {
  const std::string path = std::string(KEEL_SOURCE_DIR) + "/tests/data/perf/prices_eur.csv";
  pick_request r;
  r.prices = path;
  r.budget_usd = 2000;  // in the list's currency
  r.needs = {"fp16"};
  const pick_result p = pick_gpus(db(), r);
  EXPECT_TRUE(p.user_prices);
  EXPECT_EQ(p.currency, "EUR");
  ASSERT_EQ(p.ranked.size(), 2u);  // rtx-4090 at 1799, rtx-3060 at 289
  EXPECT_EQ(p.ranked[0].gpu->name, "rtx-4090");
  EXPECT_DOUBLE_EQ(*p.ranked[0].price, 1799);
  EXPECT_EQ(p.ranked[1].gpu->name, "rtx-3060");
  const auto reason_of = [&](const char* name) {
    for (const pick_rejection& x : p.rejected)
      if (x.gpu->name == name) return x.reason;
    return std::string();
  };
  EXPECT_EQ(reason_of("rtx-5090"), "price 2399 EUR > budget 2000 EUR");
  EXPECT_EQ(reason_of("rtx-4080"), "not in the price list");
  const std::string why = fmt::format("{}", fmt::join(p.ranked[0].reasons, "; "));
  EXPECT_NE(why.find("91.8 GFLOP/s per EUR"), std::string::npos) << why;
  EXPECT_NE(why.find("launch price $1599"), std::string::npos) << why;
  // By value: TFLOP/s per price unit, the user's prices.
  r.budget_usd.reset();
  r.by = "value";
  const pick_result v = pick_gpus(db(), r);
  ASSERT_EQ(v.ranked.size(), 4u);
  EXPECT_EQ(v.ranked[0].gpu->name, "rtx-4090");  // 165.2/1799 > 25.48/289 > 209.5/2399
  EXPECT_EQ(v.ranked[1].gpu->name, "rtx-3060");
  EXPECT_EQ(v.ranked[2].gpu->name, "rtx-5090");
  EXPECT_EQ(v.ranked[3].gpu->name, "h100-sxm");
  EXPECT_NEAR(v.ranked[0].score, 165.2 * 1000 / 1799, 1e-9);
  // By value with launch USD: cards without a launch price cannot be ranked.
  r.prices.clear();
  const pick_result usd = pick_gpus(db(), r);
  EXPECT_EQ(usd.currency, "USD (launch price)");
  for (const pick_candidate& c : usd.ranked) EXPECT_TRUE(c.gpu->price_usd) << c.gpu->name;
  r.by = "cheapest";
  EXPECT_THROW(pick_gpus(db(), r), invalid_argument);
}

TEST(GpuPick, PriceListErrorsNameTheLine) {
  const auto error_of = [](const std::string& csv) -> std::string {
    try {
      parse_price_list(db(), csv, "p.csv");
    } catch (const keel::error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(parse_price_list(db(), "rtx-4090,1599\n", "p.csv").currency, "price units");
  EXPECT_EQ(parse_price_list(db(), "card,price\nrtx-4090,1599\n", "p.csv").currency, "price units");
  EXPECT_EQ(error_of("card,USD\nrtx-4090;1599\n"),
            "p.csv:2:1: expected two cells 'card,price', got 'rtx-4090;1599'");
  EXPECT_EQ(error_of("rtx-4090,1599\nrtx-3060,cheap\n"),
            "p.csv:2:10: price 'cheap' is not a finite number > 0");
  EXPECT_EQ(error_of("rtx-4090,-3\n"), "p.csv:1:10: price '-3' is not a finite number > 0");
  EXPECT_NE(error_of("rtx-4090,1599\nrtx_4090,1500\n").find("p.csv:2:1: rtx-4090 is listed twice"),
            std::string::npos);
  const std::string unknown = error_of("# prices\nrtx-9090,5000\n");
  EXPECT_EQ(unknown.rfind("p.csv:2: unknown GPU 'rtx-9090'", 0), 0u) << unknown;
  EXPECT_THROW(parse_price_list(db(), "# nothing\n", "p.csv"), parse_error);
  // Spreadsheet exports: a byte-order mark, CRLF, quoted cells (a comma inside quotes is text).
  const price_list quoted = parse_price_list(
      db(), "\xEF\xBB\xBF\"card\",\"CHF\"\r\n\"rtx-4090\", \"1749.5\"\r\n", "p.csv");
  EXPECT_EQ(quoted.currency, "CHF");
  EXPECT_DOUBLE_EQ(quoted.prices.at("rtx-4090"), 1749.5);
  EXPECT_EQ(error_of("card,EUR\nrtx-4090,\"1,799\"\n"),
            "p.csv:2:10: price '1,799' is not a finite number > 0");
  EXPECT_EQ(error_of("card,EUR\n  rtx-4090,  x\n"),
            "p.csv:2:14: price 'x' is not a finite number > 0");
  EXPECT_EQ(error_of("\"rtx-4090,1799\n"), "p.csv:1:1: unterminated quoted cell");
}

// Cards sold new in 2025-2026, each sourced; the RTX 4060 Ti runs on a PCIe 4.0 x8 link.
TEST(GpuDatabase, CurrentAdaCardsWithTheirLinks) {
  const gpu_spec& ti = db().at("rtx-4060-ti-8gb");
  EXPECT_DOUBLE_EQ(ti.bandwidth_gbs, 288);
  EXPECT_EQ(ti.pcie_lanes, 8);
  EXPECT_DOUBLE_EQ(*ti.pcie_gbs, 16);
  EXPECT_NEAR(*ti.rate("fp32"), 22.06, 0.01);
  EXPECT_NEAR(*ti.rate("fp16_tensor"), 44.13, 0.01);  // 34 SMs x 2535 MHz x 512
  EXPECT_DOUBLE_EQ(db().at("rtx-4060-ti-16gb").memory_gb, 16);
  const gpu_spec& g4070 = db().at("rtx-4070");
  EXPECT_NEAR(*g4070.rate("fp32"), 29.15, 0.01);
  EXPECT_NEAR(*g4070.rate("fp8_tensor"), 116.6, 0.05);
  EXPECT_FALSE(g4070.pcie_gbs);  // not in the sources read: unknown, not guessed
  const gpu_spec& pro = db().at("rtx-pro-6000-blackwell");
  EXPECT_EQ(pro.segment, "workstation");
  EXPECT_DOUBLE_EQ(pro.memory_gb, 96);
  EXPECT_DOUBLE_EQ(*pro.rate("fp16_tensor"), 250);  // 4000 sparse FP4 AI TOPS / 16
  EXPECT_NE(pro.derived_how.at("fp16_tensor").find("twice this"), std::string::npos);
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
