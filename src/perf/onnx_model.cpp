#include "keel/perf/onnx_model.hpp"

#include "keel/core/error.hpp"
#include "keel/core/input_file.hpp"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>
#include <set>
#include <unordered_map>

namespace keel::perf {
namespace {

struct tensor_info {
  std::vector<std::int64_t> dims;
  bool shape_known = false;
  int elem_type = 0;
  double elements() const {
    return std::accumulate(dims.begin(), dims.end(), 1.0,
                           [](double acc, std::int64_t d) { return acc * static_cast<double>(d); });
  }
};

double elem_bytes(int t) {
  switch (t) {
    case onnx::TensorProto::DOUBLE:
    case onnx::TensorProto::INT64:
    case onnx::TensorProto::UINT64:
    case onnx::TensorProto::COMPLEX64: return 8;
    case onnx::TensorProto::FLOAT:
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::UINT32: return 4;
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16:
    case onnx::TensorProto::INT16:
    case onnx::TensorProto::UINT16: return 2;
    case onnx::TensorProto::COMPLEX128: return 16;
    default: return 1;  // int8, uint8, bool
  }
}

dtype dtype_of(int t) {
  switch (t) {
    case onnx::TensorProto::DOUBLE: return dtype::fp64;
    case onnx::TensorProto::FLOAT16: return dtype::fp16;
    case onnx::TensorProto::BFLOAT16: return dtype::bf16;
    case onnx::TensorProto::INT8:
    case onnx::TensorProto::UINT8: return dtype::int8;
    default: return dtype::fp32;
  }
}

const std::set<std::string>& view_ops() {
  static const std::set<std::string> ops = {"Reshape",  "Flatten",        "Squeeze", "Unsqueeze",
                                            "Identity", "Dropout",        "Shape",   "Size",
                                            "Constant", "ConstantOfShape"};
  return ops;
}
const std::set<std::string>& data_ops() {
  static const std::set<std::string> ops = {
      "Transpose", "Concat",          "Split", "Slice",        "Gather",       "GatherElements",
      "GatherND",  "Expand",          "Tile",  "Pad",          "Cast",         "Range",
      "ScatterND", "ScatterElements", "Trilu", "DepthToSpace", "SpaceToDepth", "NonZero",
      "OneHot"};
  return ops;
}
// Elementwise maps with their FLOPs per output element.
const std::map<std::string, double>& elementwise_ops() {
  static const std::map<std::string, double> ops = {{"Add", 1},         {"Sub", 1},
                                                    {"Mul", 1},         {"Div", 1},
                                                    {"Relu", 1},        {"LeakyRelu", 2},
                                                    {"PRelu", 2},       {"Sigmoid", 4},
                                                    {"HardSigmoid", 3}, {"HardSwish", 4},
                                                    {"Tanh", 5},        {"Erf", 5},
                                                    {"Exp", 1},         {"Log", 1},
                                                    {"Sqrt", 1},        {"Reciprocal", 1},
                                                    {"Pow", 1},         {"Neg", 1},
                                                    {"Abs", 1},         {"Clip", 2},
                                                    {"Min", 1},         {"Max", 1},
                                                    {"Mean", 1},        {"Sum", 1},
                                                    {"Where", 1},       {"Equal", 1},
                                                    {"Less", 1},        {"Greater", 1},
                                                    {"LessOrEqual", 1}, {"GreaterOrEqual", 1},
                                                    {"Not", 1},         {"And", 1},
                                                    {"Or", 1},          {"Floor", 1},
                                                    {"Ceil", 1},        {"Round", 1},
                                                    {"Sin", 1},         {"Cos", 1},
                                                    {"Elu", 3},         {"Selu", 3},
                                                    {"Softplus", 3},    {"Softsign", 2},
                                                    {"Mish", 6},        {"Gelu", 8},
                                                    {"Celu", 3},        {"ThresholdedRelu", 1},
                                                    {"IsNaN", 1},       {"IsInf", 1},
                                                    {"Sign", 1},        {"Mod", 1},
                                                    {"BitShift", 1}};
  return ops;
}

std::vector<std::int64_t> int_attr(const onnx::NodeProto& n, const char* name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return {a.ints().begin(), a.ints().end()};
  }
  return {};
}
std::optional<std::int64_t> int_attr1(const onnx::NodeProto& n, const char* name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return a.i();
  }
  return std::nullopt;
}

}  // namespace

onnx_report analyze_onnx(const std::string& path, const gpu_spec& device,
                         const onnx_options& options) {
  const std::string bytes = read_input_file(path);
  if (bytes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
    throw parse_error::at_offset(path, 0, "larger than protobuf's 2 GiB message limit");
  }
  onnx::ModelProto model;
  if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    throw parse_error::at_offset(path, 0, "not an ONNX ModelProto");
  }
  // An empty file, or bytes that happen to parse as a protobuf message, give a model with no
  // IR version or no nodes: nothing to analyze is an error, not "0 nodes".
  if (bytes.empty()) throw parse_error::at_offset(path, 0, "empty file, not an ONNX model");
  if (model.ir_version() <= 0 || !model.has_graph()) {
    throw parse_error::at_offset(path, 0, "not an ONNX model (no IR version or no graph)");
  }
  if (model.graph().node_size() == 0) {
    throw parse_error::at_offset(path, 0, "the ONNX graph has no nodes");
  }
  try {
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(false, 0, true));
  } catch (const std::exception& e) {
    // Keep whatever shapes the file carries; nodes that need a missing shape say so below.
  }
  onnx_report r;
  r.path = path;
  r.producer = model.producer_name() +
               (model.producer_version().empty() ? "" : " " + model.producer_version());
  for (const auto& op : model.opset_import()) {
    if (op.domain().empty() || op.domain() == "ai.onnx") r.opset = op.version();
  }
  const onnx::GraphProto& g = model.graph();

  std::unordered_map<std::string, tensor_info> tensors;
  std::set<std::string> initializers;
  auto from_value = [&](const onnx::ValueInfoProto& v) {
    if (!v.type().has_tensor_type()) return;
    const auto& tt = v.type().tensor_type();
    tensor_info t;
    t.elem_type = tt.elem_type();
    if (tt.has_shape()) {
      t.shape_known = true;
      for (const auto& d : tt.shape().dim()) {
        if (d.has_dim_value()) {
          t.dims.push_back(d.dim_value());
        } else if (d.has_dim_param() && options.dim_values.contains(d.dim_param())) {
          t.dims.push_back(options.dim_values.at(d.dim_param()));
        } else {
          t.dims.push_back(1);  // symbolic and unset: batch-like dimension
        }
      }
    }
    tensors[v.name()] = t;
  };
  for (const auto& v : g.input()) from_value(v);
  for (const auto& v : g.value_info()) from_value(v);
  for (const auto& v : g.output()) from_value(v);
  for (const auto& init : g.initializer()) {
    tensor_info t;
    t.elem_type = init.data_type();
    t.shape_known = true;
    t.dims.assign(init.dims().begin(), init.dims().end());
    tensors[init.name()] = t;
    initializers.insert(init.name());
    r.params += t.elements();
  }

  auto info = [&](const std::string& name) -> const tensor_info* {
    if (name.empty()) return nullptr;
    auto it = tensors.find(name);
    return it == tensors.end() ? nullptr : &it->second;
  };
  auto need_shape = [&](const onnx::NodeProto& n, const std::string& name) -> const tensor_info& {
    const tensor_info* t = info(name);
    if (!t || !t->shape_known) {
      throw invalid_argument(
          fmt::format("{}: node '{}' ({}): shape of '{}' unknown after shape inference", path,
                      n.name(), n.op_type(), name));
    }
    return *t;
  };

  for (const onnx::NodeProto& n : g.node()) {
    onnx_node_cost c;
    c.name = n.name().empty() ? n.op_type() + "_" + std::to_string(r.nodes.size()) : n.name();
    c.op_type = n.op_type();
    const tensor_info* out = n.output_size() > 0 ? info(n.output(0)) : nullptr;
    if (out) {
      c.output_shape = out->dims;
      c.type = dtype_of(out->elem_type);
    }
    const double out_elems = out && out->shape_known ? out->elements() : 0;
    double bytes = 0;
    for (const auto& name : n.input()) {
      if (const tensor_info* t = info(name); t && t->shape_known)
        bytes += t->elements() * elem_bytes(t->elem_type);
    }
    for (const auto& name : n.output()) {
      if (const tensor_info* t = info(name); t && t->shape_known)
        bytes += t->elements() * elem_bytes(t->elem_type);
    }
    const std::string& op = n.op_type();
    double flops = 0;
    const bool has_bias = n.input_size() > 2 && !n.input(2).empty();
    std::string ceiling;  // kernel class for the device's measured ceilings
    if (op == "Conv" || op == "ConvTranspose") {
      c.kind = "matmul";
      const tensor_info& x = need_shape(n, n.input(0));
      const tensor_info& w = need_shape(n, n.input(1));
      const double kernel =
          std::accumulate(w.dims.begin() + 2, w.dims.end(), 1.0,
                          [](double a, std::int64_t d) { return a * static_cast<double>(d); });
      const tensor_info& y = need_shape(n, n.output(0));
      const auto group = int_attr1(n, "group").value_or(1);
      const auto strides = int_attr(n, "strides");
      const bool unit_stride =
          std::all_of(strides.begin(), strides.end(), [](std::int64_t s) { return s == 1; });
      // A 1x1 convolution with unit stride is a plain GEMM over the channels; a strided one
      // must gather its input first and runs with the other convolutions.
      ceiling = group > 1 && x.dims.size() > 1 && group == x.dims[1] ? "conv_depthwise"
                : kernel == 1 && unit_stride                         ? "conv_1x1"
                                                                     : "conv_kxk";
      if (op == "Conv") {
        c.macs = y.elements() * static_cast<double>(w.dims.at(1)) * kernel;
      } else {  // each input element scatters into (M/group) x kernel outputs
        c.macs = x.elements() * static_cast<double>(w.dims.at(1)) * kernel;
      }
      flops = 2 * c.macs + (has_bias ? y.elements() : 0);
    } else if (op == "Gemm") {
      c.kind = "matmul";
      ceiling = "gemm";
      const tensor_info& a = need_shape(n, n.input(0));
      const double k =
          static_cast<double>(int_attr1(n, "transA").value_or(0) ? a.dims.at(0) : a.dims.at(1));
      const tensor_info& y = need_shape(n, n.output(0));
      c.macs = y.elements() * k;
      flops = 2 * c.macs + (has_bias ? y.elements() : 0);
    } else if (op == "MatMul" || op == "MatMulInteger") {
      const tensor_info& a = need_shape(n, n.input(0));
      const tensor_info& y = need_shape(n, n.output(0));
      const double k = static_cast<double>(a.dims.empty() ? 1 : a.dims.back());
      c.macs = y.elements() * k;
      flops = 2 * c.macs;
      const bool both_activations =
          !initializers.contains(n.input(0)) && !initializers.contains(n.input(1));
      c.kind = both_activations ? "attention_matmul" : "matmul";
      ceiling = both_activations ? "attention_matmul" : "gemm";
    } else if (op == "Softmax" || op == "LogSoftmax") {
      c.kind = "norm";
      flops = 5 * out_elems;
    } else if (op == "LayerNormalization" || op == "InstanceNormalization" ||
               op == "GroupNormalization" || op == "LpNormalization" ||
               op == "MeanVarianceNormalization") {
      c.kind = "norm";
      flops = 7 * out_elems;
    } else if (op == "BatchNormalization") {
      c.kind = "norm";
      flops = 2 * out_elems;
    } else if (op == "MaxPool" || op == "AveragePool" || op == "LpPool") {
      c.kind = "pool";
      ceiling = "pool";
      const auto k = int_attr(n, "kernel_shape");
      flops = out_elems * std::accumulate(k.begin(), k.end(), 1.0, [](double a, std::int64_t d) {
                return a * static_cast<double>(d);
              });
    } else if (op == "GlobalAveragePool" || op == "GlobalMaxPool" || op.starts_with("Reduce") ||
               op == "ArgMax" || op == "ArgMin") {
      c.kind = op.starts_with("Global") ? "pool" : "reduce";
      const tensor_info* x = info(n.input(0));
      flops = x && x->shape_known ? x->elements() : 0;
    } else if (op == "Resize" || op == "Upsample") {
      c.kind = "data";
      flops = out_elems;  // one interpolation step per output (nearest: a copy)
    } else if (auto it = elementwise_ops().find(op); it != elementwise_ops().end()) {
      c.kind = "elementwise";
      flops = it->second * out_elems;
    } else if (view_ops().contains(op)) {
      c.kind = "view";
      bytes = 0;
    } else if (data_ops().contains(op)) {
      c.kind = "data";
    } else {
      c.kind = "unknown";
      ++r.unknown_ops[op];
    }
    c.cost = {flops, bytes};
    const bool matmul = c.kind == "matmul" || c.kind == "attention_matmul";
    const peak_rate p = device.peak(c.type, matmul && options.tensor);
    c.peak_key = p.key;
    double rate = p.tflops;
    const double hardware_bandwidth = device.bandwidth_for(c.cost.bytes);
    double bandwidth = hardware_bandwidth;
    if (auto it = device.ceilings_tflops.find(ceiling);
        !ceiling.empty() && it != device.ceilings_tflops.end()) {
      rate = std::min(rate, it->second);
      c.peak_key = "ceiling:" + ceiling;
    }
    if (auto it = device.ceilings_gbs.find(ceiling);
        !ceiling.empty() && it != device.ceilings_gbs.end()) {
      bandwidth = std::min(bandwidth, it->second * 1e9);
      c.peak_key = "ceiling:" + ceiling;
    }
    r.roofline_seconds += evaluate(c.cost, p.tflops * 1e12, hardware_bandwidth).seconds;
    c.point = evaluate(c.cost, rate * 1e12, bandwidth);
    c.seconds = c.point.seconds + (c.kind != "view" ? device.overhead_us * 1e-6 : 0);
    r.macs += c.macs;
    r.flops += flops;
    r.bytes += bytes;
    r.seconds += c.seconds;
    r.nodes.push_back(std::move(c));
  }
  return r;
}

}  // namespace keel::perf
