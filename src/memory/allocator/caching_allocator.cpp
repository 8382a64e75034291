// The caching allocator's public operations: each takes the allocator lock; what calls user
// code (free-memory callbacks, trace trackers, out-of-memory observers) runs with it released.
// The lock contract is in caching_allocator.hpp; the parts of the allocator are listed in
// allocator_impl.hpp.
#include "keel/memory/caching_allocator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <limits>

#include "allocator_impl.hpp"
#include "keel/core/bytes.hpp"
#include "keel/core/error.hpp"
#include "keel/core/log.hpp"

namespace keel::memory {
namespace {

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Runs a tracker or an observer, which must not throw: what it throws is logged and dropped
// (the allocator's state is consistent, and deallocate is noexcept).
template <class F>
void run_user_code(const char* what, F&& f) noexcept {
  try {
    f();
  } catch (const std::exception& e) {
    KEEL_LOG_WARN("memory", "{} threw (ignored): {}", what, e.what());
  } catch (...) {
    KEEL_LOG_WARN("memory", "{} threw (ignored)", what);
  }
}

}  // namespace

// Delivers the queued trace entries when a public operation ends, however it ends.
class caching_allocator::impl::delivery {
 public:
  delivery(impl& allocator, lock_type& lock) noexcept : allocator_(allocator), lock_(lock) {}
  ~delivery() {
    if (!lock_.owns_lock()) lock_.lock();
    allocator_.deliver_trace(lock_);
  }
  delivery(const delivery&) = delete;
  delivery& operator=(const delivery&) = delete;

 private:
  impl& allocator_;
  lock_type& lock_;
};

caching_allocator::impl::impl(backend& b, const allocator_config& config, int device)
    : device_(b),
      config_(config),
      device_index_(device),
      policy_(detail::pool_policy::make(config.policy)),
      stats_(config.max_split_size),
      large_(false, &nodes_),
      small_(true, &nodes_),
      events_(device_),
      callbacks_(std::make_shared<const std::vector<free_memory_callback>>()),
      oom_observers_(std::make_shared<const std::vector<out_of_memory_observer>>()) {
  expandable_ = config.expandable_segments || policy_->always_expandable();
  if (expandable_ && !device_.supports_virtual_memory()) {
    KEEL_LOG_WARN("memory", "backend {} has no virtual memory: expandable segments disabled",
                  device_.name());
    expandable_ = false;
  }
}

caching_allocator::impl::~impl() {
  // Return every segment to the backend, live blocks included.
  std::vector<block*> all = all_blocks();
  for (block* b : all) {
    if (b->prev == nullptr && b->expandable == nullptr) {
      std::size_t total = 0;
      for (block* c = b; c != nullptr; c = c->next) total += c->size;
      device_.free_segment(b->ptr, total);
    }
  }
  events_.destroy_all();
  segments_.clear();  // releases the ranges
  for (block* b : all) delete b;
  for (block* b : spare_blocks_) delete b;
}

// ---- public operations ----

std::uint64_t caching_allocator::impl::allocate(std::size_t orig_size, stream_id stream) {
  if (orig_size == 0) return 0;
  if (orig_size > k_max_device_bytes) {
    // Out of every device's domain; refused before rounding (which would not fit).
    throw out_of_memory(fmt::format(
        "CUDA out of memory. Tried to allocate {} ({} bytes): more than any device has (keel "
        "refuses requests above {}).",
        format_size(orig_size), orig_size, format_size(k_max_device_bytes)));
  }
  lock_type lock(mutex_);
  const delivery deliver(*this, lock);
  events_.process([this](block* b) { free_block(b); });
  const std::size_t size = round_size(orig_size);
  alloc_params p;
  p.size = size;
  p.stream = stream;
  p.pool = &pool_for(policy_->uses_small_pool(size));
  p.alloc_size = caching_allocator::allocation_size(size);

  bool found = get_free_block(p) || (run_free_memory_callbacks(lock) && get_free_block(p));
  if (!found) {
    if (set_fraction_ && config_.garbage_collection_threshold > 0.0)
      garbage_collect_cached_blocks();
    found = alloc_block(p, false, lock) ||
            (release_available_cached_blocks(p) && alloc_block(p, false, lock)) ||
            (release_cached_blocks() && alloc_block(p, true, lock));
  }
  if (!found) {
    out_of_memory_info info;
    info.device = device_index_;
    info.size = p.alloc_size;
    info.device_total = set_fraction_ ? allowed_memory_maximum_ : device_.capacity();
    info.device_free = device_.free_bytes();
    info.stream = stream;
    std::string message = out_of_memory_message(p, orig_size);
    const auto observers = oom_observers_;
    deliver_trace(lock);  // the oom entry reaches the trackers before the observers run
    lock.unlock();
    for (const out_of_memory_observer& observer : *observers) {
      run_user_code("an out-of-memory observer", [&] { observer(info); });
    }
    throw out_of_memory(message);
  }
  return alloc_found_block(p, orig_size, should_split(p.found, size));
}

void caching_allocator::impl::deallocate(std::uint64_t address) noexcept {
  if (address == 0) return;
  lock_type lock(mutex_);
  const delivery deliver(*this, lock);
  const auto it = live_.find(address);
  if (it == live_.end()) {
    KEEL_LOG_WARN("memory", "deallocate of {:#x}, which is not a live allocation: ignored",
                  address);
    return;
  }
  block* b = it->second;
  live_.erase(it);
  b->allocated = false;
  stats_.block_deallocated(*b->pool, b->size);
  record(trace_action::free_requested, b->ptr, b->requested_size, b->stream);
  if (!b->stream_uses.empty()) {
    events_.record(b);
  } else {
    free_block(b);
  }
}

void caching_allocator::impl::record_stream(std::uint64_t address, stream_id stream) {
  std::lock_guard lock(mutex_);
  const auto it = live_.find(address);
  if (it == live_.end()) {
    throw invalid_argument(fmt::format("record_stream: {:#x} is not a live allocation", address));
  }
  block* b = it->second;
  if (stream == b->stream) return;  // uses on the allocation stream need no event
  if (std::find(b->stream_uses.begin(), b->stream_uses.end(), stream) == b->stream_uses.end()) {
    b->stream_uses.push_back(stream);
  }
}

void caching_allocator::impl::empty_cache() {
  lock_type lock(mutex_);
  const delivery deliver(*this, lock);
  release_cached_blocks();
}

void caching_allocator::impl::set_memory_fraction(double fraction) {
  if (!(fraction >= 0.0 && fraction <= 1.0)) {
    throw invalid_argument(fmt::format("memory fraction {} is outside [0, 1]", fraction));
  }
  std::lock_guard lock(mutex_);
  allowed_memory_maximum_ = scaled(fraction, device_.capacity());
  set_fraction_ = true;
}

void caching_allocator::impl::add_free_memory_callback(free_memory_callback callback) {
  std::lock_guard lock(mutex_);
  auto next = std::make_shared<std::vector<free_memory_callback>>(*callbacks_);
  next->push_back(std::move(callback));
  callbacks_ = std::move(next);
}

void caching_allocator::impl::attach_out_of_memory_observer(out_of_memory_observer observer) {
  std::lock_guard lock(mutex_);
  auto next = std::make_shared<std::vector<out_of_memory_observer>>(*oom_observers_);
  next->push_back(std::move(observer));
  oom_observers_ = std::move(next);
}

void caching_allocator::impl::attach_trace_tracker(trace_tracker tracker) {
  std::shared_ptr<const trace_tracker> previous;  // destroyed after the lock is released
  std::shared_ptr<const trace_tracker> next;
  if (tracker) next = std::make_shared<const trace_tracker>(std::move(tracker));
  std::lock_guard lock(mutex_);
  previous = std::exchange(tracker_, std::move(next));
}

memory_stats caching_allocator::impl::stats() const {
  std::lock_guard lock(mutex_);
  return stats_.view();
}

void caching_allocator::impl::reset_peak_stats() {
  std::lock_guard lock(mutex_);
  stats_.reset_peak();
}

void caching_allocator::impl::reset_accumulated_stats() {
  std::lock_guard lock(mutex_);
  stats_.reset_accumulated();
}

void caching_allocator::impl::record_history(bool enabled, std::size_t max_entries) {
  std::lock_guard lock(mutex_);
  ring_.enable(enabled, max_entries);
}

memory_usage caching_allocator::impl::usage() const {
  std::lock_guard lock(mutex_);
  const memory_stats& s = stats_.view();
  return {static_cast<std::size_t>(s.reserved_bytes[k_all].current),
          static_cast<std::size_t>(s.allocated_bytes[k_all].current),
          static_cast<std::size_t>(s.requested_bytes[k_all].current)};
}

// ---- what runs outside the lock ----

bool caching_allocator::impl::run_free_memory_callbacks(lock_type& lock) {
  if (callbacks_->empty()) return false;
  const auto callbacks = callbacks_;
  lock.unlock();
  struct relock {
    lock_type& lock;
    ~relock() { lock.lock(); }
  } const relock_on_exit{lock};
  bool freed = false;
  for (const free_memory_callback& callback : *callbacks) freed |= callback();
  return freed;
}

void caching_allocator::impl::deliver_trace(lock_type& lock) noexcept {
  if (delivering_ || undelivered_.empty()) return;
  delivering_ = true;
  std::vector<tracked_entry> batch;
  while (!undelivered_.empty()) {
    batch.swap(undelivered_);
    lock.unlock();
    for (const tracked_entry& t : batch) {
      run_user_code("a trace tracker", [&] { (*t.tracker)(t.entry); });
    }
    batch.clear();
    lock.lock();
  }
  delivering_ = false;
}

// ---- helpers ----

caching_allocator::impl::block* caching_allocator::impl::new_block(stream_id stream,
                                                                   std::size_t size,
                                                                   block_pool* pool,
                                                                   std::uint64_t ptr) {
  block* b;
  if (spare_blocks_.empty()) {
    b = new block;
  } else {
    b = spare_blocks_.back();
    spare_blocks_.pop_back();
    *b = block{};
  }
  b->stream = stream;
  b->size = size;
  b->pool = pool;
  b->ptr = ptr;
  return b;
}

void caching_allocator::impl::delete_block(block* b) noexcept {
  b->stream_uses.clear();
  spare_blocks_.push_back(b);
}

void caching_allocator::impl::record(trace_action action, std::uint64_t addr, std::size_t size,
                                     stream_id stream, std::uint64_t device_free) {
  if (!ring_.enabled() && !tracker_) return;
  trace_entry e;
  e.action = action;
  e.addr = addr;
  e.size = size;
  e.stream = stream;
  e.device_free = device_free;
  if (tracker_) undelivered_.push_back({tracker_, e});
  if (!ring_.enabled()) return;
  e.time_us = now_us();
  ring_.push(std::move(e));
}

std::vector<caching_allocator::impl::block*> caching_allocator::impl::all_blocks() const {
  std::vector<block*> out;
  for (const block_pool* pool : {&large_, &small_}) {
    out.insert(out.end(), pool->blocks.begin(), pool->blocks.end());
    out.insert(out.end(), pool->unmapped.begin(), pool->unmapped.end());
  }
  for (const auto& [ptr, b] : live_) out.push_back(b);
  // Blocks that wait for events and are no longer live are in the event queues.
  events_.for_each_waiting([&](block* b) { out.push_back(b); });
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// ---- the public class forwards to impl ----

caching_allocator::caching_allocator(backend& device_backend, const allocator_config& config,
                                     int device)
    : impl_(std::make_unique<impl>(device_backend, config, device)) {}
caching_allocator::~caching_allocator() = default;

std::uint64_t caching_allocator::allocate(std::size_t size, stream_id stream) {
  return impl_->allocate(size, stream);
}
void caching_allocator::deallocate(std::uint64_t address) noexcept { impl_->deallocate(address); }
void caching_allocator::record_stream(std::uint64_t address, stream_id stream) {
  impl_->record_stream(address, stream);
}
void caching_allocator::empty_cache() { impl_->empty_cache(); }
void caching_allocator::set_memory_fraction(double fraction) {
  impl_->set_memory_fraction(fraction);
}
void caching_allocator::add_free_memory_callback(std::function<bool()> callback) {
  impl_->add_free_memory_callback(std::move(callback));
}
void caching_allocator::attach_out_of_memory_observer(out_of_memory_observer observer) {
  impl_->attach_out_of_memory_observer(std::move(observer));
}
memory_stats caching_allocator::stats() const { return impl_->stats(); }
void caching_allocator::reset_peak_stats() { impl_->reset_peak_stats(); }
void caching_allocator::reset_accumulated_stats() { impl_->reset_accumulated_stats(); }
void caching_allocator::record_history(bool enabled, std::size_t max_entries) {
  impl_->record_history(enabled, max_entries);
}
snapshot caching_allocator::take_snapshot() const { return impl_->take_snapshot(); }
const allocator_config& caching_allocator::config() const noexcept { return impl_->config(); }
backend& caching_allocator::device_backend() const noexcept { return impl_->device_backend(); }
std::size_t caching_allocator::round_size(std::size_t size) const noexcept {
  return impl_->round_size(size);
}
std::size_t caching_allocator::allocation_size(std::size_t size) noexcept {
  if (size <= k_small_size) return k_small_buffer;
  if (size < k_min_large_alloc) return k_large_buffer;
  if (size > std::numeric_limits<std::size_t>::max() - (k_round_large - 1))
    return std::numeric_limits<std::size_t>::max();  // saturates: no device serves it
  return detail::round_up(size, k_round_large);
}
std::string caching_allocator::check_invariants() const { return impl_->check_invariants(); }
std::vector<std::uint64_t> caching_allocator::import_segments(
    const std::vector<imported_segment>& segments) {
  return impl_->import_segments(segments);
}
memory_usage caching_allocator::usage() const { return impl_->usage(); }
void caching_allocator::attach_trace_tracker(std::function<void(const trace_entry&)> tracker) {
  impl_->attach_trace_tracker(std::move(tracker));
}

}  // namespace keel::memory
