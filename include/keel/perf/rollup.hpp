// keel::perf rollup — per-module totals of a model's ops as a tree (model -> layer -> block ->
// op), the roll-up calflops and fvcore print, collapsible by depth.
//
// Every op is a leaf under its scope: the names of the modules that contain it, outermost
// first. For an ONNX graph the scope comes from the node name's '/'-separated path as
// torch.onnx.export writes it ("/layer1/layer1.0/conv1/Conv" is the op "Conv" under layer1 ->
// layer1.0 -> conv1); a name without '/' is an op at the top. An inner node sums its leaves:
// ops, MACs, FLOPs, bytes, expected and bound seconds, and splits the expected time by the
// leaves' roofline bound (compute_seconds, memory_seconds); its bound is the side with more
// time, its intensity FLOPs / bytes of the sums. Children keep the order in which their first
// op appears. collapse(tree, depth) keeps the nodes down to `depth` (the root is depth 0) with
// their totals and drops what is below them. Pure functions; thread-safe.
#pragma once

#include "keel/perf/roofline.hpp"

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace keel::perf {

struct rollup_entry {
  std::vector<std::string> scope;  // outermost first; empty: at the top
  std::string name;                // the op's own name (the leaf's label)
  std::string op_type;             // "Conv", "MatMul", "attention", ...
  double macs = 0;
  op_cost cost;
  double seconds = 0;        // expected time
  double bound_seconds = 0;  // roofline lower bound
  bound limit = bound::compute;
};

struct rollup_node {
  std::string name;
  std::string op_type;  // leaves only
  std::size_t ops = 0;  // leaves under this node (1 for a leaf)
  double macs = 0;
  op_cost cost;
  double seconds = 0, bound_seconds = 0;
  double compute_seconds = 0, memory_seconds = 0;  // `seconds` split by the leaves' bounds
  std::vector<rollup_node> children;

  bool leaf() const noexcept { return ops == 1 && children.empty() && !op_type.empty(); }
  double intensity() const noexcept;  // FLOPs per byte; infinity when no bytes
  bound limit() const noexcept;       // compute when compute_seconds >= memory_seconds
};

// "/layer1/layer1.0/conv1/Conv" -> {"layer1", "layer1.0", "conv1"}; "Conv_3" -> {}.
std::vector<std::string> scope_of(const std::string& node_name);

// The tree of `entries` under a root named `root`.
rollup_node build_rollup(const std::string& root, const std::vector<rollup_entry>& entries);

// The tree down to `depth` (< 0: all of it).
rollup_node collapse(const rollup_node& tree, int depth);

// {name, op_type (leaves), ops, macs, flops, bytes, intensity (null when not finite), bound,
// time_ms, bound_ms (both null when `times` is false), children}.
nlohmann::json to_json(const rollup_node& tree, bool times = true);

// The tree as an indented table, one line per node down to `depth` (< 0: all): name, ops,
// MACs, FLOPs, bytes, FLOP/byte, bound, expected time and its share of the root's time
// ("-" for both when `times` is false: a model that does not fit gets no time).
std::string rollup_text(const rollup_node& tree, int depth, bool times = true);

}  // namespace keel::perf
