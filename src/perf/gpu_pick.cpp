#include "keel/perf/gpu_pick.hpp"

#include "keel/core/bytes.hpp"
#include "keel/core/error.hpp"
#include "keel/core/input_file.hpp"
#include "option_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
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
  } else if (key == "pytorch" && !value.empty()) {
    // "2.8+cu128", as the wheel's version string spells it.
    const auto plus = value.find('+');
    if (plus == std::string::npos || plus + 1 == value.size()) {
      throw invalid_argument("bad pytorch need '" + text +
                             "' (expected pytorch=VER+WHEEL, e.g. pytorch=2.8+cu128)");
    }
    const version v = parse_version(value.substr(0, plus));
    const std::string wheel = value.substr(plus + 1);
    n.check = [&db, v, wheel](const gpu_spec& g, std::vector<std::string>& why) -> std::string {
      const support_answer a = db.pytorch_support(g, v, wheel);
      if (!a.known()) return "unknown: " + a.reason;
      if (!a.supported()) return a.reason;
      why.push_back(
          fmt::format("PyTorch {} {} runs on compute capability {}", v.str(), wheel, g.cc.str()));
      return "";
    };
  } else {
    throw invalid_argument("unknown need '" + text +
                           "' (expected fp64, fp16, bf16, tf32, fp8, int8, memory=SIZE, "
                           "bandwidth=GBPS, cuda=VER, cudnn=VER or pytorch=VER+WHEEL)");
  }
  return n;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// The whole cell as a finite number, or nullopt.
std::optional<double> number_of(std::string_view cell) {
  const std::string text(cell);
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// The cells of one CSV line: split at commas outside double quotes, each cell trimmed and
// unquoted ("" inside quotes is one quote), with the 1-based column where it starts.
struct csv_cell {
  std::string text;
  std::size_t column = 1;
};
std::vector<csv_cell> split_csv(std::string_view line, std::size_t line_no,
                                const std::string& origin) {
  std::vector<csv_cell> cells;
  std::size_t i = 0;
  while (true) {
    csv_cell cell;
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    cell.column = i + 1;
    if (i < line.size() && line[i] == '"') {
      ++i;
      bool closed = false;
      while (i < line.size()) {
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            cell.text += '"';
            i += 2;
            continue;
          }
          closed = true;
          ++i;
          break;
        }
        cell.text += line[i++];
      }
      if (!closed) throw parse_error(origin, line_no, cell.column, "unterminated quoted cell");
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
      if (i < line.size() && line[i] != ',') {
        throw parse_error(origin, line_no, i + 1, "text after a quoted cell");
      }
    } else {
      const auto end = line.find(',', i);
      cell.text = std::string(trim(line.substr(i, end == std::string_view::npos ? end : end - i)));
      i = end == std::string_view::npos ? line.size() : end;
    }
    cells.push_back(std::move(cell));
    if (i >= line.size()) break;
    ++i;  // the comma
  }
  return cells;
}

std::string money(double v, const std::string& currency, bool usd) {
  return usd ? fmt::format("${:g}", v) : fmt::format("{:g} {}", v, currency);
}

}  // namespace

price_list parse_price_list(const gpu_database& db, std::string_view text,
                            const std::string& origin) {
  price_list out;
  out.origin = origin;
  std::map<std::string, std::size_t> seen;  // name -> line
  std::size_t line_no = 0;
  bool first = true;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    ++line_no;
    if (line_no == 1 && line.starts_with("\xEF\xBB\xBF")) line.remove_prefix(3);  // UTF-8 BOM
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (trim(line).empty() || trim(line).front() == '#') continue;
    const std::vector<csv_cell> cells = split_csv(line, line_no, origin);
    if (cells.size() != 2) {
      throw parse_error(origin, line_no, 1,
                        "expected two cells 'card,price', got '" + std::string(trim(line)) + "'");
    }
    const std::string_view card = cells[0].text;
    const std::string_view price = cells[1].text;
    const std::size_t price_column = cells[1].column;
    const auto value = number_of(price);
    if (first && !value) {  // a header: its price cell is the currency label
      first = false;
      if (!price.empty() && price != "price") out.currency = std::string(price);
      continue;
    }
    first = false;
    if (card.empty()) throw parse_error(origin, line_no, 1, "empty card name");
    if (!value || !(*value > 0)) {
      throw parse_error(origin, line_no, price_column,
                        "price '" + std::string(price) + "' is not a finite number > 0");
    }
    const gpu_spec* g = db.find(card);
    if (!g) {
      try {
        db.at(card);
      } catch (const invalid_argument& e) {
        throw invalid_argument(fmt::format("{}:{}: {}", origin, line_no, e.what()));
      }
    }
    if (auto it = seen.find(g->name); it != seen.end()) {
      throw parse_error(origin, line_no, 1,
                        fmt::format("{} is listed twice (first on line {})", g->name, it->second));
    }
    seen[g->name] = line_no;
    out.prices[g->name] = *value;
  }
  if (out.prices.empty()) throw parse_error::in_object(origin, "the price list names no card");
  return out;
}

pick_result pick_gpus(const gpu_database& db, std::optional<double> budget,
                      const std::vector<std::string>& needs, const price_list* prices, rank_by by) {
  if (budget && !(*budget > 0 && std::isfinite(*budget))) {
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
  const bool usd = prices == nullptr;
  result.user_prices = !usd;
  result.currency = usd ? "USD (launch price)" : prices->currency;
  const std::string unit = usd ? "USD" : prices->currency;
  result.metric = by == rank_by::value
                      ? fmt::format("{} GFLOP/s per {} of {}, then higher rate", score_key, unit,
                                    usd ? "launch price" : "listed price")
                      : score_key + " TFLOP/s, then lower price";
  for (const gpu_spec& g : db.gpus()) {
    pick_candidate c{&g, 0, 0, std::nullopt, score_key, {}};
    if (usd) {
      c.price = g.price_usd;
    } else if (auto it = prices->prices.find(g.name); it != prices->prices.end()) {
      c.price = it->second;
    }
    const char* no_price = usd ? "no published launch price" : "not in the price list";
    std::string rejection;
    if (budget) {
      if (!c.price) {
        rejection = no_price;
      } else if (*c.price > *budget) {
        rejection = fmt::format("{}price {} > budget {}", usd ? "launch " : "",
                                money(*c.price, unit, usd), money(*budget, unit, usd));
      } else {
        c.reasons.push_back(fmt::format("{}price {} <= {}", usd ? "launch " : "",
                                        money(*c.price, unit, usd), money(*budget, unit, usd)));
      }
    }
    if (rejection.empty() && by == rank_by::value && !c.price) rejection = no_price;
    for (const need& n : parsed) {
      if (!rejection.empty()) break;
      rejection = n.check(g, c.reasons);
    }
    if (rejection.empty()) {
      const auto rate = g.rate(score_key);
      if (!rate) {
        rejection = "no " + score_key + " rate to rank by";
      } else {
        c.rate = *rate;
        c.score = by == rank_by::value ? *rate * 1000 / *c.price : *rate;
      }
    }
    if (!rejection.empty()) {
      result.rejected.push_back({&g, rejection});
      continue;
    }
    if (c.price) {
      c.reasons.push_back(fmt::format("{:.1f} GFLOP/s per {} ({}{})", c.rate * 1000 / *c.price,
                                      usd ? "dollar" : unit, score_key,
                                      usd ? "" : ", at " + money(*c.price, unit, false)));
    }
    if (!usd && g.price_usd) {
      c.reasons.push_back(fmt::format("launch price ${:g}: {:.1f} GFLOP/s per dollar", *g.price_usd,
                                      c.rate * 1000 / *g.price_usd));
    }
    result.ranked.push_back(std::move(c));
  }
  std::stable_sort(result.ranked.begin(), result.ranked.end(),
                   [by](const pick_candidate& a, const pick_candidate& b) {
                     if (a.score != b.score) return a.score > b.score;
                     if (by == rank_by::value && a.rate != b.rate) return a.rate > b.rate;
                     return a.price.value_or(1e18) < b.price.value_or(1e18);
                   });
  return result;
}

pick_result pick_gpus(const gpu_database& db, const pick_request& request) {
  if (request.budget_usd) detail::check_real("--budget", *request.budget_usd, 0.0, 1e12, true);
  detail::check_integer("--top", request.top, 1, 1000000);
  if (request.by != "rate" && request.by != "value") {
    throw invalid_argument("--by: '" + request.by + "' is not one of rate, value");
  }
  const rank_by by = request.by == "value" ? rank_by::value : rank_by::rate;
  if (request.prices.empty()) return pick_gpus(db, request.budget_usd, request.needs, nullptr, by);
  const price_list prices = parse_price_list(db, read_input_file(request.prices), request.prices);
  return pick_gpus(db, request.budget_usd, request.needs, &prices, by);
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
                      {"rate", c.rate},
                      {"price", c.price ? nlohmann::json(*c.price) : nlohmann::json(nullptr)},
                      {"price_usd", c.gpu->price_usd ? nlohmann::json(*c.gpu->price_usd)
                                                     : nlohmann::json(nullptr)},
                      {"reasons", c.reasons},
                      {"source", c.gpu->source_text()}});
  }
  nlohmann::json rejected = nlohmann::json::array();
  for (const auto& x : r.rejected)
    rejected.push_back({{"name", x.gpu->name}, {"reason", x.reason}});
  return {{"metric", r.metric},
          {"currency", r.currency},
          {"ranked", ranked},
          {"qualifying", r.ranked.size()},
          {"rejected", rejected}};
}

}  // namespace keel::perf
