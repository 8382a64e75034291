// The side-by-side summary of keel's Google Benchmark programs: Google Benchmark's console
// output, then for each workload w one line comparing the rate (the counter `counter`, e.g.
// "items_per_second") of the benchmark `keel_prefix + w` with that of `peer_prefix + w`:
//   "<w> <keel_label> <rate>, <peer_label> <rate>, ratio <keel / peer>"
// rates printed in millions per second with `digits` decimals and `unit` after them.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace keel::bench {

struct ratio_line {
  std::string keel_prefix, keel_label, peer_prefix, peer_label, unit;
  int digits = 1;
};

class ratio_reporter : public benchmark::ConsoleReporter {
 public:
  ratio_reporter(std::string counter, ratio_line line, std::vector<std::string> workloads)
      : counter_(std::move(counter)), line_(std::move(line)), workloads_(std::move(workloads)) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      const auto it = r.counters.find(counter_);
      if (it != r.counters.end()) rate_[r.benchmark_name()] = it->second.value;
    }
  }

  void print_ratios() const {
    for (const std::string& w : workloads_) {
      const auto k = rate_.find(line_.keel_prefix + w);
      const auto p = rate_.find(line_.peer_prefix + w);
      if (k == rate_.end() || p == rate_.end() || p->second <= 0) continue;
      std::printf("%-9s %s %.*f%s, %s %.*f%s, ratio %.2f\n", w.c_str(), line_.keel_label.c_str(),
                  line_.digits, k->second / 1e6, line_.unit.c_str(), line_.peer_label.c_str(),
                  line_.digits, p->second / 1e6, line_.unit.c_str(), k->second / p->second);
    }
  }

 private:
  std::string counter_;
  ratio_line line_;
  std::vector<std::string> workloads_;
  std::map<std::string, double> rate_;
};

// The whole main() of such a program: runs the benchmarks argv selects, then the ratios.
inline int run_with_ratios(int argc, char** argv, ratio_reporter& reporter) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.print_ratios();
  benchmark::Shutdown();
  return 0;
}

}  // namespace keel::bench
