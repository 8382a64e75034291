// explain — where the memory was when a recorded (or replayed) allocation ran out of memory.
//
// explain_oom finds the moment to explain: the last `oom` entry of the trace, or, with a
// capacity, the first allocation that fails when the trace is replayed on a device that
// size. It replays PyTorch's allocator with the recorded settings up to that moment and
// describes the state: per pool the free fragments and the largest one against the request,
// bytes waiting for cross-stream frees, memory other processes held (from the driver's free
// figure and the capacity, when both are known), and which settings or policy would have
// served the request, found by replaying each candidate on a device with the memory this
// process could have had. Pure function; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "keel/memory/snapshot.hpp"
#include "keel/memory/trace_model.hpp"

namespace keel::memory {

struct pool_summary {
  bool small = false;
  std::size_t segments = 0;
  std::uint64_t reserved = 0;
  std::uint64_t allocated = 0;
  std::uint64_t free = 0;
  std::uint64_t largest_free = 0;
  std::vector<std::uint64_t> free_fragments;  // largest first
};

struct oom_explanation {
  bool found = false;              // false: no OOM recorded and none at the given capacity
  bool recorded = false;           // the OOM is in the trace (not produced by a capacity)
  std::uint32_t entry = 0;
  std::uint64_t request = 0;       // bytes the failing allocation asked for
  std::uint64_t device_free = 0;   // driver's free memory at the OOM (recorded OOMs)
  std::uint64_t reserved = 0;
  std::uint64_t allocated = 0;
  std::uint64_t pending_free = 0;  // blocks waiting for cross-stream frees
  std::optional<std::uint64_t> other_processes;
  std::optional<std::uint64_t> capacity;
  pool_summary large;
  pool_summary small;
  std::vector<std::string> would_serve;  // env lines of settings that complete the window
  std::vector<std::string> would_not;
  std::string text;                      // the explanation in plain words
};

oom_explanation explain_oom(const trace_model& model, std::optional<std::uint64_t> capacity);

}  // namespace keel::memory
