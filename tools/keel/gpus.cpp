// `keel gpus`: GPU database: specs, support for CUDA/cuDNN versions, which card to pick
#include "cli.hpp"

#include "keel/core/error.hpp"
#include "keel/perf/gpu_database.hpp"
#include "keel/perf/gpu_pick.hpp"

#include <fmt/format.h>

#include <cstdio>

namespace keel::cli {
namespace {

using nlohmann::json;
using perf::gpu_spec;

json opt_json(const auto& v) { return v ? json(*v) : json(nullptr); }

json sources_json(const std::vector<perf::source_ref>& sources) {
  json out = json::array();
  for (const auto& s : sources) out.push_back({{"id", s.id}, {"title", s.title}, {"url", s.url}});
  return out;
}

json gpu_json(const gpu_spec& g) {
  json derived = json::object();
  for (const auto& [k, v] : g.derived) derived[k] = {{"tflops", v}, {"how", g.derived_how.at(k)}};
  return {{"name", g.name},
          {"display", g.display},
          {"arch", g.arch},
          {"cc", g.cc.str()},
          {"segment", g.segment},
          {"year", g.year},
          {"sms", opt_json(g.sms)},
          {"boost_mhz", opt_json(g.boost_mhz)},
          {"tflops", g.tflops},
          {"derived", derived},
          {"memory_gb", g.memory_gb},
          {"memory_type", g.memory_type},
          {"bandwidth_gbs", g.bandwidth_gbs},
          {"l2_mb", opt_json(g.l2_mb)},
          {"tdp_w", opt_json(g.tdp_w)},
          {"price_usd", opt_json(g.price_usd)},
          {"note", g.note},
          {"source", g.source_text()},
          {"sources", sources_json(g.sources)}};
}

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
    std::vector<const gpu_spec*> gpus;
    for (const gpu_spec& g : perf::gpu_database::builtin().gpus()) {
      if (arch->empty() || fmt::format("{}", g.arch).find(*arch) != std::string::npos)
        gpus.push_back(&g);
    }
    if (*json_out) {
      json out = json::array();
      for (const gpu_spec* g : gpus) out.push_back(gpu_json(*g));
      print_json({{"gpus", out}, {"conventions", perf::gpu_database::builtin().conventions()}});
    } else {
      print_list(gpus);
    }
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
      print_json(gpu_json(g));
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
    std::vector<std::string> keys = {"fp64",        "fp64_tensor", "fp32",        "fp16",
                                     "tf32_tensor", "fp16_tensor", "bf16_tensor", "fp8_tensor",
                                     "int8_tensor", "fp4_tensor"};
    json rows = json::array();
    auto row = [&](const std::string& key, std::optional<double> va, std::optional<double> vb) {
      if (!va && !vb) return;
      rows.push_back({{"metric", key},
                      {"a", opt_json(va)},
                      {"b", opt_json(vb)},
                      {"ratio", va && vb && *va > 0 ? json(*vb / *va) : json(nullptr)}});
    };
    for (const std::string& k : keys) row(k, a.rate(k), b.rate(k));
    row("memory_gb", a.memory_gb, b.memory_gb);
    row("bandwidth_gbs", a.bandwidth_gbs, b.bandwidth_gbs);
    row("l2_mb", a.l2_mb, b.l2_mb);
    row("tdp_w", a.tdp_w, b.tdp_w);
    row("price_usd", a.price_usd, b.price_usd);
    const double ridge_a = a.peak(perf::dtype::fp32).tflops * 1e12 / a.bandwidth_bytes_per_s();
    const double ridge_b = b.peak(perf::dtype::fp32).tflops * 1e12 / b.bandwidth_bytes_per_s();
    row("fp32_ridge_flops_per_byte", ridge_a, ridge_b);
    if (*json_out) {
      print_json({{"a", gpu_json(a)}, {"b", gpu_json(b)}, {"rows", rows}});
      return;
    }
    fmt::print("{:<26} {:>14} {:>14} {:>8}\n", "metric", a.name, b.name, "B/A");
    for (const json& r : rows) {
      auto cell = [](const json& v) {
        return v.is_null() ? std::string("-") : fmt::format("{:.4g}", v.get<double>());
      };
      fmt::print("{:<26} {:>14} {:>14} {:>8}\n", r["metric"].get<std::string>(), cell(r["a"]),
                 cell(r["b"]),
                 r["ratio"].is_null() ? "-" : fmt::format("{:.2f}x", r["ratio"].get<double>()));
    }
    fmt::print("sources: {}: {}\n         {}: {}\n", a.name, a.source_text(), b.name,
               b.source_text());
  });
}

void add_support(CLI::App* group) {
  auto* cmd =
      group->add_subcommand("support", "Does a CUDA toolkit or cuDNN release support this GPU?");
  auto json_out = std::make_shared<bool>(false);
  auto name = std::make_shared<std::string>();
  auto cuda = std::make_shared<std::string>();
  auto cudnn = std::make_shared<std::string>();
  add_json_flag(cmd, *json_out);
  cmd->add_option("name", *name, "GPU name")->required();
  auto* o_cuda = cmd->add_option("--cuda", *cuda, "CUDA toolkit version, e.g. 12.4");
  auto* o_cudnn = cmd->add_option("--cudnn", *cudnn, "cuDNN version, e.g. 9.1");
  o_cuda->excludes(o_cudnn);
  cmd->callback([=] {
    if (cuda->empty() && cudnn->empty()) throw invalid_argument("give --cuda VER or --cudnn VER");
    const auto& db = perf::gpu_database::builtin();
    const gpu_spec& g = db.at(*name);
    const perf::support_answer a = cuda->empty() ? db.cudnn_support(g, perf::parse_version(*cudnn))
                                                 : db.cuda_support(g, perf::parse_version(*cuda));
    if (*json_out) {
      print_json({{"supported", a.supported},
                  {"reason", a.reason},
                  {"source", a.source_text()},
                  {"gpu", g.name},
                  {"compute_capability", g.cc.str()},
                  {"sources", sources_json(a.sources)}});
      return;
    }
    fmt::print("{}: {}\n", a.supported ? "yes" : "no", a.reason);
    if (!a.sources.empty()) fmt::print("source: {}\n", a.source_text());
  });
}

void add_pick(CLI::App* group) {
  auto* cmd =
      group->add_subcommand("pick", "Rank the GPUs that fit a budget and needs, with reasons");
  auto json_out = std::make_shared<bool>(false);
  auto budget = std::make_shared<double>(0);
  auto needs = std::make_shared<std::vector<std::string>>();
  auto top = std::make_shared<int>(5);
  add_json_flag(cmd, *json_out);
  auto* o_budget =
      add_number(cmd, "--budget", *budget, "Budget in USD (launch prices)", 0.0, 1e12, true);
  cmd->add_option("--need", *needs,
                  "fp64 | fp16 | bf16 | tf32 | fp8 | int8 | memory=SIZE | bandwidth=GBPS | "
                  "cuda=VER | cudnn=VER (repeatable)")
      ->take_all();
  add_number(cmd, "--top", *top, "How many to show (default 5)", 1, 1000000);
  cmd->callback([=] {
    const std::optional<double> b =
        o_budget->count() ? std::optional<double>(*budget) : std::nullopt;
    const perf::pick_result r = perf::pick_gpus(perf::gpu_database::builtin(), b, *needs);
    const std::size_t shown =
        std::min<std::size_t>(r.ranked.size(), static_cast<std::size_t>(*top));
    if (*json_out) {
      json ranked = json::array();
      for (std::size_t i = 0; i < shown; ++i) {
        const auto& c = r.ranked[i];
        ranked.push_back({{"rank", i + 1},
                          {"name", c.gpu->name},
                          {"score", c.score},
                          {"score_key", c.score_key},
                          {"price_usd", opt_json(c.gpu->price_usd)},
                          {"reasons", c.reasons},
                          {"source", c.gpu->source_text()}});
      }
      json rejected = json::array();
      for (const auto& x : r.rejected)
        rejected.push_back({{"name", x.gpu->name}, {"reason", x.reason}});
      print_json({{"metric", r.metric},
                  {"ranked", ranked},
                  {"qualifying", r.ranked.size()},
                  {"rejected", rejected}});
      return;
    }
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
