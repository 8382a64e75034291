// `keel gpus`: GPU database: specs, support for CUDA/cuDNN versions, which card to pick
#include "cli.hpp"

#include "keel/core/error.hpp"
#include "keel/perf/gpu_compare.hpp"
#include "keel/perf/gpu_database.hpp"
#include "keel/perf/gpu_pick.hpp"

#include <fmt/format.h>

#include <cstdio>

namespace keel::cli {
namespace {

using nlohmann::json;
using perf::gpu_spec;

std::string rate_cell(const gpu_spec& g, const char* key) {
  const auto r = g.rate(key);
  if (!r) return "-";
  return fmt::format("{:.4g}{}", *r, g.tflops.contains(key) ? "" : "*");
}

std::string opt_cell(const auto& v) { return v ? fmt::format("{}", *v) : std::string("-"); }

void print_list(const std::vector<const gpu_spec*>& gpus) {
  fmt::print("{:<17} {:>4} {:<13} {:>7} {:>7} {:>8} {:>8} {:>8} {:>6} {:>7} {:>6}\n", "name", "cc",
             "arch", "fp64", "fp32", "fp16/tc", "bf16/tc", "fp8/tc", "mem", "GB/s", "$");
  for (const gpu_spec* g : gpus) {
    fmt::print("{:<17} {:>4} {:<13} {:>7} {:>7} {:>8} {:>8} {:>8} {:>6} {:>7} {:>6}\n", g->name,
               g->cc.str(), g->arch, rate_cell(*g, "fp64"), rate_cell(*g, "fp32"),
               rate_cell(*g, "fp16_tensor"), rate_cell(*g, "bf16_tensor"),
               rate_cell(*g, "fp8_tensor"), fmt::format("{:g}G", g->memory_gb),
               fmt::format("{:g}", g->bandwidth_gbs), opt_cell(g->price_usd));
  }
  fmt::print(
      "TFLOP/s dense; /tc = tensor cores; * = derived from the CUDA C++ Programming Guide's "
      "per-SM rates; - = not published. `keel gpus show NAME` lists sources.\n");
}

void print_show(const gpu_spec& g) {
  fmt::print("{} ({})\n", g.display, g.name);
  fmt::print("  architecture      {} (compute capability {}), {} {}\n", g.arch, g.cc.str(),
             g.segment, g.year);
  fmt::print("  SMs               {}\n", opt_cell(g.sms));
  fmt::print("  boost clock       {} MHz\n", opt_cell(g.boost_mhz));
  for (const auto& [k, v] : g.tflops) {
    fmt::print("  {:<17} {:g} T{}/s\n", k, v, k.starts_with("int") ? "OP" : "FLOP");
  }
  for (const auto& [k, v] : g.derived) {
    fmt::print("  {:<17} {:.4g} TFLOP/s (derived: {})\n", k, v, g.derived_how.at(k));
  }
  fmt::print("  memory            {:g} GiB {}, {:g} GB/s\n", g.memory_gb, g.memory_type,
             g.bandwidth_gbs);
  fmt::print("  L2 cache          {} MB\n", opt_cell(g.l2_mb));
  fmt::print("  TDP               {} W\n", opt_cell(g.tdp_w));
  fmt::print("  launch price      {}\n",
             g.price_usd ? fmt::format("${:g}", *g.price_usd) : "not published");
  if (!g.note.empty()) fmt::print("  note              {}\n", g.note);
  fmt::print("  sources\n");
  for (const auto& s : g.sources) fmt::print("    {} <{}>\n", s.title, s.url);
}

void add_list(CLI::App* group) {
  auto* cmd = group->add_subcommand("list", "List the GPUs in the database");
  auto json_out = std::make_shared<bool>(false);
  auto arch = std::make_shared<std::string>();
  add_json_flag(cmd, *json_out);
  cmd->add_option("--arch", *arch, "Only this architecture (Kepler ... Blackwell)");
  cmd->callback([json_out, arch] {
    const perf::gpu_list list = perf::list_gpus(perf::gpu_database::builtin(), *arch);
    if (*json_out)
      print_json(perf::to_json(list));
    else
      print_list(list.gpus);
  });
}

void add_show(CLI::App* group) {
  auto* cmd = group->add_subcommand("show", "All numbers of one GPU with their sources");
  auto json_out = std::make_shared<bool>(false);
  auto name = std::make_shared<std::string>();
  add_json_flag(cmd, *json_out);
  cmd->add_option("name", *name, "GPU name (see `keel gpus list`)")->required();
  cmd->callback([json_out, name] {
    const gpu_spec& g = perf::gpu_database::builtin().at(*name);
    if (*json_out)
      print_json(perf::to_json(g));
    else
      print_show(g);
  });
}

void add_compare(CLI::App* group) {
  auto* cmd = group->add_subcommand("compare", "Two GPUs side by side, with ratios B/A");
  auto json_out = std::make_shared<bool>(false);
  auto names = std::make_shared<std::vector<std::string>>();
  add_json_flag(cmd, *json_out);
  cmd->add_option("names", *names, "Two GPU names")->required()->expected(2);
  cmd->callback([json_out, names] {
    const auto& db = perf::gpu_database::builtin();
    const gpu_spec& a = db.at((*names)[0]);
    const gpu_spec& b = db.at((*names)[1]);
    const perf::gpu_comparison c = perf::compare_gpus(a, b);
    if (*json_out) {
      print_json(perf::to_json(c));
      return;
    }
    auto cell = [](const std::optional<double>& v) {
      return v ? fmt::format("{:.4g}", *v) : std::string("-");
    };
    fmt::print("{:<26} {:>14} {:>14} {:>8}\n", "metric", a.name, b.name, "B/A");
    for (const perf::gpu_compare_row& r : c.rows) {
      fmt::print("{:<26} {:>14} {:>14} {:>8}\n", r.metric, cell(r.a), cell(r.b),
                 r.ratio ? fmt::format("{:.2f}x", *r.ratio) : "-");
    }
    fmt::print("sources: {}: {}\n         {}: {}\n", a.name, a.source_text(), b.name,
               b.source_text());
  });
}

void add_support(CLI::App* group) {
  auto* cmd =
      group->add_subcommand("support", "Does a CUDA toolkit or cuDNN release support this GPU?");
  auto json_out = std::make_shared<bool>(false);
  auto request = std::make_shared<perf::support_request>();
  add_json_flag(cmd, *json_out);
  cmd->add_option("name", request->gpu, "GPU name")->required();
  auto* o_cuda = cmd->add_option("--cuda", request->cuda, "CUDA toolkit version, e.g. 12.4");
  auto* o_cudnn = cmd->add_option("--cudnn", request->cudnn, "cuDNN version, e.g. 9.1");
  o_cuda->excludes(o_cudnn);
  cmd->callback([=] {
    const perf::support_result r = perf::check_support(perf::gpu_database::builtin(), *request);
    if (*json_out) {
      print_json(perf::to_json(r));
      return;
    }
    const char* word = !r.answer.known() ? "unknown" : r.answer.supported() ? "yes" : "no";
    fmt::print("{}: {}\n", word, r.answer.reason);
    if (!r.answer.sources.empty()) fmt::print("source: {}\n", r.answer.source_text());
  });
}

void add_pick(CLI::App* group) {
  auto* cmd =
      group->add_subcommand("pick", "Rank the GPUs that fit a budget and needs, with reasons");
  auto json_out = std::make_shared<bool>(false);
  auto budget = std::make_shared<double>(0);
  auto request = std::make_shared<perf::pick_request>();
  add_json_flag(cmd, *json_out);
  auto* o_budget =
      add_number(cmd, "--budget", *budget, "Budget in USD (launch prices)", 0.0, 1e12, true);
  cmd->add_option("--need", request->needs,
                  "fp64 | fp16 | bf16 | tf32 | fp8 | int8 | memory=SIZE | bandwidth=GBPS | "
                  "cuda=VER | cudnn=VER (repeatable)")
      ->take_all();
  add_number(cmd, "--top", request->top, "How many to show (default 5)", 1, 1000000);
  cmd->callback([=] {
    if (o_budget->count()) request->budget_usd = *budget;
    const perf::pick_result r = perf::pick_gpus(perf::gpu_database::builtin(), *request);
    const auto top = static_cast<std::size_t>(request->top);
    if (*json_out) {
      print_json(perf::to_json(r, top));
      return;
    }
    const std::size_t shown = std::min(r.ranked.size(), top);
    if (r.ranked.empty()) fmt::print("No GPU in the database meets all needs.\n");
    for (std::size_t i = 0; i < shown; ++i) {
      const auto& c = r.ranked[i];
      fmt::print("{}. {} ({}): {}\n", i + 1, c.gpu->name, c.gpu->display,
                 fmt::join(c.reasons, "; "));
    }
    fmt::print("ranked by {}; {} qualify, {} rejected (--json lists why)\n", r.metric,
               r.ranked.size(), r.rejected.size());
  });
}

}  // namespace

void add_gpus_commands(CLI::App& root) {
  CLI::App* group = root.add_subcommand(
      "gpus", "GPU database: specs, support for CUDA/cuDNN versions, which card to pick");
  group->require_subcommand(1);
  add_list(group);
  add_show(group);
  add_compare(group);
  add_support(group);
  add_pick(group);
}

}  // namespace keel::cli
