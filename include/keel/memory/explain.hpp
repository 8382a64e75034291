// explain — where the memory was when an allocation ran out of memory, and why it failed.
//
// explain_oom finds the moment to explain: the last `oom` entry of the trace, or, with a
// capacity, the first allocation that fails when the trace is replayed (recorded settings,
// recorded layout) on a device that size. The budget is what this process could use then:
// for a recorded OOM the bytes it had mapped plus the driver's free bytes (the recording's
// own numbers), else the capacity. The live allocations come from the recording itself; the
// allocator's free blocks from a replay of the recorded settings up to that moment. The OOM
// is classified, first match wins:
// - not_fragmentation: live + request > budget. No allocator setting can serve it; the
//   explanation says how much must go and which call sites held the live memory;
// - pending_frees: live + blocks freed on one stream but still used by another (waiting for
//   their events) + request > budget: the memory was held by cross-stream frees;
// - caching: the free memory PyTorch's cache keeps in private pools (CUDA graphs, MemPools),
//   which its OOM path does not release, plus the driver's free memory would have served it;
// - fragmentation: the free memory existed but in pieces; the settings (and keel's policy)
//   that serve the request inside the same budget are named, each found by a replay.
// A snapshot without a trace, such as one an OOM observer dumped (the request size is not in
// it), gets the same analysis from its blocks alone, with bounds instead of a verdict where
// the request size would be needed. Pure function; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "keel/memory/callsites.hpp"
#include "keel/memory/pool_summary.hpp"
#include "keel/memory/snapshot.hpp"
#include "keel/memory/trace_model.hpp"

namespace keel::memory {

enum class oom_class { not_fragmentation, pending_frees, caching, fragmentation };
std::string_view to_string(oom_class c) noexcept;

struct oom_explanation {
  int device = 0;
  bool found = false;       // false: no OOM recorded and none at the given capacity
  bool recorded = false;    // the OOM is in the trace (not produced by a capacity)
  bool state_only = false;  // explained from a snapshot's blocks alone (no trace)
  std::uint32_t entry = 0;
  std::uint64_t request = 0;      // bytes the failing allocation asked for (0: unknown)
  std::uint64_t device_free = 0;  // driver's free memory at the OOM (recorded OOMs)
  std::uint64_t budget = 0;       // what this process could use: reserved + device_free
  std::uint64_t reserved = 0;
  std::uint64_t allocated = 0;          // bytes in live blocks (the allocator's view)
  std::uint64_t live = 0;               // bytes the program held (rounded), from the recording
  std::uint64_t pending_free = 0;       // blocks waiting for cross-stream frees
  std::uint64_t private_pool_free = 0;  // free cached bytes in private pools
  std::optional<std::uint64_t> other_processes;
  std::optional<std::uint64_t> capacity;
  std::optional<oom_class> kind;
  std::uint64_t must_go = 0;  // not_fragmentation: live bytes that must go to fit
  pool_summary large;
  pool_summary small;
  std::vector<std::string> would_serve;  // env lines of settings that serve the request
  std::vector<std::string> would_not;
  callsite_summary live_sites;  // the live memory by call site
  std::string text;             // the explanation in plain words
};

// `snap` gives the call stacks of the final state (state-only snapshots); `model` is the
// device's trace model.
// device's trace model; `sites` groups the live memory by call site or by module.
oom_explanation explain_oom(const snapshot& snap, const trace_model& model,
                            std::optional<std::uint64_t> capacity,
                            const callsite_options& sites = {});

}  // namespace keel::memory
