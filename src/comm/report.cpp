#include "keel/comm/report.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include <string>

#include "keel/comm/dispatch.hpp"

namespace keel::comm {
namespace {

nlohmann::json timing(const bench_timing& t) {
  return {{"time_us", t.time_us}, {"algbw", t.algbw}, {"busbw", t.busbw}, {"wrong", t.wrong}};
}

std::string time_text(double us) {
  if (us < 10000) return fmt::format("{:7.2f}", us);
  if (us < 100000) return fmt::format("{:7.1f}", us);
  return fmt::format("{:7.0f}", us);
}

}  // namespace

std::string nccl_tests_header(const communicator& c, const bench_options& o) {
  std::string out = fmt::format(
      "# nThread 1 nGpus 1 minBytes {} maxBytes {} step: {}(factor) "
      "warmup iters: {} iters: {} agg iters: 1 validation: {} graph: 0\n#\n",
      o.min_bytes, o.max_bytes, o.factor, o.warmup, o.iters, o.check ? 1 : 0);
  out += "# Using devices\n";
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  for (int r = 0; r < c.size(); ++r) {
    out +=
        fmt::format("#  Rank {:2d} Group  0 Pid {:6d} on {:>10} device  0 [cpu] {}\n", r,
                    r == 0 ? ::getpid() : 0, host, r == 0 ? "self" : to_string(c.transport_to(r)));
  }
  out += "#\n";
  out +=
      "#                                                              out-of-place    "
      "                   in-place          \n";
  out +=
      "#       size         count      type   redop    root     time   algbw   busbw "
      "#wrong     time   algbw   busbw #wrong\n";
  out +=
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)  "
      "          (us)  (GB/s)  (GB/s)       \n";
  return out;
}

std::string nccl_tests_row(const bench_row& row, const bench_options& o) {
  std::string out =
      fmt::format("{:12d}  {:12d}  {:>8}  {:>6}  {:6d}", row.bytes, row.count, to_string(o.type),
                  is_reduction(o.coll) ? to_string(o.op) : "none", row.root);
  for (const bench_timing& t : {row.out_of_place, row.in_place}) {
    out += fmt::format("  {}  {:6.2f}  {:6.2f}  {:>5}", time_text(t.time_us), t.algbw, t.busbw,
                       o.check ? std::to_string(t.wrong) : std::string("N/A"));
  }
  return out + '\n';
}

std::string nccl_tests_footer(const bench_result& r) {
  return fmt::format("# Out of bounds values : {} {}\n# Avg bus bandwidth : {:g}\n#\n", r.wrong,
                     r.wrong ? "FAILED" : "OK", r.avg_busbw);
}

nlohmann::json to_json(const verify_report& r, int ranks, std::string_view transport) {
  return {{"ranks", ranks},
          {"transport", std::string(transport)},
          {"cases", r.cases},
          {"failed", r.failed},
          {"seconds", r.seconds}};
}

nlohmann::json to_json(const bench_row& row, const bench_options& o) {
  nlohmann::json j = timing(row.out_of_place);
  j.update({{"size", row.bytes},
            {"count", row.count},
            {"type", to_string(o.type)},
            {"redop", is_reduction(o.coll) ? to_string(o.op) : "none"},
            {"root", row.root},
            {"in_place", timing(row.in_place)}});
  return j;
}

nlohmann::json to_json(const bench_result& r, const bench_options& o, int ranks) {
  nlohmann::json rows = nlohmann::json::array();
  for (const bench_row& row : r.rows) rows.push_back(to_json(row, o));
  return {{"collective", to_string(o.coll)}, {"ranks", ranks},
          {"algo", to_string(o.algo)},       {"rows", rows},
          {"avg_busbw", r.avg_busbw},        {"wrong", r.wrong}};
}

nlohmann::json to_json(const fault_trial& t) {
  nlohmann::json survivors = nlohmann::json::array();
  for (const fault_survivor& s : t.survivors) {
    nlohmann::json j{{"rank", s.rank}, {"exit", s.exit}};
    if (s.hang) {
      j["hang"] = true;
    } else {
      j.update({{"error", s.error},
                {"seconds_after_kill", s.seconds_after_kill},
                {"blamed_rank", s.blamed_rank},
                {"seq", s.seq}});
    }
    survivors.push_back(j);
  }
  return {{"trial", t.trial},
          {"victim", t.victim},
          {"leftover_segments", t.leftover_segments},
          {"survivors", survivors},
          {"ok", t.ok}};
}

nlohmann::json to_json(const fault_summary& s, const fault_options& o) {
  nlohmann::json results = nlohmann::json::array();
  for (const fault_trial& t : s.trials) results.push_back(to_json(t));
  return {{"ranks", o.ranks},
          {"trials", o.trials},
          {"timeout_s", o.timeout_s},
          {"ok_trials", s.ok_trials},
          {"hangs", s.hangs},
          {"trials_with_leftover_segments", s.leaks},
          {"worst_seconds_after_kill", s.worst_seconds_after_kill},
          {"results", results}};
}

}  // namespace keel::comm
