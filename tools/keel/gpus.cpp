// `keel gpus`: GPU database: specs, support for CUDA/cuDNN versions, which card to pick. The
// logic and the text live in keel::perf (gpu_database.hpp, gpu_compare.hpp, gpu_pick.hpp,
// text_report.hpp); this file parses and prints.
#include "cli.hpp"

#include "keel/perf/gpu_compare.hpp"
#include "keel/perf/gpu_database.hpp"
#include "keel/perf/gpu_pick.hpp"
#include "keel/perf/text_report.hpp"

#include <memory>

namespace keel::cli {
namespace {

namespace kp = keel::perf;

void add_list(CLI::App* group) {
  auto* cmd = group->add_subcommand("list", "List the GPUs in the database");
  auto json_out = std::make_shared<bool>(false);
  auto arch = std::make_shared<std::string>();
  add_json_flag(cmd, *json_out);
  cmd->add_option("--arch", *arch, "Only this architecture (Kepler ... Blackwell)");
  cmd->callback([json_out, arch] {
    print_result(*json_out, kp::list_gpus(kp::gpu_database::builtin(), *arch));
  });
}

void add_show(CLI::App* group) {
  auto* cmd = group->add_subcommand("show", "All numbers of one GPU with their sources");
  auto json_out = std::make_shared<bool>(false);
  auto name = std::make_shared<std::string>();
  add_json_flag(cmd, *json_out);
  cmd->add_option("name", *name, "GPU name (see `keel gpus list`)")->required();
  cmd->callback(
      [json_out, name] { print_result(*json_out, kp::gpu_database::builtin().at(*name)); });
}

void add_compare(CLI::App* group) {
  auto* cmd = group->add_subcommand("compare", "Two GPUs side by side, with ratios B/A");
  auto json_out = std::make_shared<bool>(false);
  auto names = std::make_shared<std::vector<std::string>>();
  add_json_flag(cmd, *json_out);
  cmd->add_option("names", *names, "Two GPU names")->required()->expected(2);
  cmd->callback([json_out, names] {
    const auto& db = kp::gpu_database::builtin();
    const kp::gpu_spec& a = db.at((*names)[0]);
    print_result(*json_out, kp::compare_gpus(a, db.at((*names)[1])));
  });
}

void add_support(CLI::App* group) {
  auto* cmd =
      group->add_subcommand("support",
                            "Does a CUDA toolkit, cuDNN release, PyTorch wheel or driver branch "
                            "support this GPU?");
  auto json_out = std::make_shared<bool>(false);
  auto request = std::make_shared<kp::support_request>();
  add_json_flag(cmd, *json_out);
  cmd->add_option("name", request->gpu, "GPU name")->required();
  auto* o_cuda = cmd->add_option("--cuda", request->cuda, "CUDA toolkit version, e.g. 12.4");
  auto* o_cudnn = cmd->add_option("--cudnn", request->cudnn, "cuDNN version, e.g. 9.1");
  o_cuda->excludes(o_cudnn);
  cmd->add_option("--pytorch", request->pytorch, "PyTorch release, e.g. 2.8 (with --wheel)");
  cmd->add_option("--wheel", request->wheel, "The PyTorch wheel's CUDA variant, e.g. cu128");
  cmd->add_option("--driver", request->driver, "NVIDIA driver branch, e.g. 580");
  cmd->callback(
      [=] { print_result(*json_out, kp::check_support(kp::gpu_database::builtin(), *request)); });
}

void add_pick(CLI::App* group) {
  auto* cmd =
      group->add_subcommand("pick", "Rank the GPUs that fit a budget and needs, with reasons");
  auto json_out = std::make_shared<bool>(false);
  auto request = std::make_shared<kp::pick_request>();
  add_json_flag(cmd, *json_out);
  add_number(cmd, "--budget", request->budget_usd,
             "Budget in USD (launch prices), or in the currency of --prices", 0.0, 1e12, true);
  cmd->add_option("--prices", request->prices,
                  "CSV of card,price in any currency (a header 'card,EUR' names it); ranks "
                  "and budgets by these prices instead of launch USD");
  cmd->add_option("--by", request->by,
                  "rate (default): the needed rate, then lower price; value: rate per price");
  cmd->add_option("--need", request->needs,
                  "fp64 | fp16 | bf16 | tf32 | fp8 | int8 | memory=SIZE | "
                  "bandwidth=GBPS | "
                  "cuda=VER | cudnn=VER | pytorch=VER+WHEEL (repeatable)")
      ->take_all();
  add_number(cmd, "--top", request->top, "How many to show (default 5)", 1, 1000000);
  cmd->callback([=] {
    const kp::pick_result r = kp::pick_gpus(kp::gpu_database::builtin(), *request);
    const auto top = static_cast<std::size_t>(request->top);
    if (*json_out)
      print_json(kp::to_json(r, top));
    else
      std::cout << kp::to_text(r, top);
  });
}

}  // namespace

void add_gpus_commands(CLI::App& root) {
  CLI::App* group = root.add_subcommand("gpus",
                                        "GPU database: specs, support for CUDA/cuDNN "
                                        "versions, which card to pick");
  group->require_subcommand(1);
  add_list(group);
  add_show(group);
  add_compare(group);
  add_support(group);
  add_pick(group);
}

}  // namespace keel::cli
