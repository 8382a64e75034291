// The text `keel kv replay|sweep` prints (report.hpp's to_text).
#include <fmt/format.h>

#include <iterator>
#include <map>
#include <utility>

#include "keel/kv/report.hpp"

namespace keel::kv {
namespace {

template <class... Args>
void put(std::string& out, fmt::format_string<Args...> f, Args&&... args) {
  fmt::format_to(std::back_inserter(out), f, std::forward<Args>(args)...);
}

std::string capacity_text(std::optional<std::size_t> blocks, std::size_t block_size) {
  if (!blocks) return "inf";
  return fmt::format("{} blocks ({} tokens)", *blocks, *blocks * block_size);
}

}  // namespace

std::string to_text(const replay_report& rep) {
  const replay_result& r = rep.result;
  std::string out;
  put(out, "trace      {} ({} requests, {} tokens per block)\n", rep.source, r.requests,
      rep.block_size);
  put(out, "cache      {}, policy {}, index {}, {} mode\n",
      capacity_text(r.capacity_blocks, rep.block_size), r.policy, r.index,
      rep.hold ? "hold" : "instant");
  put(out, "hit rate   {:.2f}% of prompt tokens, {:.2f}% of blocks\n", 100 * r.hit_rate_tokens,
      100 * r.hit_rate_blocks);
  put(out, "ceiling    {:.2f}% with an infinite cache\n", 100 * r.infinite_hit_rate_tokens);
  put(out, "evictions  {}\n", r.evictions);
  if (rep.hold) {
    put(out, "held       peak {} blocks, {} requests rejected for lack of free blocks\n",
        r.peak_held_blocks, r.rejected);
  }
  put(out, "time       {:.1f} ms replay, {:.1f} ms loading the trace\n", r.elapsed_ms, rep.load_ms);
  return out;
}

std::string to_text(const sweep_report& rep) {
  std::map<std::pair<std::size_t, std::string>, double> at;
  for (const sweep_point& p : rep.points) at[{p.capacity_blocks, p.policy}] = p.hit_rate_tokens;
  std::string out;
  put(out, "{} ({} requests, {}-token blocks, {} mode): token hit rate, infinite {:.2f}%\n",
      rep.source, rep.requests, rep.block_size, rep.hold ? "hold" : "instant",
      100 * rep.infinite_hit_rate_tokens);
  put(out, "{:>14} {:>8}", "tokens", "blocks");
  for (const std::string& p : rep.policies) put(out, " {:>8}", p);
  out += "\n";
  for (const std::size_t c : rep.capacities_blocks) {
    put(out, "{:>14} {:>8}", c * rep.block_size, c);
    for (const std::string& p : rep.policies) put(out, " {:>7.2f}%", 100 * at[{c, p}]);
    out += "\n";
  }
  if (rep.svg) put(out, "chart: {}\n", *rep.svg);
  put(out, "{} replays in {:.0f} ms\n", rep.points.size(), rep.elapsed_ms);
  return out;
}

}  // namespace keel::kv
