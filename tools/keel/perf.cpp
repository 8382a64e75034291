// `keel perf`: Roofline performance model for ops, LLMs and ONNX graphs
#include "cli.hpp"

#include "keel/core/error.hpp"
#include "keel/core/output_file.hpp"
#include "keel/perf/calibrate.hpp"
#include "keel/perf/gpu_database.hpp"
#include "keel/perf/llm.hpp"
#include "keel/perf/onnx_model.hpp"
#include "keel/perf/ops.hpp"
#include "keel/perf/roofline.hpp"
#include "keel/perf/svg.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <cstdint>

#include <algorithm>
#include <cmath>

#include <memory>
#include <sstream>

namespace keel::cli {

namespace {

using nlohmann::json;
using namespace keel::perf;

// Shape options: positive and finite, at most this (FLOP counts stay finite doubles).
constexpr double k_dim_max = 1e12;
constexpr std::int64_t k_int_dim_max = std::int64_t{1} << 40;

// Everything one `op`/`explain` invocation needs; each op kind reads its own fields.
struct op_request {
  std::string kind;
  std::string dtype_name = "fp32";
  std::string gpu = "h100-sxm";
  bool no_tensor = false;
  bool json_out = false;
  // gemm
  std::vector<double> mnk;
  double batch = 1;
  // spmv
  double rows = 0, cols = 0, nnz = 0, index_bytes = 4;
  bool no_x_reuse = false;
  // conv2d
  std::string input;  // NxCxHxW
  std::int64_t out_channels = 0, stride = 1, padding = 0, groups = 1, dilation = 1;
  std::string kernel = "3";
  // attention
  double heads = 0, kv_heads = 0, seq = 0, kv_len = 0, head_dim = 128;
  bool flash = false, causal = false;
  // elementwise
  double elements = 0, inputs = 2, outputs = 1, flops_per_element = 1;
};

std::vector<std::int64_t> parse_dims(const std::string& text, std::size_t count, const char* what) {
  std::vector<std::int64_t> dims;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, 'x')) {
    // The same rule as every numeric option: a decimal integer, here in [1, 2^40].
    if (!detail::check_integer(part, 1, k_int_dim_max).empty()) {
      throw invalid_argument(fmt::format("bad {} '{}' (each dimension an integer in [1, {}])", what,
                                         text, k_int_dim_max));
    }
    dims.push_back(std::stoll(part));
  }
  if (dims.size() != count && !(count == 2 && dims.size() == 1)) {
    throw invalid_argument(
        fmt::format("bad {} '{}' (expected {} numbers joined by 'x')", what, text, count));
  }
  if (dims.size() == 1) dims = {dims[0], dims[0]};  // "N" means NxN
  return dims;
}

struct costed_op {
  op_cost cost;
  std::string description;
};

costed_op cost_of(const op_request& r) {
  const dtype t = parse_dtype(r.dtype_name);
  if (r.kind == "gemm") {
    if (r.mnk.size() != 3) throw invalid_argument("gemm needs M N K");
    const gemm_shape s{r.mnk[0], r.mnk[1], r.mnk[2], r.batch};
    return {gemm_cost(s, t), fmt::format("gemm {}x{}x{}{}", s.m, s.n, s.k,
                                         r.batch > 1 ? fmt::format(" batch {}", r.batch) : "")};
  }
  if (r.kind == "spmv") {
    const spmv_shape s{r.rows, r.cols > 0 ? r.cols : r.rows, r.nnz, r.index_bytes, !r.no_x_reuse};
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
    s.batch = r.batch, s.heads = r.heads, s.kv_heads = r.kv_heads > 0 ? r.kv_heads : r.heads;
    s.q_len = r.seq, s.kv_len = r.kv_len > 0 ? r.kv_len : r.seq, s.head_dim = r.head_dim;
    s.flash = r.flash, s.causal_skip = r.causal;
    return {attention_cost(s, t),
            fmt::format("attention batch {}, {} heads ({} kv), q {} x kv {}, d {}{}", s.batch,
                        s.heads, s.kv_heads, s.q_len, s.kv_len, s.head_dim,
                        s.flash ? ", fused (flash)" : ", unfused")};
  }
  if (r.kind == "elementwise") {
    const elementwise_shape s{r.elements, r.inputs, r.outputs, r.flops_per_element};
    return {elementwise_cost(s, t),
            fmt::format("elementwise {} elements, {} in / {} out, {} FLOPs each", s.elements,
                        s.inputs, s.outputs, s.flops_per_element)};
  }
  throw invalid_argument("unknown op " + r.kind);
}

struct op_result {
  costed_op op;
  gpu_spec gpu;
  peak_rate peak;
  roofline_point point;
};

op_result run_op(const op_request& r, const std::string& gpu_name) {
  op_result res{cost_of(r), resolve_device(gpu_name), {}, {}};
  res.peak = res.gpu.peak(parse_dtype(r.dtype_name), !r.no_tensor);
  res.point =
      evaluate(res.op.cost, res.peak.tflops * 1e12, res.gpu.bandwidth_for(res.op.cost.bytes));
  return res;
}

json result_json(const op_request& r, const op_result& x) {
  return {{"op", r.kind},
          {"description", x.op.description},
          {"dtype", r.dtype_name},
          {"gpu", x.gpu.name},
          {"peak_key", x.peak.key},
          {"peak_tflops", x.peak.tflops},
          {"peak_note", x.peak.note},
          {"bandwidth_gbs", x.gpu.bandwidth_gbs},
          {"flops", x.op.cost.flops},
          {"bytes", x.op.cost.bytes},
          {"intensity", x.point.intensity},
          {"ridge", x.point.ridge},
          {"bound", std::string(name_of(x.point.limit))},
          {"predicted_ms", x.point.seconds * 1e3},
          {"fraction_of_peak", x.point.fraction_of_peak},
          {"source", x.gpu.source_text()}};
}

std::string human(double v, const char* unit) {
  const char* prefixes[] = {"", "K", "M", "G", "T", "P", "E"};
  int i = 0;
  while (v >= 1000 && i < 6) v /= 1000, ++i;
  return fmt::format("{:.4g} {}{}", v, prefixes[i], unit);
}

void print_result(const op_request& r, const op_result& x) {
  fmt::print("{}, {}, on {} ({} {:g} TFLOP/s{}; {:g} GB/s)\n", x.op.description, r.dtype_name,
             x.gpu.name, x.peak.key, x.peak.tflops, x.peak.note.empty() ? "" : ", " + x.peak.note,
             x.gpu.bandwidth_gbs);
  fmt::print("  FLOPs            {}\n", human(x.op.cost.flops, "FLOP"));
  fmt::print("  bytes            {}\n", human(x.op.cost.bytes, "B"));
  fmt::print("  intensity        {:.4g} FLOP/byte (ridge point {:.4g})\n", x.point.intensity,
             x.point.ridge);
  fmt::print("  bound            {}\n", name_of(x.point.limit));
  fmt::print("  predicted time   {:.4g} ms (roofline lower bound)\n", x.point.seconds * 1e3);
  fmt::print("  fraction of peak {:.3g}%\n", x.point.fraction_of_peak * 100);
}

// Adds the op's shape options to `cmd` (shared by `op KIND` and `explain KIND`).
void add_shape_options(CLI::App* cmd, op_request& r) {
  cmd->add_option("--dtype", r.dtype_name, "fp64|fp32|tf32|fp16|bf16|fp8|int8 (default fp32)");
  cmd->add_flag("--no-tensor", r.no_tensor, "Use CUDA-core rates, not tensor cores");
  if (r.kind == "gemm") {
    add_number(cmd, "mnk", r.mnk, "M N K", 0.0, k_dim_max, true)->required()->expected(3);
    add_number(cmd, "--batch", r.batch, "Independent products (default 1)", 1.0, k_dim_max);
  } else if (r.kind == "spmv") {
    add_number(cmd, "--rows", r.rows, "Rows", 1.0, k_dim_max)->required();
    add_number(cmd, "--cols", r.cols, "Columns (default: rows)", 1.0, k_dim_max);
    add_number(cmd, "--nnz", r.nnz, "Nonzeros", 1.0, k_dim_max)->required();
    add_number(cmd, "--index-bytes", r.index_bytes,
               "Bytes per column index / row pointer (default 4)", 1.0, 16.0);
    cmd->add_flag("--no-x-reuse", r.no_x_reuse, "Read x once per nonzero (no cache reuse)");
  } else if (r.kind == "conv2d") {
    cmd->add_option("--input", r.input, "NxCxHxW")->required();
    add_number(cmd, "--out-channels", r.out_channels, "K", 1, k_int_dim_max)->required();
    cmd->add_option("--kernel", r.kernel, "R or RxS (default 3)");
    add_number(cmd, "--stride", r.stride, "Stride (default 1)", 1, k_int_dim_max);
    add_number(cmd, "--padding", r.padding, "Padding (default 0)", 0, k_int_dim_max);
    add_number(cmd, "--dilation", r.dilation, "Dilation (default 1)", 1, k_int_dim_max);
    add_number(cmd, "--groups", r.groups, "Groups (default 1)", 1, k_int_dim_max);
  } else if (r.kind == "attention") {
    add_number(cmd, "--batch", r.batch, "Batch (default 1)", 1.0, k_dim_max);
    add_number(cmd, "--heads", r.heads, "Query heads", 1.0, k_dim_max)->required();
    add_number(cmd, "--kv-heads", r.kv_heads, "K/V heads (default: heads)", 1.0, k_dim_max);
    add_number(cmd, "--seq", r.seq, "Query length", 1.0, k_dim_max)->required();
    add_number(cmd, "--kv-len", r.kv_len, "Key/value length (default: seq)", 1.0, k_dim_max);
    add_number(cmd, "--head-dim", r.head_dim, "Head dimension (default 128)", 1.0, k_dim_max);
    cmd->add_flag("--flash", r.flash, "Fused kernel: scores never reach DRAM");
    cmd->add_flag("--causal", r.causal, "Skip the masked half of the scores");
  } else {
    add_number(cmd, "--elements", r.elements, "Elements", 1.0, k_dim_max)->required();
    add_number(cmd, "--inputs", r.inputs, "Inputs read per element (default 2)", 0.0, 1e6);
    add_number(cmd, "--outputs", r.outputs, "Outputs written per element (default 1)", 0.0, 1e6);
    add_number(cmd, "--flops-per-element", r.flops_per_element, "FLOPs per element (default 1)",
               0.0, 1e6);
  }
}

constexpr const char* k_op_kinds[] = {"gemm", "spmv", "conv2d", "attention", "elementwise"};

void add_op(CLI::App* group) {
  auto* op =
      group->add_subcommand("op", "Roofline of one kernel: FLOPs, bytes, intensity, bound, time");
  op->require_subcommand(1);
  for (const char* kind : k_op_kinds) {
    auto r = std::make_shared<op_request>();
    r->kind = kind;
    auto* cmd = op->add_subcommand(kind, fmt::format("Roofline of {}", kind));
    add_shape_options(cmd, *r);
    cmd->add_option("--gpu", r->gpu, "GPU name or device file (default h100-sxm)");
    add_json_flag(cmd, r->json_out);
    cmd->callback([r] {
      const op_result x = run_op(*r, r->gpu);
      if (r->json_out)
        print_json(result_json(*r, x));
      else
        print_result(*r, x);
    });
  }
}

// The answer in words: why the same kernel is faster or slower on one GPU than another.
std::vector<std::string> explain(const op_request& r, const op_result& a, const op_result& b,
                                 const std::optional<op_result>& a_worst,
                                 const std::optional<op_result>& b_worst) {
  std::vector<std::string> lines;
  const auto& pa = a.point;
  const auto& pb = b.point;
  lines.push_back(fmt::format("{} in {} does {} and moves {} at minimum: {:.3g} FLOP per byte.",
                              a.op.description, r.dtype_name, human(a.op.cost.flops, "FLOP"),
                              human(a.op.cost.bytes, "B"), pa.intensity));
  for (const op_result* x : {&a, &b}) {
    const auto& p = x->point;
    lines.push_back(fmt::format(
        "{}: {} peak {:.4g} TFLOP/s ({}{}), {:g} GB/s, ridge point {:.3g} FLOP/byte. The kernel is "
        "{} "
        "({:.3g}x {} the ridge): predicted {:.4g} ms, {:.3g}% of peak.",
        x->gpu.name, r.dtype_name, x->peak.tflops, x->peak.key,
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
        r.dtype_name, a.gpu.name, flop_ratio, r.dtype_name, b.gpu.name, bw_ratio, a.gpu.name,
        time_ratio, b.gpu.name));
  } else if (pa.limit == bound::compute && pb.limit == bound::compute) {
    lines.push_back(
        fmt::format("Both are compute-bound: time follows the {} peak ({:.3g}x), "
                    "predicted time ratio {}/{} = {:.3g}.",
                    r.dtype_name, flop_ratio, a.gpu.name, b.gpu.name, time_ratio));
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

void add_explain(CLI::App* group) {
  auto* ex =
      group->add_subcommand("explain", "Compare one kernel on two GPUs and say why in words");
  ex->require_subcommand(1);
  for (const char* kind : k_op_kinds) {
    auto r = std::make_shared<op_request>();
    auto vs = std::make_shared<std::string>();
    r->kind = kind;
    auto* cmd = ex->add_subcommand(kind, fmt::format("Explain {} on two GPUs", kind));
    add_shape_options(cmd, *r);
    if (r->kind == "spmv") {
      // Typical sparse matrix from the question: a million rows, ~10 nonzeros per row.
      r->rows = 1e6;
      r->nnz = 1e7;
      for (const char* name : {"--rows", "--nnz"}) cmd->get_option(name)->required(false);
    }
    cmd->add_option("--gpu", r->gpu, "First GPU")->required();
    cmd->add_option("--vs", *vs, "Second GPU")->required();
    add_json_flag(cmd, r->json_out);
    cmd->callback([r, vs] {
      const op_result a = run_op(*r, r->gpu);
      const op_result b = run_op(*r, *vs);
      std::optional<op_result> a_worst, b_worst;
      if (r->kind == "spmv" && !r->no_x_reuse) {
        op_request worst = *r;
        worst.no_x_reuse = true;
        a_worst = run_op(worst, r->gpu);
        b_worst = run_op(worst, *vs);
      }
      const std::vector<std::string> lines = explain(*r, a, b, a_worst, b_worst);
      if (r->json_out) {
        print_json({{"a", result_json(*r, a)},
                    {"b", result_json(*r, b)},
                    {"time_ratio", a.point.seconds / b.point.seconds},
                    {"explanation", lines}});
        return;
      }
      for (const std::string& line : lines) fmt::print("{}\n\n", line);
      fmt::print("sources: {}: {}\n         {}: {}\n", a.gpu.name, a.gpu.source_text(), b.gpu.name,
                 b.gpu.source_text());
    });
  }
}

std::string with_commas(double v) {
  std::string digits = fmt::format("{:.0f}", v);
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3)
    digits.insert(static_cast<std::size_t>(i), ",");
  return digits;
}

struct llm_request {
  std::string config;
  double batch = 1, seq = 128;
  std::string phase = "prefill";
  std::string gpu = "h100-sxm";
  std::string dtype_name = "bf16";
  std::string kv_dtype;
  bool flash = false, no_tensor = false, json_out = false;
  std::string svg;
};

void add_llm(CLI::App* group) {
  auto r = std::make_shared<llm_request>();
  std::string names;
  for (const std::string& n : bundled_llm_configs()) names += (names.empty() ? "" : ", ") + n;
  auto* cmd =
      group->add_subcommand("llm", "Per-layer FLOPs, bytes, bound and time of a decoder LLM");
  cmd->add_option("--config", r->config, "Bundled config (" + names + ") or a config.json path")
      ->required();
  add_number(cmd, "--batch", r->batch, "Sequences (default 1)", 1.0, k_dim_max);
  add_number(cmd, "--seq", r->seq, "Prompt length (prefill) or cached tokens (decode); default 128",
             1.0, k_dim_max);
  cmd->add_option("--phase", r->phase, "prefill | decode (default prefill)")
      ->check(CLI::IsMember({"prefill", "decode"}));
  cmd->add_option("--gpu", r->gpu, "GPU name or device file (default h100-sxm)");
  cmd->add_option("--dtype", r->dtype_name, "Weights and activations (default bf16)");
  cmd->add_option("--kv-dtype", r->kv_dtype, "KV-cache storage type (default: --dtype)");
  cmd->add_flag("--flash", r->flash, "Fused attention: scores stay on chip");
  cmd->add_flag("--no-tensor", r->no_tensor, "Use CUDA-core rates, not tensor cores");
  cmd->add_option("--svg", r->svg, "Write a roofline chart of the ops to this SVG file");
  add_json_flag(cmd, r->json_out);
  cmd->callback([r] {
    const llm_config config = load_llm_config(r->config);
    llm_options o;
    o.batch = r->batch;
    o.seq = r->seq;
    o.phase = r->phase == "decode" ? llm_phase::decode : llm_phase::prefill;
    o.weights = parse_dtype(r->dtype_name);
    if (!r->kv_dtype.empty()) o.kv = parse_dtype(r->kv_dtype);
    o.flash = r->flash;
    o.tensor = !r->no_tensor;
    const gpu_spec device = resolve_device(r->gpu);
    const llm_report rep = analyze_llm(config, o, device);
    if (!r->svg.empty()) {
      std::vector<svg_point> points;
      for (const llm_op& op : rep.ops) {
        if (op.cost.flops > 0)
          points.push_back({op.name, op.point.intensity, op.cost.flops / op.point.seconds});
      }
      const peak_rate peak = device.peak(o.weights, o.tensor);
      write_output_file(r->svg,
                        roofline_svg(fmt::format("{} {} b{} s{} {} on {}", config.name, r->phase,
                                                 r->batch, r->seq, r->dtype_name, device.name),
                                     peak.tflops * 1e12, device.bandwidth_bytes_per_s(), points));
    }
    if (r->json_out) {
      json layers = json::array();
      for (const llm_op& op : rep.ops) {
        layers.push_back({{"name", op.name},
                          {"count", op.count},
                          {"flops", op.cost.flops},
                          {"bytes", op.cost.bytes},
                          {"intensity", op.point.intensity},
                          {"bound", std::string(name_of(op.point.limit))},
                          {"peak_key", op.peak_key},
                          {"time_ms", op.point.seconds * 1e3}});
      }
      print_json(
          {{"model", config.name},
           {"phase", r->phase},
           {"batch", r->batch},
           {"seq", r->seq},
           {"dtype", r->dtype_name},
           {"kv_dtype", std::string(name_of(o.kv.value_or(o.weights)))},
           {"gpu", device.name},
           {"params", static_cast<std::uint64_t>(rep.params.total)},  // counts: integers in JSON
           {"params_active", static_cast<std::uint64_t>(rep.params.active)},
           {"params_embedding", static_cast<std::uint64_t>(rep.params.embedding)},
           {"total_flops", rep.total_flops},
           {"matmul_flops", rep.matmul_flops},
           {"total_bytes", rep.total_bytes},
           {"predicted_ms", rep.seconds * 1e3},
           {"kv_cache_bytes_per_token", rep.kv_bytes_per_token},
           {"layers", layers},
           {"source", device.source_text()}});
      return;
    }
    fmt::print("{} {}, batch {}, seq {}, {} (KV {}) on {}\n", config.name, r->phase, r->batch,
               r->seq, r->dtype_name, name_of(o.kv.value_or(o.weights)), device.name);
    fmt::print("parameters {} (active per token {}, embedding {})\n", with_commas(rep.params.total),
               with_commas(rep.params.active), with_commas(rep.params.embedding));
    fmt::print("KV cache {} bytes per token\n\n", with_commas(rep.kv_bytes_per_token));
    fmt::print("{:<20} {:>5} {:>12} {:>12} {:>10} {:>8} {:>12}\n", "op (one instance)", "x",
               "FLOPs", "bytes", "FLOP/B", "bound", "time us");
    for (const llm_op& op : rep.ops) {
      fmt::print("{:<20} {:>5} {:>12} {:>12} {:>10.3g} {:>8} {:>12.4g}\n", op.name, op.count,
                 human(op.cost.flops, "FLOP"), human(op.cost.bytes, "B"), op.point.intensity,
                 name_of(op.point.limit), op.point.seconds * 1e6);
    }
    fmt::print("\ntotal {} ({} in matmuls), {} moved, predicted {:.4g} ms\n",
               human(rep.total_flops, "FLOP"), human(rep.matmul_flops, "FLOP"),
               human(rep.total_bytes, "B"), rep.seconds * 1e3);
    if (!r->svg.empty()) fmt::print("roofline chart written to {}\n", r->svg);
  });
}

json finite_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

void add_model(CLI::App* group) {
  struct request {
    std::string path, gpu = "h100-sxm", svg;
    std::vector<std::string> dims;
    bool no_tensor = false, json_out = false, all_nodes = false;
    int top = 10;
  };
  auto r = std::make_shared<request>();
  auto* cmd = group->add_subcommand(
      "model", "Per-node FLOPs, MACs, bytes and roofline time of an ONNX graph");
  cmd->add_option("file", r->path, "ONNX model file")->required();
  cmd->add_option("--gpu", r->gpu, "GPU name or device file (default h100-sxm)");
  cmd->add_option("--dim", r->dims,
                  "Value of a symbolic dimension, NAME=VALUE (repeatable; default 1)");
  cmd->add_flag("--no-tensor", r->no_tensor, "Use CUDA-core rates, not tensor cores");
  cmd->add_flag("--nodes", r->all_nodes, "Print every node, not only the slowest");
  add_number(cmd, "--top", r->top, "Slowest nodes to print (default 10)", 0, 1000000);
  cmd->add_option("--svg", r->svg, "Write a roofline chart of the nodes to this SVG file");
  add_json_flag(cmd, r->json_out);
  cmd->callback([r] {
    require_readable_file(r->path);
    onnx_options o;
    o.tensor = !r->no_tensor;
    for (const std::string& d : r->dims) {
      const auto eq = d.find('=');
      try {
        if (eq == std::string::npos) throw std::invalid_argument(d);
        std::string value = d.substr(eq + 1);
        if (eq == 0 || !detail::check_integer(value, 1, k_int_dim_max).empty()) {
          throw std::invalid_argument(d);
        }
        o.dim_values[d.substr(0, eq)] = std::stoll(value);
      } catch (const std::exception&) {
        throw invalid_argument(fmt::format(
            "bad --dim '{}' (expected NAME=VALUE, VALUE an integer in [1, {}])", d, k_int_dim_max));
      }
    }
    const gpu_spec device = resolve_device(r->gpu);
    const onnx_report rep = analyze_onnx(r->path, device, o);
    if (!r->svg.empty()) {
      std::vector<svg_point> points;
      for (const onnx_node_cost& n : rep.nodes) {
        if (n.cost.flops > 0 && n.seconds > 0)
          points.push_back({n.name, n.point.intensity, n.cost.flops / n.seconds});
      }
      std::sort(points.begin(), points.end(),
                [](const svg_point& a, const svg_point& b) { return a.flops > b.flops; });
      if (points.size() > 24) points.resize(24);
      const peak_rate peak = device.peak(dtype::fp32, o.tensor);
      write_output_file(r->svg, roofline_svg(r->path + " on " + device.name, peak.tflops * 1e12,
                                             device.bandwidth_bytes_per_s(), points));
    }
    if (r->json_out) {
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
                         {"time_ms", n.seconds * 1e3},
                         {"dtype", std::string(name_of(n.type))},
                         {"output_shape", n.output_shape}});
      }
      print_json({{"model", rep.path},
                  {"producer", rep.producer},
                  {"opset", rep.opset},
                  {"gpu", device.name},
                  {"macs", rep.macs},
                  {"flops", rep.flops},
                  {"bytes", rep.bytes},
                  {"params", rep.params},
                  {"predicted_ms", rep.seconds * 1e3},
                  {"roofline_ms", rep.roofline_seconds * 1e3},
                  {"unknown_ops", rep.unknown_ops},
                  {"nodes", nodes},
                  {"source", device.source_text()}});
      return;
    }
    fmt::print("{} ({}, opset {}) on {}\n", rep.path, rep.producer, rep.opset, device.name);
    fmt::print("{} nodes, {} parameters\n", rep.nodes.size(), with_commas(rep.params));
    fmt::print(
        "MACs {:.4g} G, FLOPs {:.4g} G, bytes {}, predicted {:.4g} ms (hardware roofline {:.4g} "
        "ms)\n",
        rep.macs / 1e9, rep.flops / 1e9, human(rep.bytes, "B"), rep.seconds * 1e3,
        rep.roofline_seconds * 1e3);
    std::map<std::string, std::pair<int, double>> by_type;
    for (const onnx_node_cost& n : rep.nodes) {
      by_type[n.op_type].first += 1;
      by_type[n.op_type].second += n.seconds;
    }
    fmt::print("\n{:<24} {:>6} {:>12}\n", "op type", "nodes", "time ms");
    for (const auto& [type, v] : by_type)
      fmt::print("{:<24} {:>6} {:>12.4g}\n", type, v.first, v.second * 1e3);
    std::vector<const onnx_node_cost*> order;
    for (const onnx_node_cost& n : rep.nodes) order.push_back(&n);
    if (!r->all_nodes) {
      std::stable_sort(order.begin(), order.end(),
                       [](auto* a, auto* b) { return a->seconds > b->seconds; });
      if (order.size() > static_cast<std::size_t>(std::max(r->top, 0)))
        order.resize(static_cast<std::size_t>(std::max(r->top, 0)));
    }
    fmt::print("\n{:<32} {:<12} {:>11} {:>11} {:>9} {:>7} {:>10}\n",
               r->all_nodes ? "node" : "slowest nodes", "op", "MACs", "bytes", "FLOP/B", "bound",
               "time us");
    for (const onnx_node_cost* n : order) {
      fmt::print("{:<32} {:<12} {:>11} {:>11} {:>9.3g} {:>7} {:>10.4g}\n", n->name.substr(0, 32),
                 n->op_type, human(n->macs, ""), human(n->cost.bytes, "B"), n->point.intensity,
                 name_of(n->point.limit), n->seconds * 1e6);
    }
    if (!rep.unknown_ops.empty()) {
      fmt::print("\nops counted as bytes only (unknown): ");
      for (const auto& [op, count] : rep.unknown_ops) fmt::print("{} x{} ", op, count);
      fmt::print("\n");
    }
  });
}

void add_calibrate(CLI::App* group) {
  struct request {
    int threads = 1;
    double seconds = 0.3, dram_mib = 1024;
    std::string out, name = "cpu-local";
    bool json_out = false;
  };
  auto r = std::make_shared<request>();
  auto* cmd = group->add_subcommand(
      "calibrate", "Measure this CPU's peak FLOP/s (FMA loop) and bandwidth (triad)");
  add_number(cmd, "--threads", r->threads, "Worker threads (default 1)", 1, 1024);
  add_number(cmd, "--seconds", r->seconds, "Seconds per measurement (default 0.3)", 0.0, 3600.0,
             true);
  add_number(cmd, "--dram-mib", r->dram_mib,
             "Triad working set for the DRAM figure, MiB (default 1024)", 1.0, 1e6);
  cmd->add_option("--out", r->out, "Write the device file (use it with --gpu FILE)");
  cmd->add_option("--name", r->name, "Device name in the file (default cpu-local)");
  add_json_flag(cmd, r->json_out);
  cmd->callback([r] {
    calibrate_options o;
    o.threads = r->threads;
    o.seconds_per_test = r->seconds;
    o.dram_bytes = r->dram_mib * 1024 * 1024;
    const calibration c = calibrate_cpu(o);
    const std::string doc = calibration_document(c, r->name);
    if (!r->out.empty()) write_output_file(r->out, doc);
    if (r->json_out) {
      print_json(json::parse(doc));
      return;
    }
    fmt::print("{} ({} thread{}, {})\n", c.cpu, c.threads, c.threads == 1 ? "" : "s", c.isa);
    fmt::print("  fp32 peak   {:.1f} GFLOP/s (FMA loop)\n  fp64 peak   {:.1f} GFLOP/s\n",
               c.fp32_gflops, c.fp64_gflops);
    for (const memory_level& l : c.levels) {
      fmt::print("  triad {:>9.1f} GB/s with a working set up to {}\n", l.bandwidth_gbs,
                 human(l.bytes, "B"));
    }
    fmt::print("  triad {:>9.1f} GB/s from DRAM ({} MiB)\n", c.dram_gbs, r->dram_mib);
    if (!r->out.empty()) fmt::print("device file written to {}\n", r->out);
  });
}

}  // namespace

void add_perf_commands(CLI::App& root) {
  CLI::App* group =
      root.add_subcommand("perf", "Roofline performance model for ops, LLMs and ONNX graphs");
  group->require_subcommand(1);
  add_op(group);
  add_explain(group);
  add_llm(group);
  add_model(group);
  add_calibrate(group);
}

}  // namespace keel::cli
