// keel::perf::pick_gpus — which card to buy: filter the GPU database by a budget and needs,
// rank what is left, and say why for every card kept or rejected.
//
// Needs (strings, as on the command line):
//   fp64                  double-precision hardware: FP64 at least 1/4 of the FP32 rate
//   fp16 | bf16 | tf32 | fp8 | int8   tensor cores for that type
//   memory=SIZE           at least SIZE of device memory (keel::parse_size: "24GiB", "16G")
//   bandwidth=GBPS        at least GBPS GB/s of memory bandwidth
//   cuda=VER | cudnn=VER  supported by that CUDA toolkit / cuDNN release
//   pytorch=VER+WHEEL     PyTorch's wheel has code for it ("pytorch=2.8+cu128")
// Ranking: by the first rate need (fp64 -> FP64 TFLOP/s, fp16 -> FP16 tensor TFLOP/s, ...),
// else by FP32 TFLOP/s; ties by lower price. rank_by::value ranks by that rate per unit of
// price instead. Prices: launch USD from the database, or a user's price list (price_list,
// `--prices FILE`) in any currency, whose label is only echoed; with a list, a card it does
// not name has no price, and the budget is in the list's currency. Only GPUs with a price can
// meet a budget or be ranked by value. Pure functions of their inputs; thread-safe.
#pragma once

#include "keel/perf/gpu_database.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace keel::perf {

// A user's prices: CSV lines "card,price"; blank lines and lines starting with '#' are skipped;
// cells may be double-quoted (a comma inside quotes is text), lines may end in CRLF, and a
// UTF-8 byte-order mark before the first line is ignored.
// A first line whose price cell is not a number is a header, and its price cell is the
// currency label ("card,EUR"); without one the label is "price units".
struct price_list {
  std::string currency = "price units";
  std::map<std::string, double> prices;  // by database name
  std::string origin;                    // the file, for messages
};
// Throws keel::parse_error ("origin:LINE:COLUMN: ...") for a line without exactly two cells,
// a price that is not a finite number > 0, or a card listed twice, and keel::invalid_argument
// naming a card the database does not know.
price_list parse_price_list(const gpu_database& db, std::string_view csv_text,
                            const std::string& origin);

enum class rank_by { rate, value };

struct pick_candidate {
  const gpu_spec* gpu = nullptr;
  double score = 0;                  // the ranking metric's value (the rate, or rate per price)
  double rate = 0;                   // TFLOP/s (TOP/s) of score_key
  std::optional<double> price;       // the price used (user list, else launch USD)
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
  std::string metric;    // what the ranking is by
  std::string currency;  // "USD (launch price)" or the price list's label
  bool user_prices = false;
};

// Throws keel::invalid_argument for an unknown need or a malformed value. `prices` (may be
// null: launch USD) must outlive nothing: the result copies what it needs.
pick_result pick_gpus(const gpu_database& db, std::optional<double> budget,
                      const std::vector<std::string>& needs, const price_list* prices = nullptr,
                      rank_by by = rank_by::rate);

// `keel gpus pick` as one request: the budget, the needs, and how many ranked GPUs the
// document shows.
struct pick_request {
  std::optional<double> budget_usd;  // (0, 1e12], in the price list's currency when one is given
  std::vector<std::string> needs;
  std::int64_t top = 5;     // [1, 1000000]
  std::string prices;       // a price-list CSV file (--prices); empty: launch USD
  std::string by = "rate";  // "rate" | "value" (--by)
};
// Checks the ranges (with the CLI's messages for --budget and --top), reads the price list
// (keel::io_error when unreadable, and parse_price_list's errors) and picks.
pick_result pick_gpus(const gpu_database& db, const pick_request& request);

// metric, currency, ranked (the first `top`: rank, name, score, score_key, rate, price (the
// price used, null when none), price_usd (launch), reasons, source), qualifying (how many are
// ranked in all), rejected (name, reason).
nlohmann::json to_json(const pick_result& result, std::size_t top);

}  // namespace keel::perf
