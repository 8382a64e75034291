// keel::perf ONNX import — per-node FLOPs, MACs and bytes of an ONNX graph, and its roofline
// time on a device.
//
// The file is read with Debian's libonnx (onnx::ModelProto) and run through ONNX shape
// inference, so shapes of intermediate tensors need not be stored in the file. Counting
// conventions (MACs as fvcore/ptflops count them; FLOPs as calflops: 2 per MAC plus the rest):
//   Conv, ConvTranspose, Gemm, MatMul  MACs = output elements x reduction length; + bias adds
//   Einsum        MACs = the product of the sizes of every index letter, times (operands - 1)
//                 (the naive contraction; an ellipsis covers the dims it stands for); a single
//                 operand (a sum or transpose) is 1 FLOP per input element, no MACs
//   LSTM/GRU/RNN  MACs = directions x steps x batch x gates x hidden x (input + hidden), gates
//                 4/3/1; FLOPs 2 x MACs plus per direction, step, sequence and hidden unit:
//                 gates x 1 (input + recurrent parts) + gates x 2 with a bias input (both
//                 biases), then LSTM 26 (3 sigmoids at 4, 2 tanh at 5, c = f*c + i*g 3, o*tanh 1)
//                 + 6 with peepholes, GRU 18 (2 sigmoids, r*(..) 1, tanh, (1-z)*n + z*h 4),
//                 RNN 5 (tanh): the default activations, costed as the elementwise table below
//   Softmax 5, LayerNorm/GroupNorm/InstanceNorm 7, BatchNormalization 2 FLOPs per element
//   elementwise maps 1 FLOP per output element; pooling: output x window; reductions: input
//   Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout, Shape, Constant: free (views)
//   Transpose, Concat, Slice, Gather, Split, Pad, Cast, Expand...: bytes only
// Bytes: every input and output tensor read/written once (weights included), except Gather,
// which reads only the rows it gathers (an embedding lookup of 128 ids reads 128 rows of the
// table, not the table): its data operand is charged the output's size. A node whose op is
// unknown counts its bytes and is listed in unknown_ops.
// Parameters are the elements of the file's floating-point initializers: what the exporter
// wrote, which is not always what the framework counts. param_notes says so when it can tell:
// initializers the exporter computed (names "onnx::..."), batch norms folded into convolution
// weights, and an exporter-computed initializer that is an embedding table (read by a Gather)
// transposed (a tied weight written twice, so counted twice here).
// Memory: the weights (initializer bytes) and the peak of the activations alive at once in
// graph order (a tensor lives from the node that writes it to the last node that reads it;
// graph inputs count) make memory_need(); report.hpp's run_model checks it against the device
// (keel/perf/memory_fit.hpp).
// Expected time: a node's time is its roofline at achievable rates: the device's measured
// ceiling for its kernel class where there is one (below), else the peak (bandwidth) times
// keel/perf/efficiency.hpp's achievable fraction for its class (matmul: gemm, attention_matmul:
// attention, the rest: memory). roofline_seconds keeps the pure bound.
// Symbolic dimensions (dynamic axes, as torch.onnx.export(dynamic_axes=...) and every Hugging
// Face export write them) take the value of onnx_options::dim_values (name -> value), set on
// the graph's declared shapes before shape inference; integer shape subgraphs (Shape, Gather,
// Unsqueeze, Squeeze, Concat, Cast, integer Add/Sub/Mul/Div) are then folded to constants so
// reshape targets resolve. A dimension that still has no value is refused (keel::invalid_argument
// naming it) unless onnx_options::assume_one, which counts every such dimension as 1. Time: each
// node's roofline time, max(FLOPs / rate, bytes / bandwidth for its bytes), where the bandwidth is
// the device's for that many bytes, capped by the device's measured GB/s ceiling for the node's
// kernel class when it has one (else times the memory fraction), and the rate is the device
// peak (times the class's fraction), capped by the device's measured TFLOP/s ceiling for the
// node's kernel class when it has one (conv_kxk; conv_1x1 for unit-stride
// 1x1 convolutions, which are GEMMs; conv_depthwise; gemm for MatMul/Gemm with a weight operand;
// attention_matmul for MatMul of two activations; pool for windowed pooling), plus the device's
// per-op dispatch overhead for every node that does work. analyze_onnx keeps no state between calls
// and is thread-safe (libonnx's schema registry is a function-local static).
#pragma once

#include "keel/perf/dtype.hpp"
#include "keel/perf/efficiency.hpp"
#include "keel/perf/gpu_database.hpp"
#include "keel/perf/memory_fit.hpp"
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
  op_class efficiency_class = op_class::memory;
  double seconds = 0;        // expected: roofline at the achievable rates, plus dispatch overhead
  double bound_seconds = 0;  // the pure hardware roofline: peaks, no ceilings or overhead
};

struct onnx_report {
  std::string path;
  std::string producer;
  std::int64_t opset = 0;
  std::vector<onnx_node_cost> nodes;
  double macs = 0, flops = 0, bytes = 0;
  double params = 0;            // elements of the floating-point initializers
  double seconds = 0;           // "expect about": sum of node times
  double roofline_seconds = 0;  // "cannot be faster than": sum of pure hardware roofline times
                                // (peaks, no ceilings, fractions or overhead)
  std::vector<efficiency> efficiencies;  // the fractions used: gemm, attention, memory
  std::map<std::string, int> unknown_ops;
  std::vector<std::string> param_notes;  // how the file's parameters differ from a module count
  double weight_bytes = 0;               // bytes of the initializers
  double peak_activation_bytes = 0;      // most activation bytes alive at once, graph order
  memory_need memory() const { return {weight_bytes, 0, peak_activation_bytes, 0, 0}; }
};

// The file is read with keel::read_input_file (a regular file within KEEL_MAX_INPUT_BYTES).
// Throws keel::io_error (unreadable, not a regular file), keel::parse_error (not an ONNX
// model: empty, garbage, no IR version, no graph or a graph without nodes) and
// keel::invalid_argument (a symbolic dimension without a value and no assume_one, naming the
// dimensions; a node whose shapes cannot be determined for its op's count).
onnx_report analyze_onnx(const std::string& path, const gpu_spec& device,
                         const onnx_options& options = {});

}  // namespace keel::perf
