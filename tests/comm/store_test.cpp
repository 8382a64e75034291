#include "keel/comm/store.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "keel/comm/error.hpp"

namespace keel::comm {
namespace {

using namespace std::chrono_literals;

void exercise(store& a, store& b) {
  a.set_string("k1", "hello");
  EXPECT_EQ(b.get_string("k1", 1s), "hello");
  EXPECT_TRUE(b.check({"k1"}));
  EXPECT_FALSE(b.check({"k1", "missing"}));
  EXPECT_EQ(a.add("counter", 5), 5);
  EXPECT_EQ(b.add("counter", -2), 3);
  // get waits for a key set later by the other side.
  std::thread later([&] {
    std::this_thread::sleep_for(50ms);
    a.set_string("late", "x");
  });
  EXPECT_EQ(b.get_string("late", 5s), "x");
  later.join();
  b.wait({"k1", "late"}, 1s);
  // A key nobody sets: timeout_error within the deadline (+ slack).
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(b.get("never", 200ms), timeout_error);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  EXPECT_THROW(b.wait({"k1", "never"}, 100ms), timeout_error);
  // The store is still usable after a timeout.
  a.set("bin", bytes{0, 1, 2, 255});
  EXPECT_EQ(b.get("bin", 1s), (bytes{0, 1, 2, 255}));
}

TEST(CommStore, Memory) {
  memory_store s;
  exercise(s, s);
}

TEST(CommStore, File) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("keel-store-test-" + std::to_string(::getpid()));
  {
    file_store a(dir.string());
    file_store b(dir.string());
    exercise(a, b);
  }
  std::filesystem::remove_all(dir);
}

TEST(CommStore, TcpHostedByRankZero) {
  tcp_store host("127.0.0.1", 0, true, 2s);
  tcp_store client("127.0.0.1", host.port(), false, 2s);
  exercise(host, client);
  // Many concurrent adders see every increment exactly once.
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      tcp_store c("127.0.0.1", host.port(), false, 2s);
      for (int i = 0; i < 50; ++i) c.add("many", 1);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(client.add("many", 0), 200);
}

TEST(CommStore, TcpClientTimesOutWithoutServer) {
  std::uint16_t port = 0;
  {
    tcp_store probe("127.0.0.1", 0, true, 1s);  // find a port, then free it
    port = probe.port();
  }
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(tcp_store("127.0.0.1", port, false, 300ms), timeout_error);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
}

TEST(CommStore, TcpServerGoneIsPeerError) {
  auto host = std::make_unique<tcp_store>("127.0.0.1", 0, true, 2s);
  tcp_store client("127.0.0.1", host->port(), false, 2s);
  client.set_string("a", "b");
  host.reset();
  EXPECT_THROW(client.get("a", 1s), comm_error);
}

}  // namespace
}  // namespace keel::comm
