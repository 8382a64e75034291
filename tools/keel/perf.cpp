// `keel perf`: Roofline performance model for ops, LLMs and ONNX graphs. The logic and the text
// live in keel::perf (report.hpp, text_report.hpp); this file parses and prints.
#include "cli.hpp"

#include "keel/perf/report.hpp"
#include "keel/perf/text_report.hpp"

#include <fmt/format.h>

#include <memory>

namespace keel::cli {

namespace {

using namespace keel::perf;

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
    add_gpu_option(cmd, r->gpu);
    add_json_flag(cmd, f->json_out);
    cmd->callback([r, f] {
      f->apply(*r);
      print_result(f->json_out, run_op(*r));
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
    add_gpu_option(cmd, r->op.gpu, "First GPU")->required();
    cmd->add_option("--vs", r->vs, "Second GPU")->required();
    add_json_flag(cmd, f->json_out);
    cmd->callback([r, f] {
      f->apply(r->op);
      print_result(f->json_out, run_explain(*r));
    });
  }
}

void add_llm(CLI::App* group) {
  auto r = std::make_shared<llm_request>();
  auto f = std::make_shared<op_flags>();
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
  add_gpu_option(cmd, r->gpu);
  cmd->add_option("--dtype", r->dtype, "Weights and activations (default bf16)");
  cmd->add_option("--kv-dtype", r->kv_dtype, "KV-cache storage type (default: --dtype)");
  cmd->add_flag("--flash", r->flash, "Fused attention: scores stay on chip");
  cmd->add_flag("--no-tensor", f->no_tensor, "Use CUDA-core rates, not tensor cores");
  cmd->add_option("--quant", r->quant, "none | w8a8 | w4a16 | fp8 (default none)");
  add_number(cmd, "--generate", r->generate,
             "Decode this many tokens after the prefill of --seq (TTFT, tokens/s)", 0.0, 1e6);
  cmd->add_flag("--train", r->train, "A training step: forward, backward, optimizer");
  cmd->add_option("--optimizer", r->optimizer, "adam | sgd | sgd-momentum (default adam)");
  add_number(cmd, "--tp", r->tp, "Tensor-parallel GPUs (default 1)", 1, 4096);
  add_number(cmd, "--pp", r->pp, "Pipeline stages (default 1)", 1, 4096);
  add_number(cmd, "--dp", r->dp, "Data-parallel replicas (default 1)", 1, 4096);
  add_number(cmd, "--ep", r->ep, "Expert-parallel degree, dividing --dp (default 1)", 1, 4096);
  add_number(cmd, "--link-latency-us", r->link_latency_us,
             "Per-message latency of the GPU link, us (default keel::comm's)", 0.0, 1e6);
  cmd->add_option("--svg", r->svg, "Write a roofline chart of the ops to this SVG file");
  add_json_flag(cmd, f->json_out);
  cmd->callback([r, f] {
    r->tensor = !f->no_tensor;
    print_result(f->json_out, run_llm(*r));
  });
}

void add_model(CLI::App* group) {
  struct request {
    model_request model;
    model_text_options view;
    op_flags flags;
  };
  auto r = std::make_shared<request>();
  auto* cmd = group->add_subcommand(
      "model", "Per-node FLOPs, MACs, bytes and roofline time of an ONNX graph");
  cmd->add_option("file", r->model.path, "ONNX model file")->required();
  add_gpu_option(cmd, r->model.gpu);
  cmd->add_option("--dim", r->model.dims, "Value of a symbolic dimension, NAME=VALUE (repeatable)");
  cmd->add_flag("--assume-one", r->model.assume_one,
                "Count symbolic dimensions without a --dim as 1 instead of refusing");
  cmd->add_flag("--no-tensor", r->flags.no_tensor, "Use CUDA-core rates, not tensor cores");
  cmd->add_flag("--nodes", r->view.all_nodes, "Print every node, not only the slowest");
  add_number(cmd, "--top", r->view.top, "Slowest nodes to print (default 10)", 0, 1000000);
  auto* depth = add_number(cmd, "--depth", r->view.depth,
                           "Module tree depth to print: 0 the model, 1 its layers, ... (default 2 "
                           "in text, the whole tree in --json)",
                           0, 1000000);
  cmd->add_option("--svg", r->model.svg, "Write a roofline chart of the nodes to this SVG file");
  add_json_flag(cmd, r->flags.json_out);
  cmd->callback([r, depth] {
    r->model.tensor = !r->flags.no_tensor;
    if (depth->count() > 0) r->model.depth = r->view.depth;
    print_result(r->flags.json_out, run_model(r->model), r->view);
  });
}

void add_calibrate(CLI::App* group) {
  auto c = std::make_shared<calibrate_request>();
  auto json_out = std::make_shared<bool>(false);
  auto* cmd = group->add_subcommand(
      "calibrate", "Measure this CPU's peak FLOP/s (FMA loop) and bandwidth (triad)");
  add_number(cmd, "--threads", c->threads, "Worker threads (default 1)", 1, 1024);
  add_number(cmd, "--seconds", c->seconds, "Seconds per measurement (default 0.3)", 0.0, 3600.0,
             true);
  add_number(cmd, "--dram-mib", c->dram_mib,
             "Triad working set for the DRAM figure, MiB (default 1024)", 1.0, 1e6);
  cmd->add_option("--out", c->out, "Write the device file (use it with --gpu FILE)");
  cmd->add_option("--name", c->name, "Device name in the file (default cpu-local)");
  add_json_flag(cmd, *json_out);
  cmd->callback([c, json_out] { print_result(*json_out, run_calibrate(*c)); });
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
