// keel::perf::calibrate_cpu — measures this machine's CPU as a roofline device: peak FP32 and
// FP64 FLOP/s with a vectorized FMA loop (independent accumulators, the widest ISA the CPU
// supports: AVX-512, AVX2+FMA or SSE2) and memory bandwidth with a STREAM triad
// (a[i] = b[i] + s*c[i] in fp64, 24 bytes per element counted as STREAM does: two reads and
// one write, no write-allocate) at working sets from 256 KiB to 64 MiB and at `dram_bytes`
// (default 1 GiB) for DRAM.
// Rates are per CPU-second of the measuring threads (CLOCK_THREAD_CPUTIME_ID), so a busy,
// shared machine still yields the hardware's rate rather than its share of the wall clock.
// The result converts to a device document in the GPU database's schema, so every predictor
// takes it with --gpu FILE.json. Runs `threads` worker threads; blocks for about
// `seconds_per_test` x (2 + levels) seconds. Thread-safe (no shared state).
#pragma once

#include "keel/perf/gpu_database.hpp"

#include <string>
#include <vector>

namespace keel::perf {

struct calibrate_options {
  int threads = 1;
  double seconds_per_test = 0.3;
  double dram_bytes = 1024.0 * 1024 * 1024;  // triad working set for the DRAM figure
};

struct calibration {
  std::string cpu;  // model name from /proc/cpuinfo
  std::string isa;  // "avx512f", "avx2+fma", "sse2"
  int threads = 1;
  double fp32_gflops = 0;
  double fp64_gflops = 0;
  double dram_gbs = 0;
  std::vector<memory_level> levels;  // triad bandwidth by working-set size, smallest first
  double memory_gib = 0;             // MemTotal
};

// Throws keel::invalid_argument for threads < 1, a non-positive duration or dram_bytes < 1 MiB.
calibration calibrate_cpu(const calibrate_options& options = {});

// A JSON document in gpu_database's schema holding one device named `name`.
std::string calibration_document(const calibration& c, const std::string& name = "cpu-local");

}  // namespace keel::perf
