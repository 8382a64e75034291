// keel::serve::thread_budget — the one pool of intra-op threads that every model instance
// of a server draws from, so that threads x running instances never exceed the machine.
//
// An instance about to run takes a lease and gives it back when the run ends. A lease
// grants at least one thread and at most a fair share: the free threads, capped at
// total / (instances holding or waiting for a lease), so one busy model gets every core and
// four busy models a quarter each. acquire() blocks while every thread is leased. Leases
// granted never sum above total().
//
// When threads free up and several runs wait, the one expected to finish first goes first
// (shortest job first, which answers the most requests per second and keeps a fast model's
// latency from queueing behind a slow one's), aged: a run's claim is its expected time minus
// how long it has waited, so a long run waits at most about the difference between its
// expected time and the others'. Runs that expect nothing (0) go in arrival order.
//
// Fair share: a run may name its model's account, which counts the thread time the model's
// leases hold (decayed with a time constant of one second). The busy models are those with a
// lease, a waiting run, or 5% of a thread lately; a model's usage ratio is its thread time
// over their mean (1: a fair share). A run's expected time in its claim is scaled by its
// model's ratio (clamped to 1/4..4), so of two slow models the one that had less of the
// machine goes first, and a model that had more waits longer.
//
// Threads are not taken back from a run, so a long run that took the last free thread would
// leave a short model waiting for all of it. A run expected to take more than 4x the shortest
// model that ran lately therefore leaves it the last free threads while another run holds
// threads, for a grace period: twice the short run's expected time plus 2 ms after the short
// model last took a lease, and only while the short model's usage ratio is below 1 (runs
// without an account: always). Past it (the short model went quiet, or had its share) the long
// run takes them. With one thread in all nothing is held back. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <mutex>
#include <vector>

namespace keel::serve {

class thread_budget {
 public:
  // `threads` >= 1 (keel::invalid_argument otherwise).
  explicit thread_budget(int threads);
  thread_budget(const thread_budget&) = delete;
  thread_budget& operator=(const thread_budget&) = delete;

  // A model's thread time, counted by its leases. Outlives none of its leases; unregistered
  // from the budget when destroyed.
  class account {
   public:
    explicit account(thread_budget& budget);
    account(const account&) = delete;
    account& operator=(const account&) = delete;
    ~account();

   private:
    friend class thread_budget;
    // Under the budget's lock: the decayed thread-microseconds at `now`.
    double usage_at(std::chrono::steady_clock::time_point now) const;
    // Under the budget's lock: folds the time since the last settle into usage_.
    void settle(std::chrono::steady_clock::time_point now);
    thread_budget& budget_;
    double usage_ = 0;  // thread-microseconds, decayed, as of as_of_
    std::chrono::steady_clock::time_point as_of_;
    int running_ = 0;  // threads on its leases now
    int waiting_ = 0;  // its runs waiting for a lease
  };

  class lease {
   public:
    lease(lease&& other) noexcept;
    lease& operator=(lease&&) = delete;
    lease(const lease&) = delete;
    ~lease();
    int threads() const noexcept { return threads_; }

   private:
    friend class thread_budget;
    lease(thread_budget* owner, account* who, int threads)
        : owner_(owner), who_(who), threads_(threads) {}
    thread_budget* owner_;
    account* who_;
    int threads_;
  };

  // `expected_us`: how long the run is expected to take (0: unknown); `who`: its model's
  // account (registered with this budget), if any.
  lease acquire(std::uint64_t expected_us = 0, account* who = nullptr);
  int total() const noexcept { return total_; }
  int leased() const;   // threads out on leases now
  int waiting() const;  // runs waiting in acquire() now

 private:
  struct waiter {
    std::chrono::steady_clock::time_point since;
    std::uint64_t expected_us;
    account* who;
  };
  void release(account* who, int threads);
  // Under the lock: `a`'s thread time over the mean of the busy accounts' (1: a fair share;
  // 1 without an account).
  double usage_ratio(const account* a, std::chrono::steady_clock::time_point now) const;
  // Under the lock: a run's claim on free threads; the smallest goes first.
  double claim(const waiter& w, std::chrono::steady_clock::time_point now) const;
  // Under the lock: the threads a lease gets now (before the free-thread cap).
  int share() const;
  // Under the lock: whether `w` must leave the last free threads to a short model now.
  bool held_back(const waiter& w, std::chrono::steady_clock::time_point now) const;
  // Under the lock: whether `w` may take threads now: some are free, it is not held back, and
  // it has the best claim among the waiters that are not.
  bool first(const waiter& w, std::chrono::steady_clock::time_point now) const;
  const int total_;
  mutable std::mutex mutex_;
  std::condition_variable freed_;
  int free_;
  int holders_ = 0;
  std::list<waiter> waiting_;
  std::uint64_t short_us_ = 0;                           // the shortest expected run lately
  std::chrono::steady_clock::time_point short_until_{};  // ...keeps its thread until then
  account* short_account_ = nullptr;                     // ...whose account it is, if any
  std::vector<account*> accounts_;
};

// The default budget: KEEL_SERVE_THREADS when set (a positive integer, else
// keel::invalid_argument naming the variable), else the machine's hardware threads.
int default_serve_threads();

}  // namespace keel::serve
