// keel::serve::thread_budget — the one pool of intra-op threads that every model instance
// of a server draws from, so that threads x running instances never exceed the machine.
//
// An instance about to run takes a lease and gives it back when the run ends. A lease
// grants at least one thread and at most a fair share: the free threads, capped at
// total / (instances holding or waiting for a lease), so one busy model gets every core and
// four busy models a quarter each. acquire() blocks while every thread is leased. Leases
// granted never sum above total(). Thread-safe.
#pragma once

#include <condition_variable>
#include <mutex>

namespace keel::serve {

class thread_budget {
 public:
  // `threads` >= 1 (keel::invalid_argument otherwise).
  explicit thread_budget(int threads);
  thread_budget(const thread_budget&) = delete;
  thread_budget& operator=(const thread_budget&) = delete;

  class lease {
   public:
    lease(lease&& other) noexcept;
    lease& operator=(lease&&) = delete;
    lease(const lease&) = delete;
    ~lease();
    int threads() const noexcept { return threads_; }

   private:
    friend class thread_budget;
    lease(thread_budget* owner, int threads) : owner_(owner), threads_(threads) {}
    thread_budget* owner_;
    int threads_;
  };

  lease acquire();
  int total() const noexcept { return total_; }
  int leased() const;  // threads out on leases now

 private:
  void release(int threads);
  const int total_;
  mutable std::mutex mutex_;
  std::condition_variable freed_;
  int free_;
  int holders_ = 0;
  int waiting_ = 0;
};

// The default budget: KEEL_SERVE_THREADS when set (a positive integer, else
// keel::invalid_argument naming the variable), else the machine's hardware threads.
int default_serve_threads();

}  // namespace keel::serve
