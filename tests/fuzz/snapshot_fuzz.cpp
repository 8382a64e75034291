// libFuzzer target for what keel does with a snapshot after parsing it: pickle bytes ->
// parse_snapshot_pickle -> build_trace_model for each device -> replay of the recorded
// settings, in window mode (the recorded layout) and fresh mode (a small device, past OOMs).
//
// Every input must end in an answer or a keel::error (parse_error from the reader,
// invalid_argument from build_trace_model; a replay itself never throws); anything else (another
// exception, a crash, an ASan/UBSan report, a KEEL_DCHECK, a leak, a hang) is a finding. Answers
// must be sane: nothing above k_max_device_bytes, the reserved memory at the peak split exactly
// into requested, rounding and free bytes, and a snapshot the allocator takes mid-replay reads back
// through the same reader (so keel's own snapshots pass its checks). Bounded: at most 4 devices and
// 20,000 ops per device are replayed.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>

#include "keel/core/error.hpp"
#include "keel/memory/backend.hpp"
#include "keel/memory/replay.hpp"
#include "keel/memory/snapshot.hpp"
#include "keel/memory/trace_model.hpp"

namespace {

using namespace keel::memory;

constexpr std::size_t k_max_devices = 4;
constexpr std::size_t k_max_ops = 20'000;

void check(bool ok) {
  if (!ok) std::abort();
}

void check_result(const replay_result& r) {
  check(r.peak_reserved <= k_max_device_bytes);
  check(r.peak_allocated <= k_max_device_bytes);
  check(std::isfinite(r.fragmentation) && r.fragmentation >= 0.0);
  if (!r.start_exceeds_capacity) {
    check(r.requested_at_peak + r.internal_at_peak + r.external_at_peak == r.peak_reserved);
  }
  if (r.fidelity) check(!r.fidelity->line().empty());
  for (const replay_oom& o : r.ooms) check(!o.message.empty());
}

void replay_device(const trace_model& m) {
  if (m.ops.size() > k_max_ops) return;
  (void)m.live_at(static_cast<std::uint32_t>(m.entries));

  replay_options window;
  window.config = m.recorded_config;
  window.timeline_points = 16;
  window.stop_before_entry = static_cast<std::uint32_t>(m.entries / 2);
  const replay_result w = replay(m, window);
  check_result(w);
  if (w.final_state) {
    // The allocator's own snapshot satisfies the reader's checks.
    std::ostringstream out;
    write_snapshot_pickle(*w.final_state, out);
    const std::string bytes = out.str();
    (void)parse_snapshot_pickle(std::as_bytes(std::span(bytes.data(), bytes.size())), "state");
  }

  replay_options fresh;
  fresh.config = m.recorded_config;
  fresh.start = start_mode::fresh;
  fresh.capacity = std::size_t{1} << 30;
  fresh.continue_after_oom = true;
  fresh.timeline_points = 0;
  check_result(replay(m, fresh));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto bytes = std::as_bytes(std::span(data, size));
  snapshot s;
  try {
    s = parse_snapshot_pickle(bytes, "fuzz");
  } catch (const keel::parse_error&) {
    return 0;
  }
  const std::vector<int> devices = devices_in(s);
  for (std::size_t i = 0; i < devices.size() && i < k_max_devices; ++i) {
    trace_model m;
    try {
      m = build_trace_model(s, devices[i]);
    } catch (const keel::invalid_argument&) {
      continue;  // the model refused it, naming the place: an answer
    }
    replay_device(m);  // a replay answers; it never throws
  }
  return 0;
}
