// keel::perf::pick_gpus — which card to buy: filter the GPU database by a budget and needs,
// rank what is left, and say why for every card kept or rejected.
//
// Needs (strings, as on the command line):
//   fp64                  double-precision hardware: FP64 at least 1/4 of the FP32 rate
//   fp16 | bf16 | tf32 | fp8 | int8   tensor cores for that type
//   memory=SIZE           at least SIZE of device memory (keel::parse_size: "24GiB", "16G")
//   bandwidth=GBPS        at least GBPS GB/s of memory bandwidth
//   cuda=VER | cudnn=VER  supported by that CUDA toolkit / cuDNN release
// Ranking: by the first rate need (fp64 -> FP64 TFLOP/s, fp16 -> FP16 tensor TFLOP/s, ...),
// else by FP32 TFLOP/s; ties by lower price. Only GPUs with a published launch price can
// meet a budget. Pure function of the database; thread-safe.
#pragma once

#include "keel/perf/gpu_database.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace keel::perf {

struct pick_candidate {
  const gpu_spec* gpu = nullptr;
  double score = 0;                  // the ranking metric's value
  std::string score_key;             // "fp64", "fp16_tensor", ...
  std::vector<std::string> reasons;  // why it qualifies, with numbers
};

struct pick_rejection {
  const gpu_spec* gpu = nullptr;
  std::string reason;  // the first need it fails
};

struct pick_result {
  std::vector<pick_candidate> ranked;
  std::vector<pick_rejection> rejected;
  std::string metric;  // what the ranking is by
};

// Throws keel::invalid_argument for an unknown need or a malformed value.
pick_result pick_gpus(const gpu_database& db, std::optional<double> budget_usd,
                      const std::vector<std::string>& needs);

// `keel gpus pick` as one request: the budget, the needs, and how many ranked GPUs the
// document shows.
struct pick_request {
  std::optional<double> budget_usd;  // (0, 1e12]
  std::vector<std::string> needs;
  std::int64_t top = 5;  // [1, 1000000]
};
// Checks the ranges (with the CLI's messages for --budget and --top) and picks.
pick_result pick_gpus(const gpu_database& db, const pick_request& request);

// metric, ranked (the first `top`: rank, name, score, score_key, price_usd, reasons, source),
// qualifying (how many are ranked in all), rejected (name, reason).
nlohmann::json to_json(const pick_result& result, std::size_t top);

}  // namespace keel::perf
