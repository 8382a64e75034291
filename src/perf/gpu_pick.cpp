#include "keel/perf/gpu_pick.hpp"

#include "keel/core/bytes.hpp"
#include "keel/core/error.hpp"
#include "option_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>

namespace keel::perf {
namespace {

struct need {
  std::string text;
  std::string rate_key;  // set for rate needs
  // Returns an empty string when satisfied (and appends a reason), else the rejection.
  std::function<std::string(const gpu_spec&, std::vector<std::string>&)> check;
};

std::string tensor_key(const std::string& type) {
  return type == "fp64" ? "fp64" : type + "_tensor";
}

need parse_need(const gpu_database& db, const std::string& text) {
  need n{text, "", {}};
  const auto eq = text.find('=');
  const std::string key = text.substr(0, eq);
  const std::string value = eq == std::string::npos ? "" : text.substr(eq + 1);
  if (key == "fp64" && value.empty()) {
    n.rate_key = "fp64";
    n.check = [](const gpu_spec& g, std::vector<std::string>& why) -> std::string {
      const auto fp64 = g.rate("fp64");
      const auto fp32 = g.rate("fp32");
      if (!fp64 || !fp32) return "FP64 rate not published";
      if (*fp64 < *fp32 / 4) {
        return fmt::format("FP64 {:.3g} TFLOP/s is 1/{:.0f} of FP32 (not a double-precision part)",
                           *fp64, *fp32 / *fp64);
      }
      why.push_back(fmt::format("FP64 {:g} TFLOP/s (1/{:.0f} of FP32{})", *fp64, *fp32 / *fp64,
                                g.rate("fp64_tensor")
                                    ? fmt::format(", {:g} on tensor cores", *g.rate("fp64_tensor"))
                                    : ""));
      return "";
    };
  } else if ((key == "fp16" || key == "bf16" || key == "tf32" || key == "fp8" || key == "int8") &&
             value.empty()) {
    n.rate_key = tensor_key(key);
    n.check = [k = n.rate_key, key](const gpu_spec& g,
                                    std::vector<std::string>& why) -> std::string {
      const auto r = g.rate(k);
      if (!r) return fmt::format("no {} tensor-core rate", key);
      why.push_back(fmt::format("{} tensor {:g} T{}/s", key, *r, key == "int8" ? "OP" : "FLOP"));
      return "";
    };
  } else if (key == "memory" && !value.empty()) {
    const double want = static_cast<double>(parse_size(value));
    n.check = [want, value](const gpu_spec& g, std::vector<std::string>& why) -> std::string {
      if (g.memory_bytes() < want) return fmt::format("{:g} GiB < {}", g.memory_gb, value);
      why.push_back(fmt::format("{:g} GiB {} >= {}", g.memory_gb, g.memory_type, value));
      return "";
    };
  } else if (key == "bandwidth" && !value.empty()) {
    // The whole value, a finite positive number: stod would take "nan", "inf" and "12abc".
    char* end = nullptr;
    const double want = std::strtod(value.c_str(), &end);
    if (end != value.c_str() + value.size() || !std::isfinite(want) || !(want > 0)) {
      throw invalid_argument("bad bandwidth need '" + text +
                             "' (expected bandwidth=GBPS, a finite number > 0)");
    }
    n.check = [want](const gpu_spec& g, std::vector<std::string>& why) -> std::string {
      if (g.bandwidth_gbs < want)
        return fmt::format("{:g} GB/s < {:g} GB/s", g.bandwidth_gbs, want);
      why.push_back(fmt::format("{:g} GB/s", g.bandwidth_gbs));
      return "";
    };
  } else if ((key == "cuda" || key == "cudnn") && !value.empty()) {
    const version v = parse_version(value);
    n.check = [&db, v, key](const gpu_spec& g, std::vector<std::string>& why) -> std::string {
      const support_answer a = key == "cuda" ? db.cuda_support(g, v) : db.cudnn_support(g, v);
      if (!a.known()) return "unknown: " + a.reason;
      if (!a.supported()) return a.reason;
      why.push_back(fmt::format("{} {} supports compute capability {}",
                                key == "cuda" ? "CUDA" : "cuDNN", v.str(), g.cc.str()));
      return "";
    };
  } else {
    throw invalid_argument("unknown need '" + text +
                           "' (expected fp64, fp16, bf16, tf32, fp8, int8, memory=SIZE, "
                           "bandwidth=GBPS, cuda=VER or cudnn=VER)");
  }
  return n;
}

}  // namespace

pick_result pick_gpus(const gpu_database& db, std::optional<double> budget_usd,
                      const std::vector<std::string>& needs) {
  if (budget_usd && !(*budget_usd > 0 && std::isfinite(*budget_usd))) {
    throw invalid_argument("budget must be a finite number > 0");
  }
  std::vector<need> parsed;
  parsed.reserve(needs.size());
  for (const std::string& text : needs) parsed.push_back(parse_need(db, text));
  pick_result result;
  std::string score_key = "fp32";
  for (const need& n : parsed) {
    if (!n.rate_key.empty()) {
      score_key = n.rate_key;
      break;
    }
  }
  result.metric = score_key + " TFLOP/s, then lower price";
  for (const gpu_spec& g : db.gpus()) {
    pick_candidate c{&g, 0, score_key, {}};
    std::string rejection;
    if (budget_usd) {
      if (!g.price_usd) {
        rejection = "no published launch price";
      } else if (*g.price_usd > *budget_usd) {
        rejection = fmt::format("launch price ${:g} > budget ${:g}", *g.price_usd, *budget_usd);
      } else {
        c.reasons.push_back(fmt::format("launch price ${:g} <= ${:g}", *g.price_usd, *budget_usd));
      }
    }
    for (const need& n : parsed) {
      if (!rejection.empty()) break;
      rejection = n.check(g, c.reasons);
    }
    if (rejection.empty()) {
      const auto score = g.rate(score_key);
      if (!score)
        rejection = "no " + score_key + " rate to rank by";
      else
        c.score = *score;
    }
    if (!rejection.empty()) {
      result.rejected.push_back({&g, rejection});
      continue;
    }
    if (g.price_usd) {
      c.reasons.push_back(
          fmt::format("{:.1f} GFLOP/s per dollar ({})", c.score * 1000 / *g.price_usd, score_key));
    }
    result.ranked.push_back(std::move(c));
  }
  std::stable_sort(result.ranked.begin(), result.ranked.end(),
                   [](const pick_candidate& a, const pick_candidate& b) {
                     if (a.score != b.score) return a.score > b.score;
                     return a.gpu->price_usd.value_or(1e18) < b.gpu->price_usd.value_or(1e18);
                   });
  return result;
}

pick_result pick_gpus(const gpu_database& db, const pick_request& request) {
  if (request.budget_usd) detail::check_real("--budget", *request.budget_usd, 0.0, 1e12, true);
  detail::check_integer("--top", request.top, 1, 1000000);
  return pick_gpus(db, request.budget_usd, request.needs);
}

nlohmann::json to_json(const pick_result& r, std::size_t top) {
  const std::size_t shown = std::min(r.ranked.size(), top);
  nlohmann::json ranked = nlohmann::json::array();
  for (std::size_t i = 0; i < shown; ++i) {
    const auto& c = r.ranked[i];
    ranked.push_back({{"rank", i + 1},
                      {"name", c.gpu->name},
                      {"score", c.score},
                      {"score_key", c.score_key},
                      {"price_usd", c.gpu->price_usd ? nlohmann::json(*c.gpu->price_usd)
                                                     : nlohmann::json(nullptr)},
                      {"reasons", c.reasons},
                      {"source", c.gpu->source_text()}});
  }
  nlohmann::json rejected = nlohmann::json::array();
  for (const auto& x : r.rejected)
    rejected.push_back({{"name", x.gpu->name}, {"reason", x.reason}});
  return {{"metric", r.metric},
          {"ranked", ranked},
          {"qualifying", r.ranked.size()},
          {"rejected", rejected}};
}

}  // namespace keel::perf
