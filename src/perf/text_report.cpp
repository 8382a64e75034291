#include "keel/perf/text_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <utility>
#include <vector>

namespace keel::perf {
namespace {

// Appends fmt::format(f, args...) to `out`.
template <class... Args>
void put(std::string& out, fmt::format_string<Args...> f, Args&&... args) {
  fmt::format_to(std::back_inserter(out), f, std::forward<Args>(args)...);
}

std::string rate_cell(const gpu_spec& g, const char* key) {
  const auto r = g.rate(key);
  if (!r) return "-";
  return fmt::format("{:.4g}{}", *r, g.tflops.contains(key) ? "" : "*");
}

std::string opt_cell(const auto& v) { return v ? fmt::format("{}", *v) : std::string("-"); }

std::string sources_text(const gpu_spec& a, const gpu_spec& b) {
  return fmt::format("sources: {}: {}\n         {}: {}\n", a.name, a.source_text(), b.name,
                     b.source_text());
}

}  // namespace

std::string with_commas(double v) {
  const std::string digits = fmt::format("{:.0f}", v);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

std::string to_text(const op_result& x) {
  std::string out;
  put(out, "{}, {}, on {} ({} {:g} TFLOP/s{}; {:g} GB/s)\n", x.description, x.dtype, x.gpu.name,
      x.peak.key, x.peak.tflops, x.peak.note.empty() ? "" : ", " + x.peak.note,
      x.gpu.bandwidth_gbs);
  put(out, "  FLOPs            {}\n", si_text(x.cost.flops, "FLOP"));
  put(out, "  bytes            {}\n", si_text(x.cost.bytes, "B"));
  put(out, "  intensity        {:.4g} FLOP/byte (ridge point {:.4g})\n", x.point.intensity,
      x.point.ridge);
  put(out, "  bound            {}\n", name_of(x.point.limit));
  put(out, "  predicted time   {:.4g} ms (roofline lower bound)\n", x.point.seconds * 1e3);
  put(out, "  fraction of peak {:.3g}%\n", x.point.fraction_of_peak * 100);
  return out;
}

std::string to_text(const explain_result& x) {
  std::string out;
  for (const std::string& line : x.explanation) put(out, "{}\n\n", line);
  return out + sources_text(x.a.gpu, x.b.gpu);
}

std::string to_text(const llm_result& x) {
  const llm_report& rep = x.report;
  const llm_options& o = rep.options;
  const bool fits = rep.memory.fits;
  std::string out;
  const std::string what = o.training ? "training step" : rep.generation ? "generation" : x.phase;
  put(out, "{} {}, batch {}, seq {}, {} (KV {}{}) on {}{}\n", rep.config.name, what, o.batch, o.seq,
      x.dtype, name_of(o.kv.value_or(o.weights)),
      o.quant == llm_quant::none ? "" : fmt::format(", quant {}", name_of(o.quant)), x.device.name,
      o.parallel.gpus() > 1
          ? fmt::format(" x{} (tp {}, pp {}, dp {}, ep {})", o.parallel.gpus(), o.parallel.tp,
                        o.parallel.pp, o.parallel.dp, o.parallel.ep)
          : "");
  put(out, "parameters {} (active per token {}, embedding {})\n", with_commas(rep.params.total),
      with_commas(rep.params.active), with_commas(rep.params.embedding));
  put(out, "KV cache {} bytes per token{}\n", with_commas(rep.kv_bytes_per_token),
      rep.config.sliding_window > 0
          ? fmt::format(" (sliding window of {} tokens)", rep.config.sliding_window)
          : "");
  put(out, "{}\n", rep.compute_note);
  put(out, "memory {}\n\n", rep.memory.message);
  put(out, "{:<20} {:>5} {:>12} {:>12} {:>10} {:>8} {:>12}\n", "op (one instance)", "x", "FLOPs",
      "bytes", "FLOP/B", "bound", "time us");
  for (const llm_op& op : rep.ops) {
    put(out, "{:<20} {:>5} {:>12} {:>12} {:>10.3g} {:>8} {:>12}\n", op.name, op.count,
        si_text(op.cost.flops, "FLOP"), si_text(op.cost.bytes, "B"), op.point.intensity,
        name_of(op.point.limit), fits ? fmt::format("{:.4g}", op.point.seconds * 1e6) : "-");
  }
  if (!rep.comms.empty()) {
    put(out, "\n{:<44} {:>6} {:>12} {:>10} {:>12}\n", "collective (per call)", "ranks", "bytes",
        "calls", "time us");
    for (const llm_comm& c : rep.comms)
      put(out, "{:<44} {:>6} {:>12} {:>10} {:>12}\n", c.name, c.ranks, si_text(c.bytes, "B"),
          c.count, fits ? fmt::format("{:.4g}", c.seconds * 1e6) : "-");
  }
  if (const auto& t = rep.training) {
    put(out, "\ntraining step: forward {}, backward {} (2x), optimizer {} ({})\n",
        si_text(t->forward_flops, "FLOP"), si_text(t->backward_flops, "FLOP"),
        si_text(t->optimizer_flops, "FLOP"), name_of(o.optimizer));
  }
  if (const auto& g = rep.generation) {
    put(out,
        "\ngeneration: {:g} prompt + {:g} generated tokens per sequence; prefill {}, decode {}\n",
        g->prompt, g->generated, si_text(g->prefill_flops, "FLOP"),
        si_text(g->decode_flops, "FLOP"));
    if (fits)
      put(out,
          "time to first token {:.4g} ms, decode {:.4g} ms, {:.4g} tokens/s decoding ({:.4g} "
          "overall)\n",
          g->ttft_seconds * 1e3, g->decode_seconds * 1e3, g->decode_tokens_per_s,
          g->overall_tokens_per_s);
  }
  put(out, "\ntotal {} ({} in matmuls), {} moved, ", si_text(rep.total_flops, "FLOP"),
      si_text(rep.matmul_flops, "FLOP"), si_text(rep.total_bytes, "B"));
  if (rep.seconds) {
    put(out, "predicted {:.4g} ms{}\n", *rep.seconds * 1e3,
        rep.comm_seconds > 0 ? fmt::format(" ({:.4g} ms communication)", rep.comm_seconds * 1e3)
                             : "");
  } else {
    out += "no prediction: the model does not fit\n";
  }
  if (!x.svg.empty()) put(out, "roofline chart written to {}\n", x.svg);
  return out;
}

std::string to_text(const model_result& x, const model_text_options& options) {
  const onnx_report& rep = x.report;
  const bool fits = x.fit.fits;
  std::string out;
  put(out, "{} ({}, opset {}) on {}\n", rep.path, rep.producer, rep.opset, x.device.name);
  put(out, "{} nodes, {} parameters\n", rep.nodes.size(), with_commas(rep.params));
  for (const std::string& note : rep.param_notes) put(out, "  note: {}\n", note);
  put(out, "MACs {:.4g} G, FLOPs {:.4g} G, bytes {}\n", rep.macs / 1e9, rep.flops / 1e9,
      si_text(rep.bytes, "B"));
  put(out, "memory: {}\n", x.fit.message);
  if (fits) {
    put(out, "cannot be faster than {:.4g} ms (hardware roofline), expect about {:.4g} ms\n",
        rep.roofline_seconds * 1e3, rep.seconds * 1e3);
    for (const efficiency& e : rep.efficiencies)
      put(out, "  {:<9} x{:.3g} of the bound's rate: {}\n", name_of(e.cls), e.fraction, e.basis);
  } else {
    out += "no latency: the model does not fit this device's memory\n";
  }
  put(out, "\n{}", rollup_text(x.tree, options.depth, fits));
  if (!fits) return out;
  std::map<std::string, std::pair<int, double>> by_type;
  for (const onnx_node_cost& n : rep.nodes) {
    by_type[n.op_type].first += 1;
    by_type[n.op_type].second += n.seconds;
  }
  put(out, "\n{:<24} {:>6} {:>12}\n", "op type", "nodes", "time ms");
  for (const auto& [type, v] : by_type)
    put(out, "{:<24} {:>6} {:>12.4g}\n", type, v.first, v.second * 1e3);
  std::vector<const onnx_node_cost*> order;
  for (const onnx_node_cost& n : rep.nodes) order.push_back(&n);
  if (!options.all_nodes) {
    std::stable_sort(order.begin(), order.end(),
                     [](auto* a, auto* b) { return a->seconds > b->seconds; });
    const auto top = static_cast<std::size_t>(std::max(options.top, 0));
    if (order.size() > top) order.resize(top);
  }
  put(out, "\n{:<32} {:<12} {:>11} {:>11} {:>9} {:>7} {:>10}\n",
      options.all_nodes ? "node" : "slowest nodes", "op", "MACs", "bytes", "FLOP/B", "bound",
      "time us");
  for (const onnx_node_cost* n : order) {
    put(out, "{:<32} {:<12} {:>11} {:>11} {:>9.3g} {:>7} {:>10.4g}\n", n->name.substr(0, 32),
        n->op_type, si_text(n->macs, ""), si_text(n->cost.bytes, "B"), n->point.intensity,
        name_of(n->point.limit), n->seconds * 1e6);
  }
  if (!rep.unknown_ops.empty()) {
    out += "\nops counted as bytes only (unknown): ";
    for (const auto& [op, count] : rep.unknown_ops) put(out, "{} x{} ", op, count);
    out += "\n";
  }
  return out;
}

std::string to_text(const calibrate_result& x) {
  const calibration& c = x.value;
  std::string out;
  put(out, "{} ({} thread{}, {})\n", c.cpu, c.threads, c.threads == 1 ? "" : "s", c.isa);
  put(out, "  fp32 peak   {:.1f} GFLOP/s (FMA loop)\n  fp64 peak   {:.1f} GFLOP/s\n", c.fp32_gflops,
      c.fp64_gflops);
  for (const memory_level& l : c.levels) {
    put(out, "  triad {:>9.1f} GB/s with a working set up to {}\n", l.bandwidth_gbs,
        si_text(l.bytes, "B"));
  }
  put(out, "  triad {:>9.1f} GB/s from DRAM ({} MiB)\n", c.dram_gbs, x.dram_mib);
  if (!x.out.empty()) put(out, "device file written to {}\n", x.out);
  return out;
}

std::string to_text(const gpu_list& list) {
  std::string out;
  put(out, "{:<17} {:>4} {:<13} {:>7} {:>7} {:>8} {:>8} {:>8} {:>6} {:>7} {:>6}\n", "name", "cc",
      "arch", "fp64", "fp32", "fp16/tc", "bf16/tc", "fp8/tc", "mem", "GB/s", "$");
  for (const gpu_spec* g : list.gpus) {
    put(out, "{:<17} {:>4} {:<13} {:>7} {:>7} {:>8} {:>8} {:>8} {:>6} {:>7} {:>6}\n", g->name,
        g->cc.str(), g->arch, rate_cell(*g, "fp64"), rate_cell(*g, "fp32"),
        rate_cell(*g, "fp16_tensor"), rate_cell(*g, "bf16_tensor"), rate_cell(*g, "fp8_tensor"),
        fmt::format("{:g}G", g->memory_gb), fmt::format("{:g}", g->bandwidth_gbs),
        opt_cell(g->price_usd));
  }
  out +=
      "TFLOP/s dense; /tc = tensor cores; * = derived from the CUDA C++ Programming Guide's "
      "per-SM rates; - = not published. `keel gpus show NAME` lists sources.\n";
  return out;
}

std::string to_text(const gpu_spec& g) {
  std::string out;
  put(out, "{} ({})\n", g.display, g.name);
  put(out, "  architecture      {} (compute capability {}), {} {}\n", g.arch, g.cc.str(), g.segment,
      g.year);
  put(out, "  SMs               {}\n", opt_cell(g.sms));
  put(out, "  boost clock       {} MHz\n", opt_cell(g.boost_mhz));
  for (const auto& [k, v] : g.tflops)
    put(out, "  {:<17} {:g} T{}/s\n", k, v, k.starts_with("int") ? "OP" : "FLOP");
  for (const auto& [k, v] : g.derived)
    put(out, "  {:<17} {:.4g} TFLOP/s (derived: {})\n", k, v, g.derived_how.at(k));
  put(out, "  memory            {:g} GiB {}, {:g} GB/s\n", g.memory_gb, g.memory_type,
      g.bandwidth_gbs);
  put(out, "  NVLink            {}\n",
      g.nvlink_gbs ? fmt::format("{:g} GB/s (both directions, all links)", *g.nvlink_gbs)
                   : std::string("none"));
  put(out, "  PCIe              {}\n",
      g.pcie_gbs
          ? fmt::format("{}.0 x{}, {:g} GB/s each way", *g.pcie_gen, g.pcie_lanes, *g.pcie_gbs)
          : std::string("not published"));
  put(out, "  L2 cache          {} MB\n", opt_cell(g.l2_mb));
  put(out, "  TDP               {} W\n", opt_cell(g.tdp_w));
  put(out, "  launch price      {}\n",
      g.price_usd ? fmt::format("${:g}", *g.price_usd) : "not published");
  if (!g.note.empty()) put(out, "  note              {}\n", g.note);
  out += "  sources\n";
  for (const auto& s : g.sources) put(out, "    {} <{}>\n", s.title, s.url);
  return out;
}

std::string to_text(const gpu_comparison& c) {
  const auto cell = [](const std::optional<double>& v) {
    return v ? fmt::format("{:.4g}", *v) : std::string("-");
  };
  std::string out;
  put(out, "{:<26} {:>14} {:>14} {:>8}\n", "metric", c.a->name, c.b->name, "B/A");
  for (const gpu_compare_row& r : c.rows) {
    put(out, "{:<26} {:>14} {:>14} {:>8}\n", r.metric, cell(r.a), cell(r.b),
        r.ratio ? fmt::format("{:.2f}x", *r.ratio) : "-");
  }
  return out + sources_text(*c.a, *c.b);
}

std::string to_text(const support_result& r) {
  const char* word = !r.answer.known() ? "unknown" : r.answer.supported() ? "yes" : "no";
  std::string out = fmt::format("{}: {}\n", word, r.answer.reason);
  if (!r.answer.sources.empty()) put(out, "source: {}\n", r.answer.source_text());
  return out;
}

std::string to_text(const pick_result& r, std::size_t top) {
  std::string out;
  if (r.ranked.empty()) out += "No GPU in the database meets all needs.\n";
  for (std::size_t i = 0; i < std::min(r.ranked.size(), top); ++i) {
    const auto& c = r.ranked[i];
    put(out, "{}. {} ({}): {}\n", i + 1, c.gpu->name, c.gpu->display, fmt::join(c.reasons, "; "));
  }
  put(out, "ranked by {}; {} qualify, {} rejected (--json lists why)\n", r.metric, r.ranked.size(),
      r.rejected.size());
  return out;
}

}  // namespace keel::perf
