// `keel gpus ...` end to end: the JSON contracts of the issue.
#include "process.hpp"

#include <gtest/gtest.h>
#include <fstream>
#include <nlohmann/json.hpp>

namespace keel::test {
namespace {

using nlohmann::json;

json run_json(const std::vector<std::string>& args) {
  const process_result r = run_keel(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(r.out);
}

TEST(GpusCli, ListJsonHasSourcesForEveryGpu) {
  const json doc = run_json({"gpus", "list", "--json"});
  ASSERT_GE(doc.at("gpus").size(), 30u);
  for (const json& g : doc["gpus"]) {
    EXPECT_TRUE(g.contains("name"));
    EXPECT_FALSE(g.at("source").get<std::string>().empty()) << g["name"];
  }
}

TEST(GpusCli, SupportAnswersCiteSources) {
  const json no = run_json({"gpus", "support", "gtx-1050", "--cuda", "13.0", "--json"});
  EXPECT_FALSE(no.at("supported").get<bool>());
  EXPECT_NE(no.at("source").get<std::string>().find("CUDA Toolkit 13.0"), std::string::npos);
  EXPECT_FALSE(no.at("reason").get<std::string>().empty());
  const json yes = run_json({"gpus", "support", "gtx-1050", "--cuda", "12.4", "--json"});
  EXPECT_TRUE(yes.at("supported").get<bool>());
  EXPECT_NE(yes.at("source").get<std::string>().find("https://"), std::string::npos);
  const process_result text = run_keel({"gpus", "support", "gtx-1050", "--cuda", "13.0"});
  EXPECT_EQ(text.out.rfind("no: ", 0), 0u) << text.out;
}

// A release the table has no row for is answered "unknown", never "no"; one it has is cited.
TEST(GpusCli, SupportWithoutARowIsUnknown) {
  const process_result text = run_keel({"gpus", "support", "gtx-1050", "--cudnn", "8.7"});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_EQ(text.out.rfind("unknown: the table has no row for cuDNN 8.7", 0), 0u) << text.out;
  const json j = run_json({"gpus", "support", "gtx-1050", "--cudnn", "8.7", "--json"});
  EXPECT_TRUE(j.at("supported").is_null());
  EXPECT_EQ(j.at("state"), "unknown");
  EXPECT_NE(j.at("reason").get<std::string>().find("no row for cuDNN 8.7"), std::string::npos);
  const json yes = run_json({"gpus", "support", "gtx-1050", "--cudnn", "8.5", "--json"});
  EXPECT_EQ(yes.at("supported"), true);
  EXPECT_NE(yes.at("source").get<std::string>().find("cuDNN 8.5.0 Support Matrix"),
            std::string::npos);
}

TEST(GpusCli, SupportForPytorchWheelsAndDrivers) {
  const json no =
      run_json({"gpus", "support", "gtx-1050", "--pytorch", "2.8", "--wheel", "cu128", "--json"});
  EXPECT_EQ(no.at("supported"), false);
  EXPECT_NE(no.at("source").get<std::string>().find("pytorch"), std::string::npos);
  const process_result yes =
      run_keel({"gpus", "support", "gtx-1050", "--pytorch", "2.8", "--wheel", "cu126"});
  EXPECT_EQ(yes.out.rfind("yes: ", 0), 0u) << yes.out;
  const json drv = run_json({"gpus", "support", "gtx-1080", "--driver", "R590", "--json"});
  EXPECT_EQ(drv.at("state"), "unsupported");
  const process_result lone = run_keel({"gpus", "support", "gtx-1050", "--pytorch", "2.8"});
  EXPECT_EQ(lone.exit_code, 2);
  EXPECT_EQ(count_lines(lone.err), 1) << lone.err;
}

TEST(GpusCli, ShowCompareAndPick) {
  EXPECT_EQ(run_keel({"gpus", "show", "gtx-1050"}).exit_code, 0);
  const std::string h100 = run_keel({"gpus", "show", "h100-sxm"}).out;
  EXPECT_NE(h100.find("NVLink            900 GB/s (both directions, all links)"), std::string::npos)
      << h100;
  EXPECT_NE(h100.find("PCIe              5.0 x16, 64 GB/s each way"), std::string::npos) << h100;
  EXPECT_EQ(run_json({"gpus", "show", "rtx-4060-ti-8gb", "--json"}).at("pcie"), "4.0 x8");
  const json cmp = run_json({"gpus", "compare", "titan-v", "rtx-2080-ti", "--json"});
  EXPECT_EQ(cmp.at("a").at("name"), "titan-v");
  const json pick =
      run_json({"gpus", "pick", "--budget", "2000", "--need", "fp16", "memory=24GiB", "--json"});
  EXPECT_EQ(pick.at("ranked").at(0).at("name"), "rtx-5090");
  EXPECT_EQ(pick.at("ranked").at(1).at("name"), "rtx-4090");
  EXPECT_FALSE(pick["ranked"][0].at("reasons").empty());
}

TEST(GpusCli, PickByAPriceList) {
  const std::string prices = std::string(KEEL_SOURCE_DIR) + "/tests/data/perf/prices_eur.csv";
  const json j =
      run_json({"gpus", "pick", "--prices", prices, "--by", "value", "--need", "fp16", "--json"});
  EXPECT_EQ(j.at("currency"), "EUR");
  EXPECT_EQ(j.at("ranked").at(0).at("name"), "rtx-4090");
  EXPECT_EQ(j["ranked"][0].at("price"), 1799.0);
  EXPECT_EQ(j["ranked"][0].at("price_usd"), 1599.0);
  const process_result text = run_keel({"gpus", "pick", "--prices", prices, "--budget", "2000"});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("EUR"), std::string::npos) << text.out;
}

TEST(GpusCli, BadInputIsOneLineExitTwo) {
  const std::string bad_prices = ::testing::TempDir() + "keel_bad_prices.csv";
  {
    std::ofstream f(bad_prices);
    f << "card,EUR\nrtx-4090,1799\nrtx-9090,4000\n";
  }
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"gpus", "show", "nonexistent"},
                                             {"gpus", "support", "gtx-1050"},
                                             {"gpus", "support", "gtx-1050", "--cuda", "twelve"},
                                             {"gpus", "pick", "--need", "warp-drive"},
                                             {"gpus", "pick", "--by", "cheapest"},
                                             {"gpus", "pick", "--prices", bad_prices}}) {
    const process_result r = run_keel(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(count_lines(r.err), 1) << r.err;
  }
  EXPECT_NE(
      run_keel({"gpus", "pick", "--prices", bad_prices}).err.find(":3: unknown GPU 'rtx-9090'"),
      std::string::npos);
}

}  // namespace
}  // namespace keel::test
