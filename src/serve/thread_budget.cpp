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

using clock = std::chrono::steady_clock;

// A run's claim: its expected time less its wait; the smallest goes first.
std::int64_t claim(clock::time_point since, std::uint64_t expected_us, clock::time_point now) {
  return static_cast<std::int64_t>(expected_us) -
         std::chrono::duration_cast<std::chrono::microseconds>(now - since).count();
}

// A run is "long" next to a short one k_long_ratio times shorter; the short one keeps the last
// free thread for k_grace (its expected time twice, plus this) after it last took one.
constexpr std::uint64_t k_long_ratio = 4;
constexpr std::chrono::microseconds k_grace_extra{2000};

}  // namespace

int thread_budget::share() const {
  return std::max(1, total_ / (holders_ + static_cast<int>(waiting_.size())));
}

bool thread_budget::held_back(const waiter& w, clock::time_point now) const {
  return holders_ > 0 && free_ <= share() && now < short_until_ &&
         w.expected_us > k_long_ratio * short_us_;
}

bool thread_budget::first(const waiter& w, clock::time_point now) const {
  if (free_ == 0 || held_back(w, now)) return false;
  const std::int64_t mine = claim(w.since, w.expected_us, now);
  for (const waiter& other : waiting_) {
    if (&other == &w || held_back(other, now)) continue;
    const std::int64_t theirs = claim(other.since, other.expected_us, now);
    if (theirs < mine || (theirs == mine && other.since < w.since)) return false;
  }
  return true;
}

thread_budget::lease thread_budget::acquire(std::uint64_t expected_us) {
  std::unique_lock<std::mutex> lock(mutex_);
  const auto me = waiting_.insert(waiting_.end(), waiter{clock::now(), expected_us});
  for (clock::time_point now = clock::now(); !first(*me, now); now = clock::now()) {
    if (free_ > 0 && held_back(*me, now))
      freed_.wait_until(lock, short_until_);  // the short model's grace ends then
    else
      freed_.wait(lock);
  }
  const int granted = std::min(free_, share());
  waiting_.erase(me);
  free_ -= granted;
  ++holders_;
  const clock::time_point now = clock::now();
  if (expected_us > 0 && (now >= short_until_ || expected_us <= k_long_ratio * short_us_)) {
    // The shortest model running lately: a long run leaves it the last thread for a while.
    if (now >= short_until_ || expected_us < short_us_) short_us_ = expected_us;
    short_until_ = now + 2 * std::chrono::microseconds(short_us_) + k_grace_extra;
  }
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
