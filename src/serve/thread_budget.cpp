#include "keel/serve/thread_budget.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
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

// A run is "long" next to a short one k_long_ratio times shorter; the short one keeps the last
// free thread for k_grace (its expected time twice, plus this) after it last took one.
constexpr std::uint64_t k_long_ratio = 4;
constexpr std::chrono::microseconds k_grace_extra{2000};

// Accounts forget thread time with this time constant; one using 5% of a thread is busy.
constexpr double k_decay_us = 1e6;
constexpr double k_busy_usage = 0.05 * k_decay_us;

}  // namespace

int thread_budget::share() const {
  return std::max(1, total_ / (holders_ + static_cast<int>(waiting_.size())));
}

thread_budget::account::account(thread_budget& budget) : budget_(budget), as_of_(clock::now()) {
  const std::lock_guard<std::mutex> lock(budget_.mutex_);
  budget_.accounts_.push_back(this);
}

thread_budget::account::~account() {
  const std::lock_guard<std::mutex> lock(budget_.mutex_);
  std::erase(budget_.accounts_, this);
  if (budget_.short_account_ == this) {
    budget_.short_account_ = nullptr;
    budget_.short_until_ = {};
  }
}

double thread_budget::account::usage_at(clock::time_point now) const {
  const double dt = std::chrono::duration<double, std::micro>(now - as_of_).count();
  const double kept = std::exp(-std::max(0.0, dt) / k_decay_us);
  // The threads running since as_of_ added running_ thread-us per us, decaying meanwhile.
  return usage_ * kept + running_ * k_decay_us * (1 - kept);
}

void thread_budget::account::settle(clock::time_point now) {
  usage_ = usage_at(now);
  as_of_ = now;
}

double thread_budget::usage_ratio(const account* a, clock::time_point now) const {
  if (a == nullptr) return 1;
  const double mine = a->usage_at(now);
  double busy_usage = 0;
  int busy = 0;
  for (const account* other : accounts_) {
    const double u = other == a ? mine : other->usage_at(now);
    if (other == a || other->running_ > 0 || other->waiting_ > 0 || u >= k_busy_usage) {
      ++busy;
      busy_usage += u;
    }
  }
  return busy_usage > 0 ? mine * busy / busy_usage : 1;
}

bool thread_budget::held_back(const waiter& w, clock::time_point now) const {
  return holders_ > 0 && free_ <= share() && now < short_until_ &&
         w.expected_us > k_long_ratio * short_us_ &&
         (short_account_ == nullptr || usage_ratio(short_account_, now) < 1);
}

double thread_budget::claim(const waiter& w, clock::time_point now) const {
  const double ratio = std::clamp(usage_ratio(w.who, now), 0.25, 4.0);
  return static_cast<double>(w.expected_us) * ratio -
         std::chrono::duration<double, std::micro>(now - w.since).count();
}

bool thread_budget::first(const waiter& w, clock::time_point now) const {
  if (free_ == 0 || held_back(w, now)) return false;
  const double mine = claim(w, now);
  for (const waiter& other : waiting_) {
    if (&other == &w || held_back(other, now)) continue;
    const double theirs = claim(other, now);
    if (theirs < mine || (theirs == mine && other.since < w.since)) return false;
  }
  return true;
}

thread_budget::lease thread_budget::acquire(std::uint64_t expected_us, account* who) {
  std::unique_lock<std::mutex> lock(mutex_);
  const auto me = waiting_.insert(waiting_.end(), waiter{clock::now(), expected_us, who});
  if (who != nullptr) ++who->waiting_;
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
  if (who != nullptr) {
    --who->waiting_;
    who->settle(now);
    who->running_ += granted;
  }
  if (expected_us > 0 && (now >= short_until_ || expected_us <= k_long_ratio * short_us_)) {
    // The shortest model running lately: a long run leaves it the last thread for a while.
    if (now >= short_until_ || expected_us < short_us_) {
      short_us_ = expected_us;
      short_account_ = who;
    }
    short_until_ = now + 2 * std::chrono::microseconds(short_us_) + k_grace_extra;
  }
  const bool left = free_ > 0;
  lock.unlock();
  if (left) freed_.notify_all();  // the next waiter may take what is left
  return lease(this, who, granted);
}

int thread_budget::leased() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return total_ - free_;
}

int thread_budget::waiting() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int>(waiting_.size());
}

void thread_budget::release(account* who, int threads) {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    free_ += threads;
    --holders_;
    if (who != nullptr) {
      who->settle(clock::now());
      who->running_ -= threads;
    }
  }
  freed_.notify_all();
}

thread_budget::lease::lease(lease&& other) noexcept
    : owner_(other.owner_), who_(other.who_), threads_(other.threads_) {
  other.owner_ = nullptr;
}

thread_budget::lease::~lease() {
  if (owner_ != nullptr) owner_->release(who_, threads_);
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
