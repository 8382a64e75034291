// The caching allocator. The structure follows PyTorch's DeviceCachingAllocator closely on
// purpose: policy `pytorch` must make the same decisions in the same order, so that replays
// of recorded traces reproduce PyTorch's segment sequence exactly.
#include "keel/memory/caching_allocator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <deque>
#include <limits>
#include <map>
#include <memory_resource>
#include <mutex>
#include <set>
#include <unordered_map>
#include <vector>

#include "keel/core/bytes.hpp"
#include "keel/core/check.hpp"
#include "keel/core/error.hpp"
#include "keel/core/log.hpp"

namespace keel::memory {
namespace {

struct block_pool;

// A virtual range whose pages are mapped on demand (PyTorch's ExpandableSegment).
struct expandable_segment {
  expandable_segment(std::uint64_t base_address, std::size_t page_size, std::size_t pages,
                     stream_id on)
      : base(base_address), page(page_size), max_pages(pages), stream(on) {}

  std::uint64_t base = 0;
  std::size_t page = 0;
  std::size_t max_pages = 0;
  stream_id stream = 0;

  std::size_t size() const noexcept { return page * max_pages; }
};

struct block {
  stream_id stream = 0;
  std::size_t size = 0;
  std::size_t requested_size = 0;
  std::uint64_t ptr = 0;
  block_pool* pool = nullptr;
  block* prev = nullptr;
  block* next = nullptr;
  expandable_segment* expandable = nullptr;
  std::vector<stream_id> stream_uses;
  std::int64_t gc_count_base = 0;
  int event_count = 0;
  bool allocated = false;
  bool mapped = true;

  bool is_split() const noexcept { return prev != nullptr || next != nullptr; }
  // Links this block between `before` and `after`, which must be its neighbours in memory.
  void splice(block* before, block* after) noexcept {
    KEEL_DCHECK(before == nullptr || before->ptr + before->size == ptr,
                "splice: block {:#x}+{} does not end where {:#x} starts", before->ptr, before->size,
                ptr);
    KEEL_DCHECK(after == nullptr || ptr + size == after->ptr,
                "splice: block {:#x}+{} does not end where {:#x} starts", ptr, size, after->ptr);
    if (before != nullptr) before->next = this;
    prev = before;
    if (after != nullptr) after->prev = this;
    next = after;
  }
};

struct by_size {
  bool operator()(const block* a, const block* b) const noexcept {
    if (a->stream != b->stream) return a->stream < b->stream;
    if (a->size != b->size) return a->size < b->size;
    return a->ptr < b->ptr;
  }
};
struct by_address {
  bool operator()(const block* a, const block* b) const noexcept {
    if (a->stream != b->stream) return a->stream < b->stream;
    return a->ptr < b->ptr;
  }
};

struct block_pool {
  block_pool(bool small, std::pmr::memory_resource* nodes)
      : blocks(nodes), unmapped(nodes), is_small(small) {}
  std::pmr::set<block*, by_size> blocks;       // free, mapped
  std::pmr::set<block*, by_address> unmapped;  // unmapped parts of expandable segments
  bool is_small;
  std::int64_t get_free_blocks_call_count = 0;

  // A free, mapped block of this pool enters the best-fit set (once).
  void insert(block* b) {
    KEEL_DCHECK(b->pool == this, "block {:#x} inserted into another pool", b->ptr);
    KEEL_DCHECK(!b->allocated && b->mapped && b->event_count == 0,
                "block {:#x} inserted into its pool while in use or unmapped", b->ptr);
    KEEL_DCHECK(b->size > 0, "empty block {:#x} inserted into its pool", b->ptr);
    b->gc_count_base = get_free_blocks_call_count;
    const bool inserted = blocks.insert(b).second;
    KEEL_DCHECK(inserted, "block {:#x} inserted into its pool twice", b->ptr);
    static_cast<void>(inserted);
  }
  std::int64_t age(const block* b) const noexcept {
    return get_free_blocks_call_count - b->gc_count_base;
  }
};

struct alloc_params {
  std::size_t size = 0;
  stream_id stream = 0;
  block_pool* pool = nullptr;
  std::size_t alloc_size = 0;
  block* found = nullptr;
};

std::uint64_t round_up(std::uint64_t x, std::uint64_t to) { return (x + to - 1) / to * to; }

// fraction * bytes as a size, saturating (a double at or above 2^64 does not convert).
std::size_t scaled(double fraction, std::size_t bytes) {
  const double v = fraction * static_cast<double>(bytes);
  if (!(v > 0.0)) return 0;
  if (v >= 18446744073709551616.0) return std::numeric_limits<std::size_t>::max();
  return static_cast<std::size_t>(v);
}

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

class caching_allocator::impl {
 public:
  impl(backend& b, const allocator_config& config, int device)
      : backend_(b),
        config_(config),
        device_(device),
        large_(false, &nodes_),
        small_(true, &nodes_) {
    stats_.max_split_size =
        config.max_split_size == allocator_config::k_unlimited
            ? -1
            : static_cast<std::int64_t>(std::min(config.max_split_size, k_max_device_bytes));
    expandable_ = config.expandable_segments || config.policy == policy_kind::keel;
    if (expandable_ && !backend_.supports_virtual_memory()) {
      KEEL_LOG_WARN("memory", "backend {} has no virtual memory: expandable segments disabled",
                    backend_.name());
      expandable_ = false;
    }
  }

  ~impl() {
    // Return every segment to the backend, live blocks included.
    std::vector<block*> all = all_blocks();
    for (block* b : all) {
      if (b->prev == nullptr && b->expandable == nullptr) {
        std::size_t total = 0;
        for (block* c = b; c != nullptr; c = c->next) total += c->size;
        backend_.free_segment(b->ptr, total);
      }
    }
    for (auto& [stream, queue] : events_) {
      for (auto& [event, b] : queue) backend_.destroy_event(event);
    }
    for (auto& es : segments_) backend_.release_range(es->base, es->size());
    for (block* b : all) delete b;
    for (block* b : spare_blocks_) delete b;
  }

  // ---- public operations (each takes the lock) ----

  std::uint64_t allocate(std::size_t orig_size, stream_id stream) {
    if (orig_size == 0) return 0;
    if (orig_size > k_max_device_bytes) {
      // Out of every device's domain; refused before rounding (which would not fit).
      throw out_of_memory(fmt::format(
          "CUDA out of memory. Tried to allocate {} ({} bytes): more than any device has (keel "
          "refuses requests above {}).",
          format_size(orig_size), orig_size, format_size(k_max_device_bytes)));
    }
    std::unique_lock lock(mutex_);
    process_events();
    const std::size_t size = round_size(orig_size);
    alloc_params p;
    p.size = size;
    p.stream = stream;
    // keel keeps one pool: small blocks fill the tails of large blocks' last pages.
    p.pool = size <= k_small_size && config_.policy != policy_kind::keel ? &small_ : &large_;
    p.alloc_size = caching_allocator::allocation_size(size);

    bool found = get_free_block(p) || (trigger_free_memory_callbacks() && get_free_block(p));
    if (!found) {
      if (set_fraction_ && config_.garbage_collection_threshold > 0.0)
        garbage_collect_cached_blocks();
      found = alloc_block(p, false) ||
              (release_available_cached_blocks(p) && alloc_block(p, false)) ||
              (release_cached_blocks() && alloc_block(p, true));
    }
    if (!found) throw_out_of_memory(p, orig_size);
    return alloc_found_block(p, orig_size, should_split(p.found, size));
  }

  void deallocate(std::uint64_t address) noexcept {
    if (address == 0) return;
    std::lock_guard lock(mutex_);
    const auto it = live_.find(address);
    if (it == live_.end()) {
      KEEL_LOG_WARN("memory", "deallocate of {:#x}, which is not a live allocation: ignored",
                    address);
      return;
    }
    block* b = it->second;
    live_.erase(it);
    b->allocated = false;
    for_pool(*b->pool, [&](std::size_t t) {
      stats_.allocation[t].decrease(1);
      stats_.allocated_bytes[t].decrease(static_cast<std::int64_t>(b->size));
    });
    record(trace_action::free_requested, b->ptr, b->requested_size, b->stream);
    if (b->size >= config_.max_split_size) stats_.oversize_allocations.decrease(1);
    if (!b->stream_uses.empty()) {
      insert_events(b);
    } else {
      free_block(b);
    }
  }

  void record_stream(std::uint64_t address, stream_id stream) {
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

  void empty_cache() {
    std::lock_guard lock(mutex_);
    release_cached_blocks();
  }

  void set_memory_fraction(double fraction) {
    if (!(fraction >= 0.0 && fraction <= 1.0)) {
      throw invalid_argument(fmt::format("memory fraction {} is outside [0, 1]", fraction));
    }
    std::lock_guard lock(mutex_);
    allowed_memory_maximum_ = scaled(fraction, backend_.capacity());
    set_fraction_ = true;
  }

  void add_free_memory_callback(std::function<bool()> callback) {
    std::lock_guard lock(mutex_);
    callbacks_.push_back(std::move(callback));
  }

  memory_stats stats() const {
    std::lock_guard lock(mutex_);
    return stats_;
  }

  void reset_peak_stats() {
    std::lock_guard lock(mutex_);
    for_each_stat([](stat& s) { s.reset_peak(); });
  }

  void reset_accumulated_stats() {
    std::lock_guard lock(mutex_);
    for_each_stat([](stat& s) { s.reset_accumulated(); });
    stats_.num_alloc_retries = stats_.num_ooms = stats_.num_sync_all_streams = 0;
    stats_.num_device_alloc = stats_.num_device_free = 0;
  }

  void record_history(bool enabled, std::size_t max_entries) {
    std::lock_guard lock(mutex_);
    recording_ = enabled;
    max_entries_ = std::max<std::size_t>(1, max_entries);
    if (!enabled) {
      ring_.clear();
      ring_next_ = 0;
    }
  }

  snapshot take_snapshot() const;
  std::string check_invariants() const;

  std::vector<std::uint64_t> import_segments(const std::vector<imported_segment>& segments) {
    std::lock_guard lock(mutex_);
    // Live addresses per segment, returned in the order of `segments`.
    std::vector<std::vector<std::uint64_t>> live(segments.size());
    std::vector<std::pair<std::size_t, std::vector<std::size_t>>> ranges;  // number -> segments
    for (std::size_t i = 0; i < segments.size(); ++i) {
      const imported_segment& seg = segments[i];
      if (seg.total_size > k_max_device_bytes) throw_start_does_not_fit(seg.total_size);
      std::size_t sum = 0;
      for (const imported_block& ib : seg.blocks) {
        if (ib.size == 0 || ib.size > seg.total_size - sum) {
          throw invalid_argument(fmt::format(
              "import: a block of {} bytes does not fit the {}-byte segment after {} bytes",
              ib.size, seg.total_size, sum));
        }
        if (ib.live && ib.requested_size > ib.size) {
          throw invalid_argument(
              fmt::format("import: a live block of {} bytes holds a request of {} bytes", ib.size,
                          ib.requested_size));
        }
        sum += ib.size;
      }
      if (sum != seg.total_size || seg.blocks.empty()) {
        throw invalid_argument(
            fmt::format("import: blocks sum to {} but the segment holds {}", sum, seg.total_size));
      }
      // A run of whole pages goes into its range; one that is not (PyTorch's large pages are
      // 20 MiB, keel's 2 MiB) cannot be mapped and is held as a plain segment.
      const std::size_t page = page_size_for(seg.is_small ? small_ : large_);
      if (seg.expandable && expandable_ && seg.range_offset % page == 0 &&
          seg.total_size % page == 0) {
        auto it = std::find_if(ranges.begin(), ranges.end(),
                               [&](const auto& r) { return r.first == seg.range; });
        if (it == ranges.end()) it = ranges.insert(ranges.end(), {seg.range, {}});
        it->second.push_back(i);
        continue;
      }
      if (seg.total_size > k_max_device_bytes - total_allocated_memory_)
        throw_start_does_not_fit(seg.total_size);
      const std::optional<std::uint64_t> base = backend_.allocate_segment(seg.total_size);
      if (!base) throw_start_does_not_fit(seg.total_size);
      block_pool& pool = seg.is_small ? small_ : large_;
      total_allocated_memory_ += seg.total_size;
      for_pool(pool, [&](std::size_t t) {
        stats_.segment[t].increase(1);
        stats_.reserved_bytes[t].increase(static_cast<std::int64_t>(seg.total_size));
      });
      if (seg.total_size >= config_.max_split_size) stats_.oversize_segments.increase(1);
      block* prev = nullptr;
      import_blocks(seg, pool, *base, nullptr, seg.blocks.size() > 1, prev, live[i]);
    }
    for (auto& [number, runs] : ranges) import_range(segments, runs, live);
    std::vector<std::uint64_t> out;
    for (const std::vector<std::uint64_t>& addresses : live)
      out.insert(out.end(), addresses.begin(), addresses.end());
    return out;
  }

  // One expandable range of the starting state: reserve it, map its runs, tile it with the
  // runs' blocks and unmapped gaps.
  void import_range(const std::vector<imported_segment>& segments,
                    std::vector<std::size_t>& indices,
                    std::vector<std::vector<std::uint64_t>>& live) {
    std::sort(indices.begin(), indices.end(), [&](std::size_t a, std::size_t b) {
      return segments[a].range_offset < segments[b].range_offset;
    });
    std::vector<const imported_segment*> runs;
    for (const std::size_t i : indices) runs.push_back(&segments[i]);
    block_pool& pool = runs.front()->is_small ? small_ : large_;
    const std::size_t page = page_size_for(pool);
    // A range larger than any device (offsets come from recorded addresses) cannot be held.
    if (runs.back()->range_offset > k_max_device_bytes ||
        runs.back()->total_size > k_max_device_bytes) {
      throw_start_does_not_fit(runs.back()->total_size);
    }
    const std::size_t needed = runs.back()->range_offset + runs.back()->total_size;
    const std::size_t pages = std::max(range_pages(page), (needed + page - 1) / page);
    const stream_id stream = runs.front()->stream;
    const std::optional<std::uint64_t> base = backend_.reserve_range(pages * page);
    if (!base) throw_start_does_not_fit(needed);
    auto es = std::make_unique<expandable_segment>(*base, page, pages, stream);
    block* prev = nullptr;
    std::size_t cursor = 0;
    const auto unmapped_gap = [&](std::size_t to) {
      if (to <= cursor) return;
      block* gap = new_block(stream, to - cursor, &pool, es->base + cursor);
      gap->mapped = false;
      gap->expandable = es.get();
      gap->splice(prev, nullptr);
      pool.unmapped.insert(gap);
      prev = gap;
    };
    for (std::size_t k = 0; k < runs.size(); ++k) {
      const imported_segment* run = runs[k];
      if (run->range_offset < cursor || run->range_offset % page != 0 ||
          run->total_size % page != 0) {
        throw invalid_argument(
            fmt::format("import: expandable run at offset {} ({} bytes) is not a run of "
                        "whole {}-byte pages after the previous one",
                        run->range_offset, run->total_size, page));
      }
      unmapped_gap(run->range_offset);
      if (run->total_size > k_max_device_bytes - total_allocated_memory_ ||
          map_range(*es, es->base + run->range_offset, run->total_size) == 0) {
        throw_start_does_not_fit(run->total_size);
      }
      total_allocated_memory_ += run->total_size;
      for_pool(pool, [&](std::size_t t) {
        stats_.reserved_bytes[t].increase(static_cast<std::int64_t>(run->total_size));
      });
      import_blocks(*run, pool, es->base + run->range_offset, es.get(), false, prev,
                    live[indices[k]]);
      cursor = run->range_offset + run->total_size;
    }
    unmapped_gap(pages * page);
    segments_.push_back(std::move(es));
  }

  void import_blocks(const imported_segment& seg, block_pool& pool, std::uint64_t ptr,
                     expandable_segment* es, bool split, block*& prev,
                     std::vector<std::uint64_t>& live_addresses) {
    for (const imported_block& ib : seg.blocks) {
      block* b = new_block(seg.stream, ib.size, &pool, ptr);
      b->expandable = es;
      b->splice(prev, nullptr);
      prev = b;
      ptr += ib.size;
      if (ib.live) {
        b->allocated = true;
        b->requested_size = ib.requested_size;
        live_.emplace(b->ptr, b);
        live_addresses.push_back(b->ptr);
        for_pool(pool, [&](std::size_t t) {
          stats_.allocation[t].increase(1);
          stats_.allocated_bytes[t].increase(static_cast<std::int64_t>(b->size));
          stats_.active[t].increase(1);
          stats_.active_bytes[t].increase(static_cast<std::int64_t>(b->size));
          stats_.requested_bytes[t].increase(static_cast<std::int64_t>(b->requested_size));
        });
        if (b->size >= config_.max_split_size) stats_.oversize_allocations.increase(1);
      } else {
        pool.insert(b);
        if (split && es == nullptr) {
          for_pool(pool, [&](std::size_t t) {
            stats_.inactive_split[t].increase(1);
            stats_.inactive_split_bytes[t].increase(static_cast<std::int64_t>(b->size));
          });
        }
      }
    }
  }

  [[noreturn]] void throw_start_does_not_fit(std::size_t bytes) const {
    throw out_of_memory(
        fmt::format("CUDA out of memory. The starting state needs {} more and only {} is free.",
                    format_size(bytes), format_size(backend_.free_bytes())));
  }

  memory_usage usage() const {
    std::lock_guard lock(mutex_);
    return {static_cast<std::size_t>(stats_.reserved_bytes[k_all].current),
            static_cast<std::size_t>(stats_.allocated_bytes[k_all].current),
            static_cast<std::size_t>(stats_.requested_bytes[k_all].current)};
  }

  void attach_trace_tracker(std::function<void(const trace_entry&)> tracker) {
    std::lock_guard lock(mutex_);
    tracker_ = std::move(tracker);
  }

  std::size_t round_size(std::size_t size) const noexcept { return config_.round_size(size); }

  const allocator_config& config() const noexcept { return config_; }
  backend& device_backend() const noexcept { return backend_; }

 private:
  template <class F>
  static void for_pool(const block_pool& pool, F f) {
    f(k_all);
    f(pool.is_small ? k_small_pool : k_large_pool);
  }

  template <class F>
  void for_each_stat(F f) {
    for (stat_array* a :
         {&stats_.allocation, &stats_.segment, &stats_.active, &stats_.inactive_split,
          &stats_.allocated_bytes, &stats_.reserved_bytes, &stats_.active_bytes,
          &stats_.inactive_split_bytes, &stats_.requested_bytes}) {
      for (stat& s : *a) f(s);
    }
    f(stats_.oversize_allocations);
    f(stats_.oversize_segments);
  }

  block* new_block(stream_id stream, std::size_t size, block_pool* pool, std::uint64_t ptr) {
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
  void delete_block(block* b) noexcept {
    b->stream_uses.clear();
    spare_blocks_.push_back(b);
  }

  void record(trace_action action, std::uint64_t addr, std::size_t size, stream_id stream,
              std::uint64_t device_free = 0) {
    if (!recording_ && !tracker_) return;
    trace_entry e;
    e.action = action;
    e.addr = addr;
    e.size = size;
    e.stream = stream;
    e.device_free = device_free;
    if (tracker_) tracker_(e);
    if (!recording_) return;
    e.time_us = now_us();
    if (ring_.size() < max_entries_) {
      ring_.push_back(std::move(e));
    } else {
      ring_[ring_next_] = std::move(e);
      ring_next_ = (ring_next_ + 1) % max_entries_;
    }
  }

  bool trigger_free_memory_callbacks() {
    bool freed = false;
    for (const auto& cb : callbacks_) freed |= cb();
    return freed;
  }

  std::size_t page_size_for(const block_pool& pool) const noexcept {
    std::size_t page =
        pool.is_small || config_.policy == policy_kind::keel ? k_small_buffer : k_large_buffer;
    return round_up(page, backend_.page_granularity());
  }

  // ---- the malloc path ----

  bool get_free_block(alloc_params& p) {
    block_pool& pool = *p.pool;
    if (set_fraction_ && config_.garbage_collection_threshold > 0.0)
      ++pool.get_free_blocks_call_count;
    block key;
    key.stream = p.stream;
    key.size = p.size;
    auto it = pool.blocks.lower_bound(&key);
    if (it == pool.blocks.end() || (*it)->stream != p.stream) return false;
    if ((*it)->expandable != nullptr) {
      if (expandable_) {
        // Best fit counts what a block can grow into by mapping the unmapped space after it.
        const auto expandable_size = [](const block* b) {
          return b->size + (b->next != nullptr && !b->next->mapped ? b->next->size : 0);
        };
        auto next = std::next(it);
        while ((*it)->expandable != nullptr && next != pool.blocks.end() &&
               (*next)->stream == p.stream && expandable_size(*next) < expandable_size(*it)) {
          it = next++;
        }
      } else {
        do {
          ++it;
        } while (it != pool.blocks.end() && (*it)->expandable != nullptr &&
                 (*it)->stream == p.stream);
        if (it == pool.blocks.end() || (*it)->stream != p.stream) return false;
      }
    }
    // Never hand an oversize block to a small request; round oversize requests only so far.
    if (p.size < config_.max_split_size && (*it)->size >= config_.max_split_size) return false;
    // (*it)->size >= p.size: the set orders by size within the stream. Subtracting cannot wrap
    // where p.size + max_non_split_rounding_size could.
    if (p.size >= config_.max_split_size &&
        (*it)->size - p.size >= config_.max_non_split_rounding_size) {
      return false;
    }
    p.found = *it;
    pool.blocks.erase(it);
    return true;
  }

  bool should_split(const block* b, std::size_t size) const noexcept {
    const std::size_t remaining = b->size - size;
    if (b->pool->is_small || expandable_) return remaining >= k_min_block_size;
    return size < config_.max_split_size && remaining > k_small_size;
  }

  void garbage_collect_cached_blocks() {
    const std::size_t threshold =
        scaled(std::min(config_.garbage_collection_threshold, 1.0), allowed_memory_maximum_);
    if (total_allocated_memory_ <= threshold) return;
    const std::size_t target = total_allocated_memory_ - threshold;
    std::size_t reclaimed = 0;
    std::int64_t total_age = 0;
    int freeable = 0;
    for (const block* b : large_.blocks) {
      if (!b->is_split() && b->expandable == nullptr) {
        total_age += large_.age(b);
        ++freeable;
      }
    }
    if (freeable == 0) return;
    bool freed = true;
    while (reclaimed < target && freed && freeable > 0) {
      const double age_threshold = static_cast<double>(total_age) / freeable;
      freed = false;
      for (auto it = large_.blocks.begin(); it != large_.blocks.end();) {
        block* b = *it++;
        if (!b->is_split() && b->expandable == nullptr &&
            static_cast<double>(large_.age(b)) >= age_threshold) {
          freed = true;
          reclaimed += b->size;
          total_age -= large_.age(b);
          --freeable;
          release_block(b);
        }
      }
    }
  }

  bool alloc_block(alloc_params& p, bool is_retry) {
    if (is_retry) ++stats_.num_alloc_retries;
    const std::size_t size = p.alloc_size;
    KEEL_DCHECK(total_allocated_memory_ <= k_max_device_bytes, "reserved {} exceeds the cap",
                total_allocated_memory_);
    // Never more than k_max_device_bytes in total, so that no sum of sizes wraps.
    if (size > k_max_device_bytes - total_allocated_memory_) return false;
    if (set_fraction_ && total_allocated_memory_ + size > allowed_memory_maximum_) return false;
    if (expandable_) {
      p.found = try_allocate_expandable_block(p.stream, p.pool, p.size);
      return p.found != nullptr;
    }
    const std::optional<std::uint64_t> ptr = backend_.allocate_segment(size);
    if (!ptr) return false;
    total_allocated_memory_ += size;
    p.found = new_block(p.stream, size, p.pool, *ptr);
    for_pool(*p.pool, [&](std::size_t t) {
      stats_.segment[t].increase(1);
      stats_.reserved_bytes[t].increase(static_cast<std::int64_t>(size));
    });
    if (size >= config_.max_split_size) stats_.oversize_segments.increase(1);
    ++stats_.num_device_alloc;
    record(trace_action::segment_alloc, *ptr, size, p.stream);
    return true;
  }

  // Frees oversize cached blocks, the smallest one that covers the request or else the
  // largest ones until enough is released.
  bool release_available_cached_blocks(const alloc_params& p) {
    if (config_.max_split_size == allocator_config::k_unlimited) return false;
    block_pool& pool = *p.pool;
    block key;
    key.stream = p.stream;
    key.size = std::max(p.size, config_.max_split_size);
    auto it = pool.blocks.lower_bound(&key);
    while (it != pool.blocks.end() && (*it)->stream == p.stream && (*it)->expandable != nullptr)
      ++it;
    if (it == pool.blocks.end() || (*it)->stream != p.stream) {
      if (it == pool.blocks.begin()) return false;
      std::size_t released = 0;
      --it;
      while (released < key.size && (*it)->size >= config_.max_split_size &&
             (*it)->stream == p.stream) {
        auto current = it;
        const bool at_begin = it == pool.blocks.begin();
        if (!at_begin) --it;
        if ((*current)->expandable == nullptr) {
          released += (*current)->size;
          release_block(*current);
        }
        if (at_begin) break;
      }
      return released >= key.size;
    }
    release_block(*it);
    return true;
  }

  bool release_cached_blocks() {
    synchronize_and_free_events();
    release_blocks(large_);
    release_blocks(small_);
    return true;
  }

  void release_blocks(block_pool& pool) {
    std::vector<block*> to_unmap;
    for (auto it = pool.blocks.begin(); it != pool.blocks.end();) {
      block* b = *it++;
      if (b->expandable != nullptr) {
        to_unmap.push_back(b);
      } else if (!b->is_split()) {
        release_block(b);
      }
    }
    for (block* b : to_unmap) {
      unmap_block(b);
      if (!b->is_split()) release_expandable_segment(b);
    }
  }

  void release_block(block* b) {
    ++stats_.num_device_free;
    record(trace_action::segment_free, b->ptr, b->size, b->stream);
    backend_.free_segment(b->ptr, b->size);
    total_allocated_memory_ -= b->size;
    for_pool(*b->pool, [&](std::size_t t) {
      stats_.segment[t].decrease(1);
      stats_.reserved_bytes[t].decrease(static_cast<std::int64_t>(b->size));
    });
    if (b->size >= config_.max_split_size) stats_.oversize_segments.decrease(1);
    b->pool->blocks.erase(b);
    delete_block(b);
  }

  std::uint64_t alloc_found_block(const alloc_params& p, std::size_t orig_size, bool split) {
    block* b = p.found;
    block_pool& pool = *p.pool;
    const bool already_split = b->is_split();
    KEEL_DCHECK(b->size >= p.size, "block {:#x} of {} bytes handed out for {}", b->ptr, b->size,
                p.size);
    if (split) {
      block* remaining = b;
      KEEL_DCHECK(remaining->size > p.size, "splitting {:#x}: nothing remains", remaining->ptr);
      b = new_block(p.stream, p.size, &pool, remaining->ptr);
      b->expandable = remaining->expandable;
      b->prev = remaining->prev;
      if (b->prev != nullptr) b->prev->next = b;
      b->next = remaining;
      remaining->prev = b;
      remaining->ptr += p.size;
      remaining->size -= p.size;
      pool.insert(remaining);
      if (already_split && b->expandable == nullptr) {
        for_pool(pool, [&](std::size_t t) {
          stats_.inactive_split_bytes[t].decrease(static_cast<std::int64_t>(b->size));
        });
      } else if (b->expandable == nullptr) {
        for_pool(pool, [&](std::size_t t) {
          stats_.inactive_split_bytes[t].increase(static_cast<std::int64_t>(remaining->size));
          stats_.inactive_split[t].increase(1);
        });
      }
    } else if (already_split && b->expandable == nullptr) {
      for_pool(pool, [&](std::size_t t) {
        stats_.inactive_split_bytes[t].decrease(static_cast<std::int64_t>(b->size));
        stats_.inactive_split[t].decrease(1);
      });
    }
    b->allocated = true;
    b->requested_size = orig_size;
    record(trace_action::alloc, b->ptr, orig_size, b->stream);
    live_.emplace(b->ptr, b);
    for_pool(pool, [&](std::size_t t) {
      stats_.allocation[t].increase(1);
      stats_.allocated_bytes[t].increase(static_cast<std::int64_t>(b->size));
      stats_.active[t].increase(1);
      stats_.active_bytes[t].increase(static_cast<std::int64_t>(b->size));
      stats_.requested_bytes[t].increase(static_cast<std::int64_t>(orig_size));
    });
    if (b->size >= config_.max_split_size) stats_.oversize_allocations.increase(1);
    return b->ptr;
  }

  // ---- freeing ----

  void free_block(block* b) {
    record(trace_action::free_completed, b->ptr, b->requested_size, b->stream);
    const std::size_t original_size = b->size;
    const std::size_t requested = b->requested_size;
    block_pool& pool = *b->pool;
    std::int64_t split_blocks = 0;
    std::int64_t split_bytes = 0;
    for (block* candidate : {b->prev, b->next}) {
      const std::size_t subsumed = try_merge_blocks(b, candidate, pool);
      if (subsumed > 0) {
        split_blocks -= 1;
        split_bytes -= static_cast<std::int64_t>(subsumed);
      }
    }
    pool.insert(b);
    if (b->is_split()) {
      split_blocks += 1;
      split_bytes += static_cast<std::int64_t>(b->size);
    }
    for_pool(pool, [&](std::size_t t) {
      if (b->expandable == nullptr) {
        if (split_blocks > 0) stats_.inactive_split[t].increase(split_blocks);
        if (split_blocks < 0) stats_.inactive_split[t].decrease(-split_blocks);
        if (split_bytes > 0) stats_.inactive_split_bytes[t].increase(split_bytes);
        if (split_bytes < 0) stats_.inactive_split_bytes[t].decrease(-split_bytes);
      }
      stats_.active[t].decrease(1);
      stats_.active_bytes[t].decrease(static_cast<std::int64_t>(original_size));
      stats_.requested_bytes[t].decrease(static_cast<std::int64_t>(requested));
    });
  }

  std::size_t try_merge_blocks(block* dst, block* src, block_pool& pool) {
    if (src == nullptr || src->allocated || src->event_count > 0 || !src->stream_uses.empty() ||
        dst->mapped != src->mapped) {
      return 0;
    }
    KEEL_DCHECK(dst->prev == src ? src->ptr + src->size == dst->ptr
                                 : dst->next == src && dst->ptr + dst->size == src->ptr,
                "merging {:#x}+{} with {:#x}+{}: not neighbours", dst->ptr, dst->size, src->ptr,
                src->size);
    if (dst->prev == src) {
      dst->ptr = src->ptr;
      dst->prev = src->prev;
      if (dst->prev != nullptr) dst->prev->next = dst;
    } else {
      dst->next = src->next;
      if (dst->next != nullptr) dst->next->prev = dst;
    }
    const std::size_t subsumed = src->size;
    dst->size += subsumed;
    if (src->mapped) {
      pool.blocks.erase(src);
    } else {
      pool.unmapped.erase(src);
    }
    delete_block(src);
    return subsumed;
  }

  // ---- cross-stream frees ----

  void insert_events(block* b) {
    std::vector<stream_id> streams;
    streams.swap(b->stream_uses);
    for (stream_id s : streams) {
      const event_id e = backend_.record_event(s);
      ++b->event_count;
      events_[s].emplace_back(e, b);
    }
  }

  void process_events() {
    for (auto it = events_.begin(); it != events_.end();) {
      auto& queue = it->second;
      while (!queue.empty()) {
        auto [event, b] = queue.front();
        if (!backend_.query_event(event)) break;
        backend_.destroy_event(event);
        queue.pop_front();
        if (--b->event_count == 0) free_block(b);
      }
      it = queue.empty() ? events_.erase(it) : std::next(it);
    }
  }

  void synchronize_and_free_events() {
    ++stats_.num_sync_all_streams;
    for (auto& [stream, queue] : events_) {
      for (auto& [event, b] : queue) {
        backend_.synchronize_event(event);
        backend_.destroy_event(event);
        if (--b->event_count == 0) free_block(b);
      }
    }
    events_.clear();
  }

  // ---- expandable segments ----

  // Maps the pages covering [ptr, ptr + size) of `es`; returns the mapped range's size (0 when
  // the device is out of memory).
  std::size_t map_range(expandable_segment& es, std::uint64_t ptr, std::size_t size) {
    const std::size_t begin = (ptr - es.base) / es.page;
    const std::size_t end = (ptr + size - es.base + es.page - 1) / es.page;
    if (begin >= end) return 0;
    const std::size_t bytes = (end - begin) * es.page;
    if (bytes > k_max_device_bytes - total_allocated_memory_) return 0;
    if (!backend_.map_pages(es.base, begin * es.page, bytes)) return 0;
    return bytes;
  }

  // Unmaps the whole pages inside [ptr, ptr + size); returns {start, bytes}.
  std::pair<std::uint64_t, std::size_t> unmap_range(expandable_segment& es, std::uint64_t ptr,
                                                    std::size_t size) {
    const std::size_t begin = (ptr - es.base + es.page - 1) / es.page;
    const std::size_t end = (ptr + size - es.base) / es.page;
    if (begin >= end) return {ptr, 0};
    backend_.unmap_pages(es.base, begin * es.page, (end - begin) * es.page);
    return {es.base + begin * es.page, (end - begin) * es.page};
  }

  static bool allocatable(const block* b) {
    return b != nullptr && !b->allocated && b->event_count == 0 && b->stream_uses.empty();
  }

  block* find_expandable_block(stream_id stream, block_pool* pool, std::size_t size) {
    block key;
    key.stream = stream;
    const auto has_space = [&](block* b) {
      std::size_t bytes = 0;
      while (bytes < size && allocatable(b)) {
        bytes += b->size;
        b = b->next;
      }
      return bytes >= size;
    };
    for (auto it = pool->unmapped.lower_bound(&key);
         it != pool->unmapped.end() && (*it)->stream == stream; ++it) {
      block* c = *it;
      if (allocatable(c->prev)) c = c->prev;
      if (has_space(c)) return c;
    }
    const std::size_t page = page_size_for(*pool);
    const std::size_t pages = range_pages(page);
    if (pages * page < size) return nullptr;
    const std::optional<std::uint64_t> base = backend_.reserve_range(pages * page);
    if (!base) return nullptr;
    auto es = std::make_unique<expandable_segment>(*base, page, pages, stream);
    block* candidate = new_block(stream, es->size(), pool, es->base);
    candidate->mapped = false;
    candidate->expandable = es.get();
    segments_.push_back(std::move(es));
    pool->unmapped.insert(candidate);
    return candidate;
  }

  // PyTorch reserves 1.125 x the device's memory per range (capped at 1 TiB of memory here).
  std::size_t range_pages(std::size_t page) const noexcept {
    const std::size_t device_memory =
        std::min<std::size_t>(backend_.capacity(), std::size_t{1} << 40);
    return (device_memory + device_memory / 8 + page - 1) / page;
  }

  bool map_block(block* to_map, std::size_t size) {
    const std::size_t mapped = map_range(*to_map->expandable, to_map->ptr, size);
    if (mapped == 0) return false;
    block_pool& pool = *to_map->pool;
    pool.unmapped.erase(to_map);
    to_map->mapped = true;
    if (mapped < to_map->size) {
      block* remaining =
          new_block(to_map->stream, to_map->size - mapped, &pool, to_map->ptr + mapped);
      remaining->mapped = false;
      remaining->expandable = to_map->expandable;
      to_map->size = mapped;
      remaining->splice(to_map, to_map->next);
      pool.unmapped.insert(remaining);
    }
    const std::uint64_t mapped_at =
        to_map->ptr;  // the trace names the pages mapped, before merging
    try_merge_blocks(to_map, to_map->prev, pool);
    try_merge_blocks(to_map, to_map->next, pool);
    pool.insert(to_map);
    total_allocated_memory_ += mapped;
    for_pool(pool, [&](std::size_t t) {
      stats_.reserved_bytes[t].increase(static_cast<std::int64_t>(mapped));
    });
    ++stats_.num_device_alloc;
    record(trace_action::segment_map, mapped_at, mapped, to_map->stream);
    return true;
  }

  block* try_allocate_expandable_block(stream_id stream, block_pool* pool, std::size_t size) {
    if (config_.policy == policy_kind::keel) recycle_free_pages(size);
    block* candidate = find_expandable_block(stream, pool, size);
    if (candidate == nullptr) return nullptr;
    if (!candidate->mapped && !map_block(candidate, std::min(candidate->size, size)))
      return nullptr;
    while (candidate->size < size) {
      const std::size_t remaining = size - candidate->size;
      block* next = candidate->next;
      if (!map_block(next, std::min(remaining, next->size))) return nullptr;
      candidate = next;
    }
    pool->blocks.erase(candidate);
    return candidate;
  }

  // keel policy: before mapping pages that would take reserved memory above its high-water
  // mark, give back whole free pages held anywhere in this device's expandable segments
  // (largest free blocks first), as many as the excess. Reserved memory then never grows
  // while whole free pages exist, and below the mark nothing is unmapped only to be mapped
  // again (each map/unmap is a driver call on CUDA).
  void recycle_free_pages(std::size_t wanted) {
    high_water_ = std::max(high_water_, total_allocated_memory_);
    if (total_allocated_memory_ + wanted <= high_water_) return;
    wanted = total_allocated_memory_ + wanted - high_water_;
    std::vector<block*> candidates;
    for (block_pool* pool : {&large_, &small_}) {
      for (block* b : pool->blocks) {
        if (b->expandable != nullptr && b->size >= b->expandable->page) candidates.push_back(b);
      }
    }
    std::sort(candidates.begin(), candidates.end(),
              [](const block* a, const block* b) { return a->size > b->size; });
    std::size_t recycled = 0;
    for (block* b : candidates) {
      if (recycled >= wanted) break;
      recycled += unmap_block(b);
    }
  }

  std::size_t unmap_block(block* b) {
    const std::pair<std::uint64_t, std::size_t> unmapped =
        unmap_range(*b->expandable, b->ptr, b->size);
    const std::uint64_t start = unmapped.first;
    const std::size_t bytes = unmapped.second;
    if (bytes == 0) return 0;
    block_pool& pool = *b->pool;
    pool.blocks.erase(b);
    // b becomes the unmapped pages; what is left of it on either side stays free and mapped.
    const std::uint64_t old_ptr = b->ptr;
    const std::size_t before = start - old_ptr;
    const std::size_t after = b->size - (before + bytes);
    block* const prev = b->prev;
    block* const next = b->next;
    b->ptr = start;
    b->size = bytes;
    b->mapped = false;
    if (before > 0) {
      block* before_free = new_block(b->stream, before, &pool, old_ptr);
      before_free->expandable = b->expandable;
      before_free->splice(prev, b);
      pool.insert(before_free);
    }
    if (after > 0) {
      block* after_free = new_block(b->stream, after, &pool, start + bytes);
      after_free->expandable = b->expandable;
      after_free->splice(b, next);
      pool.insert(after_free);
    }
    try_merge_blocks(b, b->prev, pool);
    try_merge_blocks(b, b->next, pool);
    pool.unmapped.insert(b);
    total_allocated_memory_ -= bytes;
    for_pool(pool, [&](std::size_t t) {
      stats_.reserved_bytes[t].decrease(static_cast<std::int64_t>(bytes));
    });
    ++stats_.num_device_free;
    record(trace_action::segment_unmap, start, bytes, b->stream);
    return bytes;
  }

  void release_expandable_segment(block* b) {
    expandable_segment* es = b->expandable;
    backend_.release_range(es->base, es->size());
    b->pool->unmapped.erase(b);
    delete_block(b);
    std::erase_if(segments_, [es](const auto& s) { return s.get() == es; });
  }

  // ---- out of memory ----

  [[noreturn]] void throw_out_of_memory(const alloc_params& p, std::size_t orig_size);

  static std::uint64_t segment_start(const block* b) noexcept {
    while (b->prev != nullptr) b = b->prev;
    return b->ptr;
  }

  std::vector<block*> all_blocks() const {
    std::vector<block*> out;
    for (const block_pool* pool : {&large_, &small_}) {
      out.insert(out.end(), pool->blocks.begin(), pool->blocks.end());
      out.insert(out.end(), pool->unmapped.begin(), pool->unmapped.end());
    }
    for (const auto& [ptr, b] : live_) out.push_back(b);
    for (const auto& [stream, queue] : events_) {
      for (const auto& [event, b] : queue) out.push_back(b);
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    // Blocks that wait for events and are no longer live, and blocks freed by nobody yet
    // (allocated=false with stream uses pending) are covered by the event queues.
    return out;
  }

  backend& backend_;
  allocator_config config_;
  int device_;
  bool expandable_ = false;
  mutable std::mutex mutex_;
  memory_stats stats_;
  std::pmr::unsynchronized_pool_resource nodes_;
  block_pool large_;
  block_pool small_;
  std::unordered_map<std::uint64_t, block*> live_;
  std::map<stream_id, std::deque<std::pair<event_id, block*>>> events_;
  std::size_t total_allocated_memory_ = 0;
  std::size_t high_water_ = 0;  // the most reserved memory so far (keel's page recycling)
  std::size_t allowed_memory_maximum_ = 0;
  bool set_fraction_ = false;
  std::vector<std::unique_ptr<expandable_segment>> segments_;
  std::vector<std::function<bool()>> callbacks_;
  std::vector<block*> spare_blocks_;
  std::function<void(const trace_entry&)> tracker_;
  bool recording_ = false;
  std::size_t max_entries_ = 1;
  std::vector<trace_entry> ring_;
  std::size_t ring_next_ = 0;

  friend class caching_allocator;
};

// ---- out-of-memory explanation ----

void caching_allocator::impl::throw_out_of_memory(const alloc_params& p, std::size_t orig_size) {
  const std::size_t device_free = backend_.free_bytes();
  const std::size_t total = backend_.capacity();
  // A simulated device of unlimited capacity reports nearly 2^64 bytes free; the trace keeps
  // what a snapshot may hold.
  record(trace_action::oom, 0, p.size, p.stream, std::min(device_free, k_max_device_bytes));
  ++stats_.num_ooms;
  const auto allocated = static_cast<std::size_t>(stats_.allocated_bytes[k_all].current);
  const auto reserved = static_cast<std::size_t>(stats_.reserved_bytes[k_all].current);

  std::string message = fmt::format(
      "CUDA out of memory. Tried to allocate {}. GPU {} has a total capacity of {} of which {} is "
      "free. {}Of the allocated memory {} is allocated by PyTorch, and {} is reserved by PyTorch "
      "but unallocated.",
      format_size(p.alloc_size), device_, format_size(total), format_size(device_free),
      set_fraction_ ? format_size(allowed_memory_maximum_) + " allowed; " : "",
      format_size(allocated), format_size(reserved - allocated));

  // Where the reserved-but-unallocated memory is, per pool.
  std::size_t whole_pages_2m = 0;   // free bytes in whole 2 MiB pages (keel's recycling)
  std::size_t whole_pages_20m = 0;  // ... in whole 20 MiB pages (PyTorch's expandable pages)
  for (const block_pool* pool : {&large_, &small_}) {
    std::vector<std::size_t> sizes;
    std::size_t free_total = 0;
    for (const block* b : pool->blocks) {
      sizes.push_back(b->size);
      free_total += b->size;
      for (std::size_t page : {k_small_buffer, k_large_buffer}) {
        const std::uint64_t origin =
            b->expandable != nullptr ? b->expandable->base : segment_start(b);
        const std::uint64_t first = round_up(b->ptr - origin, page);
        const std::uint64_t last = (b->ptr - origin + b->size) / page * page;
        const std::size_t whole = last > first ? last - first : 0;
        (page == k_small_buffer ? whole_pages_2m : whole_pages_20m) += whole;
      }
    }
    if (sizes.empty()) {
      message +=
          fmt::format(" {} pool: no free cached blocks.", pool->is_small ? "Small" : "Large");
      continue;
    }
    std::sort(sizes.rbegin(), sizes.rend());
    std::string list;
    for (std::size_t i = 0; i < sizes.size() && i < 6; ++i) {
      list += (i ? ", " : "") + format_size(sizes[i]);
    }
    if (sizes.size() > 6) list += fmt::format(", and {} more", sizes.size() - 6);
    message +=
        fmt::format(" {} pool: {} free in {} fragment{} (largest {}: {}).",
                    pool->is_small ? "Small" : "Large", format_size(free_total), sizes.size(),
                    sizes.size() == 1 ? "" : "s", format_size(sizes.front()), list);
  }
  std::size_t pending = 0;
  for (const auto& [stream, queue] : events_) {
    for (const auto& [event, b] : queue) pending += b->size;
  }
  message +=
      fmt::format(" {} is held by blocks waiting for cross-stream frees.", format_size(pending));
  message += " empty_cache() was already tried and returned every unsplit cached segment.";

  // What would have served this request from the current state (sums saturate: a device of
  // "unlimited" capacity reports nearly 2^64 bytes free).
  const std::size_t need = p.size;
  const auto plus = [](std::size_t a, std::size_t b) {
    return b > std::numeric_limits<std::size_t>::max() - a ? std::numeric_limits<std::size_t>::max()
                                                           : a + b;
  };
  std::vector<std::string> would;
  if (!expandable_) {
    if (plus(device_free, whole_pages_20m) >= need) {
      would.push_back(
          fmt::format("expandable_segments:True (its 20 MiB pages could reuse {} of the "
                      "free cached memory)",
                      format_size(whole_pages_20m)));
    }
  }
  if (config_.policy != policy_kind::keel && plus(device_free, whole_pages_2m) >= need) {
    would.push_back(
        fmt::format("policy:keel (its 2 MiB page recycling could reuse {} of the free "
                    "cached memory)",
                    format_size(whole_pages_2m)));
  }
  if (would.empty()) {
    message += fmt::format(
        " No allocator setting can serve {} now: free device memory plus every whole free page "
        "({}) is less than the request; less memory must be live.",
        format_size(orig_size), format_size(plus(device_free, whole_pages_2m)));
  } else {
    message +=
        fmt::format(" This request would have been served with {}.", fmt::join(would, " or "));
  }
  throw out_of_memory(message);
}

// ---- snapshots ----

snapshot caching_allocator::impl::take_snapshot() const {
  std::lock_guard lock(mutex_);
  snapshot out;
  std::vector<block*> blocks = all_blocks();
  std::vector<block*> heads;
  for (block* b : blocks) {
    if (b->prev == nullptr) heads.push_back(b);
  }
  const auto emit = [&](const block* first, const block* stop) {
    snapshot_segment seg;
    seg.device = device_;
    seg.address = first->ptr;
    seg.stream = first->stream;
    seg.is_large = !first->pool->is_small;
    seg.is_expandable = first->expandable != nullptr;
    for (const block* b = first; b != stop; b = b->next) {
      snapshot_block sb;
      sb.address = b->ptr;
      sb.size = b->size;
      const bool pending = b->event_count > 0 || !b->stream_uses.empty();
      sb.state = b->allocated ? block_state::active_allocated
                 : pending    ? block_state::active_pending_free
                              : block_state::inactive;
      sb.requested_size = sb.state == block_state::inactive ? 0 : b->requested_size;
      seg.total_size += b->size;
      if (b->allocated) seg.allocated_size += b->size;
      if (sb.state != block_state::inactive) {
        seg.active_size += b->size;
        seg.requested_size += b->requested_size;
      }
      seg.blocks.push_back(std::move(sb));
    }
    out.segments.push_back(std::move(seg));
  };
  for (const block* head : heads) {
    if (head->expandable == nullptr) {
      emit(head, nullptr);
      continue;
    }
    // An expandable segment is reported as its runs of mapped blocks.
    const block* b = head;
    while (b != nullptr) {
      while (b != nullptr && !b->mapped) b = b->next;
      if (b == nullptr) break;
      const block* end = b;
      while (end != nullptr && end->mapped) end = end->next;
      emit(b, end);
      b = end;
    }
  }
  std::sort(
      out.segments.begin(), out.segments.end(),
      [](const snapshot_segment& a, const snapshot_segment& b) { return a.address < b.address; });
  out.device_traces.resize(static_cast<std::size_t>(device_) + 1);
  auto& trace = out.device_traces[static_cast<std::size_t>(device_)];
  trace.insert(trace.end(), ring_.begin() + static_cast<std::ptrdiff_t>(ring_next_), ring_.end());
  trace.insert(trace.end(), ring_.begin(), ring_.begin() + static_cast<std::ptrdiff_t>(ring_next_));
  allocator_settings settings;
  settings.conf = config_.pytorch_string();  // PyTorch's string: no keel-only key
  settings.expandable_segments = config_.expandable_segments;
  settings.max_split_size = stats_.max_split_size;
  settings.garbage_collection_threshold = config_.garbage_collection_threshold;
  settings.roundup_power2_divisions.assign(config_.roundup_power2_divisions.begin(),
                                           config_.roundup_power2_divisions.end());
  settings.max_non_split_rounding_size =
      static_cast<std::int64_t>(config_.max_non_split_rounding_size);
  out.settings = settings;
  return out;
}

// ---- invariants ----

std::string caching_allocator::impl::check_invariants() const {
  std::lock_guard lock(mutex_);
  std::vector<block*> blocks = all_blocks();
  std::array<std::int64_t, 3> allocated{}, allocated_n{}, active{}, active_n{}, requested{},
      reserved{}, segments{}, split{}, split_n{};
  const auto add = [](std::array<std::int64_t, 3>& a, const block_pool* pool, std::int64_t v) {
    a[k_all] += v;
    a[pool->is_small ? k_small_pool : k_large_pool] += v;
  };
  for (block* b : blocks) {
    if (b->prev != nullptr && b->prev->next != b)
      return fmt::format("block {:#x}: prev link broken", b->ptr);
    if (b->next != nullptr && b->next->prev != b)
      return fmt::format("block {:#x}: next link broken", b->ptr);
    if (b->next != nullptr && b->ptr + b->size != b->next->ptr) {
      return fmt::format("block {:#x}+{} does not end where the next one starts", b->ptr, b->size);
    }
    const bool in_free = b->pool->blocks.count(b) != 0;
    const bool in_unmapped = b->pool->unmapped.count(b) != 0;
    const bool pending = b->event_count > 0;
    if (b->allocated && (in_free || in_unmapped))
      return fmt::format("live block {:#x} is in a pool", b->ptr);
    if (!b->allocated && !pending && b->mapped && !in_free) {
      return fmt::format("free block {:#x} is missing from its pool", b->ptr);
    }
    if (!b->mapped && !in_unmapped) return fmt::format("unmapped block {:#x} is missing", b->ptr);
    if (!b->allocated && !pending && b->mapped) {
      for (block* n : {b->prev, b->next}) {
        if (n != nullptr && !n->allocated && n->event_count == 0 && n->mapped) {
          return fmt::format("free blocks {:#x} and {:#x} were not coalesced", b->ptr, n->ptr);
        }
      }
    }
    if (b->size == 0) return fmt::format("block {:#x} is empty", b->ptr);
    if (b->allocated && b->requested_size > b->size) {
      return fmt::format("live block {:#x} of {} bytes holds a request of {}", b->ptr, b->size,
                         b->requested_size);
    }
    if (b->allocated) {
      add(allocated, b->pool, static_cast<std::int64_t>(b->size));
      add(allocated_n, b->pool, 1);
    }
    if (b->allocated || pending) {
      add(active, b->pool, static_cast<std::int64_t>(b->size));
      add(active_n, b->pool, 1);
      add(requested, b->pool, static_cast<std::int64_t>(b->requested_size));
    }
    if (b->expandable == nullptr) {
      if (b->prev == nullptr) add(segments, b->pool, 1);
      add(reserved, b->pool, static_cast<std::int64_t>(b->size));
      if (!b->allocated && !pending && b->is_split()) {
        add(split, b->pool, static_cast<std::int64_t>(b->size));
        add(split_n, b->pool, 1);
      }
    } else if (b->mapped) {
      add(reserved, b->pool, static_cast<std::int64_t>(b->size));
    }
  }
  const auto check = [](std::string_view name, const stat_array& s,
                        const std::array<std::int64_t, 3>& want) -> std::string {
    for (std::size_t t = 0; t < 3; ++t) {
      if (s[t].current != want[t]) {
        return fmt::format("{}[{}].current is {} but the blocks say {}", name, t, s[t].current,
                           want[t]);
      }
    }
    return {};
  };
  for (auto [name, s, want] :
       {std::tuple{"allocated_bytes", &stats_.allocated_bytes, &allocated},
        std::tuple{"allocation", &stats_.allocation, &allocated_n},
        std::tuple{"active_bytes", &stats_.active_bytes, &active},
        std::tuple{"active", &stats_.active, &active_n},
        std::tuple{"requested_bytes", &stats_.requested_bytes, &requested},
        std::tuple{"reserved_bytes", &stats_.reserved_bytes, &reserved},
        std::tuple{"segment", &stats_.segment, &segments},
        std::tuple{"inactive_split_bytes", &stats_.inactive_split_bytes, &split},
        std::tuple{"inactive_split", &stats_.inactive_split, &split_n}}) {
    std::string e = check(name, *s, *want);
    if (!e.empty()) return e;
  }
  if (total_allocated_memory_ > k_max_device_bytes) {
    return fmt::format("reserved {} is above k_max_device_bytes", total_allocated_memory_);
  }
  if (static_cast<std::int64_t>(total_allocated_memory_) != reserved[k_all]) {
    return fmt::format("total_allocated_memory {} != reserved {}", total_allocated_memory_,
                       reserved[k_all]);
  }
  return {};
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
  return round_up(size, k_round_large);
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
