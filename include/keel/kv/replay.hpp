// Replaying a request trace against a block_pool: hit rates of eviction policies.
//
// Instant mode (the default) models an unbounded number of servers sharing one cache: each
// request, in timestamp order, looks up its prefix, then allocates and caches its blocks and
// releases them at once, so only the cache's capacity limits reuse. Hold mode (--hold) keeps a
// request's blocks referenced while it runs, for a time modelled from its lengths:
//     prefill_ms = (input_length - hit_tokens) / prefill_tokens_per_s * 1000
//     decode_ms  = output_length * decode_ms_per_token
// A request arriving at t releases every request that finished at or before t first. A request
// that finds too few free blocks (all held by running requests) is rejected: it counts as a
// query with no hit and caches nothing.
// The infinite-cache ceiling is the instant-mode hit rate with room for every block.
// Hit rates are token-weighted unless named otherwise. Thread-safe (no shared state).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "keel/kv/block_pool.hpp"
#include "keel/kv/trace.hpp"

namespace keel::kv {

struct hold_model {
  double prefill_tokens_per_s = 10000.0;  // uncached prompt tokens per second
  double decode_ms_per_token = 30.0;      // time per output token
};

struct replay_options {
  std::optional<std::size_t> capacity_blocks;  // nullopt: infinite
  std::string policy = "lru";
  std::string index = "hash";
  bool hold = false;
  hold_model model;
  bool cap_hit_at_last_token = true;
};

struct replay_result {
  std::string policy;
  std::string index;
  std::optional<std::size_t> capacity_blocks;
  std::size_t requests = 0;
  double hit_rate_tokens = 0;
  double hit_rate_blocks = 0;
  double infinite_hit_rate_tokens = 0;
  std::uint64_t evictions = 0;
  std::size_t rejected = 0;          // hold mode: requests that found no room
  std::size_t peak_held_blocks = 0;  // hold mode: most distinct blocks referenced at once
  double elapsed_ms = 0;             // the replay itself (trace already loaded)
};

// Parses a cache capacity as the CLI takes it: "inf" (or "infinite") for no limit, else a
// number with an optional k/M/G suffix (powers of 1000) and an optional unit "tokens" (the
// default) or "blocks": "3M", "10.24M tokens", "5859blocks". Tokens round down to whole blocks.
// Throws keel::invalid_argument for anything else or a capacity below one block.
std::optional<std::size_t> parse_capacity(const std::string& text, std::size_t block_size);

// The pool holds min(capacity, what the trace can use: its distinct hashed blocks, its
// unhashed blocks and one request's worth more) blocks, so a huge capacity allocates no more
// than an infinite one and answers the same (result.capacity_blocks is still the capacity
// asked for). Throws keel::invalid_argument for an unknown policy or index, a zero capacity,
// or a trace whose block size is zero.
replay_result replay(const trace& t, const replay_options& options);

// The instant-mode hit rate of a cache that never evicts.
double infinite_hit_rate(const trace& t, bool cap_hit_at_last_token = true);

struct sweep_point {
  std::string policy;
  std::size_t capacity_blocks = 0;
  double hit_rate_tokens = 0;
  double hit_rate_blocks = 0;
};

// Every policy at every capacity (instant or hold mode as options say; options.capacity_blocks
// and options.policy are ignored).
std::vector<sweep_point> sweep(const trace& t, std::span<const std::size_t> capacities_blocks,
                               std::span<const std::string> policies,
                               const replay_options& options);

// A self-contained SVG line chart: hit rate (tokens) vs. capacity (tokens, log axis), one line
// per policy, the infinite-cache ceiling dashed.
std::string sweep_svg(std::span<const sweep_point> points, double infinite_hit_rate,
                      std::size_t block_size, const std::string& title);

}  // namespace keel::kv
