// The documents of `keel gpus`: to_json of a GPU, list_gpus, compare_gpus, check_support and
// the pick request with its checks.
#include <gtest/gtest.h>

#include <limits>

#include "error_message.hpp"
#include "keel/core/error.hpp"
#include "keel/perf/gpu_compare.hpp"
#include "keel/perf/gpu_database.hpp"
#include "keel/perf/gpu_pick.hpp"

namespace keel::perf {
namespace {

using nlohmann::json;

const gpu_database& db() { return gpu_database::builtin(); }

using keel::test::message_of;

TEST(GpuReport, AGpuDocumentHasEveryFieldAndItsSources) {
  const json j = to_json(db().at("h100-sxm"));
  for (const char* key :
       {"name",          "display",    "arch",   "cc",       "segment",   "year",
        "sms",           "boost_mhz",  "tflops", "derived",  "memory_gb", "memory_type",
        "bandwidth_gbs", "nvlink_gbs", "pcie",   "pcie_gbs", "l2_mb",     "tdp_w",
        "price_usd",     "note",       "source", "sources"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j.size(), 22u);
  EXPECT_EQ(j.at("cc"), "9.0");
  EXPECT_EQ(j.at("bandwidth_gbs"), 3350.0);
  ASSERT_FALSE(j.at("sources").empty());
  EXPECT_TRUE(j["sources"][0].contains("url"));
}

TEST(GpuReport, ListFiltersByArchitecture) {
  const gpu_list all = list_gpus(db());
  EXPECT_EQ(all.gpus.size(), db().gpus().size());
  const gpu_list hopper = list_gpus(db(), "Hopper");
  ASSERT_FALSE(hopper.gpus.empty());
  for (const gpu_spec* g : hopper.gpus) EXPECT_EQ(g->arch, "Hopper");
  const json j = to_json(hopper);
  EXPECT_EQ(j.at("gpus").size(), hopper.gpus.size());
  EXPECT_EQ(j.at("conventions"), db().conventions());
  EXPECT_TRUE(list_gpus(db(), "Fermi-not-here").gpus.empty());
}

TEST(GpuReport, CompareHasRatiosBOverA) {
  const gpu_comparison c = compare_gpus(db().at("titan-v"), db().at("rtx-2080-ti"));
  bool bandwidth = false;
  for (const gpu_compare_row& r : c.rows) {
    if (r.metric != "bandwidth_gbs") continue;
    bandwidth = true;
    ASSERT_TRUE(r.a && r.b && r.ratio);
    EXPECT_DOUBLE_EQ(*r.ratio, *r.b / *r.a);
  }
  EXPECT_TRUE(bandwidth);
  EXPECT_EQ(c.rows.back().metric, "fp32_ridge_flops_per_byte");
  // Links: a row when either card has one; no ratio against a card without NVLink.
  const gpu_comparison links = compare_gpus(db().at("h100-sxm"), db().at("rtx-4090"));
  int seen = 0;
  for (const gpu_compare_row& r : links.rows) {
    if (r.metric == "nvlink_gbs") {
      ++seen;
      EXPECT_DOUBLE_EQ(*r.a, 900);
      EXPECT_FALSE(r.b);
      EXPECT_FALSE(r.ratio);
    }
    if (r.metric == "pcie_gbs") {
      ++seen;
      EXPECT_DOUBLE_EQ(*r.ratio, 0.5);  // PCIe 4.0 x16 against 5.0 x16
    }
  }
  EXPECT_EQ(seen, 2);
  const json j = to_json(c);
  EXPECT_EQ(j.at("a").at("name"), "titan-v");
  EXPECT_EQ(j.at("rows").size(), c.rows.size());
}

TEST(GpuReport, SupportAsksExactlyOneVersion) {
  support_request r{"gtx-1050", "13.0", ""};
  const support_result no = check_support(db(), r);
  EXPECT_FALSE(no.answer.supported());
  const json j = to_json(no);
  EXPECT_EQ(j.at("gpu"), "gtx-1050");
  EXPECT_EQ(j.at("compute_capability"), "6.1");
  EXPECT_NE(j.at("source").get<std::string>().find("CUDA Toolkit 13.0"), std::string::npos);
  r.cuda = "12.4";
  EXPECT_TRUE(check_support(db(), r).answer.supported());
  r.cuda.clear();
  EXPECT_EQ(message_of([&] { check_support(db(), r); }),
            "give --cuda VER, --cudnn VER, --pytorch VER --wheel cuXYZ or --driver BRANCH");
  r.pytorch = "2.8";
  EXPECT_NE(message_of([&] { check_support(db(), r); }).find("go together"), std::string::npos);
  r.wheel = "cu128";
  r.driver = "580";
  EXPECT_EQ(message_of([&] { check_support(db(), r); }), "--pytorch excludes --driver");
  r.pytorch.clear();
  r.wheel.clear();
  r.driver = "R58O";
  EXPECT_NE(message_of([&] { check_support(db(), r); }).find("bad driver branch 'R58O'"),
            std::string::npos);
  r.driver.clear();
  r = {"gtx-1050", "12.4", "9.1"};
  EXPECT_EQ(message_of([&] { check_support(db(), r); }), "--cuda excludes --cudnn");
  r = {"gtx-1050", "twelve", ""};
  EXPECT_THROW(check_support(db(), r), keel::invalid_argument);
  EXPECT_EQ(j.at("supported"), false);
  EXPECT_EQ(j.at("state"), "unsupported");
  r = {"gtx-1050", "", "8.7"};
  const json unknown = to_json(check_support(db(), r));
  EXPECT_TRUE(unknown.at("supported").is_null());
  EXPECT_EQ(unknown.at("state"), "unknown");
}

TEST(GpuReport, PickRequestAndDocument) {
  pick_request r;
  r.budget_usd = 2000;
  r.needs = {"fp16", "memory=24GiB"};
  r.top = 1;
  const pick_result p = pick_gpus(db(), r);
  const json j = to_json(p, 1);
  ASSERT_EQ(j.at("ranked").size(), 1u);
  EXPECT_EQ(j["ranked"][0].at("name"), "rtx-5090");  // fp16 tensor 209.5 (derived), $1999
  EXPECT_EQ(j["ranked"][0].at("rank"), 1);
  EXPECT_EQ(j.at("qualifying"), p.ranked.size());
  EXPECT_EQ(j.at("rejected").size(), p.rejected.size());
  r.top = 0;
  EXPECT_EQ(message_of([&] { pick_gpus(db(), r); }),
            "--top: 0 is out of range, expected an integer in [1, 1000000]");
  r.top = 5;
  r.budget_usd = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(message_of([&] { pick_gpus(db(), r); }),
            "--budget: nan is not a finite number, expected a number in (0, 1000000000000]");
  r.budget_usd = -1;
  EXPECT_EQ(message_of([&] { pick_gpus(db(), r); }),
            "--budget: -1 is out of range, expected a number in (0, 1000000000000]");
}

}  // namespace
}  // namespace keel::perf
