#include "keel/perf/onnx_model.hpp"

#include "keel/core/error.hpp"
#include "keel/core/input_file.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cctype>
#include <cstring>
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
    case onnx::TensorProto::DOUBLE: return dtype::f64;
    case onnx::TensorProto::FLOAT16: return dtype::f16;
    case onnx::TensorProto::BFLOAT16: return dtype::bf16;
    case onnx::TensorProto::INT8:
    case onnx::TensorProto::UINT8: return dtype::i8;
    default: return dtype::f32;
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

bool is_float_type(int t) {
  return t == onnx::TensorProto::FLOAT || t == onnx::TensorProto::DOUBLE ||
         t == onnx::TensorProto::FLOAT16 || t == onnx::TensorProto::BFLOAT16;
}

std::string str_attr(const onnx::NodeProto& n, const char* name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return a.s();
  }
  return {};
}

double product(const std::vector<std::int64_t>& dims) {
  return std::accumulate(dims.begin(), dims.end(), 1.0,
                         [](double acc, std::int64_t d) { return acc * static_cast<double>(d); });
}

// Einsum: the size of every index label (letters; the dims an ellipsis stands for get labels of
// their own, aligned from the right as broadcasting aligns them). Returns nullopt when the
// equation does not match the operand ranks.
std::optional<std::map<std::string, std::int64_t>> einsum_labels(
    const std::string& equation, const std::vector<const std::vector<std::int64_t>*>& operands) {
  std::string eq;
  for (char ch : equation) {
    if (ch != ' ') eq.push_back(ch);
  }
  const auto arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= lhs.size(); ++i) {
    if (i == lhs.size() || lhs[i] == ',') {
      terms.push_back(lhs.substr(start, i - start));
      start = i + 1;
    }
  }
  if (terms.size() != operands.size()) return std::nullopt;
  std::map<std::string, std::int64_t> sizes;
  for (std::size_t t = 0; t < terms.size(); ++t) {
    const std::vector<std::int64_t>& dims = *operands[t];
    const std::string& term = terms[t];
    const auto ellipsis = term.find("...");
    std::string letters = term;
    if (ellipsis != std::string::npos) letters.erase(ellipsis, 3);
    if (letters.size() > dims.size() ||
        (ellipsis == std::string::npos && letters.size() != dims.size()))
      return std::nullopt;
    const std::size_t covered = dims.size() - letters.size();
    const std::size_t before = ellipsis == std::string::npos ? letters.size() : ellipsis;
    auto note = [&](const std::string& label, std::int64_t d) {
      auto [it, fresh] = sizes.emplace(label, d);
      if (!fresh) it->second = std::max(it->second, d);  // broadcasting: 1 against n is n
    };
    for (std::size_t i = 0; i < before; ++i) note(std::string(1, letters[i]), dims[i]);
    for (std::size_t e = 0; e < covered; ++e) {
      note("..." + std::to_string(covered - 1 - e), dims[before + e]);  // numbered from the right
    }
    for (std::size_t i = before; i < letters.size(); ++i)
      note(std::string(1, letters[i]), dims[covered + i]);
  }
  return sizes;
}

// Elementwise FLOPs per direction, step, sequence and hidden unit of a recurrent cell (the
// header's table): gates combined, biases, then the cell's own arithmetic.
double recurrent_cell_flops(const std::string& op, bool bias, bool peepholes) {
  const double gates = op == "LSTM" ? 4 : op == "GRU" ? 3 : 1;
  double f = gates + (bias ? 2 * gates : 0);
  if (op == "LSTM") {
    f += 3 * 4 + 2 * 5 + 3 + 1 + (peepholes ? 6 : 0);
  } else if (op == "GRU") {
    f += 2 * 4 + 1 + 5 + 4;
  } else {
    f += 5;
  }
  return f;
}

// ---- shape binding and folding -------------------------------------------------------------
// Exports with dynamic axes compute every reshape target at run time (Shape -> Gather ->
// Unsqueeze -> Concat -> Reshape; Tensor.expand(n, -1, -1) as ConstantOfShape -> Equal ->
// Where -> Expand), which libonnx's inference does not evaluate. Once the graph
// inputs have concrete dimensions, such integer subgraphs are constants: fold them into
// Constant nodes of a working copy and infer again, so the shapes downstream resolve.

using int_values = std::vector<std::int64_t>;
struct folded {
  int_values v;
  bool scalar = false;
  std::int64_t cols = 0;  // > 0: a matrix of v.size() / cols rows (pad vectors reshaped to [-1, 2])
};

std::optional<folded> int_tensor(const onnx::TensorProto& t) {
  if (t.dims_size() > 2 || (t.dims_size() == 2 && t.dims(1) <= 0)) return std::nullopt;
  folded f;
  f.scalar = t.dims_size() == 0;
  if (t.dims_size() == 2) f.cols = t.dims(1);
  if (t.data_type() == onnx::TensorProto::INT64) {
    if (t.int64_data_size() > 0) {
      f.v.assign(t.int64_data().begin(), t.int64_data().end());
    } else {
      const std::string& raw = t.raw_data();
      if (raw.size() % 8 != 0) return std::nullopt;
      f.v.resize(raw.size() / 8);
      std::memcpy(f.v.data(), raw.data(), raw.size());
    }
  } else if (t.data_type() == onnx::TensorProto::INT32) {
    if (t.int32_data_size() > 0) {
      f.v.assign(t.int32_data().begin(), t.int32_data().end());
    } else {
      const std::string& raw = t.raw_data();
      if (raw.size() % 4 != 0) return std::nullopt;
      std::vector<std::int32_t> w(raw.size() / 4);
      std::memcpy(w.data(), raw.data(), raw.size());
      f.v.assign(w.begin(), w.end());
    }
  } else {
    return std::nullopt;
  }
  const std::int64_t n = t.dims_size() == 0 ? 1 : t.dims(0) * (f.cols > 0 ? f.cols : 1);
  if (static_cast<std::int64_t>(f.v.size()) != n) return std::nullopt;
  return f;
}

// One pass over the nodes: every integer node whose inputs are known becomes a Constant.
// Returns how many nodes it replaced.
int fold_shape_nodes(onnx::GraphProto& g) {
  std::unordered_map<std::string, std::vector<std::int64_t>> shapes;  // fully known shapes
  auto note_shape = [&](const onnx::ValueInfoProto& v) {
    if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return;
    std::vector<std::int64_t> dims;
    for (const auto& d : v.type().tensor_type().shape().dim()) {
      if (!d.has_dim_value()) return;
      dims.push_back(d.dim_value());
    }
    shapes[v.name()] = dims;
  };
  for (const auto& v : g.input()) note_shape(v);
  for (const auto& v : g.value_info()) note_shape(v);
  for (const auto& init : g.initializer())
    shapes[init.name()] = {init.dims().begin(), init.dims().end()};
  std::unordered_map<std::string, folded> values;
  for (const auto& init : g.initializer()) {
    if (auto f = int_tensor(init)) values[init.name()] = *f;
  }
  int replaced = 0;
  for (onnx::NodeProto& n : *g.mutable_node()) {
    if (n.output_size() != 1) continue;
    const std::string& op = n.op_type();
    // any(i): a known value of any shape; in(i): a scalar or vector, what most ops take.
    auto any = [&](int i) -> const folded* {
      if (i >= n.input_size() || n.input(i).empty()) return nullptr;
      auto it = values.find(n.input(i));
      return it == values.end() ? nullptr : &it->second;
    };
    auto in = [&](int i) -> const folded* {
      const folded* f = any(i);
      return f && f->cols == 0 ? f : nullptr;
    };
    std::optional<folded> out;
    if (op == "Constant") {
      for (const auto& a : n.attribute()) {
        if (a.name() == "value" && a.has_t()) out = int_tensor(a.t());
      }
      if (out) values[n.output(0)] = *out;
      continue;  // already a constant
    }
    if (op == "Shape") {
      auto it = shapes.find(n.input(0));
      if (it == shapes.end()) continue;
      const auto rank = static_cast<std::int64_t>(it->second.size());
      std::int64_t start = int_attr1(n, "start").value_or(0),
                   end = int_attr1(n, "end").value_or(rank);
      if (start < 0) start += rank;
      if (end < 0) end += rank;
      start = std::clamp<std::int64_t>(start, 0, rank);
      end = std::clamp<std::int64_t>(end, start, rank);
      out = folded{{it->second.begin() + start, it->second.begin() + end}, false};
    } else if (op == "Reshape") {
      // A vector or matrix to a vector or matrix (F.pad's computed pads: [-1, 2] and back).
      const folded *a = any(0), *shape = in(1);
      if (!a || !shape || shape->scalar || shape->v.empty() || shape->v.size() > 2) continue;
      const auto size = static_cast<std::int64_t>(a->v.size());
      const std::vector<std::int64_t> from =
          a->cols > 0 ? std::vector<std::int64_t>{size / a->cols, a->cols}
                      : std::vector<std::int64_t>{size};
      std::vector<std::int64_t> to = shape->v;
      std::int64_t known = 1, unknown = -1;
      for (std::size_t k = 0; k < to.size(); ++k) {
        if (to[k] == 0 && k < from.size()) to[k] = from[k];
        if (to[k] == -1) {
          unknown = static_cast<std::int64_t>(k);
        } else {
          known *= to[k];
        }
      }
      if (known <= 0 || (unknown >= 0 && size % known != 0)) continue;
      if (unknown >= 0) to[static_cast<std::size_t>(unknown)] = size / known;
      if (to[0] * (to.size() == 2 ? to[1] : 1) != size) continue;
      out = folded{a->v, false, to.size() == 2 ? to[1] : 0};
    } else if (op == "Transpose") {
      const folded* a = any(0);
      const auto perm = int_attr(n, "perm");
      if (!a || a->cols <= 0 || (!perm.empty() && perm != std::vector<std::int64_t>{1, 0}))
        continue;
      const std::int64_t rows = static_cast<std::int64_t>(a->v.size()) / a->cols;
      folded f{{}, false, rows};
      for (std::int64_t c = 0; c < a->cols; ++c) {
        for (std::int64_t r = 0; r < rows; ++r)
          f.v.push_back(a->v[static_cast<std::size_t>(r * a->cols + c)]);
      }
      out = f;
    } else if (op == "Slice") {
      // One axis, the first, with step +-1 (reversing the rows of a pad matrix).
      const folded *a = any(0), *starts = in(1), *ends = in(2), *axes = in(3), *steps = in(4);
      if (!a || a->scalar || !starts || !ends || starts->v.size() != 1 || ends->v.size() != 1)
        continue;
      if (axes &&
          (axes->v.size() != 1 || (axes->v[0] != 0 && axes->v[0] != -(a->cols > 0 ? 2 : 1))))
        continue;
      const std::int64_t step = steps && steps->v.size() == 1 ? steps->v[0] : 1;
      if (step != 1 && step != -1) continue;
      const std::int64_t width = a->cols > 0 ? a->cols : 1;
      const std::int64_t rows = static_cast<std::int64_t>(a->v.size()) / width;
      std::int64_t start = starts->v[0], end = ends->v[0];
      if (start < 0) start += rows;
      if (end < 0) end += rows;
      if (step > 0) {
        start = std::clamp<std::int64_t>(start, 0, rows);
        end = std::clamp<std::int64_t>(end, 0, rows);
      } else {
        start = std::clamp<std::int64_t>(start, -1, rows - 1);
        end = std::clamp<std::int64_t>(end, -1, rows - 1);
      }
      folded f{{}, false, a->cols};
      for (std::int64_t r = start; step > 0 ? r < end : r > end; r += step) {
        const auto first = a->v.begin() + r * width;
        f.v.insert(f.v.end(), first, first + width);
      }
      out = f;
    } else if (op == "Identity" || op == "Cast") {
      const folded* a = any(0);
      const auto to = int_attr1(n, "to");
      if (!a || (op == "Cast" && to != onnx::TensorProto::INT64 && to != onnx::TensorProto::INT32))
        continue;
      out = *a;
    } else if (op == "Gather") {
      const folded *a = in(0), *i = in(1);
      if (!a || !i || a->scalar || int_attr1(n, "axis").value_or(0) != 0) continue;
      folded f{{}, i->scalar};
      const auto size = static_cast<std::int64_t>(a->v.size());
      bool ok = true;
      for (std::int64_t k : i->v) {
        if (k < 0) k += size;
        if (k < 0 || k >= size)
          ok = false;
        else
          f.v.push_back(a->v[static_cast<std::size_t>(k)]);
      }
      if (ok) out = f;
    } else if (op == "Unsqueeze" || op == "Squeeze") {
      const folded* a = in(0);
      if (!a) continue;
      if (op == "Unsqueeze" && a->scalar) out = folded{a->v, false};
      if (op == "Squeeze" && !a->scalar && a->v.size() == 1) out = folded{a->v, true};
    } else if (op == "Concat") {
      folded f;
      bool ok = n.input_size() > 0;
      for (int i = 0; i < n.input_size() && ok; ++i) {
        const folded* a = in(i);
        ok = a && !a->scalar;
        if (ok) f.v.insert(f.v.end(), a->v.begin(), a->v.end());
      }
      if (ok) out = f;
    } else if (op == "ConstantOfShape") {
      const folded* shape = in(0);
      std::optional<folded> value;
      for (const auto& a : n.attribute()) {
        if (a.name() == "value" && a.has_t()) value = int_tensor(a.t());
      }
      if (!shape || shape->scalar || shape->v.size() != 1 || !value || value->v.size() != 1 ||
          shape->v[0] < 0 || shape->v[0] > 64)
        continue;
      out = folded{int_values(static_cast<std::size_t>(shape->v[0]), value->v[0]), false};
    } else if (op == "Equal" || op == "Where") {
      // Equal's output is boolean: its values feed Where, the node itself stays.
      const bool where = op == "Where";
      const folded *a = in(0), *b = in(1), *c = where ? in(2) : nullptr;
      if (!a || !b || (where && !c)) continue;
      std::size_t len = std::max(a->v.size(), b->v.size());
      if (where) len = std::max(len, c->v.size());
      bool ok = true;
      for (const folded* f : {a, b, c}) ok = ok && (!f || f->v.size() == len || f->v.size() == 1);
      if (!ok) continue;
      auto at = [&](const folded* f, std::size_t k) { return f->v[f->v.size() == 1 ? 0 : k]; };
      folded f{{}, a->scalar && b->scalar && (!c || c->scalar)};
      for (std::size_t k = 0; k < len; ++k) {
        f.v.push_back(where ? (at(a, k) != 0 ? at(b, k) : at(c, k)) : at(a, k) == at(b, k));
      }
      if (!where) {
        values[n.output(0)] = f;
        continue;
      }
      out = f;
    } else if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Mod") {
      const folded *a = in(0), *b = in(1);
      if (!a || !b || (a->v.size() != b->v.size() && a->v.size() != 1 && b->v.size() != 1))
        continue;
      folded f{{}, a->scalar && b->scalar};
      const std::size_t len = std::max(a->v.size(), b->v.size());
      bool ok = true;
      for (std::size_t k = 0; k < len; ++k) {
        const std::int64_t x = a->v[a->v.size() == 1 ? 0 : k], y = b->v[b->v.size() == 1 ? 0 : k];
        if ((op == "Div" || op == "Mod") && y == 0) ok = false;
        // Mod with fmod = 0 takes the divisor's sign (Python's %), as ONNX defines it.
        const std::int64_t r = ok && op == "Mod" ? x % y : 0;
        const bool fmod = int_attr1(n, "fmod").value_or(0) != 0;
        f.v.push_back(op == "Add"                            ? x + y
                      : op == "Sub"                          ? x - y
                      : op == "Mul"                          ? x * y
                      : !ok                                  ? 0
                      : op == "Div"                          ? x / y
                      : fmod || r == 0 || (r < 0) == (y < 0) ? r
                                                             : r + y);
      }
      if (ok) out = f;
    }
    if (!out) continue;
    values[n.output(0)] = *out;
    onnx::NodeProto c;
    c.set_op_type("Constant");
    c.set_name(n.name());
    c.add_output(n.output(0));
    onnx::AttributeProto* a = c.add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    onnx::TensorProto* t = a->mutable_t();
    t->set_data_type(onnx::TensorProto::INT64);
    if (out->cols > 0) {
      t->add_dims(static_cast<std::int64_t>(out->v.size()) / out->cols);
      t->add_dims(out->cols);
    } else if (!out->scalar) {
      t->add_dims(static_cast<std::int64_t>(out->v.size()));
    }
    for (std::int64_t x : out->v) t->add_int64_data(x);
    n = std::move(c);
    ++replaced;
  }
  return replaced;
}

// How the file's initializers differ from the framework's own parameter count (header).
std::vector<std::string> parameter_notes(const onnx::GraphProto& g) {
  std::vector<std::string> notes;
  std::map<std::string, const onnx::TensorProto*> by_name;
  std::vector<const onnx::TensorProto*> computed;
  double computed_elements = 0;
  for (const auto& init : g.initializer()) {
    by_name[init.name()] = &init;
    if (init.name().starts_with("onnx::") && is_float_type(init.data_type())) {
      computed.push_back(&init);
      computed_elements += product({init.dims().begin(), init.dims().end()});
    }
  }
  if (!computed.empty()) {
    notes.push_back(fmt::format(
        "{} initializers ({} elements) were computed by the exporter (names 'onnx::...': folded, "
        "transposed or merged weights); the parameter count follows the file, not the "
        "framework's modules",
        computed.size(), computed_elements));
  }
  bool batch_norm = false;
  int folded_convs = 0;
  for (const auto& n : g.node()) {
    batch_norm = batch_norm || n.op_type() == "BatchNormalization";
    if (n.op_type() == "Conv" && n.input_size() > 2 && n.input(1).starts_with("onnx::") &&
        by_name.contains(n.input(1)) && by_name.contains(n.input(2)))
      ++folded_convs;
  }
  if (folded_convs > 0 && !batch_norm) {
    notes.push_back(fmt::format(
        "{} convolutions have exporter-computed weights and a bias and the graph has no "
        "BatchNormalization: batch norms were folded into them (the file holds 1 bias per "
        "channel where the framework counts 2 batch-norm parameters and 2 buffers)",
        folded_convs));
  }
  // A tied embedding: the table a Gather reads, written again transposed for the head.
  std::set<std::string> tables;
  for (const auto& n : g.node()) {
    if (n.op_type() == "Gather" && n.input_size() > 0) tables.insert(n.input(0));
  }
  for (const onnx::TensorProto* t : computed) {
    if (t->dims_size() != 2) continue;
    for (const auto& other : g.initializer()) {
      if (&other == t || !tables.contains(other.name()) || other.dims_size() != 2 ||
          other.data_type() != t->data_type())
        continue;
      if (other.dims(0) == t->dims(1) && other.dims(1) == t->dims(0) && t->dims(0) != t->dims(1)) {
        notes.push_back(fmt::format(
            "'{}' ({}x{}) has the shape of '{}' transposed: probably a tied weight the exporter "
            "wrote twice, so its {} elements are counted twice",
            t->name(), t->dims(0), t->dims(1), other.name(), t->dims(0) * t->dims(1)));
        break;
      }
    }
  }
  return notes;
}

// The most activation bytes alive at once when the nodes run in graph order: a tensor is
// alive from its producer (graph inputs: from the start) to its last consumer (graph outputs:
// to the end). `size` gives a tensor's bytes (0 for initializers and unknown shapes).
double peak_activation_bytes(const onnx::GraphProto& g,
                             const std::function<double(const std::string&)>& size) {
  const int n = g.node_size();
  std::unordered_map<std::string, int> last_use;
  for (int i = 0; i < n; ++i) {
    for (const auto& name : g.node(i).input()) {
      if (!name.empty()) last_use[name] = i;
    }
  }
  for (const auto& v : g.output()) last_use[v.name()] = n;
  std::vector<double> freed_after(static_cast<std::size_t>(n) + 1, 0.0);
  double alive = 0;
  for (const auto& v : g.input()) {
    const double b = size(v.name());
    if (b <= 0) continue;
    alive += b;
    auto it = last_use.find(v.name());
    freed_after[static_cast<std::size_t>(it == last_use.end() ? 0 : it->second)] += b;
  }
  double peak = alive;
  for (int i = 0; i < n; ++i) {
    for (const auto& name : g.node(i).output()) {
      const double b = name.empty() ? 0 : size(name);
      if (b <= 0) continue;
      alive += b;
      auto it = last_use.find(name);
      freed_after[static_cast<std::size_t>(it == last_use.end() ? i : it->second)] += b;
    }
    peak = std::max(peak, alive);
    alive -= freed_after[static_cast<std::size_t>(i)];
  }
  return peak;
}

// libonnx infers no shape for Einsum, and exporters declare its outputs with symbolic dims:
// give every Einsum whose operand shapes are known its output shape from the equation (the
// labels after "->", or without one the labels that appear once, in alphabetical order, after
// the ellipsis dims). Returns how many outputs it set.
int shape_einsum_outputs(onnx::GraphProto& g) {
  std::unordered_map<std::string, std::vector<std::int64_t>> shapes;
  auto note_shape = [&](const onnx::ValueInfoProto& v) {
    if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return;
    std::vector<std::int64_t> dims;
    for (const auto& d : v.type().tensor_type().shape().dim()) {
      if (!d.has_dim_value()) return;
      dims.push_back(d.dim_value());
    }
    shapes[v.name()] = dims;
  };
  for (const auto& v : g.input()) note_shape(v);
  for (const auto& v : g.value_info()) note_shape(v);
  for (const auto& v : g.output()) note_shape(v);
  for (const auto& init : g.initializer())
    shapes[init.name()] = {init.dims().begin(), init.dims().end()};
  int set = 0;
  for (const onnx::NodeProto& n : g.node()) {
    if (n.op_type() != "Einsum" || n.output_size() != 1 || shapes.contains(n.output(0))) continue;
    std::vector<const std::vector<std::int64_t>*> operands;
    for (const auto& name : n.input()) {
      auto it = shapes.find(name);
      if (it == shapes.end()) break;
      operands.push_back(&it->second);
    }
    if (operands.size() != static_cast<std::size_t>(n.input_size())) continue;
    std::string eq;
    for (char ch : str_attr(n, "equation")) {
      if (ch != ' ') eq.push_back(ch);
    }
    const auto labels = einsum_labels(eq, operands);
    if (!labels) continue;
    std::size_t ellipsis_dims = 0;
    for (const auto& [label, size] : *labels) ellipsis_dims += label.starts_with("...");
    std::vector<std::int64_t> dims;
    auto ellipsis = [&] {
      for (std::size_t e = ellipsis_dims; e-- > 0;)
        dims.push_back(labels->at("..." + std::to_string(e)));
    };
    const auto arrow = eq.find("->");
    if (arrow != std::string::npos) {
      const std::string out = eq.substr(arrow + 2);
      for (std::size_t i = 0; i < out.size(); ++i) {
        if (out.compare(i, 3, "...") == 0) {
          ellipsis();
          i += 2;
        } else {
          dims.push_back(labels->at(std::string(1, out[i])));
        }
      }
    } else {
      std::map<char, int> seen;
      for (char ch : eq) {
        if (std::isalpha(static_cast<unsigned char>(ch))) ++seen[ch];
      }
      ellipsis();
      for (const auto& [ch, count] : seen) {
        if (count == 1) dims.push_back(labels->at(std::string(1, ch)));
      }
    }
    onnx::ValueInfoProto* target = nullptr;
    for (auto& v : *g.mutable_output()) {
      if (v.name() == n.output(0)) target = &v;
    }
    for (auto& v : *g.mutable_value_info()) {
      if (v.name() == n.output(0)) target = &v;
    }
    if (!target) {
      target = g.add_value_info();
      target->set_name(n.output(0));
      target->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
      for (const auto& v : g.input()) {
        if (v.name() == n.input(0)) target->mutable_type()->CopyFrom(v.type());
      }
    }
    auto* shape = target->mutable_type()->mutable_tensor_type()->mutable_shape();
    shape->clear_dim();
    for (std::int64_t d : dims) shape->add_dim()->set_dim_value(d);
    shapes[n.output(0)] = dims;
    ++set;
  }
  return set;
}

void infer(onnx::ModelProto& model) {
  try {
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(false, 0, true));
  } catch (const std::exception& e) {
    // Keep whatever shapes the file carries; nodes that need a missing shape say so below.
  }
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
  // --dim values go into the declared shapes before inference, so every inferred shape follows
  // from them; with assume_one every other symbolic dimension of the inputs is 1.
  std::set<std::string> input_params;
  for (const auto& v : model.graph().input()) {
    for (const auto& d : v.type().tensor_type().shape().dim()) {
      if (!d.has_dim_value() && d.has_dim_param()) input_params.insert(d.dim_param());
    }
  }
  auto bind = [&](onnx::ValueInfoProto& v, bool input) {
    if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return;
    for (auto& d : *v.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim()) {
      if (d.has_dim_value()) continue;
      if (auto it = options.dim_values.find(d.dim_param());
          d.has_dim_param() && it != options.dim_values.end()) {
        d.set_dim_value(it->second);
      } else if (options.assume_one && (input || input_params.contains(d.dim_param()))) {
        d.set_dim_value(1);
      }
    }
  };
  for (auto& v : *model.mutable_graph()->mutable_input()) bind(v, true);
  for (auto& v : *model.mutable_graph()->mutable_value_info()) bind(v, false);
  for (auto& v : *model.mutable_graph()->mutable_output()) bind(v, false);
  // Shapes come from a working copy whose integer shape subgraphs are folded into constants;
  // the nodes counted are the file's own.
  onnx::ModelProto work = model;
  infer(work);
  for (int pass = 0; pass < 256; ++pass) {  // each pass can unlock the next block
    const int folded = fold_shape_nodes(*work.mutable_graph());
    if (folded + shape_einsum_outputs(*work.mutable_graph()) == 0) break;
    infer(work);
  }
  {
    // A dimension still without a value would be counted as some guess: refuse unless told.
    std::set<std::string> unresolved;
    auto check = [&](const onnx::ValueInfoProto& v) {
      if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return;
      for (const auto& d : v.type().tensor_type().shape().dim()) {
        if (!d.has_dim_value())
          unresolved.insert(d.has_dim_param() ? d.dim_param() : "(unnamed, of '" + v.name() + "')");
      }
    };
    for (const auto& v : work.graph().input()) check(v);
    for (const auto& v : work.graph().value_info()) check(v);
    for (const auto& v : work.graph().output()) check(v);
    if (!unresolved.empty() && !options.assume_one) {
      // The inputs' own names when any is unset (they are what --dim sets, and the rest follow
      // from them), else the first few others.
      std::vector<std::string> names;
      for (const std::string& n : unresolved) {
        if (input_params.contains(n)) names.push_back(n);
      }
      if (names.empty()) {
        for (const std::string& n : unresolved) {
          if (names.size() == 4) {
            names.push_back(fmt::format("and {} more", unresolved.size() - 4));
            break;
          }
          names.push_back(n);
        }
      }
      throw invalid_argument(fmt::format(
          "{}: the graph has symbolic dimensions without a value: {} (give --dim NAME=N for "
          "each, or --assume-one to count them as 1)",
          path, fmt::join(names, ", ")));
    }
  }
  onnx_report r;
  r.path = path;
  r.producer = model.producer_name() +
               (model.producer_version().empty() ? "" : " " + model.producer_version());
  for (const auto& op : model.opset_import()) {
    if (op.domain().empty() || op.domain() == "ai.onnx") r.opset = op.version();
  }
  const onnx::GraphProto& g = model.graph();
  const onnx::GraphProto& shaped = work.graph();

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
        // Without a value only under assume_one (refused above otherwise).
        t.dims.push_back(d.has_dim_value() ? d.dim_value() : 1);
      }
    }
    tensors[v.name()] = t;
  };
  for (const auto& v : shaped.input()) from_value(v);
  for (const auto& v : shaped.value_info()) from_value(v);
  for (const auto& v : shaped.output()) from_value(v);
  for (const auto& init : g.initializer()) {
    tensor_info t;
    t.elem_type = init.data_type();
    t.shape_known = true;
    t.dims.assign(init.dims().begin(), init.dims().end());
    tensors[init.name()] = t;
    initializers.insert(init.name());
    if (is_float_type(t.elem_type)) r.params += t.elements();
    r.weight_bytes += t.elements() * elem_bytes(t.elem_type);
  }
  r.param_notes = parameter_notes(g);

  for (op_class cls : {op_class::gemm, op_class::attention, op_class::memory})
    r.efficiencies.push_back(achievable_fraction(device, cls));
  auto fraction_of = [&](op_class cls) {
    return r.efficiencies[static_cast<std::size_t>(cls)].fraction;
  };

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
    } else if (op == "Einsum") {
      std::vector<const std::vector<std::int64_t>*> operands;
      bool weight = false;
      for (const auto& name : n.input()) {
        operands.push_back(&need_shape(n, name).dims);
        weight = weight || initializers.contains(name);
      }
      const auto labels = einsum_labels(str_attr(n, "equation"), operands);
      if (!labels) {
        throw invalid_argument(
            fmt::format("{}: node '{}' (Einsum): equation '{}' does not match "
                        "its {} operands' ranks",
                        path, n.name(), str_attr(n, "equation"), operands.size()));
      }
      if (operands.size() == 1) {
        c.kind = "reduce";
        flops = product(*operands[0]);
      } else {
        double all = 1;
        for (const auto& [label, size] : *labels) all *= static_cast<double>(size);
        c.macs = all * static_cast<double>(operands.size() - 1);
        flops = 2 * c.macs;
        c.kind = weight ? "matmul" : "attention_matmul";
        ceiling = weight ? "gemm" : "attention_matmul";
      }
    } else if (op == "LSTM" || op == "GRU" || op == "RNN") {
      c.kind = "matmul";
      ceiling = "gemm";
      const tensor_info& x = need_shape(n, n.input(0));
      const tensor_info& w = need_shape(n, n.input(1));
      const tensor_info& rec = need_shape(n, n.input(2));
      if (x.dims.size() != 3 || w.dims.size() != 3 || rec.dims.size() != 3) {
        throw invalid_argument(
            fmt::format("{}: node '{}' ({}): X, W and R must have rank 3", path, n.name(), op));
      }
      const bool batch_first = int_attr1(n, "layout").value_or(0) == 1;
      const double steps = static_cast<double>(x.dims[batch_first ? 1 : 0]);
      const double batch = static_cast<double>(x.dims[batch_first ? 0 : 1]);
      const double dirs = static_cast<double>(w.dims[0]);
      const double hidden = static_cast<double>(rec.dims[2]);
      const double gates_x_hidden = static_cast<double>(w.dims[1]);  // gates x hidden
      const double input = static_cast<double>(w.dims[2]);
      const bool bias = n.input_size() > 3 && !n.input(3).empty();
      const bool peepholes = op == "LSTM" && n.input_size() > 7 && !n.input(7).empty();
      const double units = dirs * steps * batch;
      c.macs = units * gates_x_hidden * (input + hidden);
      flops = 2 * c.macs + units * hidden * recurrent_cell_flops(op, bias, peepholes);
    } else if (op == "Gather" && n.input_size() > 0) {
      // Only the gathered rows are read: charge the data operand the output's size.
      c.kind = "data";
      const tensor_info* data = info(n.input(0));
      if (data && data->shape_known && out && out->shape_known) {
        const double table = data->elements() * elem_bytes(data->elem_type);
        bytes += std::min(table, out->elements() * elem_bytes(data->elem_type)) - table;
      }
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
    c.efficiency_class = c.kind == "matmul"             ? op_class::gemm
                         : c.kind == "attention_matmul" ? op_class::attention
                                                        : op_class::memory;
    const peak_rate p = device.peak(c.type, matmul && options.tensor);
    c.peak_key = p.key;
    // Achievable rates: a measured ceiling of the node's class where the device has one, else
    // the peak times the class's fraction (efficiency.hpp).
    double rate = p.tflops * (matmul ? fraction_of(c.efficiency_class) : 1.0);
    const double hardware_bandwidth = device.bandwidth_for(c.cost.bytes);
    double bandwidth = hardware_bandwidth * fraction_of(op_class::memory);
    if (auto it = device.ceilings_tflops.find(ceiling);
        !ceiling.empty() && it != device.ceilings_tflops.end()) {
      rate = std::min(p.tflops, it->second);
      c.peak_key = "ceiling:" + ceiling;
    }
    if (auto it = device.ceilings_gbs.find(ceiling);
        !ceiling.empty() && it != device.ceilings_gbs.end()) {
      bandwidth = std::min(hardware_bandwidth, it->second * 1e9);
      c.peak_key = "ceiling:" + ceiling;
    }
    c.bound_seconds = evaluate(c.cost, p.tflops * 1e12, hardware_bandwidth).seconds;
    r.roofline_seconds += c.bound_seconds;
    c.point = evaluate(c.cost, rate * 1e12, bandwidth);
    c.seconds = c.point.seconds + (c.kind != "view" ? device.overhead_us * 1e-6 : 0);
    r.macs += c.macs;
    r.flops += flops;
    r.bytes += bytes;
    r.seconds += c.seconds;
    r.nodes.push_back(std::move(c));
  }
  r.peak_activation_bytes = peak_activation_bytes(g, [&](const std::string& name) {
    const tensor_info* t = info(name);
    return t && t->shape_known && !initializers.contains(name)
               ? t->elements() * elem_bytes(t->elem_type)
               : 0.0;
  });
  return r;
}

}  // namespace keel::perf
