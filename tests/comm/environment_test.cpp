#include "keel/comm/environment.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <map>

#include "keel/core/error.hpp"
#include "parse.hpp"

namespace keel::comm {
namespace {

env_lookup from(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(CommEnvironment, Torchrun) {
  const launch_env e = detect_launch_env(from({{"RANK", "3"},
                                               {"WORLD_SIZE", "8"},
                                               {"LOCAL_RANK", "1"},
                                               {"LOCAL_WORLD_SIZE", "2"},
                                               {"MASTER_ADDR", "node7"},
                                               {"MASTER_PORT", "1234"}}));
  EXPECT_EQ(e.launcher, "torchrun");
  EXPECT_EQ(e.rank, 3);
  EXPECT_EQ(e.size, 8);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.local_size, 2);
  EXPECT_EQ(e.master_addr, "node7");
  EXPECT_EQ(e.master_port, 1234);
}

TEST(CommEnvironment, OpenMpi) {
  const launch_env e = detect_launch_env(from({{"OMPI_COMM_WORLD_RANK", "2"},
                                               {"OMPI_COMM_WORLD_SIZE", "4"},
                                               {"OMPI_COMM_WORLD_LOCAL_RANK", "2"},
                                               {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}}));
  EXPECT_EQ(e.launcher, "openmpi");
  EXPECT_EQ(e.rank, 2);
  EXPECT_EQ(e.size, 4);
  EXPECT_EQ(e.master_addr, "127.0.0.1");
  EXPECT_EQ(e.master_port, 29500);
}

TEST(CommEnvironment, MpichPmi) {
  const launch_env e = detect_launch_env(from({{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}}));
  EXPECT_EQ(e.launcher, "pmi");
  EXPECT_EQ(e.rank, 1);
  EXPECT_EQ(e.size, 2);
  EXPECT_EQ(e.local_rank, 1);
}

TEST(CommEnvironment, SlurmMasterFromNodeList) {
  const launch_env e = detect_launch_env(from({{"SLURM_PROCID", "5"},
                                               {"SLURM_NTASKS", "16"},
                                               {"SLURM_LOCALID", "1"},
                                               {"SLURM_JOB_NODELIST", "gpu[03-05,9],cpu1"}}));
  EXPECT_EQ(e.launcher, "slurm");
  EXPECT_EQ(e.rank, 5);
  EXPECT_EQ(e.size, 16);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.master_addr, "gpu03");
  EXPECT_EQ(first_slurm_host("a1,b2"), "a1");
  EXPECT_EQ(first_slurm_host("n[7]"), "n7");
  // MASTER_ADDR wins over the node list.
  EXPECT_EQ(detect_launch_env(from({{"SLURM_PROCID", "0"},
                                    {"SLURM_NTASKS", "2"},
                                    {"SLURM_NODELIST", "x[1-2]"},
                                    {"MASTER_ADDR", "10.0.0.1"}}))
                .master_addr,
            "10.0.0.1");
}

TEST(CommEnvironment, SingleAndErrors) {
  EXPECT_EQ(detect_launch_env(from({})).launcher, "single");
  EXPECT_THROW(detect_launch_env(from({{"RANK", "4"}, {"WORLD_SIZE", "4"}})),
               keel::invalid_argument);
  EXPECT_THROW(detect_launch_env(from({{"RANK", "x"}, {"WORLD_SIZE", "4"}})),
               keel::invalid_argument);
  EXPECT_THROW(detect_launch_env(from({{"KEEL_COMM_STORE", "tcp:1"}})), keel::invalid_argument);
  EXPECT_EQ(detect_launch_env(from({{"KEEL_COMM_STORE", "file:/shared/x"}})).store_dir,
            "/shared/x");
}

TEST(CommEnvironment, StoreSecretBindAndKeep) {
  const std::string secret = "0123456789abcdef";
  const launch_env e = detect_launch_env(from({{"RANK", "0"},
                                               {"WORLD_SIZE", "2"},
                                               {"KEEL_STORE_SECRET", secret},
                                               {"KEEL_STORE_BIND", "10.1.2.3"},
                                               {"KEEL_STORE_KEEP", "1"}}));
  EXPECT_EQ(e.store_secret, secret);
  EXPECT_EQ(e.store_bind, "10.1.2.3");
  EXPECT_TRUE(e.store_keep);
  const launch_env plain = detect_launch_env(from({{"RANK", "0"}, {"WORLD_SIZE", "2"}}));
  EXPECT_EQ(plain.store_secret, "");
  EXPECT_FALSE(plain.store_keep);
  try {
    detect_launch_env(from({{"KEEL_STORE_SECRET", "short"}}));
    ADD_FAILURE() << "a 5-character secret was accepted";
  } catch (const keel::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("KEEL_STORE_SECRET has 5 characters"), std::string::npos);
    EXPECT_EQ(std::string(e.what()).find("short"), std::string::npos) << "echoes the secret";
  }
  EXPECT_THROW(detect_launch_env(from({{"KEEL_STORE_KEEP", "yes"}})), keel::invalid_argument);
}

// Rank 0 of a job spanning hosts whose MASTER_ADDR resolves to loopback on rank 0 (Debian's
// 127.0.1.1 for the host name) must listen where the other hosts can reach it, and so needs
// the secret; a single-host job without one listens on loopback only.
TEST(CommEnvironment, MakeStoreListensWhereTheJobNeedsAndOnlyWithASecretBeyondLoopback) {
  launch_env e;
  e.rank = 0;
  e.size = 4;
  e.local_size = 2;
  e.master_addr = "127.0.0.1";
  e.master_port = 0;
  EXPECT_THROW(make_store(e, std::chrono::seconds(2)), keel::invalid_argument);
  e.store_secret = "0123456789abcdef0123456789abcdef";
  auto wide = make_store(e, std::chrono::seconds(2));
  EXPECT_EQ(dynamic_cast<tcp_store&>(*wide).bind_address(), "0.0.0.0");
  e.local_size = 4;
  e.store_secret.clear();
  auto local = make_store(e, std::chrono::seconds(2));
  EXPECT_EQ(dynamic_cast<tcp_store&>(*local).bind_address(), "127.0.0.1");
}

TEST(CommEnvironment, LaunchedRankSeesAnyLaunchersRankVariable) {
  const char* names[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"};
  std::map<std::string, std::string> saved;
  for (const char* n : names) {
    if (const char* v = std::getenv(n)) saved[n] = v;
    ::unsetenv(n);
  }
  EXPECT_FALSE(launched_rank());
  for (const char* n : names) {
    ::setenv(n, "", 1);
    EXPECT_TRUE(launched_rank()) << n;
    ::unsetenv(n);
  }
  for (const auto& [n, v] : saved) ::setenv(n.c_str(), v.c_str(), 1);
}

TEST(CommEnvironment, NumbersAreParsedWhole) {
  EXPECT_EQ(detail::env_integer("V", "0", 0, 10), 0);
  EXPECT_EQ(detail::env_integer("V", "10", 0, 10), 10);
  for (const char* bad :
       {"", " 1", "1 ", "+1", "-1", "11", "1.0", "0x1", "1e1", "5ms", "99999999999999999999999"}) {
    try {
      detail::env_integer("KEEL_X", bad, 0, 10);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const keel::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()),
                fmt::format("KEEL_X='{}' is not an integer in [0, 10]", bad));
    }
  }
  EXPECT_EQ(detail::parse_published<std::uint32_t>("29500", "port", 3), 29500u);
  EXPECT_EQ(detail::parse_published<std::uint64_t>("00ff", "nonce", 0, 16), 255u);
  EXPECT_DOUBLE_EQ(detail::parse_published<double>("2.5e-6", "latency", 1), 2.5e-6);
  EXPECT_THROW(detail::parse_published<std::uint32_t>("12 ", "port", 3), keel::backend_error);
  EXPECT_THROW(detail::parse_published<std::uint32_t>("-1", "port", 3), keel::backend_error);
  EXPECT_THROW(detail::parse_published<double>("inf", "latency", 1), keel::backend_error);
  EXPECT_THROW(detail::parse_published<double>("", "latency", 1), keel::backend_error);
}

}  // namespace
}  // namespace keel::comm
