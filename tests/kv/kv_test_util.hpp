// Helpers shared by keel::kv's tests.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "keel/kv/types.hpp"

namespace keel::kv::test {

// The Mooncake trace bundled in examples/kv (always present in a checkout).
inline std::string mooncake_trace() {
  return std::string(KEEL_SOURCE_DIR) + "/examples/kv/mooncake-synthetic.jsonl";
}

// The original Mooncake trace in the shared data folder next to the checkout, or "" when that
// folder is absent (tests that need it skip).
inline std::string shared_mooncake_trace() {
  const std::filesystem::path p =
      std::filesystem::path(KEEL_SHARED_DIR) / "traces" / "kvcache" / "mooncake-synthetic.jsonl";
  return std::filesystem::is_regular_file(p) ? p.string() : std::string();
}

// Chained "hashes" for tests: block j of a path through a tree of prefixes. Distinct paths get
// distinct ids because the id encodes the whole path (like a real chained hash).
inline std::vector<block_hash> chain(const std::vector<std::uint32_t>& path) {
  std::vector<block_hash> out;
  block_hash h = 0x9e3779b97f4a7c15ULL;
  for (const std::uint32_t step : path) {
    h = (h ^ (step + 0x632be59bd9b4e019ULL)) * 0xff51afd7ed558ccdULL;
    h ^= h >> 29;
    out.push_back(h);
  }
  return out;
}

}  // namespace keel::kv::test
