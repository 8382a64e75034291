#include "keel/memory/analysis.hpp"
#include "keel/core/enum_names.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "keel/core/bytes.hpp"
#include "keel/core/error.hpp"

namespace keel::memory {
namespace {

using nlohmann::json;

constexpr std::size_t k_peak_sites = 10;

template <class T>
json optional_json(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

std::string signed_size(std::int64_t bytes) {
  return (bytes < 0 ? "-" : "") + format_size(static_cast<std::uint64_t>(std::llabs(bytes)));
}

// Whether a saving is worth a change of settings: at least one 2 MiB page and 0.5% of the peak.
bool worth_it(std::int64_t saving, std::uint64_t peak) {
  return saving >= static_cast<std::int64_t>(2u << 20) &&
         static_cast<double>(saving) >= 0.005 * static_cast<double>(peak);
}

void recommend(device_analysis& d, const trace_model& model) {
  const advice& adv = d.adv;
  if (!adv.comparable) {
    d.verdict =
        fmt::format("Settings cannot be compared from this window: {}. To compare them, {}.",
                    adv.not_comparable_why, adv.record_instead);
    return;
  }
  const mode_advice* w = adv.mode(start_mode::window);
  if (w == nullptr) return;
  const std::string budget =
      adv.capacity ? format_size(*adv.capacity) : std::string("unlimited memory");
  if (!w->best) {
    d.verdict = fmt::format(
        "Every candidate runs out of memory within {} in this window: no setting helps; less "
        "memory must be live (see the OOM explanation).",
        budget);
    return;
  }
  std::size_t chosen = *w->best;
  const ranked_result& best = w->ranked[chosen];
  // Prefer PyTorch's own allocator when it is within 1% of keel's policy: its tooling stays.
  if (best.settings.config.policy == policy_kind::keel && w->best_pytorch) {
    const ranked_result& bp = w->ranked[*w->best_pytorch];
    if (static_cast<double>(bp.result.peak_reserved) <=
        1.01 * static_cast<double>(best.result.peak_reserved)) {
      chosen = *w->best_pytorch;
    }
  }
  const ranked_result& pick = w->ranked[chosen];
  const bool serves_oom = !model.ooms.empty() && w->baseline && w->ranked[*w->baseline].oom;
  if (pick.settings.baseline ||
      (!serves_oom && !worth_it(pick.saving, adv.recorded_peak_reserved))) {
    d.verdict = fmt::format(
        "Keep the recorded settings: no candidate saves a meaningful amount in this window (the "
        "best, {}, peaks at {}, {} against the recording's {}).",
        label(pick.settings), format_size(pick.result.peak_reserved), signed_size(pick.saving),
        format_size(adv.recorded_peak_reserved));
    return;
  }
  recommendation r;
  r.mode = start_mode::window;
  r.candidate = chosen;
  r.saving = pick.saving;
  r.how = recipe_for(pick.settings.config, pick.settings.memory_fraction);
  r.title =
      serves_oom
          ? fmt::format(
                "Use {}: it serves the request that ran out of memory, within the same {}, and "
                "peaks at {} ({} against the recording's {})",
                label(pick.settings), budget, format_size(pick.result.peak_reserved),
                signed_size(pick.saving), format_size(adv.recorded_peak_reserved))
          : fmt::format(
                "Use {}: peak reserved {} instead of the recording's {} (saves {}, {:.1f}%)",
                label(pick.settings), format_size(pick.result.peak_reserved),
                format_size(adv.recorded_peak_reserved),
                format_size(static_cast<std::uint64_t>(pick.saving)),
                100.0 * static_cast<double>(pick.saving) /
                    static_cast<double>(adv.recorded_peak_reserved));
  if (const std::optional<fidelity_report> f = adv.fidelity(); f && !f->exact())
    r.notes.push_back(f->line());
  if (w->best_keel && w->best_pytorch) {
    const ranked_result& k = w->ranked[*w->best_keel];
    const ranked_result& p = w->ranked[*w->best_pytorch];
    r.notes.push_back(fmt::format("keel's policy peaks at {}{}, PyTorch's best setting ({}) at {}",
                                  format_size(k.result.peak_reserved),
                                  k.oom ? " but runs out of memory" : "", label(p.settings),
                                  format_size(p.result.peak_reserved)));
  }
  if (const mode_advice* f = adv.mode(start_mode::fresh); f != nullptr && f->baseline) {
    const ranked_result& restart = f->ranked[*f->baseline];
    for (const ranked_result& c : f->ranked) {
      if (c.settings.config == pick.settings.config &&
          c.settings.memory_fraction == pick.settings.memory_fraction) {
        r.notes.push_back(fmt::format(
            "in a fresh process it would peak at {}; a restart with the recorded settings alone "
            "peaks at {}",
            format_size(c.result.peak_reserved), format_size(restart.result.peak_reserved)));
      }
    }
  }
  d.verdict = r.title + ".";
  d.rec = std::move(r);
}

json candidate_json(const ranked_result& r) {
  json timeline = json::array();
  for (const timeline_point& p : r.result.timeline)
    timeline.push_back({p.entry, p.allocated, p.reserved});
  json oom_entry = nullptr;
  for (const replay_oom& o : r.result.ooms) {
    oom_entry = o.entry;
    break;
  }
  return {
      {"label", label(r.settings)},
      {"conf", r.settings.config.to_string()},
      {"policy", std::string(to_string(r.settings.config.policy))},
      {"memory_fraction",
       r.settings.memory_fraction ? json(*r.settings.memory_fraction) : json(nullptr)},
      {"recorded", r.settings.baseline},
      {"env", environment_line(r.settings)},
      {"peak_reserved", r.result.peak_reserved},
      {"peak_allocated", r.result.peak_allocated},
      {"saving", r.saving},
      {"fragmentation", r.result.fragmentation},
      {"device_mallocs", r.result.device_mallocs},
      {"oom", r.oom},
      {"oom_entry", oom_entry},
      {"start_exceeds_capacity",
       r.result.start_exceeds_capacity ? json(*r.result.start_exceeds_capacity) : json(nullptr)},
      {"timeline", std::move(timeline)}};
}

json index_json(const std::optional<std::size_t>& i) { return i ? json(*i) : json(nullptr); }

json notes_json(const std::vector<model_note>& notes) {
  json out = json::array();
  for (const model_note& n : notes)
    out.push_back({{"text", n.text}, {"example", n.example}, {"count", n.count}});
  return out;
}

std::string notes_text(const std::vector<model_note>& notes) {
  std::string out;
  for (std::size_t i = 0; i < notes.size() && i < 10; ++i) {
    const model_note& n = notes[i];
    out += n.count > 1
               ? fmt::format("note      {} ({} times; first {})\n", n.text, n.count, n.example)
               : fmt::format("note      {} ({})\n", n.text, n.example);
  }
  return out;
}

}  // namespace

parsed_allocator_config settings_for(const trace_model& model, std::string_view policy,
                                     const std::optional<std::string>& conf) {
  parsed_allocator_config out{model.recorded_config, {}};
  if (conf)
    out = allocator_config::parse(*conf, "--conf", model.recorded_config,
                                  {model.grammar, config_source::keel});
  if (policy == "keel") {
    out.config.policy = policy_kind::keel;
  } else if (policy != "pytorch") {
    throw invalid_argument(
        fmt::format("--policy: unknown policy '{}': expected pytorch or keel", policy));
  }
  if (const std::optional<std::string> why = out.config.replay_limitation())
    throw invalid_argument(*why);
  return out;
}

namespace {
constexpr enum_entry<callsite_grouping> k_grouping_entries[] = {
    {callsite_grouping::site, "site"}, {callsite_grouping::module, "module"}};
constexpr enum_names<callsite_grouping> k_grouping_names{"--sites-by grouping", k_grouping_entries};
}  // namespace

callsite_grouping parse_callsite_grouping(std::string_view text) {
  return k_grouping_names.parse(text);
}

std::vector<int> devices_to_analyze(const snapshot& snap, std::optional<int> device) {
  std::vector<int> devices = devices_in(snap);
  if (devices.empty()) throw invalid_argument("the snapshot holds no segments and no trace");
  if (device) {
    if (std::find(devices.begin(), devices.end(), *device) == devices.end()) {
      throw invalid_argument(fmt::format("--device {} has no data; devices with data: {}", *device,
                                         fmt::join(devices, ", ")));
    }
    return {*device};
  }
  return devices;
}

analysis analyze(const snapshot& snap, const std::string& trace, const analysis_options& options) {
  const auto started = std::chrono::steady_clock::now();
  analysis a;
  a.trace = trace;
  for (int device : devices_to_analyze(snap, options.device)) {
    const trace_model model = build_trace_model(snap, device);
    device_analysis d;
    d.device = device;
    d.entries = model.entries;
    d.first_time_us = model.first_time_us;
    d.last_time_us = model.last_time_us;
    d.settings = model.recorded_config.to_string();
    d.start_segments = model.start.size();
    d.start_reserved = model.start_reserved;
    d.start_requested = model.start_requested;
    d.segment_events = model.segment_events.size();
    d.notes = model.notes;
    advise_options ao;
    ao.capacity = options.capacity;
    ao.threads = options.threads;
    ao.progress = options.progress;
    const bool capacity_known = options.capacity || model.recorded_budget();
    d.adv = advise(model, default_candidates(model.recorded_config, capacity_known), ao);
    recommend(d, model);
    if (options.explain) d.oom = explain_oom(snap, model, options.capacity);
    callsite_options co;
    co.top = k_peak_sites;
    d.at_peak = model.entries == 0
                    ? summarize_callsites(live_allocations(snap, device), co)
                    : summarize_callsites(model.live_at(model.recorded_peak_entry + 1).live, co);
    a.devices.push_back(std::move(d));
  }
  a.elapsed_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  return a;
}

json to_json(const fidelity_report& f) {
  json mismatch = nullptr;
  if (f.first_mismatch) {
    mismatch = {{"index", f.first_mismatch->index},
                {"recorded", optional_json(f.first_mismatch->recorded)},
                {"replayed", optional_json(f.first_mismatch->replayed)}};
  }
  return {{"exact", f.exact()},
          {"line", f.line()},
          {"recorded_segments", f.recorded_segments},
          {"replayed_segments", f.replayed_segments},
          {"matched", f.matched},
          {"first_mismatch", mismatch},
          {"recorded_peak_reserved", f.recorded_peak_reserved},
          {"replayed_peak_reserved", f.replayed_peak_reserved},
          {"recorded_ooms", f.recorded_ooms},
          {"reproduced_ooms", f.reproduced_ooms},
          {"allocs", f.allocs},
          {"allocs_at_recorded_address", f.allocs_at_recorded_address}};
}

json to_json(const oom_explanation& x) {
  const auto pool = [](const pool_summary& p) {
    return json{{"segments", p.segments},         {"reserved", p.reserved},
                {"allocated", p.allocated},       {"free", p.free},
                {"largest_free", p.largest_free}, {"free_fragments", p.free_fragments}};
  };
  return {{"device", x.device},
          {"found", x.found},
          {"recorded", x.recorded},
          {"state_only", x.state_only},
          {"entry", x.entry},
          {"request", x.request},
          {"class", x.kind ? json(std::string(to_string(*x.kind))) : json(nullptr)},
          {"budget", x.budget},
          {"device_free", x.device_free},
          {"reserved", x.reserved},
          {"allocated", x.allocated},
          {"live", x.live},
          {"must_go", x.must_go},
          {"pending_free", x.pending_free},
          {"private_pool_free", x.private_pool_free},
          {"other_processes", optional_json(x.other_processes)},
          {"capacity", optional_json(x.capacity)},
          {"large_pool", pool(x.large)},
          {"small_pool", pool(x.small)},
          {"would_serve", x.would_serve},
          {"would_not", x.would_not},
          {"top_callsites", to_json(x.live_sites)},
          {"text", x.text}};
}

json to_json(const analysis& a) {
  json devices = json::array();
  for (const device_analysis& d : a.devices) {
    const advice& adv = d.adv;
    json modes = json::array();
    for (const mode_advice& m : adv.modes) {
      json candidates = json::array();
      for (const ranked_result& r : m.ranked) candidates.push_back(candidate_json(r));
      modes.push_back({{"mode", std::string(to_string(m.mode))},
                       {"label", std::string(describe(m.mode))},
                       // The window starts every candidate in the recorded layout; a fresh process
                       // starts each with the live blocks, laid out its own way.
                       {"start_reserved",
                        m.mode == start_mode::window ? json(d.start_reserved) : json(nullptr)},
                       {"start_live", d.start_requested},
                       {"baseline_peak_reserved", adv.recorded_peak_reserved},
                       {"candidates", std::move(candidates)},
                       {"best", index_json(m.best)},
                       {"best_pytorch", index_json(m.best_pytorch)},
                       {"best_keel", index_json(m.best_keel)},
                       {"baseline", index_json(m.baseline)}});
    }
    json rec = nullptr;
    if (d.rec) {
      json r = to_json(d.rec->how);
      r["mode"] = std::string(to_string(d.rec->mode));
      r["candidate"] = d.rec->candidate;
      r["saving"] = d.rec->saving;
      r["title"] = d.rec->title;
      r["notes"] = d.rec->notes;
      rec = std::move(r);
    }
    const std::optional<fidelity_report> fidelity = adv.fidelity();
    json time = nullptr;
    if (d.first_time_us && d.last_time_us) time = {*d.first_time_us, *d.last_time_us};
    devices.push_back(
        {{"device", d.device},
         {"entries", d.entries},
         {"time_us", time},
         {"settings", d.settings},
         {"start",
          {{"segments", d.start_segments},
           {"reserved", d.start_reserved},
           {"live_requested", d.start_requested}}},
         {"recorded",
          {{"peak_reserved", adv.recorded_peak_reserved},
           {"segment_events", d.segment_events},
           {"budget", optional_json(adv.capacity)}}},
         {"fidelity", fidelity ? to_json(*fidelity) : json(nullptr)},
         {"comparable", adv.comparable},
         {"not_comparable_why", adv.comparable ? json(nullptr) : json(adv.not_comparable_why)},
         {"record_instead", adv.comparable ? json(nullptr) : json(adv.record_instead)},
         {"modes", std::move(modes)},
         {"recommendation", std::move(rec)},
         {"verdict", d.verdict},
         {"oom", d.oom.found ? to_json(d.oom) : json(nullptr)},
         {"callsites_at_peak", to_json(d.at_peak)},
         {"notes", notes_json(d.notes)}});
  }
  return {{"schema", "keel.mem.analysis/1"},
          {"trace", a.trace},
          {"devices", std::move(devices)},
          {"elapsed_ms", a.elapsed_ms}};
}

callsite_summary sites_at_peak(const replay_result& r, const trace_model& model,
                               const callsite_options& sites) {
  return summarize_callsites(model.live_at(r.peak_entry ? *r.peak_entry + 1 : 0).live, sites);
}

json to_json(const replay_result& r, const trace_model& model, const callsite_options& sites) {
  json j;
  j["policy"] = std::string(to_string(r.policy));
  j["conf"] = r.conf;
  j["device"] = r.device;
  j["start"] = std::string(to_string(r.start));
  j["capacity"] = optional_json(r.capacity);
  j["events"] = r.events;
  j["ops"] = r.ops;
  j["start_exceeds_capacity"] =
      r.start_exceeds_capacity ? json(*r.start_exceeds_capacity) : json(nullptr);
  j["peak_allocated"] = r.peak_allocated;
  j["peak_reserved"] = r.peak_reserved;
  j["recorded_peak_reserved"] = model.recorded_peak_reserved;
  j["fragmentation"] = r.fragmentation;
  j["at_peak"] = {{"requested", r.requested_at_peak},
                  {"internal", r.internal_at_peak},
                  {"external", r.external_at_peak}};
  j["device_mallocs"] = r.device_mallocs;
  j["retries"] = r.retries;
  j["ooms"] = json::array();
  for (const replay_oom& o : r.ooms) {
    j["ooms"].push_back(
        {{"entry", o.entry}, {"size", o.size}, {"recorded", o.recorded}, {"message", o.message}});
  }
  j["stopped_at_oom"] = r.stopped_at_oom;
  j["recorded_ooms_served"] = r.recorded_ooms_served;
  j["fidelity"] = r.fidelity ? to_json(*r.fidelity) : json(nullptr);
  j["start_state"] = {{"segments", model.start.size()},
                      {"reserved", model.start_reserved},
                      {"requested", model.start_requested}};
  j["driver_order"] = {{"order", std::string(to_string(model.driver_order.order))},
                       {"ascending_hits", model.driver_order.ascending_hits},
                       {"descending_hits", model.driver_order.descending_hits},
                       {"allocs", model.driver_order.allocs}};
  j["peak_entry"] = r.peak_entry ? json(*r.peak_entry) : json(nullptr);
  j["callsites_at_peak"] = to_json(sites_at_peak(r, model, sites));
  j["notes"] = notes_json(model.notes);
  j["elapsed_ms"] = r.elapsed_ms;
  return j;
}

std::string to_text(const replay_result& r, const trace_model& model, const std::string& trace,
                    const callsite_options& sites) {
  std::size_t allocs = 0, frees = 0, empties = 0;
  for (const replay_op& op : model.ops) {
    allocs += op.kind == op_kind::alloc;
    frees += op.kind == op_kind::free;
    empties += op.kind == op_kind::empty_cache;
  }
  std::string out = fmt::format(
      "trace     {} (device {}): {} events; {} allocs, {} frees, {} empty_cache, {} recorded "
      "OOM{}\n",
      trace, r.device, r.events, allocs, frees, empties, model.ooms.size(),
      model.ooms.size() == 1 ? "" : "s");
  out += fmt::format("policy    {}{}\n", to_string(r.policy),
                     r.conf.empty() ? " (PyTorch's default settings)" : " with " + r.conf);
  out += fmt::format("start     {}: {} segments, {} reserved, {} requested live\n",
                     describe(r.start), model.start.size(), format_size(model.start_reserved),
                     format_size(model.start_requested));
  out += fmt::format("device    {}\n",
                     r.capacity
                         ? format_size(*r.capacity) +
                               (model.recorded_budget() && *r.capacity == *model.recorded_budget()
                                    ? " (the budget the recorded OOM implies: mapped + free)"
                                    : "")
                         : std::string("unlimited memory"));
  if (r.start_exceeds_capacity) return out + "result    " + *r.start_exceeds_capacity + "\n";
  out += fmt::format("peak      {} reserved (recorded {}), {} allocated (requested bytes)\n",
                     format_size(r.peak_reserved), format_size(model.recorded_peak_reserved),
                     format_size(r.peak_allocated));
  out += fmt::format(
      "at peak   {} requested, {} rounding inside blocks, {} free in segments (fragmentation "
      "{:.3f})\n",
      format_size(r.requested_at_peak), format_size(r.internal_at_peak),
      format_size(r.external_at_peak), r.fragmentation);
  out += fmt::format("driver    {} device mallocs, {} retries\n", r.device_mallocs, r.retries);
  if (!r.ooms.empty()) {
    const replay_oom& o = r.ooms.front();
    out += fmt::format("OOM       at entry {} ({}): {}\n", o.entry,
                       o.recorded ? "as recorded" : "not in the recording", o.message);
  }
  if (r.ooms.size() > 1) {
    std::vector<std::uint32_t> entries;
    for (std::size_t i = 1; i < r.ooms.size() && i <= 8; ++i) entries.push_back(r.ooms[i].entry);
    out +=
        fmt::format("OOM       {} more, at entries {}{} (--json lists them)\n", r.ooms.size() - 1,
                    fmt::join(entries, ", "), r.ooms.size() > 9 ? ", ..." : "");
  }
  if (r.stopped_at_oom)
    out +=
        "stopped   at the first OOM the recording does not have (--continue-after-oom goes on)\n";
  if (r.recorded_ooms_served > 0) {
    out += fmt::format("served    {} request{} the recording could not serve\n",
                       r.recorded_ooms_served, r.recorded_ooms_served == 1 ? "" : "s");
  }
  if (r.fidelity) out += "fidelity  " + r.fidelity->line() + "\n";
  const callsite_summary at_peak = sites_at_peak(r, model, sites);
  if (at_peak.total_count > 0) {
    out +=
        fmt::format("at peak   {} live in {} allocations: {}\n", format_size(at_peak.total_bytes),
                    at_peak.total_count, category_line(at_peak));
    for (std::size_t i = 0; i < at_peak.sites.size() && i < 5; ++i) {
      const callsite& c = at_peak.sites[i];
      out += fmt::format("  {:>10}  {:>5}x  {:<15}  {}\n", format_size(c.bytes), c.count,
                         to_string(c.category), c.site);
    }
    if (at_peak.total_rows > 5)
      out += fmt::format("  and {} more {}\n", at_peak.total_rows - 5,
                         sites.group_by == callsite_grouping::module ? "modules" : "call sites");
  }
  out += notes_text(model.notes);
  return out;
}

std::vector<device_replay> replay_devices(const snapshot& snap, const replay_request& request) {
  replay_options options;
  options.capacity = request.capacity;
  options.start = request.start;
  options.continue_after_oom = request.continue_after_oom;
  std::vector<device_replay> out;
  for (int device : devices_to_analyze(snap, request.device)) {
    trace_model model = build_trace_model(snap, device);
    parsed_allocator_config settings = settings_for(model, request.policy, request.conf);
    options.config = settings.config;
    replay_result result = replay(model, options);
    out.push_back({std::move(model), std::move(result), std::move(settings.ignored_keys)});
  }
  return out;
}

json to_json(const std::vector<device_replay>& replays, const std::string& trace,
             const callsite_options& sites) {
  json devices = json::array();
  for (const device_replay& r : replays) {
    devices.push_back(to_json(r.result, r.model, sites));
    devices.back()["ignored_keys"] = r.ignored_keys;
  }
  return {{"trace", trace}, {"devices", std::move(devices)}};
}

std::string to_text(const std::vector<device_replay>& replays, const std::string& trace,
                    const callsite_options& sites) {
  std::string text;
  for (const device_replay& r : replays) {
    text += (text.empty() ? "" : "\n") + to_text(r.result, r.model, trace, sites);
    if (!r.ignored_keys.empty()) text += "note      " + ignored_keys_line(r.ignored_keys) + "\n";
  }
  return text;
}

std::vector<oom_explanation> explain_devices(const snapshot& snap, std::optional<int> device,
                                             std::optional<std::uint64_t> capacity,
                                             const callsite_options& sites) {
  std::vector<oom_explanation> out;
  for (int d : devices_to_analyze(snap, device))
    out.push_back(explain_oom(snap, build_trace_model(snap, d), capacity, sites));
  return out;
}

json to_json(const std::vector<oom_explanation>& explanations, const std::string& trace) {
  json devices = json::array();
  for (const oom_explanation& x : explanations) devices.push_back(to_json(x));
  return {{"trace", trace}, {"devices", std::move(devices)}};
}

std::string to_text(const std::vector<oom_explanation>& explanations) {
  std::string text;
  for (const oom_explanation& x : explanations) text += x.text + "\n";
  return text;
}

std::string to_text(const analysis& a) {
  std::string out;
  std::vector<int> ids;
  for (const device_analysis& d : a.devices) ids.push_back(d.device);
  out +=
      fmt::format("{}: device{} {}\n", a.trace, ids.size() == 1 ? "" : "s", fmt::join(ids, ", "));
  for (const device_analysis& d : a.devices) {
    const advice& adv = d.adv;
    out += fmt::format(
        "\ndevice {}: {} events, recorded settings {}, recorded peak reserved {}{}\n", d.device,
        d.entries, d.settings.empty() ? "PyTorch defaults" : d.settings,
        format_size(adv.recorded_peak_reserved),
        adv.capacity ? fmt::format(", device budget {}", format_size(*adv.capacity)) : "");
    if (const std::optional<fidelity_report> f = adv.fidelity())
      out += "fidelity  " + f->line() + "\n";
    for (const mode_advice& m : adv.modes) {
      out += m.mode == start_mode::window
                 ? fmt::format("\n{}; starts with {} reserved\n", describe(m.mode),
                               format_size(d.start_reserved))
                 : fmt::format("\n{}; starts with {} live\n", describe(m.mode),
                               format_size(d.start_requested));
      std::size_t width = 8;
      for (const ranked_result& r : m.ranked) width = std::max(width, label(r.settings).size());
      out += fmt::format("{:>4}  {:<{}} {:>11} {:>11} {:>6} {:>7}\n", "rank", "settings", width,
                         "peak resv", "saving", "frag", "mallocs");
      for (std::size_t i = 0; i < m.ranked.size(); ++i) {
        const ranked_result& r = m.ranked[i];
        std::string flag;
        if (r.result.start_exceeds_capacity) {
          flag = "  start does not fit";
        } else if (r.oom) {
          flag = r.result.ooms.empty()
                     ? "  OOM"
                     : fmt::format("  OOM at entry {}", r.result.ooms.front().entry);
        }
        out +=
            fmt::format("{:>4}  {:<{}} {:>11} {:>11} {:>6.3f} {:>7}{}\n", i + 1, label(r.settings),
                        width, format_size(r.result.peak_reserved), signed_size(r.saving),
                        r.result.fragmentation, r.result.device_mallocs, flag);
      }
    }
    out += "\n" + d.verdict + "\n";
    if (d.rec) {
      for (const recipe_step& s : d.rec->how.steps) {
        out += fmt::format("  {} {}\n", s.kind == recipe_step::kind::shell ? "$" : ">>>", s.text);
      }
      for (const std::string& c : d.rec->how.costs) out += "  cost: " + c + "\n";
      for (const std::string& n : d.rec->notes) out += "  note: " + n + "\n";
    }
    out += notes_text(d.notes);
  }
  return out;
}

}  // namespace keel::memory
