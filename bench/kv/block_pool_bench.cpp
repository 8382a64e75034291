// keel::kv::block_pool vs. the textbook LRU cache (std::unordered_map + std::list), side by side
// on the same request streams. One block-op = one block of a request looked up, referenced or
// allocated (evicting if needed), and freed again. items_per_second is block-ops per second.
//
//   mooncake: the bundled Mooncake trace (3,993 requests, 121,877 blocks) at 3M tokens of cache
//             (5,859 blocks of 512 tokens): lookups, misses and evictions as in production.
//   hot:      64 requests of 32 blocks sharing 8-block prefixes, all resident: the hit path.
// After the table it prints keel's rate over the textbook's for each workload (CPU time).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <list>
#include <map>
#include <string>
#include <unordered_map>

#include "keel/kv/block_pool.hpp"
#include "keel/kv/trace.hpp"
#include "ratio_reporter.hpp"

namespace {

using keel::kv::block_hash;

// The textbook LRU: a map from hash to a list node, most recent at the front. A request looks
// up its blocks in order (the prefix hit is the leading run of hits), touches each hit, inserts
// each miss and evicts from the back when full.
class textbook_lru {
 public:
  explicit textbook_lru(std::size_t capacity) : capacity_(capacity) { map_.reserve(capacity); }
  std::size_t request(const std::vector<block_hash>& hashes) {
    std::size_t prefix = 0;
    bool run = true;
    for (const block_hash h : hashes) {
      const auto it = map_.find(h);
      if (it != map_.end()) {
        lru_.splice(lru_.begin(), lru_, it->second);
        if (run) ++prefix;
        continue;
      }
      run = false;
      if (map_.size() == capacity_) {
        map_.erase(lru_.back());
        lru_.pop_back();
      }
      lru_.push_front(h);
      map_.emplace(h, lru_.begin());
    }
    return prefix;
  }

 private:
  std::size_t capacity_;
  std::list<block_hash> lru_;
  std::unordered_map<block_hash, std::list<block_hash>::iterator> map_;
};

struct workload {
  std::vector<std::vector<block_hash>> requests;
  std::vector<std::size_t> tokens;
  std::size_t blocks = 0;
  std::size_t block_size = 0;
  std::size_t capacity = 0;
};

const workload& mooncake() {
  static const workload w = [] {
    workload w;
    const auto t = keel::kv::load_trace(
        std::string(KEEL_SOURCE_DIR) + "/examples/kv/mooncake-synthetic.jsonl", 512);
    for (const auto& r : t.requests) {
      w.requests.push_back(r.hashes);
      w.tokens.push_back(r.input_length);
      w.blocks += r.hashes.size();
    }
    w.block_size = 512;
    w.capacity = 3'000'000 / 512;
    return w;
  }();
  return w;
}

const workload& hot() {
  static const workload w = [] {
    workload w;
    for (std::uint64_t r = 0; r < 64; ++r) {
      std::vector<block_hash> h;
      for (std::uint64_t j = 0; j < 32; ++j)
        h.push_back(j < 8 ? (r % 4) * 1000 + j : r * 1000 + j + 100000);
      w.blocks += h.size();
      w.tokens.push_back(32 * 16);
      w.requests.push_back(std::move(h));
    }
    w.block_size = 16;
    w.capacity = 4096;
    return w;
  }();
  return w;
}

void run_keel(benchmark::State& state, const workload& w) {
  keel::kv::block_pool pool({w.capacity, w.block_size, true}, keel::kv::make_policy("lru"));
  std::size_t hits = 0;
  for (auto _ : state) {
    for (std::size_t i = 0; i < w.requests.size(); ++i) {
      hits += pool.lookup(w.requests[i], w.tokens[i]);
      auto seq = pool.allocate(w.requests[i], w.tokens[i]);
      pool.release(*seq);
    }
  }
  benchmark::DoNotOptimize(hits);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * w.blocks));
  state.counters["block_hit_rate"] =
      static_cast<double>(pool.stats().hit_blocks) / static_cast<double>(pool.stats().query_blocks);
}

void run_textbook(benchmark::State& state, const workload& w) {
  textbook_lru cache(w.capacity);
  std::size_t hits = 0, queries = 0;
  for (auto _ : state) {
    for (const auto& r : w.requests) {
      hits += cache.request(r);
      queries += r.size();
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * w.blocks));
  state.counters["block_hit_rate"] = static_cast<double>(hits) / static_cast<double>(queries);
}

void BM_keel_block_pool_mooncake(benchmark::State& s) { run_keel(s, mooncake()); }
void BM_textbook_lru_mooncake(benchmark::State& s) { run_textbook(s, mooncake()); }
void BM_keel_block_pool_hot(benchmark::State& s) { run_keel(s, hot()); }
void BM_textbook_lru_hot(benchmark::State& s) { run_textbook(s, hot()); }

BENCHMARK(BM_keel_block_pool_mooncake)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_textbook_lru_mooncake)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_keel_block_pool_hot)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_textbook_lru_hot)->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  keel::bench::ratio_reporter reporter("items_per_second",
                                       {"BM_keel_block_pool_", "keel block_pool",
                                        "BM_textbook_lru_", "textbook LRU", "M block-ops/s", 1},
                                       {"mooncake", "hot"});
  return keel::bench::run_with_ratios(argc, argv, reporter);
}
