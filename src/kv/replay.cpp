#include "keel/kv/replay.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "keel/core/error.hpp"

namespace keel::kv {
namespace {

std::size_t blocks_of(const trace& t, const trace_request& r) {
  return r.input_length / t.block_size + (r.input_length % t.block_size != 0);
}

// Room for every block the trace ever names, plus one request's private blocks.
std::size_t unbounded_capacity(const trace& t) {
  std::unordered_set<block_hash> distinct;
  std::size_t unhashed = 0;
  std::size_t largest = 0;
  for (const trace_request& r : t.requests) {
    distinct.insert(r.hashes.begin(), r.hashes.end());
    unhashed += blocks_of(t, r) - r.hashes.size();
    largest = std::max(largest, blocks_of(t, r));
  }
  return distinct.size() + unhashed + largest + 1;
}

// next[i][j]: the index (+1) of the next request that names requests[i].hashes[j].
std::vector<std::vector<std::uint64_t>> next_uses(const trace& t) {
  std::vector<std::vector<std::uint64_t>> next(t.requests.size());
  std::unordered_map<block_hash, std::uint64_t> upcoming;
  upcoming.reserve(t.requests.size() * 4);
  for (std::size_t i = t.requests.size(); i-- > 0;) {
    const auto& h = t.requests[i].hashes;
    next[i].resize(h.size());
    for (std::size_t j = 0; j < h.size(); ++j) {
      const auto it = upcoming.find(h[j]);
      next[i][j] = it == upcoming.end() ? k_never : it->second;
    }
    for (const block_hash x : h) upcoming[x] = i + 1;
  }
  return next;
}

struct running {
  double finish_ms;
  std::size_t id;
  bool operator>(const running& o) const {
    return finish_ms != o.finish_ms ? finish_ms > o.finish_ms : id > o.id;
  }
};

replay_result replay_once(const trace& t, const replay_options& options);

}  // namespace

replay_result replay(const trace& t, const replay_options& options) {
  replay_result result = replay_once(t, options);
  if (options.capacity_blocks || options.hold) {
    result.infinite_hit_rate_tokens = infinite_hit_rate(t, options.cap_hit_at_last_token);
  }
  return result;
}

std::optional<std::size_t> parse_capacity(const std::string& text, std::size_t block_size) {
  auto bad = [&](const char* why) {
    return keel::invalid_argument(fmt::format(
        "capacity '{}': {} (expected inf, or N[k|M|G][tokens|blocks], e.g. 3M or 5859blocks)", text,
        why));
  };
  std::string s;
  for (const char c : text) {
    if (c != ' ' && c != '_' && c != ',') s += c;
  }
  if (s == "inf" || s == "infinite") return std::nullopt;
  if (block_size == 0) throw bad("block size is 0");
  bool blocks = false;
  for (const char* unit : {"blocks", "block", "tokens", "token"}) {
    const std::string u = unit;
    if (s.size() > u.size() && s.compare(s.size() - u.size(), u.size(), u) == 0) {
      blocks = u[0] == 'b';
      s.resize(s.size() - u.size());
      break;
    }
  }
  double scale = 1;
  if (!s.empty()) {
    switch (s.back()) {
      case 'k':
      case 'K': scale = 1e3; break;
      case 'M': scale = 1e6; break;
      case 'G': scale = 1e9; break;
      default: break;
    }
    if (scale != 1) s.pop_back();
  }
  if (s.empty() || s.find_first_not_of("0123456789.") != std::string::npos ||
      s.find('.') != s.rfind('.')) {
    throw bad("not a number");
  }
  const double value = std::stod(s) * scale;
  if (!(value < 1e15)) throw bad("too large");
  const auto count = static_cast<std::size_t>(std::llround(value));
  const std::size_t result = blocks ? count : count / block_size;
  if (result == 0) throw bad("less than one block");
  return result;
}

double infinite_hit_rate(const trace& t, bool cap_hit_at_last_token) {
  replay_options o;
  o.cap_hit_at_last_token = cap_hit_at_last_token;
  return replay_once(t, o).hit_rate_tokens;
}

namespace {

replay_result replay_once(const trace& t, const replay_options& options) {
  if (t.block_size == 0) throw keel::invalid_argument("replay: trace has block size 0");
  if (options.capacity_blocks && *options.capacity_blocks == 0) {
    throw keel::invalid_argument("replay: capacity must be at least one block");
  }
  // A cache larger than everything the trace can place in it never evicts, so it answers as
  // that size does: the pool (and the index) are sized by the smaller of the two, and a
  // "10G" or "1Gblocks" capacity costs no more memory than "inf".
  const std::size_t needed = unbounded_capacity(t);
  const std::size_t capacity =
      options.capacity_blocks ? std::min(*options.capacity_blocks, needed) : needed;
  auto policy = make_policy(options.policy);
  auto index = make_index(options.index, capacity);
  const bool offline = policy->offline();
  const auto next = offline ? next_uses(t) : std::vector<std::vector<std::uint64_t>>{};

  const auto start = std::chrono::steady_clock::now();
  block_pool pool({capacity, t.block_size, options.cap_hit_at_last_token}, std::move(policy),
                  std::move(index));
  replay_result result;
  result.policy = options.policy;
  result.index = options.index;
  result.capacity_blocks = options.capacity_blocks;
  result.requests = t.requests.size();

  std::uint64_t rejected_tokens = 0;
  std::uint64_t rejected_blocks = 0;
  std::vector<sequence> held(options.hold ? t.requests.size() : 0);
  std::priority_queue<running, std::vector<running>, std::greater<>> active;
  for (std::size_t i = 0; i < t.requests.size(); ++i) {
    const trace_request& r = t.requests[i];
    request_hints hints;
    hints.time = i + 1;
    if (offline) hints.next_use = next[i];
    if (!options.hold) {
      auto seq = pool.allocate(r.hashes, r.input_length, hints);
      if (!seq) {
        throw keel::invalid_argument(
            fmt::format("replay: request {} needs {} blocks but the cache holds only {}", i,
                        blocks_of(t, r), capacity));
      }
      pool.release(*seq);
      continue;
    }
    const auto now = static_cast<double>(r.timestamp_ms);
    while (!active.empty() && active.top().finish_ms <= now) {
      pool.release(held[active.top().id]);
      active.pop();
    }
    const std::uint64_t hits_before = pool.stats().hit_tokens;
    auto seq = pool.allocate(r.hashes, r.input_length, hints);
    if (!seq) {
      ++result.rejected;
      rejected_tokens += r.input_length;
      rejected_blocks += r.hashes.size();
      continue;
    }
    const auto hit = static_cast<double>(pool.stats().hit_tokens - hits_before);
    const double prefill_ms =
        (static_cast<double>(r.input_length) - hit) / options.model.prefill_tokens_per_s * 1000.0;
    const double decode_ms =
        static_cast<double>(r.output_length) * options.model.decode_ms_per_token;
    // Distinct blocks referenced now: a prefix shared by running requests is one set of blocks
    // (summing each request's blocks counted it once per request, past the pool's size).
    result.peak_held_blocks =
        std::max(result.peak_held_blocks, pool.num_blocks() - pool.free_blocks());
    held[i] = std::move(*seq);
    active.push({now + prefill_ms + decode_ms, i});
  }
  while (!active.empty()) {
    pool.release(held[active.top().id]);
    active.pop();
  }
  const auto stop = std::chrono::steady_clock::now();

  const pool_stats& s = pool.stats();
  const auto tokens = static_cast<double>(s.query_tokens + rejected_tokens);
  const auto blocks = static_cast<double>(s.query_blocks + rejected_blocks);
  result.hit_rate_tokens = tokens > 0 ? static_cast<double>(s.hit_tokens) / tokens : 0;
  result.hit_rate_blocks = blocks > 0 ? static_cast<double>(s.hit_blocks) / blocks : 0;
  result.evictions = s.evictions;
  result.elapsed_ms = std::chrono::duration<double, std::milli>(stop - start).count();
  result.infinite_hit_rate_tokens = result.hit_rate_tokens;
  return result;
}

}  // namespace

std::vector<sweep_point> sweep(const trace& t, std::span<const std::size_t> capacities_blocks,
                               std::span<const std::string> policies,
                               const replay_options& options) {
  std::vector<sweep_point> points;
  for (const std::string& p : policies) {
    for (const std::size_t c : capacities_blocks) {
      replay_options o = options;
      o.policy = p;
      o.capacity_blocks = c;
      const replay_result r = replay_once(t, o);
      points.push_back({p, c, r.hit_rate_tokens, r.hit_rate_blocks});
    }
  }
  return points;
}

}  // namespace keel::kv
