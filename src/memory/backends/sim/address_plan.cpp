#include "keel/memory/address_plan.hpp"

#include <algorithm>
#include <iterator>

namespace keel::memory {
namespace {

constexpr std::uint64_t k_alignment = 2u << 20;
constexpr std::uint64_t k_top = ~std::uint64_t{0};
std::uint64_t align_down(std::uint64_t x) { return x / k_alignment * k_alignment; }
// Address arithmetic saturates at the top of the address space instead of wrapping; a
// placement that would reach it is refused.
std::uint64_t end_of(std::uint64_t address, std::uint64_t bytes) {
  return bytes > k_top - address ? k_top : address + bytes;
}
std::uint64_t align_up(std::uint64_t x) {
  if (x > k_top - (k_alignment - 1)) return align_down(k_top);
  return (x + k_alignment - 1) / k_alignment * k_alignment;
}

}  // namespace

std::string_view to_string(address_order order) noexcept {
  return order == address_order::ascending ? "ascending" : "descending";
}

address_plan::address_plan(std::vector<driver_call> calls, std::vector<std::uint64_t> range_bases,
                           address_order order)
    : calls_(std::move(calls)), range_bases_(std::move(range_bases)), order_(order) {
  std::uint64_t low = ~std::uint64_t{0};
  std::uint64_t high = 0;
  for (const driver_call& c : calls_) {
    if (!c.alloc) continue;
    low = std::min(low, c.addr);
    high = std::max(high, end_of(c.addr, c.size));
  }
  for (std::uint64_t base : range_bases_) {
    low = std::min(low, base);
    high = std::max(high, base);
  }
  if (high > low) {
    low_ = align_down(low);
    high_ = align_up(high);
  }
}

bool address_plan::fits(std::uint64_t address, std::uint64_t bytes) const {
  if (bytes > k_top - address) return false;
  auto it = live_.upper_bound(address);
  if (it != live_.end() && it->first < address + bytes) return false;
  if (it != live_.begin() && end_of(std::prev(it)->first, std::prev(it)->second) > address)
    return false;
  return true;
}

std::optional<std::uint64_t> address_plan::model_place(std::uint64_t bytes) const {
  if (bytes > align_down(k_top)) return std::nullopt;
  const std::uint64_t size = align_up(bytes);
  const auto room = [&](std::uint64_t address) -> std::optional<std::uint64_t> {
    if (size > k_top - address) return std::nullopt;  // the address space ends first
    return address;
  };
  if (order_ == address_order::ascending) {
    std::uint64_t cursor = low_;
    for (const auto& [address, length] : live_) {
      if (end_of(address, length) <= cursor) continue;
      if (address >= end_of(cursor, size)) break;
      cursor = align_up(end_of(address, length));
    }
    return room(cursor);
  }
  std::uint64_t top = high_;
  for (auto it = live_.rbegin(); it != live_.rend(); ++it) {
    const auto [address, length] = *it;
    if (address >= top) continue;
    if (end_of(end_of(address, length), size) <= top) break;
    top = align_down(address);
  }
  if (top < size) {  // nothing left below: go above everything instead
    if (live_.empty()) return room(low_);
    const auto last = live_.rbegin();
    return room(align_up(end_of(last->first, last->second)));
  }
  return top - size;
}

std::optional<std::uint64_t> address_plan::place_segment(std::uint64_t bytes) {
  if (in_step_ && next_call_ < calls_.size()) {
    const driver_call& c = calls_[next_call_];
    if (c.alloc && c.size == bytes && fits(c.addr, bytes)) {
      ++next_call_;
      ++followed_;
      live_.emplace(c.addr, bytes);
      return c.addr;
    }
  }
  in_step_ = false;
  const std::optional<std::uint64_t> address = model_place(bytes);
  if (address) live_.emplace(*address, bytes);
  return address;
}

void address_plan::free_segment(std::uint64_t address) noexcept {
  live_.erase(address);
  if (!in_step_) return;
  // The recording's frees of one run may come in another order (a release loop's order).
  for (std::size_t j = next_call_; j < calls_.size() && !calls_[j].alloc; ++j) {
    if (calls_[j].addr == address) {
      std::swap(calls_[j], calls_[next_call_]);
      ++next_call_;
      return;
    }
  }
  in_step_ = false;
}

std::optional<std::uint64_t> address_plan::place_range(std::uint64_t bytes) {
  while (next_range_ < range_bases_.size()) {
    const std::uint64_t base = range_bases_[next_range_++];
    if (fits(base, bytes)) {
      live_.emplace(base, bytes);
      return base;
    }
  }
  const std::optional<std::uint64_t> address = model_place(bytes);
  if (address) live_.emplace(*address, bytes);
  return address;
}

address_plan::inference address_plan::infer(const std::vector<driver_call>& start,
                                            const std::vector<driver_call>& calls) {
  inference out;
  for (const driver_call& c : calls) out.allocs += c.alloc;
  std::vector<driver_call> all = start;
  all.insert(all.end(), calls.begin(), calls.end());
  for (address_order order : {address_order::ascending, address_order::descending}) {
    // Replay the calls through the model alone (no following) and count exact predictions.
    address_plan model({}, {}, order);
    model.in_step_ = false;
    {
      address_plan bounds(all, {}, order);
      model.low_ = bounds.low_;
      model.high_ = bounds.high_;
    }
    for (const driver_call& c : start) model.live_.emplace(c.addr, c.size);
    std::size_t hits = 0;
    for (const driver_call& c : calls) {
      if (c.alloc) {
        const std::optional<std::uint64_t> predicted = model.model_place(c.size);
        hits += predicted == c.addr;
        // Keep the model's state equal to the recording's, whatever it predicted.
        if (model.fits(c.addr, c.size)) model.live_.emplace(c.addr, c.size);
      } else {
        model.live_.erase(c.addr);
      }
    }
    (order == address_order::ascending ? out.ascending_hits : out.descending_hits) = hits;
  }
  out.order = out.ascending_hits > out.descending_hits ? address_order::ascending
                                                       : address_order::descending;
  return out;
}

}  // namespace keel::memory
