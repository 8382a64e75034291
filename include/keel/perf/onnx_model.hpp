// keel::perf ONNX import — per-node FLOPs, MACs and bytes of an ONNX graph, and its roofline
// time on a device.
//
// The file is read with Debian's libonnx (onnx::ModelProto) and run through ONNX shape
// inference, so shapes of intermediate tensors need not be stored in the file. Counting
// conventions (MACs as fvcore/ptflops count them; FLOPs as calflops: 2 per MAC plus the rest):
//   Conv, ConvTranspose, Gemm, MatMul  MACs = output elements x reduction length; + bias adds
//   Softmax 5, LayerNorm/GroupNorm/InstanceNorm 7, BatchNormalization 2 FLOPs per element
//   elementwise maps 1 FLOP per output element; pooling: output x window; reductions: input
//   Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout, Shape, Constant: free (views)
//   Transpose, Concat, Slice, Gather, Split, Pad, Cast, Expand...: bytes only
// Bytes: every input and output tensor read/written once (weights included). A node whose
// op is unknown counts its bytes and is listed in unknown_ops.
// Symbolic dimensions (dynamic axes, as torch.onnx.export(dynamic_axes=...) and every Hugging
// Face export write them) take the value of onnx_options::dim_values (name -> value), set on
// the graph's declared shapes before shape inference; integer shape subgraphs (Shape, Gather,
// Unsqueeze, Squeeze, Concat, Cast, integer Add/Sub/Mul/Div) are then folded to constants so
// reshape targets resolve. A dimension that still has no value is refused (keel::invalid_argument
// naming it) unless onnx_options::assume_one, which counts every such dimension as 1. Time: each
// node's roofline time, max(FLOPs / rate, bytes / bandwidth for its bytes), where the bandwidth is
// the device's for that many bytes, capped by the device's measured GB/s ceiling for the node's
// kernel class when it has one, and the rate is the device peak, capped by the device's measured
// TFLOP/s ceiling for the node's kernel class when it has one (conv_kxk; conv_1x1 for unit-stride
// 1x1 convolutions, which are GEMMs; conv_depthwise; gemm for MatMul/Gemm with a weight operand;
// attention_matmul for MatMul of two activations; pool for windowed pooling), plus the device's
// per-op dispatch overhead for every node that does work. analyze_onnx keeps no state between calls
// and is thread-safe (libonnx's schema registry is a function-local static).
#pragma once

#include "keel/perf/dtype.hpp"
#include "keel/perf/gpu_database.hpp"
#include "keel/perf/roofline.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace keel::perf {

struct onnx_options {
  std::map<std::string, std::int64_t> dim_values;  // symbolic dimension -> value
  bool tensor = true;                              // matmul-class nodes may use tensor cores
  bool assume_one = false;  // count symbolic dimensions without a value as 1 instead of refusing
};

struct onnx_node_cost {
  std::string name;
  std::string op_type;
  std::string kind;  // "matmul", "attention_matmul", "norm", "elementwise", "pool",
                     // "reduce", "data", "view", "unknown"
  double macs = 0;
  op_cost cost;             // flops and bytes
  dtype type = dtype::f32;  // element type of the first output
  std::vector<std::int64_t> output_shape;
  roofline_point point;
  std::string peak_key;  // the rate used: a peak key or "ceiling:<class>"
  double seconds = 0;    // roofline time plus dispatch overhead
};

struct onnx_report {
  std::string path;
  std::string producer;
  std::int64_t opset = 0;
  std::vector<onnx_node_cost> nodes;
  double macs = 0, flops = 0, bytes = 0;
  double params = 0;   // elements of the initializers
  double seconds = 0;  // sum of node times
  double roofline_seconds =
      0;  // sum of pure hardware roofline times (peaks, no ceilings or overhead)
  std::map<std::string, int> unknown_ops;
};

// The file is read with keel::read_input_file (a regular file within KEEL_MAX_INPUT_BYTES).
// Throws keel::io_error (unreadable, not a regular file), keel::parse_error (not an ONNX
// model: empty, garbage, no IR version, no graph or a graph without nodes) and
// keel::invalid_argument (a symbolic dimension without a value and no assume_one, naming the
// dimensions; a node whose shapes cannot be determined for its op's count).
onnx_report analyze_onnx(const std::string& path, const gpu_spec& device,
                         const onnx_options& options = {});

}  // namespace keel::perf
