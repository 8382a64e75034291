// text_report — the text `keel perf op|explain|llm|model|calibrate` and `keel gpus
// list|show|compare|support|pick` print, made from the same results their --json documents
// (report.hpp, gpu_database.hpp, gpu_compare.hpp, gpu_pick.hpp) come from. Each to_text()
// returns whole lines, every one ending in '\n'; sizes in SI units (si_text), big counts with
// thousands separators. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>

#include "keel/perf/gpu_compare.hpp"
#include "keel/perf/gpu_database.hpp"
#include "keel/perf/gpu_pick.hpp"
#include "keel/perf/report.hpp"

namespace keel::perf {

// "6,738,415,616": a non-negative count rounded to an integer, in groups of three digits.
std::string with_commas(double v);

// `keel perf op`: the kernel, the GPU and its peak, then FLOPs, bytes, intensity, bound,
// predicted time and fraction of peak, one per line.
std::string to_text(const op_result& result);

// `keel perf explain`: the explanation's paragraphs, each followed by a blank line, then the
// sources of both GPUs.
std::string to_text(const explain_result& result);

// `keel perf llm`: the model and its setup, parameters, KV bytes per token, a table of the ops
// (one instance each) and the totals; the chart's path when one was written.
std::string to_text(const llm_result& result);

// What `keel perf model` shows of the nodes: every node in graph order, or the `top` slowest;
// and the module tree down to `depth` (rollup.hpp; < 0: all of it).
struct model_text_options {
  bool all_nodes = false;
  int top = 10;  // < 0 counts as 0
  int depth = 2;
};

// `keel perf model`: the graph, its totals with the bound ("cannot be faster than") and the
// expected time ("expect about", with the achievable fractions used), the memory check, notes on
// the parameter count, the module tree, time by op type, then the nodes as chosen, and the ops
// counted as bytes only. A model that does not fit the device gets the memory message in place
// of every time.
std::string to_text(const model_result& result, const model_text_options& options = {});

// `keel perf calibrate`: the CPU, its FP32 and FP64 peaks and the triad bandwidths; the device
// file's path when one was written.
std::string to_text(const calibrate_result& result);

// `keel gpus list`: one row per GPU (name, compute capability, architecture, dense TFLOP/s,
// memory, bandwidth, price) and the legend.
std::string to_text(const gpu_list& list);

// `keel gpus show`: every number of one GPU, with its sources.
std::string to_text(const gpu_spec& gpu);

// `keel gpus compare`: one row per metric with the ratio B/A, then both GPUs' sources.
std::string to_text(const gpu_comparison& comparison);

// `keel gpus support`: "yes|no|unknown: REASON", and the source when there is one.
std::string to_text(const support_result& result);

// `keel gpus pick`: the first `top` ranked GPUs with their reasons, and the counts.
std::string to_text(const pick_result& result, std::size_t top);

}  // namespace keel::perf
