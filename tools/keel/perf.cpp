// `keel perf`: Roofline performance model for ops, LLMs and ONNX graphs
#include "cli.hpp"

#include "keel/perf/calibrate.hpp"
#include "keel/perf/gpu_database.hpp"
#include "keel/perf/llm.hpp"
#include "keel/perf/onnx_model.hpp"
#include "keel/perf/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>

namespace keel::cli {

namespace {

using nlohmann::json;
using namespace keel::perf;

std::string human(double v, const char* unit) { return si_text(v, unit); }

void print_result(const op_result& x) {
  fmt::print("{}, {}, on {} ({} {:g} TFLOP/s{}; {:g} GB/s)\n", x.description, x.dtype, x.gpu.name,
             x.peak.key, x.peak.tflops, x.peak.note.empty() ? "" : ", " + x.peak.note,
             x.gpu.bandwidth_gbs);
  fmt::print("  FLOPs            {}\n", human(x.cost.flops, "FLOP"));
  fmt::print("  bytes            {}\n", human(x.cost.bytes, "B"));
  fmt::print("  intensity        {:.4g} FLOP/byte (ridge point {:.4g})\n", x.point.intensity,
             x.point.ridge);
  fmt::print("  bound            {}\n", name_of(x.point.limit));
  fmt::print("  predicted time   {:.4g} ms (roofline lower bound)\n", x.point.seconds * 1e3);
  fmt::print("  fraction of peak {:.3g}%\n", x.point.fraction_of_peak * 100);
}

// The flags that read as negations on the command line.
struct op_flags {
  bool no_tensor = false;
  bool no_x_reuse = false;
  bool json_out = false;
  void apply(op_request& r) const {
    r.tensor = !no_tensor;
    r.x_reuse = !no_x_reuse;
  }
};

// Adds the op's shape options to `cmd` (shared by `op KIND` and `explain KIND`).
void add_shape_options(CLI::App* cmd, op_request& r, op_flags& f) {
  cmd->add_option("--dtype", r.dtype, "fp64|fp32|tf32|fp16|bf16|fp8|int8 (default fp32)");
  cmd->add_flag("--no-tensor", f.no_tensor, "Use CUDA-core rates, not tensor cores");
  if (r.kind == "gemm") {
    add_number(cmd, "mnk", r.mnk, "M N K", 0.0, k_max_dim, true)->required()->expected(3);
    add_number(cmd, "--batch", r.batch, "Independent products (default 1)", 1.0, k_max_dim);
  } else if (r.kind == "spmv") {
    add_number(cmd, "--rows", r.rows, "Rows", 1.0, k_max_dim)->required();
    add_number(cmd, "--cols", r.cols, "Columns (default: rows)", 1.0, k_max_dim);
    add_number(cmd, "--nnz", r.nnz, "Nonzeros", 1.0, k_max_dim)->required();
    add_number(cmd, "--index-bytes", r.index_bytes,
               "Bytes per column index / row pointer (default 4)", 1.0, 16.0);
    cmd->add_flag("--no-x-reuse", f.no_x_reuse, "Read x once per nonzero (no cache reuse)");
  } else if (r.kind == "conv2d") {
    cmd->add_option("--input", r.input, "NxCxHxW")->required();
    add_number(cmd, "--out-channels", r.out_channels, "K", 1, k_max_int_dim)->required();
    cmd->add_option("--kernel", r.kernel, "R or RxS (default 3)");
    add_number(cmd, "--stride", r.stride, "Stride (default 1)", 1, k_max_int_dim);
    add_number(cmd, "--padding", r.padding, "Padding (default 0)", 0, k_max_int_dim);
    add_number(cmd, "--dilation", r.dilation, "Dilation (default 1)", 1, k_max_int_dim);
    add_number(cmd, "--groups", r.groups, "Groups (default 1)", 1, k_max_int_dim);
  } else if (r.kind == "attention") {
    add_number(cmd, "--batch", r.batch, "Batch (default 1)", 1.0, k_max_dim);
    add_number(cmd, "--heads", r.heads, "Query heads", 1.0, k_max_dim)->required();
    add_number(cmd, "--kv-heads", r.kv_heads, "K/V heads (default: heads)", 1.0, k_max_dim);
    add_number(cmd, "--seq", r.seq, "Query length", 1.0, k_max_dim)->required();
    add_number(cmd, "--kv-len", r.kv_len, "Key/value length (default: seq)", 1.0, k_max_dim);
    add_number(cmd, "--head-dim", r.head_dim, "Head dimension (default 128)", 1.0, k_max_dim);
    cmd->add_flag("--flash", r.flash, "Fused kernel: scores never reach DRAM");
    cmd->add_flag("--causal", r.causal, "Skip the masked half of the scores");
  } else {
    add_number(cmd, "--elements", r.elements, "Elements", 1.0, k_max_dim)->required();
    add_number(cmd, "--inputs", r.inputs, "Inputs read per element (default 2)", 0.0, 1e6);
    add_number(cmd, "--outputs", r.outputs, "Outputs written per element (default 1)", 0.0, 1e6);
    add_number(cmd, "--flops-per-element", r.flops_per_element, "FLOPs per element (default 1)",
               0.0, 1e6);
  }
}

void add_op(CLI::App* group) {
  auto* op =
      group->add_subcommand("op", "Roofline of one kernel: FLOPs, bytes, intensity, bound, time");
  op->require_subcommand(1);
  for (const std::string& kind : op_kinds()) {
    auto r = std::make_shared<op_request>();
    auto f = std::make_shared<op_flags>();
    r->kind = kind;
    auto* cmd = op->add_subcommand(kind, fmt::format("Roofline of {}", kind));
    add_shape_options(cmd, *r, *f);
    cmd->add_option("--gpu", r->gpu, "GPU name or device file (default h100-sxm)");
    add_json_flag(cmd, f->json_out);
    cmd->callback([r, f] {
      f->apply(*r);
      const op_result x = run_op(*r);
      if (f->json_out)
        print_json(to_json(x));
      else
        print_result(x);
    });
  }
}

void add_explain(CLI::App* group) {
  auto* ex =
      group->add_subcommand("explain", "Compare one kernel on two GPUs and say why in words");
  ex->require_subcommand(1);
  for (const std::string& kind : op_kinds()) {
    auto r = std::make_shared<explain_request>();
    auto f = std::make_shared<op_flags>();
    r->op.kind = kind;
    auto* cmd = ex->add_subcommand(kind, fmt::format("Explain {} on two GPUs", kind));
    add_shape_options(cmd, r->op, *f);
    if (kind == "spmv") {
      // run_explain's default: a million rows, ~10 nonzeros per row.
      for (const char* name : {"--rows", "--nnz"}) cmd->get_option(name)->required(false);
    }
    cmd->add_option("--gpu", r->op.gpu, "First GPU")->required();
    cmd->add_option("--vs", r->vs, "Second GPU")->required();
    add_json_flag(cmd, f->json_out);
    cmd->callback([r, f] {
      f->apply(r->op);
      const explain_result x = run_explain(*r);
      if (f->json_out) {
        print_json(to_json(x));
        return;
      }
      for (const std::string& line : x.explanation) fmt::print("{}\n\n", line);
      fmt::print("sources: {}: {}\n         {}: {}\n", x.a.gpu.name, x.a.gpu.source_text(),
                 x.b.gpu.name, x.b.gpu.source_text());
    });
  }
}

std::string with_commas(double v) {
  std::string digits = fmt::format("{:.0f}", v);
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3)
    digits.insert(static_cast<std::size_t>(i), ",");
  return digits;
}

void add_llm(CLI::App* group) {
  auto r = std::make_shared<llm_request>();
  auto no_tensor = std::make_shared<bool>(false);
  auto json_out = std::make_shared<bool>(false);
  std::string names;
  for (const std::string& n : bundled_llm_configs()) names += (names.empty() ? "" : ", ") + n;
  auto* cmd =
      group->add_subcommand("llm", "Per-layer FLOPs, bytes, bound and time of a decoder LLM");
  cmd->add_option("--config", r->config, "Bundled config (" + names + ") or a config.json path")
      ->required();
  add_number(cmd, "--batch", r->batch, "Sequences (default 1)", 1.0, k_max_dim);
  add_number(cmd, "--seq", r->seq, "Prompt length (prefill) or cached tokens (decode); default 128",
             1.0, k_max_dim);
  cmd->add_option("--phase", r->phase, "prefill | decode (default prefill)")
      ->check(CLI::IsMember({"prefill", "decode"}));
  cmd->add_option("--gpu", r->gpu, "GPU name or device file (default h100-sxm)");
  cmd->add_option("--dtype", r->dtype, "Weights and activations (default bf16)");
  cmd->add_option("--kv-dtype", r->kv_dtype, "KV-cache storage type (default: --dtype)");
  cmd->add_flag("--flash", r->flash, "Fused attention: scores stay on chip");
  cmd->add_flag("--no-tensor", *no_tensor, "Use CUDA-core rates, not tensor cores");
  cmd->add_option("--svg", r->svg, "Write a roofline chart of the ops to this SVG file");
  add_json_flag(cmd, *json_out);
  cmd->callback([r, no_tensor, json_out] {
    r->tensor = !*no_tensor;
    const llm_result x = run_llm(*r);
    if (*json_out) {
      print_json(to_json(x));
      return;
    }
    const llm_report& rep = x.report;
    const llm_options& o = rep.options;
    fmt::print("{} {}, batch {}, seq {}, {} (KV {}) on {}\n", rep.config.name, x.phase, o.batch,
               o.seq, x.dtype, name_of(o.kv.value_or(o.weights)), x.device.name);
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

void add_model(CLI::App* group) {
  struct request {
    model_request model;
    bool no_tensor = false, json_out = false, all_nodes = false;
    int top = 10;
  };
  auto r = std::make_shared<request>();
  auto* cmd = group->add_subcommand(
      "model", "Per-node FLOPs, MACs, bytes and roofline time of an ONNX graph");
  cmd->add_option("file", r->model.path, "ONNX model file")->required();
  cmd->add_option("--gpu", r->model.gpu, "GPU name or device file (default h100-sxm)");
  cmd->add_option("--dim", r->model.dims, "Value of a symbolic dimension, NAME=VALUE (repeatable)");
  cmd->add_flag("--assume-one", r->model.assume_one,
                "Count symbolic dimensions without a --dim as 1 instead of refusing");
  cmd->add_flag("--no-tensor", r->no_tensor, "Use CUDA-core rates, not tensor cores");
  cmd->add_flag("--nodes", r->all_nodes, "Print every node, not only the slowest");
  add_number(cmd, "--top", r->top, "Slowest nodes to print (default 10)", 0, 1000000);
  cmd->add_option("--svg", r->model.svg, "Write a roofline chart of the nodes to this SVG file");
  add_json_flag(cmd, r->json_out);
  cmd->callback([r] {
    r->model.tensor = !r->no_tensor;
    const model_result x = run_model(r->model);
    if (r->json_out) {
      print_json(to_json(x));
      return;
    }
    const onnx_report& rep = x.report;
    fmt::print("{} ({}, opset {}) on {}\n", rep.path, rep.producer, rep.opset, x.device.name);
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
    calibrate_request calibrate;
    bool json_out = false;
  };
  auto r = std::make_shared<request>();
  auto* cmd = group->add_subcommand(
      "calibrate", "Measure this CPU's peak FLOP/s (FMA loop) and bandwidth (triad)");
  calibrate_request& c = r->calibrate;
  add_number(cmd, "--threads", c.threads, "Worker threads (default 1)", 1, 1024);
  add_number(cmd, "--seconds", c.seconds, "Seconds per measurement (default 0.3)", 0.0, 3600.0,
             true);
  add_number(cmd, "--dram-mib", c.dram_mib,
             "Triad working set for the DRAM figure, MiB (default 1024)", 1.0, 1e6);
  cmd->add_option("--out", c.out, "Write the device file (use it with --gpu FILE)");
  cmd->add_option("--name", c.name, "Device name in the file (default cpu-local)");
  add_json_flag(cmd, r->json_out);
  cmd->callback([r] {
    const calibrate_result x = run_calibrate(r->calibrate);
    if (r->json_out) {
      print_json(to_json(x));
      return;
    }
    const calibration& c = x.value;
    fmt::print("{} ({} thread{}, {})\n", c.cpu, c.threads, c.threads == 1 ? "" : "s", c.isa);
    fmt::print("  fp32 peak   {:.1f} GFLOP/s (FMA loop)\n  fp64 peak   {:.1f} GFLOP/s\n",
               c.fp32_gflops, c.fp64_gflops);
    for (const memory_level& l : c.levels) {
      fmt::print("  triad {:>9.1f} GB/s with a working set up to {}\n", l.bandwidth_gbs,
                 human(l.bytes, "B"));
    }
    fmt::print("  triad {:>9.1f} GB/s from DRAM ({} MiB)\n", c.dram_gbs, r->calibrate.dram_mib);
    if (!r->calibrate.out.empty()) fmt::print("device file written to {}\n", r->calibrate.out);
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
