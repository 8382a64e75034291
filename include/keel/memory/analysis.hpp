// analysis — every answer `keel mem` gives about one snapshot, per device, as one value.
//
// analyze() looks at every device with data (or the one asked for): it builds the device's
// trace_model, replays the recorded settings against the recording (fidelity), compares the
// candidate settings from the same start in both modes (advisor.hpp), picks a recommendation
// with a recipe the user can paste (recipe.hpp), explains the device's OOM (explain.hpp), and
// names the call sites holding memory at the recorded peak (callsites.hpp). A recommendation
// is made only from a comparable window, only for a candidate that served every request
// the recording could not and saves memory against the recording; it is a PyTorch setting
// when one is within 1% of keel's policy (the user keeps PyTorch's tooling), else keel's
// policy with its costs. The JSON forms (schema "keel.mem.analysis/1" for analysis, and the
// replay and explanation documents) are what `keel mem ... --json`, the Python package and the
// HTML report read. Pure functions; analyze() runs replays on a pool of threads.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "keel/memory/advisor.hpp"
#include "keel/memory/callsites.hpp"
#include "keel/memory/explain.hpp"
#include "keel/memory/recipe.hpp"
#include "keel/memory/replay.hpp"
#include "keel/memory/snapshot.hpp"
#include "keel/memory/trace_model.hpp"

namespace keel::memory {

struct recommendation {
  start_mode mode = start_mode::window;
  std::size_t candidate = 0;  // index into the mode's ranked candidates
  std::int64_t saving = 0;    // against the recording
  std::string title;
  recipe how;
  std::vector<std::string> notes;  // fidelity, keel against PyTorch's best, …
};

struct device_analysis {
  int device = 0;
  std::size_t entries = 0;
  std::optional<std::int64_t> first_time_us, last_time_us;
  std::string settings;  // the recorded settings, canonical
  std::size_t start_segments = 0;
  std::uint64_t start_reserved = 0;
  std::uint64_t start_requested = 0;
  std::size_t segment_events = 0;
  std::vector<model_note> notes;
  advice adv;
  std::optional<recommendation> rec;
  std::string verdict;  // one line: the recommendation, or why there is none
  oom_explanation oom;
  callsite_summary at_peak;  // live memory by call site at the recorded peak
};

struct analysis {
  std::string trace;  // the snapshot's name as the user gave it
  std::vector<device_analysis> devices;
  double elapsed_ms = 0.0;
};

struct analysis_options {
  std::optional<int> device;              // default: every device with data
  std::optional<std::uint64_t> capacity;  // default: the recorded budget, else unlimited
  unsigned threads = 0;
  bool explain = true;
  std::function<void(std::size_t done, std::size_t total)> progress;  // per device's replays
};

// Throws keel::invalid_argument when `options.device` has no data (naming those that have).
analysis analyze(const snapshot& snap, const std::string& trace, const analysis_options& options);

// `keel mem replay`: one replay per device of the snapshot (or the one asked for).
struct replay_request {
  std::optional<int> device;
  std::string policy = "pytorch";   // or "keel"
  std::optional<std::string> conf;  // settings on top of the recorded ones (see settings_for)
  std::optional<std::uint64_t> capacity;
  start_mode start = start_mode::window;
  bool continue_after_oom = false;
  callsite_options sites;
};
struct device_replay {
  trace_model model;
  replay_result result;
  std::vector<std::string> ignored_keys;  // of `conf`: accepted, no effect on a replay
};
std::vector<device_replay> replay_devices(const snapshot& snap, const replay_request& request);
// {"trace", "devices": [replay documents]} and the text `keel mem replay` prints.
nlohmann::json to_json(const std::vector<device_replay>& replays, const std::string& trace,
                       const callsite_options& sites = {});
std::string to_text(const std::vector<device_replay>& replays, const std::string& trace,
                    const callsite_options& sites = {});

// `keel mem explain`: the explanation of each device's OOM.
std::vector<oom_explanation> explain_devices(const snapshot& snap, std::optional<int> device,
                                             std::optional<std::uint64_t> capacity,
                                             const callsite_options& sites = {});
// {"trace", "devices": [explanations with "device"]} and the text `keel mem explain` prints.
nlohmann::json to_json(const std::vector<oom_explanation>& explanations, const std::string& trace);
std::string to_text(const std::vector<oom_explanation>& explanations);

// The settings a replay of `model` runs with: `conf` (PYTORCH_CUDA_ALLOC_CONF syntax plus
// keel's policy key, read with the grammar of the PyTorch that wrote the snapshot) on top of the
// recorded settings, then `policy` ("pytorch" or "keel"). Throws invalid_argument for bad text,
// an unknown policy, or settings a replay does not model (backend:cudaMallocAsync).
parsed_allocator_config settings_for(const trace_model& model, std::string_view policy,
                                     const std::optional<std::string>& conf);
// "site" or "module"; throws invalid_argument.
callsite_grouping parse_callsite_grouping(std::string_view text);

// The devices a command looks at: `device` if given (checked), else every device with data.
std::vector<int> devices_to_analyze(const snapshot& snap, std::optional<int> device);

nlohmann::json to_json(const analysis& a);
// A replay with the call sites holding memory at its peak (from the recording's allocations).
nlohmann::json to_json(const replay_result& r, const trace_model& model,
                       const callsite_options& sites = {});
nlohmann::json to_json(const oom_explanation& x);
nlohmann::json to_json(const fidelity_report& f);

// The text `keel mem advise` prints: per device the candidates of each mode, the fidelity
// line, and the recommendation's recipe.
std::string to_text(const analysis& a);
// The text `keel mem replay` prints for one device.
std::string to_text(const replay_result& r, const trace_model& model, const std::string& trace,
                    const callsite_options& sites = {});
// The live memory by call site at a replay's peak.
callsite_summary sites_at_peak(const replay_result& r, const trace_model& model,
                               const callsite_options& sites = {});

}  // namespace keel::memory
