#include "keel/serve/scheduler.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace keel::serve {
namespace {

// A model that doubles its input, recording each run's batch rows and threads; it can be
// held at the start of a run to fill the queue behind it.
class doubler final : public model_instance {
 public:
  struct log {
    std::mutex mutex;
    std::vector<std::int64_t> rows;
    std::vector<int> threads;
    std::atomic<int> running{0}, most_running{0};
    std::atomic<bool> hold{false};
  };
  explicit doubler(log& l) : log_(l) {}
  std::vector<tensor> run(std::span<const tensor> in, int threads) override {
    const int now = ++log_.running;
    int seen = log_.most_running.load();
    while (now > seen && !log_.most_running.compare_exchange_weak(seen, now)) {
    }
    while (log_.hold) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    {
      const std::lock_guard<std::mutex> lock(log_.mutex);
      log_.rows.push_back(in[0].shape()[0]);
      log_.threads.push_back(threads);
    }
    tensor out = in[0];
    for (float& v : out.values<float>()) v *= 2;
    --log_.running;
    if (!in[0].values<float>().empty() && in[0].values<float>()[0] < 0)
      throw invalid_argument("doubler: negative input");
    return {out};
  }
  std::uint64_t resident_bytes() const override { return 0; }

 private:
  log& log_;
};

model_config batching_config(const std::string& extra, int instances = 1) {
  return parse_model_config(fmt::format(R"(name: "doubler" platform: "pytorch_libtorch"
max_batch_size: 8
input {{ name: "x" data_type: TYPE_FP32 dims: [ 2 ] }}
output {{ name: "y" data_type: TYPE_FP32 dims: [ 2 ] }}
instance_group {{ count: {} kind: KIND_CPU }}
{})",
                                        instances, extra),
                            "doubler.pbtxt");
}

std::vector<std::unique_ptr<model_instance>> instances(doubler::log& l, int n) {
  std::vector<std::unique_ptr<model_instance>> out;
  for (int i = 0; i < n; ++i) out.push_back(std::make_unique<doubler>(l));
  return out;
}

infer_request request(float value, std::int64_t rows = 1) {
  tensor x(dtype::f32, {rows, 2});
  for (float& v : x.values<float>()) v = value;
  return infer_request{{x}, 0, 0};
}

// Submits a request the single instance holds at the start of its run (log.hold), and
// returns once it runs: what is submitted next waits in the queue.
ticket submit_held(model_scheduler& s, doubler::log& log) {
  log.hold = true;
  ticket t = s.submit(request(1));
  while (log.running.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return t;
}

TEST(Scheduler, TheBatcherJoinsQueuedRequestsAndSplitsTheAnswers) {
  doubler::log log;
  thread_budget budget(2);
  model_scheduler s(batching_config("dynamic_batching { max_queue_delay_microseconds: 200000 "
                                    "preferred_batch_size: [ 4 ] }"),
                    instances(log, 1), budget);
  std::vector<ticket> tickets;
  for (int i = 0; i < 4; ++i) tickets.push_back(s.submit(request(static_cast<float>(i))));
  for (int i = 0; i < 4; ++i) {
    const std::vector<tensor> out = tickets[static_cast<std::size_t>(i)].outputs.get();
    ASSERT_EQ(out[0].shape(), (std::vector<std::int64_t>{1, 2}));
    EXPECT_EQ(out[0].values<float>()[1], 2.0f * static_cast<float>(i));
  }
  // Four requests of one row reach the preferred size 4: one run, long before the delay.
  EXPECT_EQ(log.rows, (std::vector<std::int64_t>{4}));
  const model_statistics st = s.statistics();
  EXPECT_EQ(st.success, 4u);
  EXPECT_EQ(st.execution_count, 1u);
  EXPECT_EQ(st.inference_count, 4u);
}

TEST(Scheduler, WithoutBatchingEachRequestRunsAloneAndInstancesShareTheBudget) {
  doubler::log log;
  thread_budget budget(2);
  model_scheduler s(batching_config("", 3), instances(log, 3), budget);
  std::vector<ticket> tickets;
  for (int i = 0; i < 30; ++i) tickets.push_back(s.submit(request(1, 2)));
  for (ticket& t : tickets) t.outputs.get();
  EXPECT_EQ(log.rows.size(), 30u);
  for (const std::int64_t r : log.rows) EXPECT_EQ(r, 2);
  for (const int t : log.threads) EXPECT_GE(t, 1);
  // Threads x running instances never exceed the budget: at most 2 run at once.
  EXPECT_LE(log.most_running.load(), 2);
  EXPECT_EQ(budget.leased(), 0);
}

TEST(Scheduler, BadInputsAreRefusedAtSubmit) {
  doubler::log log;
  thread_budget budget(1);
  model_scheduler s(batching_config(""), instances(log, 1), budget);
  EXPECT_THROW(s.submit(infer_request{}), invalid_argument);
  EXPECT_THROW(s.submit(infer_request{{tensor(dtype::f32, {1, 3})}, 0, 0}), invalid_argument);
  EXPECT_THROW(s.submit(infer_request{{tensor(dtype::f64, {1, 2})}, 0, 0}), invalid_argument);
  EXPECT_THROW(s.submit(infer_request{{tensor(dtype::f32, {9, 2})}, 0, 0}), invalid_argument);
  EXPECT_THROW(s.submit(infer_request{{tensor(dtype::f32, {2})}, 0, 0}), invalid_argument);
  EXPECT_THROW(s.submit(infer_request{{tensor(dtype::f32, {1, 2})}, 5, 0}), invalid_argument);
  try {
    s.submit(infer_request{{tensor(dtype::f32, {1, 3})}, 0, 0});
  } catch (const invalid_argument& e) {
    EXPECT_STREQ(e.what(), "model 'doubler' input 'x': shape [1,3] does not match [-1,2]");
  }
}

TEST(Scheduler, FullQueuesTimeoutsAndCancellationAreAnswered) {
  doubler::log log;
  thread_budget budget(1);
  model_scheduler s(batching_config("dynamic_batching { default_queue_policy { max_queue_size: 2 "
                                    "default_timeout_microseconds: 20000 } }"),
                    instances(log, 1), budget);
  ticket running = submit_held(s, log);
  ticket queued = s.submit(request(2));
  ticket cancelled = s.submit(request(3));
  EXPECT_THROW(s.submit(request(4)), request_rejected);  // the queue holds 2
  EXPECT_TRUE(s.cancel(cancelled.id));
  EXPECT_FALSE(s.cancel(cancelled.id));
  EXPECT_FALSE(s.cancel(running.id));
  std::this_thread::sleep_for(std::chrono::milliseconds(40));  // past the 20 ms timeout
  log.hold = false;
  running.outputs.get();
  EXPECT_THROW(queued.outputs.get(), request_rejected);
  EXPECT_THROW(cancelled.outputs.get(), request_rejected);
  // A model error fails the request with the model's message; the scheduler keeps serving.
  ticket bad = s.submit(request(-1));
  EXPECT_THROW(bad.outputs.get(), invalid_argument);
  EXPECT_EQ(s.submit(request(5)).outputs.get()[0].values<float>()[0], 10.0f);
  const model_statistics st = s.statistics();
  EXPECT_EQ(st.success, 2u);
  EXPECT_EQ(st.failure, 4u);  // full, cancelled, timed out, model error
}

TEST(Scheduler, HigherPriorityRunsFirst) {
  doubler::log log;
  thread_budget budget(1);
  model_scheduler s(batching_config("dynamic_batching { priority_levels: 2 "
                                    "default_priority_level: 2 }"),
                    instances(log, 1), budget);
  ticket first = submit_held(s, log);
  // 5 + 4 rows exceed max_batch_size 8: two runs, the priority-1 request's first although it
  // came second.
  ticket low = s.submit(infer_request{{tensor(dtype::f32, {5, 2})}, 2, 0});
  ticket high = s.submit(infer_request{{tensor(dtype::f32, {4, 2})}, 1, 0});
  log.hold = false;
  first.outputs.get();
  low.outputs.get();
  high.outputs.get();
  EXPECT_EQ(log.rows, (std::vector<std::int64_t>{1, 4, 5}));
}

TEST(Scheduler, DestructionRunsWhatIsQueued) {
  doubler::log log;
  std::vector<ticket> tickets;
  {
    thread_budget budget(1);
    model_scheduler s(batching_config(""), instances(log, 1), budget);
    for (int i = 0; i < 10; ++i) tickets.push_back(s.submit(request(1)));
  }
  for (ticket& t : tickets) EXPECT_EQ(t.outputs.get()[0].values<float>()[0], 2.0f);
}

TEST(ThreadBudget, SharesFairlyAndNeverOverCommits) {
  thread_budget b(4);
  auto one = b.acquire();
  EXPECT_EQ(one.threads(), 4);  // alone: every thread
  EXPECT_EQ(b.leased(), 4);
  EXPECT_THROW(thread_budget(0), invalid_argument);
}

// Two runs wait on a budget whose only thread is leased; which goes first when it frees?
std::vector<int> order_of(std::uint64_t first_expected_us, std::uint64_t second_expected_us,
                          std::chrono::milliseconds between) {
  thread_budget b(1);
  auto held = std::make_unique<thread_budget::lease>(b.acquire());
  std::mutex m;
  std::vector<int> order;
  auto wait = [&](int who, std::uint64_t expected) {
    const thread_budget::lease l = b.acquire(expected);
    const std::lock_guard<std::mutex> lock(m);
    order.push_back(who);
  };
  // Each run is waiting before the next step (a loaded machine may start a thread late).
  const auto until_waiting = [&](int n) {
    while (b.waiting() < n) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  };
  std::thread first(wait, 1, first_expected_us);
  until_waiting(1);
  std::this_thread::sleep_for(between);
  std::thread second(wait, 2, second_expected_us);
  until_waiting(2);
  held.reset();
  first.join();
  second.join();
  return order;
}

TEST(ThreadBudget, TheShortestExpectedRunGoesFirstAgedByItsWait) {
  // A 10 ms run that arrived later goes before a 1 s one.
  EXPECT_EQ(order_of(1'000'000, 10'000, std::chrono::milliseconds(5)), (std::vector<int>{2, 1}));
  // A 50 ms run that has waited 200 ms longer goes before a fresh 10 ms one.
  EXPECT_EQ(order_of(50'000, 10'000, std::chrono::milliseconds(200)), (std::vector<int>{1, 2}));
  // Unknown (0) expectations: arrival order.
  EXPECT_EQ(order_of(0, 0, std::chrono::milliseconds(5)), (std::vector<int>{1, 2}));
}

TEST(ThreadBudget, ALongRunLeavesTheLastThreadToAShortModelForAWhile) {
  using std::chrono::milliseconds;
  thread_budget b(2);
  const auto t0 = std::chrono::steady_clock::now();
  std::mutex m;
  std::vector<std::pair<int, milliseconds>> got;         // who took a lease, when
  auto take = [&](int who, std::uint64_t expected_us) {  // holds the lease a tenth of that
    const thread_budget::lease l = b.acquire(expected_us);
    {
      const std::lock_guard<std::mutex> lock(m);
      got.emplace_back(
          who, std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - t0));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(expected_us / 10));
  };
  // A short model (50 ms runs) holds both threads; two 1 s runs (held 100 ms) wait.
  auto short_run = std::make_unique<thread_budget::lease>(b.acquire(50'000));
  std::thread long1(take, 1, 1'000'000), long2(take, 2, 1'000'000);
  std::this_thread::sleep_for(milliseconds(10));
  short_run.reset();  // one long run takes a thread; the other leaves the last one...
  std::this_thread::sleep_for(milliseconds(20));
  std::thread again(take, 3, 50'000);  // ...which the short model takes when it comes back,
  again.join();
  long1.join();  // and the held-back run gets once the short model has been quiet a while.
  long2.join();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_NE(got[0].first, 3);
  EXPECT_EQ(got[1].first, 3);
  EXPECT_LT(got[1].second, milliseconds(80));
  EXPECT_GE(got[2].second, milliseconds(100));  // the grace: 2 x 50 ms + 2 ms after 3 took it
  EXPECT_EQ(b.leased(), 0);
}

TEST(ThreadBudget, OfTwoEqualRunsTheModelThatHadLessOfTheMachineGoesFirst) {
  using std::chrono::milliseconds;
  thread_budget b(1);
  thread_budget::account greedy(b), starved(b);
  {
    const thread_budget::lease used = b.acquire(100'000, &greedy);
    std::this_thread::sleep_for(milliseconds(200));
  }
  auto held = std::make_unique<thread_budget::lease>(b.acquire());
  std::mutex m;
  std::vector<int> order;
  auto wait = [&](int who, thread_budget::account* a) {
    const thread_budget::lease l = b.acquire(100'000, a);
    const std::lock_guard<std::mutex> lock(m);
    order.push_back(who);
  };
  std::thread first(wait, 1, &greedy);  // arrives first, same expected time
  std::this_thread::sleep_for(milliseconds(5));
  std::thread second(wait, 2, &starved);
  std::this_thread::sleep_for(milliseconds(20));
  held.reset();
  first.join();
  second.join();
  EXPECT_EQ(order, (std::vector<int>{2, 1}));
}

TEST(ThreadBudget, AShortModelThatHadItsShareHoldsNoThreadBack) {
  using std::chrono::milliseconds;
  thread_budget b(2);
  thread_budget::account fast(b), slow(b);
  // The short model (200 ms runs) holds both threads, one lease each, for 300 ms...
  auto blocker = std::make_unique<thread_budget::lease>(b.acquire());
  std::unique_ptr<thread_budget::lease> one, two;
  std::thread t1([&] { one = std::make_unique<thread_budget::lease>(b.acquire(200'000, &fast)); });
  std::thread t2([&] { two = std::make_unique<thread_budget::lease>(b.acquire(200'000, &fast)); });
  std::this_thread::sleep_for(milliseconds(10));
  blocker.reset();
  t1.join();
  t2.join();
  ASSERT_EQ(one->threads() + two->threads(), 2);
  std::this_thread::sleep_for(milliseconds(300));
  one.reset();
  one = std::make_unique<thread_budget::lease>(b.acquire(200'000, &fast));  // grace: 402 ms more
  one.reset();
  // ...so a 1 s run of the slow model takes the free thread now, not after the grace.
  const auto t0 = std::chrono::steady_clock::now();
  const thread_budget::lease l = b.acquire(1'000'000, &slow);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, milliseconds(200));
  EXPECT_EQ(l.threads(), 1);
}

}  // namespace
}  // namespace keel::serve
