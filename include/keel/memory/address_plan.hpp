// address_plan — where a simulated driver puts segments and virtual ranges.
//
// PyTorch's best fit breaks ties between free blocks of equal size by address, so a replay
// that gives segments other addresses than the recording can choose other blocks and drift
// away from what happened. An address_plan gives a simulated device (sim_backend) the
// recording's addresses for as long as the replay asks the driver for exactly what the
// recording did — the same cudaMalloc sizes and the same cudaFree addresses, in order (frees
// within one run may come in any order) — since a driver given the same calls returns the same
// addresses. From the first call that differs on (a what-if setting), it places segments by a
// model of the driver's address order inferred from the recording: ascending (the lowest
// free gap that fits, above the lowest recorded address) or descending (the highest free gap,
// at its top, below the highest recorded end); freed ranges are reused by both. Virtual
// ranges (expandable segments) take the recorded range bases in order of first use where
// they do not overlap anything live, else the model's place. All placements are 2 MiB
// aligned. A default-constructed plan has no recording: ascending from a fixed base.
// Not thread-safe (one per simulated device); a value type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

namespace keel::memory {

enum class address_order { ascending, descending };
std::string_view to_string(address_order order) noexcept;

// One cudaMalloc (alloc) or cudaFree of the recording.
struct driver_call {
  bool alloc = true;
  std::uint64_t addr = 0;
  std::uint64_t size = 0;
};

class address_plan {
 public:
  address_plan() = default;
  address_plan(std::vector<driver_call> calls, std::vector<std::uint64_t> range_bases,
               address_order order);

  // The address of a new segment / range of `bytes`; never overlaps a live one, and is
  // nullopt when no place below the top of the 64-bit address space has room.
  std::optional<std::uint64_t> place_segment(std::uint64_t bytes);
  void free_segment(std::uint64_t address) noexcept;
  std::optional<std::uint64_t> place_range(std::uint64_t bytes);
  void release_range(std::uint64_t address) noexcept { live_.erase(address); }

  // Whether every driver call so far was the recording's, and how many allocs took its address.
  bool in_step() const noexcept { return in_step_; }
  std::size_t followed() const noexcept { return followed_; }

  // The order that predicts more of the recorded addresses of `calls` when they are replayed
  // exactly after the segments of `start` (ties: descending), and how many allocs each order
  // predicts.
  struct inference {
    address_order order = address_order::descending;
    std::size_t ascending_hits = 0;
    std::size_t descending_hits = 0;
    std::size_t allocs = 0;
  };
  static inference infer(const std::vector<driver_call>& start,
                         const std::vector<driver_call>& calls);

 private:
  bool fits(std::uint64_t address, std::uint64_t bytes) const;
  std::optional<std::uint64_t> model_place(std::uint64_t bytes) const;

  std::vector<driver_call> calls_;
  std::size_t next_call_ = 0;
  std::vector<std::uint64_t> range_bases_;
  std::size_t next_range_ = 0;
  address_order order_ = address_order::ascending;
  std::uint64_t low_ = 0x7f0000000000ull;   // ascending: nothing below
  std::uint64_t high_ = 0x7fff00000000ull;  // descending: nothing above
  bool in_step_ = true;
  std::size_t followed_ = 0;
  std::map<std::uint64_t, std::uint64_t> live_;  // address -> size, segments and ranges
};

}  // namespace keel::memory
