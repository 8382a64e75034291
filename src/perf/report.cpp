#include "keel/perf/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "keel/core/error.hpp"
#include "keel/core/input_file.hpp"
#include "keel/core/json_value.hpp"
#include "keel/core/output_file.hpp"
#include "keel/perf/dtype.hpp"
#include "keel/perf/ops.hpp"
#include "keel/perf/svg.hpp"
#include "option_check.hpp"

namespace keel::perf {
namespace {

using detail::check_integer;
using detail::check_real;
using nlohmann::json;

// A decimal integer in [1, k_max_int_dim] with an optional sign: the rule of every integer
// option of the CLI.
std::optional<std::int64_t> dimension(const std::string& text) {
  std::size_t i = 0;
  bool negative = false;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
  if (i == text.size() || text.find_first_not_of("0123456789", i) != std::string::npos) {
    return std::nullopt;
  }
  std::int64_t v = 0;
  for (; i < text.size(); ++i) {
    v = v * 10 + (text[i] - '0');
    if (v > k_max_int_dim) return std::nullopt;
  }
  if (negative || v < 1) return std::nullopt;
  return v;
}

std::vector<std::int64_t> parse_dims(const std::string& text, std::size_t count, const char* what) {
  std::vector<std::int64_t> dims;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, 'x')) {
    const auto d = dimension(part);
    if (!d) {
      throw invalid_argument(fmt::format("bad {} '{}' (each dimension an integer in [1, {}])", what,
                                         text, k_max_int_dim));
    }
    dims.push_back(*d);
  }
  if (dims.size() != count && !(count == 2 && dims.size() == 1)) {
    throw invalid_argument(
        fmt::format("bad {} '{}' (expected {} numbers joined by 'x')", what, text, count));
  }
  if (dims.size() == 1) dims = {dims[0], dims[0]};  // "N" means NxN
  return dims;
}

void required(double v, const char* option) {
  if (v == 0) throw invalid_argument(fmt::format("{} is required", option));
}

void check_dim(const char* option, double v) { check_real(option, v, 1.0, k_max_dim); }

void check_dim(const char* option, const std::optional<double>& v) {
  if (v) check_dim(option, *v);
}

struct costed_op {
  op_cost cost;
  std::string description;
};

costed_op cost_of(const op_request& r) {
  const dtype t = parse_dtype(r.dtype);
  if (r.kind == "gemm") {
    const gemm_shape s{r.mnk[0], r.mnk[1], r.mnk[2], r.batch};
    return {gemm_cost(s, t), fmt::format("gemm {}x{}x{}{}", s.m, s.n, s.k,
                                         r.batch > 1 ? fmt::format(" batch {}", r.batch) : "")};
  }
  if (r.kind == "spmv") {
    const spmv_shape s{r.rows, r.cols.value_or(r.rows), r.nnz, r.index_bytes, r.x_reuse};
    return {spmv_cost(s, t), fmt::format("CSR spmv {} rows, {} nonzeros ({:.1f} per row)", s.rows,
                                         s.nnz, s.nnz / s.rows)};
  }
  if (r.kind == "conv2d") {
    const auto in = parse_dims(r.input, 4, "--input NxCxHxW");
    const auto k = parse_dims(r.kernel, 2, "--kernel R or RxS");
    conv2d_shape s;
    s.n = in[0], s.c = in[1], s.h = in[2], s.w = in[3], s.k = r.out_channels, s.r = k[0],
    s.s = k[1];
    s.stride_h = s.stride_w = r.stride;
    s.pad_h = s.pad_w = r.padding;
    s.dilation_h = s.dilation_w = r.dilation;
    s.groups = r.groups;
    const op_cost c = conv2d_cost(s, t);
    return {c, fmt::format(
                   "conv2d {} -> {}x{}x{}x{}, kernel {}x{}, stride {}, groups {} ({:.4g} GMACs)",
                   r.input, s.n, s.k, s.out_h(), s.out_w(), s.r, s.s, r.stride, s.groups,
                   s.macs() / 1e9)};
  }
  if (r.kind == "attention") {
    attention_shape s;
    s.batch = r.batch, s.heads = r.heads, s.kv_heads = r.kv_heads.value_or(r.heads);
    s.q_len = r.seq, s.kv_len = r.kv_len.value_or(r.seq), s.head_dim = r.head_dim;
    s.flash = r.flash, s.causal_skip = r.causal;
    return {attention_cost(s, t),
            fmt::format("attention batch {}, {} heads ({} kv), q {} x kv {}, d {}{}", s.batch,
                        s.heads, s.kv_heads, s.q_len, s.kv_len, s.head_dim,
                        s.flash ? ", fused (flash)" : ", unfused")};
  }
  const elementwise_shape s{r.elements, r.inputs, r.outputs, r.flops_per_element};
  return {elementwise_cost(s, t),
          fmt::format("elementwise {} elements, {} in / {} out, {} FLOPs each", s.elements,
                      s.inputs, s.outputs, s.flops_per_element)};
}

op_result evaluate_on(const op_request& r, const std::string& gpu_name) {
  const costed_op op = cost_of(r);
  op_result res{r.kind, r.dtype, op.description, op.cost, resolve_device(gpu_name), {}, {}};
  res.peak = res.gpu.peak(parse_dtype(r.dtype), r.tensor);
  res.point = evaluate(res.cost, res.peak.tflops * 1e12, res.gpu.bandwidth_for(res.cost.bytes));
  return res;
}

// The answer in words: why the same kernel is faster or slower on one GPU than another.
std::vector<std::string> explain(const std::string& dtype_name, const op_result& a,
                                 const op_result& b, const std::optional<op_result>& a_worst,
                                 const std::optional<op_result>& b_worst) {
  std::vector<std::string> lines;
  const auto& pa = a.point;
  const auto& pb = b.point;
  lines.push_back(fmt::format("{} in {} does {} and moves {} at minimum: {:.3g} FLOP per byte.",
                              a.description, dtype_name, si_text(a.cost.flops, "FLOP"),
                              si_text(a.cost.bytes, "B"), pa.intensity));
  for (const op_result* x : {&a, &b}) {
    const auto& p = x->point;
    lines.push_back(fmt::format(
        "{}: {} peak {:.4g} TFLOP/s ({}{}), {:g} GB/s, ridge point {:.3g} FLOP/byte. The kernel is "
        "{} "
        "({:.3g}x {} the ridge): predicted {:.4g} ms, {:.3g}% of peak.",
        x->gpu.name, dtype_name, x->peak.tflops, x->peak.key,
        x->peak.derived ? ", derived from the CUDA guide's per-SM rate" : "", x->gpu.bandwidth_gbs,
        p.ridge, name_of(p.limit) == std::string_view("memory") ? "memory-bound" : "compute-bound",
        p.intensity < p.ridge ? p.ridge / p.intensity : p.intensity / p.ridge,
        p.intensity < p.ridge ? "below" : "above", p.seconds * 1e3, p.fraction_of_peak * 100));
  }
  const double flop_ratio = a.peak.tflops / b.peak.tflops;
  const double bw_ratio = a.gpu.bandwidth_gbs / b.gpu.bandwidth_gbs;
  const double time_ratio = pa.seconds / pb.seconds;
  if (pa.limit == bound::memory && pb.limit == bound::memory) {
    lines.push_back(fmt::format(
        "Both are memory-bound, so the {} peak does not matter: {} has {:.3g}x the {} FLOP/s of {} "
        "but {:.3g}x its bandwidth, and the model predicts {} at {:.3g}x the time of {}.",
        dtype_name, a.gpu.name, flop_ratio, dtype_name, b.gpu.name, bw_ratio, a.gpu.name,
        time_ratio, b.gpu.name));
  } else if (pa.limit == bound::compute && pb.limit == bound::compute) {
    lines.push_back(
        fmt::format("Both are compute-bound: time follows the {} peak ({:.3g}x), "
                    "predicted time ratio {}/{} = {:.3g}.",
                    dtype_name, flop_ratio, a.gpu.name, b.gpu.name, time_ratio));
  } else {
    lines.push_back(
        fmt::format("The bound differs ({} is {}-bound, {} is {}-bound); predicted time "
                    "ratio {}/{} = {:.3g}.",
                    a.gpu.name, name_of(pa.limit), b.gpu.name, name_of(pb.limit), a.gpu.name,
                    b.gpu.name, time_ratio));
  }
  if (a_worst && b_worst) {
    lines.push_back(fmt::format(
        "Without any reuse of x (one x read per nonzero) intensity drops to {:.3g} "
        "FLOP/byte and the predictions become {:.4g} ms vs {:.4g} ms: still memory-bound, still "
        "set by bandwidth and by how well the gathers coalesce.",
        a_worst->point.intensity, a_worst->point.seconds * 1e3, b_worst->point.seconds * 1e3));
  }
  if (pa.limit == bound::memory && pb.limit == bound::memory && time_ratio > 0.8 &&
      time_ratio < 1.25) {
    lines.push_back(fmt::format(
        "So if the kernel ran clearly slower on {} than on {}, the hardware roofline does not "
        "explain it: look at what the model leaves out, in order of usual size: printf or other "
        "host-visible I/O inside the kernel (it serializes through a device buffer and dominates "
        "everything), uncoalesced or latency-bound access (too few rows in flight per SM, one "
        "thread per row with long rows), launch configuration, clocks and timing method (first "
        "launch includes context creation and JIT).",
        a.gpu.name, b.gpu.name));
  }
  return lines;
}

json finite_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

}  // namespace

std::string si_text(double v, std::string_view unit) {
  const char* prefixes[] = {"", "K", "M", "G", "T", "P", "E"};
  int i = 0;
  while (v >= 1000 && i < 6) v /= 1000, ++i;
  return fmt::format("{:.4g} {}{}", v, prefixes[i], unit);
}

std::vector<std::string> op_kinds() {
  return {"gemm", "spmv", "conv2d", "attention", "elementwise"};
}

void validate(const op_request& r) {
  const std::vector<std::string> kinds = op_kinds();
  if (std::find(kinds.begin(), kinds.end(), r.kind) == kinds.end()) {
    throw invalid_argument(
        fmt::format("unknown op '{}' (known: gemm, spmv, conv2d, attention, "
                    "elementwise)",
                    r.kind));
  }
  if (r.kind == "gemm") {
    if (r.mnk.size() != 3) throw invalid_argument("gemm needs M N K");
    for (const double v : r.mnk) check_real("mnk", v, 0.0, k_max_dim, true);
    check_dim("--batch", r.batch);
  } else if (r.kind == "spmv") {
    required(r.rows, "--rows");
    required(r.nnz, "--nnz");
    check_dim("--rows", r.rows);
    check_dim("--cols", r.cols);
    check_dim("--nnz", r.nnz);
    check_real("--index-bytes", r.index_bytes, 1.0, 16.0);
  } else if (r.kind == "conv2d") {
    if (r.input.empty()) throw invalid_argument("--input is required");
    required(static_cast<double>(r.out_channels), "--out-channels");
    check_integer("--out-channels", r.out_channels, 1, k_max_int_dim);
    check_integer("--stride", r.stride, 1, k_max_int_dim);
    check_integer("--padding", r.padding, 0, k_max_int_dim);
    check_integer("--dilation", r.dilation, 1, k_max_int_dim);
    check_integer("--groups", r.groups, 1, k_max_int_dim);
  } else if (r.kind == "attention") {
    required(r.heads, "--heads");
    required(r.seq, "--seq");
    check_dim("--batch", r.batch);
    check_dim("--heads", r.heads);
    check_dim("--kv-heads", r.kv_heads);
    check_dim("--seq", r.seq);
    check_dim("--kv-len", r.kv_len);
    check_dim("--head-dim", r.head_dim);
  } else {
    required(r.elements, "--elements");
    check_dim("--elements", r.elements);
    check_real("--inputs", r.inputs, 0.0, 1e6);
    check_real("--outputs", r.outputs, 0.0, 1e6);
    check_real("--flops-per-element", r.flops_per_element, 0.0, 1e6);
  }
  parse_dtype(r.dtype);
}

op_result run_op(const op_request& request) {
  validate(request);
  return evaluate_on(request, request.gpu);
}

json to_json(const op_result& x) {
  return {{"op", x.kind},
          {"description", x.description},
          {"dtype", x.dtype},
          {"gpu", x.gpu.name},
          {"peak_key", x.peak.key},
          {"peak_tflops", x.peak.tflops},
          {"peak_note", x.peak.note},
          {"bandwidth_gbs", x.gpu.bandwidth_gbs},
          {"flops", x.cost.flops},
          {"bytes", x.cost.bytes},
          {"intensity", finite_or_null(x.point.intensity)},  // null, as the JSON text has it
          {"ridge", x.point.ridge},
          {"bound", std::string(name_of(x.point.limit))},
          {"predicted_ms", x.point.seconds * 1e3},
          {"fraction_of_peak", x.point.fraction_of_peak},
          {"source", x.gpu.source_text()}};
}

explain_result run_explain(const explain_request& request) {
  op_request r = request.op;
  if (r.kind == "spmv") {
    // Typical sparse matrix from the question: a million rows, ~10 nonzeros per row.
    if (r.rows == 0) r.rows = 1e6;
    if (r.nnz == 0) r.nnz = 1e7;
  }
  validate(r);
  explain_result x{evaluate_on(r, r.gpu), evaluate_on(r, request.vs), {}, {}, 0, {}};
  if (r.kind == "spmv" && r.x_reuse) {
    op_request worst = r;
    worst.x_reuse = false;
    x.a_no_reuse = evaluate_on(worst, r.gpu);
    x.b_no_reuse = evaluate_on(worst, request.vs);
  }
  x.time_ratio = x.a.point.seconds / x.b.point.seconds;
  x.explanation = explain(r.dtype, x.a, x.b, x.a_no_reuse, x.b_no_reuse);
  return x;
}

json to_json(const explain_result& x) {
  return {{"a", to_json(x.a)},
          {"b", to_json(x.b)},
          {"time_ratio", x.time_ratio},
          {"explanation", x.explanation}};
}

llm_result run_llm(const llm_request& r) {
  check_real("--batch", r.batch, 1.0, k_max_dim);
  check_real("--seq", r.seq, 1.0, k_max_dim);
  check_real("--generate", r.generate, 0.0, 1e6);
  for (auto [name, v] : {std::pair{"--tp", r.tp}, {"--pp", r.pp}, {"--dp", r.dp}, {"--ep", r.ep}})
    check_integer(name, v, 1, 4096);
  if (r.link_latency_us) check_real("--link-latency-us", *r.link_latency_us, 0.0, 1e6);
  if (r.phase != "prefill" && r.phase != "decode") {
    throw invalid_argument(fmt::format("unknown phase '{}' (expected prefill or decode)", r.phase));
  }
  const llm_config config = load_llm_config(r.config);
  llm_options o;
  o.batch = r.batch;
  o.seq = r.seq;
  o.phase = r.phase == "decode" ? llm_phase::decode : llm_phase::prefill;
  o.weights = parse_dtype(r.dtype);
  if (!r.kv_dtype.empty()) o.kv = parse_dtype(r.kv_dtype);
  o.flash = r.flash;
  o.tensor = r.tensor;
  o.quant = parse_llm_quant(r.quant);
  o.generate = r.generate;
  o.training = r.train;
  o.optimizer = parse_llm_optimizer(r.optimizer);
  o.parallel = {static_cast<int>(r.tp), static_cast<int>(r.pp), static_cast<int>(r.dp),
                static_cast<int>(r.ep)};
  if (r.link_latency_us) o.link_alpha_s = *r.link_latency_us * 1e-6;
  llm_result result{r.phase, r.dtype, resolve_device(r.gpu), {}, {}};
  result.report = analyze_llm(config, o, result.device);
  if (!r.svg.empty()) {
    write_output_file(r.svg, llm_chart(result));
    result.svg = r.svg;
  }
  return result;
}

std::string llm_chart(const llm_result& x) {
  const llm_report& rep = x.report;
  std::vector<svg_point> points;
  for (const llm_op& op : rep.ops) {
    if (op.cost.flops > 0)
      points.push_back({op.name, op.point.intensity, op.cost.flops / op.point.seconds});
  }
  const peak_rate peak = x.device.peak(rep.matmul_dtype, rep.options.tensor);
  return roofline_svg(fmt::format("{} {} b{} s{} {} on {}", rep.config.name, x.phase,
                                  rep.options.batch, rep.options.seq, x.dtype, x.device.name),
                      peak.tflops * 1e12, x.device.bandwidth_bytes_per_s(), points);
}

json to_json(const llm_result& x) {
  const llm_report& rep = x.report;
  const bool fits = rep.memory.fits;
  const auto ms = [fits](double seconds) { return fits ? json(seconds * 1e3) : json(nullptr); };
  json layers = json::array();
  for (const llm_op& op : rep.ops) {
    layers.push_back({{"name", op.name},
                      {"count", op.count},
                      {"flops", op.cost.flops},
                      {"bytes", op.cost.bytes},
                      {"intensity", finite_or_null(op.point.intensity)},
                      {"bound", std::string(name_of(op.point.limit))},
                      {"peak_key", op.peak_key},
                      {"time_ms", ms(op.point.seconds)}});
  }
  json comms = json::array();
  for (const llm_comm& c : rep.comms) {
    comms.push_back({{"name", c.name},
                     {"collective", c.collective},
                     {"ranks", c.ranks},
                     {"bytes", c.bytes},
                     {"count", c.count},
                     {"algorithm", c.algorithm},
                     {"ms", ms(c.seconds)}});
  }
  const memory_fit& m = rep.memory;
  const json memory = {{"weights", m.need.weights},
                       {"kv_cache", m.need.kv_cache},
                       {"activations", m.need.activations},
                       {"gradients", m.need.gradients},
                       {"optimizer", m.need.optimizer},
                       {"total", m.need.total()},
                       {"capacity", m.capacity},
                       {"shortfall", m.shortfall},
                       {"message", m.message}};
  json generation = nullptr;
  if (const auto& g = rep.generation) {
    generation = {{"prompt", g->prompt},
                  {"generated", g->generated},
                  {"prefill_flops", g->prefill_flops},
                  {"decode_flops", g->decode_flops},
                  {"prefill_bytes", g->prefill_bytes},
                  {"decode_bytes", g->decode_bytes},
                  {"ttft_ms", ms(g->ttft_seconds)},
                  {"decode_ms", ms(g->decode_seconds)},
                  {"decode_tokens_per_s", fits ? json(g->decode_tokens_per_s) : json(nullptr)},
                  {"tokens_per_s", fits ? json(g->overall_tokens_per_s) : json(nullptr)}};
  }
  json training = nullptr;
  if (const auto& t = rep.training) {
    training = {{"tokens", t->tokens},
                {"forward_flops", t->forward_flops},
                {"backward_flops", t->backward_flops},
                {"optimizer_flops", t->optimizer_flops},
                {"forward_bytes", t->forward_bytes},
                {"backward_bytes", t->backward_bytes},
                {"optimizer_bytes", t->optimizer_bytes},
                {"forward_ms", ms(t->forward_seconds)},
                {"backward_ms", ms(t->backward_seconds)},
                {"optimizer_ms", ms(t->optimizer_seconds)}};
  }
  return {{"model", rep.config.name},
          {"phase", x.phase},
          {"batch", rep.options.batch},
          {"seq", rep.options.seq},
          {"dtype", x.dtype},
          {"kv_dtype", std::string(name_of(rep.options.kv.value_or(rep.options.weights)))},
          {"quant", std::string(name_of(rep.options.quant))},
          {"gpu", x.device.name},
          {"gpus", rep.options.parallel.gpus()},
          {"params", static_cast<std::uint64_t>(rep.params.total)},  // counts: integers in JSON
          {"params_active", static_cast<std::uint64_t>(rep.params.active)},
          {"params_embedding", static_cast<std::uint64_t>(rep.params.embedding)},
          {"total_flops", rep.total_flops},
          {"matmul_flops", rep.matmul_flops},
          {"total_bytes", rep.total_bytes},
          {"predicted_ms", rep.seconds ? json(*rep.seconds * 1e3) : json(nullptr)},
          {"compute_ms", ms(rep.compute_seconds)},
          {"comm_ms", ms(rep.comm_seconds)},
          {"kv_cache_bytes_per_token", rep.kv_bytes_per_token},
          {"kv_cache_bytes", rep.kv_cache_bytes},
          {"fits", fits},
          {"memory", memory},
          {"compute_note", rep.compute_note},
          {"layers", layers},
          {"comms", comms},
          {"generation", generation},
          {"training", training},
          {"source", x.device.source_text()}};
}

model_result run_model(const model_request& r) {
  check_input_file(r.path);
  onnx_options o;
  o.tensor = r.tensor;
  o.assume_one = r.assume_one;
  for (const std::string& d : r.dims) {
    const auto eq = d.find('=');
    const auto value = eq == std::string::npos ? std::nullopt : dimension(d.substr(eq + 1));
    if (eq == 0 || !value) {
      throw invalid_argument(fmt::format(
          "bad --dim '{}' (expected NAME=VALUE, VALUE an integer in [1, {}])", d, k_max_int_dim));
    }
    o.dim_values[d.substr(0, eq)] = *value;
  }
  check_integer("--depth", r.depth, -1, 1000000);
  model_result result{resolve_device(r.gpu), {}, r.tensor, {}, r.depth, {}};
  result.report = analyze_onnx(r.path, result.device, o);
  result.fit = check_memory_fit(result.report.memory(), result.device);
  std::vector<rollup_entry> entries;
  entries.reserve(result.report.nodes.size());
  for (const onnx_node_cost& n : result.report.nodes) {
    const auto slash = n.name.rfind('/');
    entries.push_back({scope_of(n.name),
                       slash == std::string::npos ? n.name : n.name.substr(slash + 1), n.op_type,
                       n.macs, n.cost, n.seconds, n.bound_seconds, n.point.limit});
  }
  const auto base = r.path.find_last_of('/');
  result.tree = build_rollup(base == std::string::npos ? r.path : r.path.substr(base + 1), entries);
  if (!r.svg.empty() && result.fit.fits) write_output_file(r.svg, model_chart(result));
  return result;
}

std::string model_chart(const model_result& x) {
  const onnx_report& rep = x.report;
  std::vector<svg_point> points;
  for (const onnx_node_cost& n : rep.nodes) {
    if (n.cost.flops > 0 && n.seconds > 0)
      points.push_back({n.name, n.point.intensity, n.cost.flops / n.seconds});
  }
  std::sort(points.begin(), points.end(),
            [](const svg_point& a, const svg_point& b) { return a.flops > b.flops; });
  if (points.size() > 24) points.resize(24);
  const peak_rate peak = x.device.peak(dtype::f32, x.tensor);
  return roofline_svg(rep.path + " on " + x.device.name, peak.tflops * 1e12,
                      x.device.bandwidth_bytes_per_s(), points);
}

json to_json(const model_result& x) {
  const onnx_report& rep = x.report;
  const bool fits = x.fit.fits;
  auto time = [&](double seconds) { return fits ? json(seconds * 1e3) : json(nullptr); };
  json nodes = json::array();
  for (const onnx_node_cost& n : rep.nodes) {
    nodes.push_back({{"name", n.name},
                     {"op_type", n.op_type},
                     {"kind", n.kind},
                     {"macs", n.macs},
                     {"flops", n.cost.flops},
                     {"bytes", n.cost.bytes},
                     {"intensity", finite_or_null(n.point.intensity)},
                     {"bound", std::string(name_of(n.point.limit))},
                     {"rate", n.peak_key},
                     {"time_ms", time(n.seconds)},
                     {"dtype", std::string(name_of(n.type))},
                     {"output_shape", n.output_shape}});
  }
  json efficiency = json::object();
  for (const auto& e : rep.efficiencies) {
    efficiency[std::string(name_of(e.cls))] = {
        {"fraction", e.fraction}, {"known", e.known}, {"basis", e.basis}, {"source", e.source}};
  }
  return {{"model", rep.path},
          {"producer", rep.producer},
          {"opset", rep.opset},
          {"gpu", x.device.name},
          {"macs", rep.macs},
          {"flops", rep.flops},
          {"bytes", rep.bytes},
          {"params", rep.params},
          {"param_notes", rep.param_notes},
          {"memory",
           {{"fits", fits},
            {"message", x.fit.message},
            {"weights_bytes", x.fit.need.weights},
            {"activation_bytes", x.fit.need.activations},
            {"capacity_bytes", x.fit.capacity},
            {"shortfall_bytes", x.fit.shortfall}}},
          {"predicted_ms", time(rep.seconds)},
          {"roofline_ms", time(rep.roofline_seconds)},
          {"efficiency", efficiency},
          {"unknown_ops", rep.unknown_ops},
          {"tree", to_json(collapse(x.tree, x.depth), fits)},
          {"nodes", nodes},
          {"source", x.device.source_text()}};
}

calibrate_result run_calibrate(const calibrate_request& r) {
  check_integer("--threads", r.threads, 1, 1024);
  check_real("--seconds", r.seconds, 0.0, 3600.0, true);
  check_real("--dram-mib", r.dram_mib, 1.0, 1e6);
  calibrate_options o;
  o.threads = static_cast<int>(r.threads);
  o.seconds_per_test = r.seconds;
  o.dram_bytes = r.dram_mib * 1024 * 1024;
  calibrate_result result{calibrate_cpu(o), {}, r.dram_mib, {}};
  result.document = calibration_document(result.value, r.name);
  if (!r.out.empty()) {
    write_output_file(r.out, result.document);
    result.out = r.out;
  }
  return result;
}

json to_json(const calibrate_result& result) {
  return parse_json(result.document, "calibrate document");
}

}  // namespace keel::perf
