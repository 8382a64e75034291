#include "keel/serve/thread_budget.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "keel/core/error.hpp"

namespace keel::serve {

thread_budget::thread_budget(int threads) : total_(threads), free_(threads) {
  if (threads < 1)
    throw invalid_argument(fmt::format("thread budget {}: must be at least 1", threads));
}

namespace {

// A run's claim: its expected time less its wait; the smallest goes first.
std::int64_t claim(std::chrono::steady_clock::time_point since, std::uint64_t expected_us,
                   std::chrono::steady_clock::time_point now) {
  return static_cast<std::int64_t>(expected_us) -
         std::chrono::duration_cast<std::chrono::microseconds>(now - since).count();
}

}  // namespace

bool thread_budget::first(const waiter& w, std::chrono::steady_clock::time_point now) const {
  const std::int64_t mine = claim(w.since, w.expected_us, now);
  for (const waiter& other : waiting_) {
    if (&other == &w) continue;
    const std::int64_t theirs = claim(other.since, other.expected_us, now);
    if (theirs < mine || (theirs == mine && other.since < w.since)) return false;
  }
  return true;
}

thread_budget::lease thread_budget::acquire(std::uint64_t expected_us) {
  std::unique_lock<std::mutex> lock(mutex_);
  const auto me =
      waiting_.insert(waiting_.end(), waiter{std::chrono::steady_clock::now(), expected_us});
  freed_.wait(lock, [&] { return free_ > 0 && first(*me, std::chrono::steady_clock::now()); });
  waiting_.erase(me);
  const int share = std::max(1, total_ / (holders_ + static_cast<int>(waiting_.size()) + 1));
  const int granted = std::min(free_, share);
  free_ -= granted;
  ++holders_;
  const bool left = free_ > 0;
  lock.unlock();
  if (left) freed_.notify_all();  // the next waiter may take what is left
  return lease(this, granted);
}

int thread_budget::leased() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return total_ - free_;
}

void thread_budget::release(int threads) {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    free_ += threads;
    --holders_;
  }
  freed_.notify_all();
}

thread_budget::lease::lease(lease&& other) noexcept
    : owner_(other.owner_), threads_(other.threads_) {
  other.owner_ = nullptr;
}

thread_budget::lease::~lease() {
  if (owner_ != nullptr) owner_->release(threads_);
}

int default_serve_threads() {
  if (const char* v = std::getenv("KEEL_SERVE_THREADS"); v != nullptr && *v != '\0') {
    int n = 0;
    const char* end = v + std::strlen(v);
    const auto [p, ec] = std::from_chars(v, end, n);
    if (ec != std::errc() || p != end || n < 1 || n > 4096)
      throw invalid_argument(
          fmt::format("KEEL_SERVE_THREADS='{}': expected a thread count from 1 to 4096", v));
    return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace keel::serve
