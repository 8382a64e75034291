// The CLI's contract, checked by running the built `keel`: help and version, one line on
// stderr and exit 2 for bad input, exit 0 for success.
#include <gtest/gtest.h>

#include "process.hpp"

namespace keel::test {
namespace {

TEST(Cli, HelpListsTheSixGroups) {
  const process_result r = run_keel({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* group : {"mem", "rand", "kv", "perf", "gpus", "comm"}) {
    EXPECT_NE(r.out.find(std::string("\n  ") + group + " "), std::string::npos) << group;
  }
}

TEST(Cli, VersionPrintsOneLine) {
  const process_result r = run_keel({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.rfind("keel ", 0), 0u);
  EXPECT_EQ(count_lines(r.out), 1);
}

TEST(Cli, UsageErrorsAreOneLineAndExitTwo) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {}, {"nonsense"}, {"--frobnicate"}, {"mem"}, {"mem", "nonsense"}, {"gpus", "--bogus"}}) {
    const process_result r = run_keel(args);
    EXPECT_EQ(r.exit_code, 2) << testing::PrintToString(args);
    EXPECT_EQ(count_lines(r.err), 1) << r.err;
    EXPECT_EQ(r.err.rfind("keel: ", 0), 0u) << r.err;
    EXPECT_TRUE(r.out.empty());
  }
}

TEST(Cli, GroupHelpSucceeds) {
  for (const char* group : {"mem", "rand", "kv", "perf", "gpus", "comm"}) {
    const process_result r = run_keel({group, "--help"});
    EXPECT_EQ(r.exit_code, 0) << group;
  }
}

}  // namespace
}  // namespace keel::test
