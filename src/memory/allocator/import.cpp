// import_segments: adopting a starting state (a replay's) exactly as laid out, plain
// segments and runs of mapped pages inside expandable ranges.
#include <fmt/format.h>

#include <algorithm>

#include "allocator_impl.hpp"
#include "keel/core/bytes.hpp"
#include "keel/core/error.hpp"

namespace keel::memory {

std::vector<std::uint64_t> caching_allocator::impl::import_segments(
    const std::vector<imported_segment>& segments) {
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
            "import: a block of {} bytes does not fit the {}-byte segment after {} bytes", ib.size,
            seg.total_size, sum));
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
    const std::size_t page = page_size_for(pool_for(seg.is_small));
    if (seg.expandable && expandable_ && seg.range_offset % page == 0 &&
        seg.total_size % page == 0) {
      auto it = std::find_if(ranges.begin(), ranges.end(),
                             [&](const auto& r) { return r.first == seg.range; });
      if (it == ranges.end()) it = ranges.insert(ranges.end(), {seg.range, {}});
      it->second.push_back(i);
      continue;
    }
    if (seg.total_size > k_max_device_bytes - total_allocated_memory_ - in_flight_)
      throw_start_does_not_fit(seg.total_size);
    const std::optional<std::uint64_t> base = device_.allocate_segment(seg.total_size);
    if (!base) throw_start_does_not_fit(seg.total_size);
    block_pool& pool = pool_for(seg.is_small);
    total_allocated_memory_ += seg.total_size;
    stats_.segment_imported(pool, seg.total_size);
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
void caching_allocator::impl::import_range(const std::vector<imported_segment>& segments,
                                           std::vector<std::size_t>& indices,
                                           std::vector<std::vector<std::uint64_t>>& live) {
  std::sort(indices.begin(), indices.end(), [&](std::size_t a, std::size_t b) {
    return segments[a].range_offset < segments[b].range_offset;
  });
  std::vector<const imported_segment*> runs;
  runs.reserve(indices.size());
  for (const std::size_t i : indices) runs.push_back(&segments[i]);
  block_pool& pool = pool_for(runs.front()->is_small);
  const std::size_t page = page_size_for(pool);
  // A range larger than any device (offsets come from recorded addresses) cannot be held.
  if (runs.back()->range_offset > k_max_device_bytes ||
      runs.back()->total_size > k_max_device_bytes) {
    throw_start_does_not_fit(runs.back()->total_size);
  }
  const std::size_t needed = runs.back()->range_offset + runs.back()->total_size;
  const std::size_t pages = std::max(range_pages(page), (needed + page - 1) / page);
  const stream_id stream = runs.front()->stream;
  std::unique_ptr<expandable_segment> reserved =
      expandable_segment::reserve(device_, page, pages, stream);
  if (reserved == nullptr) throw_start_does_not_fit(needed);
  expandable_segment* es = reserved.get();
  segments_.push_back(std::move(reserved));  // owned at once: the blocks below point to it
  block* prev = nullptr;
  std::size_t cursor = 0;
  const auto unmapped_gap = [&](std::size_t to) {
    if (to <= cursor) return;
    block* gap = new_block(stream, to - cursor, &pool, es->base() + cursor);
    gap->mapped = false;
    gap->expandable = es;
    gap->splice(prev, nullptr);
    pool.insert_unmapped(gap);
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
        map_range(*es, es->base() + run->range_offset, run->total_size) == 0) {
      throw_start_does_not_fit(run->total_size);
    }
    total_allocated_memory_ += run->total_size;
    stats_.pages_imported(pool, run->total_size);
    import_blocks(*run, pool, es->base() + run->range_offset, es, false, prev, live[indices[k]]);
    cursor = run->range_offset + run->total_size;
  }
  unmapped_gap(pages * page);
}

void caching_allocator::impl::import_blocks(const imported_segment& seg, block_pool& pool,
                                            std::uint64_t ptr, expandable_segment* es, bool split,
                                            block*& prev,
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
      stats_.block_allocated(pool, b->size, b->requested_size);
    } else {
      pool.insert(b);
      if (split && es == nullptr) {
        stats_.inactive_split_changed(pool, 1, static_cast<std::int64_t>(b->size));
      }
    }
  }
}

void caching_allocator::impl::throw_start_does_not_fit(std::size_t bytes) const {
  throw out_of_memory(
      fmt::format("CUDA out of memory. The starting state needs {} more and only {} is free.",
                  format_size(bytes), format_size(device_.free_bytes())));
}

}  // namespace keel::memory
