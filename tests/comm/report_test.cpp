// The documents and the nccl-tests table that `keel comm` prints.
#include "keel/comm/report.hpp"

#include <gtest/gtest.h>

namespace keel::comm {
namespace {

bench_row sample_row() {
  bench_row r;
  r.bytes = 1048576;
  r.count = 262144;
  r.out_of_place = {123.456, 8.49, 8.49, 0};
  r.in_place = {123456.0, 0.01, 0.01, 2};
  return r;
}

TEST(CommReport, NcclTestsRowKeepsItsColumns) {
  bench_options o;
  o.coll = collective::allreduce;
  EXPECT_EQ(nccl_tests_row(sample_row(), o),
            "     1048576        262144     float     sum      -1   123.46    8.49    8.49      0"
            "   123456    0.01    0.01      2\n");
  o.check = false;
  o.coll = collective::allgather;
  const std::string row = nccl_tests_row(sample_row(), o);
  EXPECT_NE(row.find("  none  "), std::string::npos) << row;
  EXPECT_NE(row.find("N/A"), std::string::npos) << row;
}

TEST(CommReport, NcclTestsFooterSaysWhetherValuesWereWrong) {
  bench_result r;
  r.avg_busbw = 4.5;
  EXPECT_EQ(nccl_tests_footer(r), "# Out of bounds values : 0 OK\n# Avg bus bandwidth : 4.5\n#\n");
  r.wrong = 3;
  EXPECT_NE(nccl_tests_footer(r).find("3 FAILED"), std::string::npos);
}

TEST(CommReport, BenchJsonHasEveryRowAndColumn) {
  bench_options o;
  o.coll = collective::broadcast;
  bench_result r;
  r.rows.push_back(sample_row());
  r.avg_busbw = 4.25;
  r.wrong = 2;
  const nlohmann::json j = to_json(r, o, 4);
  EXPECT_EQ(j["collective"], "broadcast");
  EXPECT_EQ(j["ranks"], 4);
  EXPECT_EQ(j["algo"], "auto");
  EXPECT_EQ(j["wrong"], 2);
  ASSERT_EQ(j["rows"].size(), 1u);
  const auto& row = j["rows"][0];
  EXPECT_EQ(row["size"], 1048576);
  EXPECT_EQ(row["redop"], "none");
  EXPECT_EQ(row["type"], "float");
  EXPECT_DOUBLE_EQ(row["time_us"].get<double>(), 123.456);
  EXPECT_EQ(row["in_place"]["wrong"], 2);
}

TEST(CommReport, FaultJsonMarksHangsAndErrors) {
  fault_trial t;
  t.trial = 1;
  t.victim = 0;
  t.survivors.push_back({1, 3, false, "peer", 0.125, 0, 7});
  t.survivors.push_back({2, 137, true, "", 0, -1, 0});
  fault_summary s;
  s.trials.push_back(t);
  s.hangs = 1;
  fault_options o;
  o.trials = 1;
  const nlohmann::json j = to_json(s, o);
  EXPECT_EQ(j["hangs"], 1);
  EXPECT_EQ(j["trials"], 1);
  const auto& survivors = j["results"][0]["survivors"];
  EXPECT_EQ(survivors[0]["error"], "peer");
  EXPECT_EQ(survivors[0]["seq"], 7);
  EXPECT_FALSE(survivors[0].contains("hang"));
  EXPECT_EQ(survivors[1]["hang"], true);
  EXPECT_FALSE(survivors[1].contains("error"));
}

TEST(CommReport, VerifyJsonListsTheFailures) {
  verify_report r;
  r.cases = 10;
  r.failed = {"allreduce ring f32 sum count=7 root=0: 1 wrong"};
  const nlohmann::json j = to_json(r, 2, "shm");
  EXPECT_EQ(j["cases"], 10);
  EXPECT_EQ(j["transport"], "shm");
  EXPECT_EQ(j["failed"].size(), 1u);
}

}  // namespace
}  // namespace keel::comm
