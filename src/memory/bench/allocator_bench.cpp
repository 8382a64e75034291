// The allocator benchmark (keel/memory/allocator_bench.hpp): workloads, the allocators under
// test, the replay and its two clocks.
#include "keel/memory/allocator_bench.hpp"

#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <time.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "keel/core/error.hpp"
#include "keel/core/input_file.hpp"
#include "keel/memory/caching_allocator.hpp"
#include "keel/memory/host_backend.hpp"
#include "keel/memory/snapshot.hpp"

namespace keel::memory {
namespace {

// Builds a workload from alloc/free calls, reusing freed slots (LIFO) so that slot arrays stay
// small and hot, as a program's live tensors are.
class workload_builder {
 public:
  explicit workload_builder(std::string source) { w_.source = std::move(source); }

  std::uint32_t alloc(std::uint64_t size) {
    std::uint32_t id;
    if (free_slots_.empty()) {
      id = static_cast<std::uint32_t>(w_.slots++);
      sizes_.push_back(0);
    } else {
      id = free_slots_.back();
      free_slots_.pop_back();
    }
    sizes_[id] = size;
    w_.events.push_back(bench_event{size, id, false});
    ++w_.pairs;
    if (size <= k_small_size) ++w_.small_pairs;
    w_.bytes += size;
    live_ += size;
    w_.peak_live_bytes = std::max(w_.peak_live_bytes, live_);
    return id;
  }
  void free(std::uint32_t id) {
    w_.events.push_back(bench_event{sizes_[id], id, true});
    live_ -= sizes_[id];
    free_slots_.push_back(id);
  }
  std::size_t pairs() const noexcept { return w_.pairs; }
  bench_workload finish() { return std::move(w_); }

 private:
  bench_workload w_;
  std::vector<std::uint64_t> sizes_;
  std::vector<std::uint32_t> free_slots_;
  std::uint64_t live_ = 0;
};

class caching_under_test final : public bench_allocator {
 public:
  caching_under_test(const std::string& config, std::size_t capacity)
      : backend_(capacity), allocator_(backend_, allocator_config::parse(config, "mem bench")) {}
  void* allocate(std::size_t size) override {
    return reinterpret_cast<void*>(allocator_.allocate(size));
  }
  void deallocate(void* p) override { allocator_.deallocate(reinterpret_cast<std::uint64_t>(p)); }
  nlohmann::json context() const override {
    const memory_stats s = allocator_.stats();
    return {{"config", allocator_.config().to_string()},
            {"peak_reserved_bytes", s.reserved_bytes[k_all].peak},
            {"peak_allocated_bytes", s.allocated_bytes[k_all].peak},
            {"device_allocs", s.num_device_alloc},
            {"device_frees", s.num_device_free}};
  }

 private:
  host_backend backend_;
  caching_allocator allocator_;
};

using malloc_fn = void* (*)(std::size_t);
using free_fn = void (*)(void*);

class c_under_test final : public bench_allocator {
 public:
  c_under_test(malloc_fn m, free_fn f, std::string library)
      : malloc_(m), free_(f), library_(std::move(library)) {}
  void* allocate(std::size_t size) override { return malloc_(size); }
  void deallocate(void* p) override { free_(p); }
  nlohmann::json context() const override { return {{"library", library_}}; }

 private:
  malloc_fn malloc_;
  free_fn free_;
  std::string library_;
};

// Loads a malloc/free pair from a shared library without making it the process's malloc.
// Returns an error message instead when the library or a symbol is missing.
std::unique_ptr<bench_allocator> load_peer(const char* library, const char* malloc_name,
                                           const char* free_name, std::string& error) {
  void* handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);  // never closed: it owns live memory
  if (handle == nullptr) {
    const char* reason = dlerror();
    error =
        fmt::format("cannot load {}: {}", library, reason != nullptr ? reason : "unknown error");
    return nullptr;
  }
  void* m = dlsym(handle, malloc_name);
  void* f = dlsym(handle, free_name);
  if (m == nullptr || f == nullptr) {
    error = fmt::format("{} has no {} / {}", library, malloc_name, free_name);
    return nullptr;
  }
  return std::make_unique<c_under_test>(reinterpret_cast<malloc_fn>(m),
                                        reinterpret_cast<free_fn>(f), library);
}

std::uint8_t tag_of(std::uint32_t id, std::uint64_t size) {
  return static_cast<std::uint8_t>(std::uint64_t{id} * 131u + size * 7u + 1u);
}

// Replays the whole sequence once; returns the number of blocks whose tag was overwritten.
std::size_t replay(const bench_workload& w, bench_allocator& a, std::vector<std::uint8_t*>& slots) {
  std::size_t corrupted = 0;
  for (const bench_event& e : w.events) {
    if (!e.is_free) {
      auto* p = static_cast<std::uint8_t*>(a.allocate(e.size));
      if (p == nullptr) throw std::bad_alloc();
      const std::uint8_t tag = tag_of(e.id, e.size);
      p[0] = tag;
      p[e.size - 1] = tag;
      slots[e.id] = p;
    } else {
      std::uint8_t* p = slots[e.id];
      const std::uint8_t tag = tag_of(e.id, e.size);
      corrupted += p[0] != tag || p[e.size - 1] != tag;
      a.deallocate(p);
    }
  }
  return corrupted;
}

double thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

}  // namespace

// One training step of a 12-layer decoder (hidden 1024, 16 heads, batch 4 x 512 tokens, bf16
// activations, fp32 Adam state), at the granularity of PyTorch's allocator calls: parameters
// and optimizer state live across steps; each layer's forward saves activations that its
// backward frees in reverse order; attention scores, transposed copies and MLP intermediates
// are short-lived; weight gradients live until the optimizer step; every op also makes small
// scalars, statistics and workspaces (half of all requests are <= 1 MiB).
bench_workload transformer_mix(std::size_t target_pairs) {
  constexpr std::uint64_t k_layers = 12, k_hidden = 1024, k_heads = 16, k_batch = 4, k_seq = 512,
                          k_vocab = 8192, k_bf16 = 2, k_fp32 = 4;
  constexpr std::uint64_t k_tokens = k_batch * k_seq;
  constexpr std::uint64_t k_act = k_tokens * k_hidden * k_bf16;                   // 4 MiB
  constexpr std::uint64_t k_scores = k_batch * k_heads * k_seq * k_seq * k_bf16;  // 32 MiB
  constexpr std::uint64_t k_mask = k_scores / 2;            // dropout mask, bytes
  constexpr std::uint64_t k_row_stats = k_tokens * k_fp32;  // layernorm mean/rstd
  const std::vector<std::uint64_t> layer_params = {3 * k_hidden * k_hidden * k_bf16,
                                                   3 * k_hidden * k_bf16,  // qkv weight, bias
                                                   k_hidden * k_hidden * k_bf16,
                                                   k_hidden * k_bf16,  // attention projection
                                                   4 * k_hidden * k_hidden * k_bf16,
                                                   4 * k_hidden * k_bf16,  // fc1
                                                   4 * k_hidden * k_hidden * k_bf16,
                                                   k_hidden * k_bf16,  // fc2
                                                   k_hidden * k_bf16,
                                                   k_hidden * k_bf16,  // ln1 weight, bias
                                                   k_hidden * k_bf16,
                                                   k_hidden * k_bf16};  // ln2 weight, bias

  workload_builder b("built-in transformer training-step mix");
  std::mt19937_64 rng(20240229);
  const auto small_temporaries = [&](int n) {
    static constexpr std::uint64_t k_small[] = {4, 8, 512, 2048, 8192, 32768, 131072, 524288};
    std::vector<std::uint32_t> held;
    for (int i = 0; i < n; ++i) {
      held.push_back(b.alloc(k_small[rng() % std::size(k_small)] + rng() % 64));
      if (rng() % 2 == 0) {  // most die at once, some survive a few ops
        b.free(held.back());
        held.pop_back();
      }
    }
    for (auto it = held.rbegin(); it != held.rend(); ++it) b.free(*it);
  };

  // Persistent: embedding, parameters, Adam's exp_avg and exp_avg_sq (fp32).
  std::vector<std::uint64_t> params = {k_vocab * k_hidden * k_bf16};
  for (std::uint64_t l = 0; l < k_layers; ++l)
    params.insert(params.end(), layer_params.begin(), layer_params.end());
  std::vector<std::uint32_t> persistent;
  persistent.reserve(2 * params.size());
  for (std::uint64_t p : params) persistent.push_back(b.alloc(p));
  for (std::uint64_t p : params) {
    persistent.push_back(b.alloc(p / k_bf16 * k_fp32));
    persistent.push_back(b.alloc(p / k_bf16 * k_fp32));
  }

  while (b.pairs() < target_pairs) {
    // forward
    std::vector<std::vector<std::uint32_t>> saved(k_layers);
    const std::uint32_t embedded = b.alloc(k_act);
    std::uint32_t x = embedded;
    for (std::uint64_t l = 0; l < k_layers; ++l) {
      auto& s = saved[l];
      s.push_back(b.alloc(k_act));        // ln1 out
      s.push_back(b.alloc(k_row_stats));  // ln1 mean
      s.push_back(b.alloc(k_row_stats));  // ln1 rstd
      small_temporaries(5);
      s.push_back(b.alloc(3 * k_act));  // qkv
      // head-major copies
      std::uint32_t q = b.alloc(k_act), k = b.alloc(k_act), v = b.alloc(k_act);
      const std::uint32_t sc = b.alloc(k_scores);
      small_temporaries(3);
      s.push_back(b.alloc(k_scores));  // softmax probabilities
      b.free(sc);
      s.push_back(b.alloc(k_mask));  // dropout mask
      s.push_back(b.alloc(k_act));   // attention output
      b.free(q), b.free(k), b.free(v);
      const std::uint32_t proj = b.alloc(k_act);
      s.push_back(b.alloc(k_act));  // residual
      b.free(proj);
      s.push_back(b.alloc(k_act));        // ln2 out
      s.push_back(b.alloc(k_row_stats));  // ln2 mean
      s.push_back(b.alloc(k_row_stats));  // ln2 rstd
      small_temporaries(5);
      s.push_back(b.alloc(4 * k_act));  // fc1 out
      s.push_back(b.alloc(4 * k_act));  // gelu out
      const std::uint32_t fc2 = b.alloc(k_act);
      const std::uint32_t next = b.alloc(k_act);  // residual: the next layer's input
      b.free(fc2);
      s.push_back(x);
      x = next;
      small_temporaries(3);
    }
    const std::uint32_t final_ln = b.alloc(k_act);
    const std::uint32_t logits = b.alloc(k_tokens * k_vocab * k_bf16);
    small_temporaries(4);  // loss, its scalars
    // backward
    const std::uint32_t grad_logits = b.alloc(k_tokens * k_vocab * k_bf16);
    b.free(logits);
    std::uint32_t grad = b.alloc(k_act);
    b.free(grad_logits);
    b.free(final_ln);
    b.free(x);
    std::vector<std::uint32_t> grads;
    const std::uint32_t embedding_grad = b.alloc(params[0]);
    for (std::uint64_t l = k_layers; l-- > 0;) {
      auto& s = saved[l];
      for (std::size_t i = 0; i < layer_params.size(); ++i) {
        grads.push_back(b.alloc(layer_params[i]));
        if (i % 2 == 1) small_temporaries(1);  // bias-gradient reductions
      }
      const std::uint32_t g_gelu = b.alloc(4 * k_act);
      const std::uint32_t g_fc1 = b.alloc(4 * k_act);
      b.free(g_gelu);
      const std::uint32_t g_ln2 = b.alloc(k_act);
      b.free(g_fc1);
      const std::uint32_t g_probs = b.alloc(k_scores);
      const std::uint32_t g_scores = b.alloc(k_scores);
      b.free(g_probs);
      const std::uint32_t g_qkv = b.alloc(3 * k_act);
      b.free(g_scores);
      small_temporaries(4);
      const std::uint32_t g_x = b.alloc(k_act);
      b.free(g_qkv);
      b.free(g_ln2);
      b.free(grad);
      grad = g_x;
      for (auto it = s.rbegin(); it != s.rend(); ++it) b.free(*it);
      small_temporaries(4);
    }
    b.free(grad);
    // optimizer: one fp32 temporary per parameter (sqrt of exp_avg_sq), then gradients go
    for (std::uint64_t p : params) {
      b.free(b.alloc(p / k_bf16 * k_fp32));
    }
    small_temporaries(6);
    for (std::uint32_t g : grads) b.free(g);
    b.free(embedding_grad);
  }
  for (auto it = persistent.rbegin(); it != persistent.rend(); ++it) b.free(*it);
  return b.finish();
}

// The alloc/free sequence of every device trace in a snapshot. Blocks alive when the trace ends
// are freed at its end; frees of blocks allocated before the trace began are skipped.
bench_workload trace_workload(const std::string& path, std::size_t target_pairs) {
  keel::check_input_file(path);
  const snapshot s = read_snapshot(path);
  workload_builder b(path);
  std::size_t trace_pairs = 0;
  for (const auto& trace : s.device_traces) {
    for (const trace_entry& e : trace) trace_pairs += e.action == trace_action::alloc && e.size > 0;
  }
  if (trace_pairs == 0) {
    throw invalid_argument(
        fmt::format("{}: the snapshot has no alloc events to replay (record it with "
                    "torch.cuda.memory._record_memory_history() before the workload)",
                    path));
  }
  do {
    for (const auto& trace : s.device_traces) {
      std::unordered_map<std::uint64_t, std::uint32_t> live;  // address -> slot
      std::vector<std::uint32_t> order;
      for (const trace_entry& e : trace) {
        if (e.action == trace_action::alloc && e.size > 0) {
          const auto [it, inserted] = live.emplace(e.addr, 0);
          if (!inserted) b.free(it->second);  // a missing free in a truncated trace
          it->second = b.alloc(e.size);
        } else if (e.action == trace_action::free_requested) {
          const auto it = live.find(e.addr);
          if (it == live.end()) continue;
          b.free(it->second);
          live.erase(it);
        }
      }
      std::vector<std::uint32_t> rest;
      rest.reserve(live.size());
      for (const auto& [address, slot] : live) rest.push_back(slot);
      std::sort(rest.rbegin(), rest.rend());
      for (std::uint32_t slot : rest) b.free(slot);
    }
  } while (b.pairs() < target_pairs);
  return b.finish();
}

std::unique_ptr<bench_allocator> make_bench_allocator(const std::string& name, std::size_t capacity,
                                                      std::string& error) {
  if (name == "keel") return std::make_unique<caching_under_test>("policy:keel", capacity);
  if (name == "pytorch") return std::make_unique<caching_under_test>("policy:pytorch", capacity);
  if (name == "glibc") return std::make_unique<c_under_test>(&std::malloc, &std::free, "libc.so.6");
  if (name == "jemalloc") return load_peer("libjemalloc.so.2", "malloc", "free", error);
  if (name == "mimalloc") return load_peer("libmimalloc.so.2", "mi_malloc", "mi_free", error);
  throw invalid_argument(fmt::format("unknown allocator '{}' (allowed: {})", name,
                                     fmt::join(bench_allocator_names(), ", ")));
}

bool needs_static_tls(const std::string& error) {
  return error.find("static TLS") != std::string::npos;
}

// A warm-up pass, then `repeat` timed passes; each pass runs `threads` replays at once against
// the same allocator. Two clocks: the CPU time of the replaying threads (user + kernel, so page
// faults and system calls count, time spent descheduled or asleep on a lock does not) per
// alloc+free pair, and wall time * threads per pair, which equals the CPU figure when threads
// run in parallel without waiting and grows with lock contention (and with threads > cores).
bench_timing measure(const bench_workload& w, bench_allocator& a, int threads, int repeat) {
  bench_timing out;
  const auto n = static_cast<std::size_t>(threads);
  std::vector<std::vector<std::uint8_t*>> slots(n, std::vector<std::uint8_t*>(w.slots));
  std::size_t corrupted = 0;
  for (int pass = 0; pass <= repeat; ++pass) {
    std::chrono::steady_clock::time_point start;
    std::barrier sync(threads + 1, [&]() noexcept { start = std::chrono::steady_clock::now(); });
    std::vector<std::size_t> bad(n, 0);
    std::vector<double> cpu(n, 0.0);
    std::vector<std::exception_ptr> errors(n);
    std::vector<std::thread> workers;
    for (std::size_t t = 0; t < n; ++t) {
      workers.emplace_back([&, t] {
        sync.arrive_and_wait();
        const double begin = thread_cpu_ns();
        try {
          bad[t] = replay(w, a, slots[t]);
        } catch (...) {
          errors[t] = std::current_exception();
        }
        cpu[t] = thread_cpu_ns() - begin;
      });
    }
    sync.arrive_and_wait();
    for (std::thread& t : workers) t.join();
    const auto stop = std::chrono::steady_clock::now();
    for (const auto& e : errors) {
      if (e) std::rethrow_exception(e);
    }
    for (std::size_t b : bad) corrupted += b;
    if (pass == 0) continue;  // warm-up
    const double pairs = static_cast<double>(w.pairs) * threads;
    double cpu_total = 0;
    for (double c : cpu) cpu_total += c;
    out.cpu_ns_per_op.push_back(cpu_total / pairs);
    out.wall_ns_per_op.push_back(std::chrono::duration<double, std::nano>(stop - start).count() *
                                 threads / pairs);
  }
  if (corrupted > 0) {
    throw std::runtime_error(
        fmt::format("{} blocks were overwritten while live: the allocator handed "
                    "out overlapping memory",
                    corrupted));
  }
  out.context = a.context();
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
const std::vector<std::string>& bench_allocator_names() {
  static const std::vector<std::string> names = {"keel", "pytorch", "glibc", "jemalloc",
                                                 "mimalloc"};
  return names;
}

std::vector<std::string> parse_bench_allocators(const std::string& list) {
  const std::vector<std::string>& known = bench_allocator_names();
  std::vector<std::string> names;
  std::stringstream in(list);
  for (std::string name; std::getline(in, name, ',');) {
    if (name.empty()) continue;
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      throw invalid_argument(fmt::format("--allocators: unknown allocator '{}' (allowed: {})", name,
                                         fmt::join(known, ", ")));
    }
    names.push_back(name);
  }
  if (names.empty()) throw invalid_argument("--allocators: no allocator named");
  return names;
}

namespace {

// make_bench_allocator, telling the program when jemalloc wants more static TLS.
std::unique_ptr<bench_allocator> make_for_run(const std::string& name, const bench_options& o,
                                              std::string& error) {
  auto a = make_bench_allocator(name, o.capacity, error);
  if (!a && name == "jemalloc" && needs_static_tls(error) && o.on_static_tls_shortage) {
    o.on_static_tls_shortage();
  }
  return a;
}

}  // namespace

bench_result run_allocator_bench(const bench_options& o) {
  const std::vector<std::string> names = parse_bench_allocators(o.allocators);
  if (std::find(names.begin(), names.end(), "jemalloc") != names.end()) {
    std::string error;
    make_for_run("jemalloc", o, error);  // loads it now, or lets the program make room for its TLS
  }
  const bench_workload w = o.trace.empty() ? transformer_mix(o.ops == 0 ? 20000 : o.ops)
                                           : trace_workload(o.trace, o.ops);

  nlohmann::json results = nlohmann::json::array();
  std::map<std::string, double> ns;
  for (const std::string& name : names) {
    std::string error;
    std::unique_ptr<bench_allocator> a = make_for_run(name, o, error);
    if (!a) {
      results.push_back({{"allocator", name}, {"ns_per_op", nullptr}, {"error", error}});
      continue;
    }
    const bench_timing t = measure(w, *a, o.threads, o.repeat);
    const double m = median(t.cpu_ns_per_op);
    ns[name] = m;
    results.push_back(
        {{"allocator", name},
         {"ns_per_op", m},
         {"ns_per_op_min", *std::min_element(t.cpu_ns_per_op.begin(), t.cpu_ns_per_op.end())},
         {"wall_ns_per_op", median(t.wall_ns_per_op)},
         {"context", t.context}});
  }
  for (auto& r : results) {
    if (!r["ns_per_op"].is_null() && ns.count("keel") != 0)
      r["vs_keel"] = r["ns_per_op"].get<double>() / ns["keel"];
  }

  nlohmann::json doc;
  doc["workload"] = {
      {"source", w.source},
      {"pairs", w.pairs},
      {"small_fraction", static_cast<double>(w.small_pairs) / static_cast<double>(w.pairs)},
      {"mean_request_bytes", static_cast<double>(w.bytes) / static_cast<double>(w.pairs)},
      {"peak_live_bytes", w.peak_live_bytes}};
  doc["capacity_bytes"] = o.capacity;
  doc["threads"] = o.threads;
  doc["repeat"] = o.repeat;
  doc["clocks"] = {{"ns_per_op",
                    "CPU time of the replaying threads (user + system) per alloc+free pair; median "
                    "of the timed passes"},
                   {"wall_ns_per_op",
                    "wall time * threads per alloc+free pair; exceeds ns_per_op by the time "
                    "threads waited (locks, or threads > cores)"}};
  doc["hardware_threads"] = std::thread::hardware_concurrency();
  doc["results"] = results;
  nlohmann::json targets = nlohmann::json::object();
  if (ns.count("keel") != 0 && ns.count("mimalloc") != 0) {
    targets["keel_over_mimalloc"] = ns["keel"] / ns["mimalloc"];
    targets["keel_within_1_5x_mimalloc"] = ns["keel"] <= 1.5 * ns["mimalloc"];
  }
  if (ns.count("keel") != 0 && ns.count("glibc") != 0) {
    targets["keel_over_glibc"] = ns["keel"] / ns["glibc"];
    targets["keel_faster_than_glibc"] = ns["keel"] < ns["glibc"];
  }
  doc["targets"] = targets;

  bench_result out;
  out.source = w.source;
  out.pairs = w.pairs;
  out.small_pairs = w.small_pairs;
  out.bytes = w.bytes;
  out.peak_live_bytes = w.peak_live_bytes;
  out.threads = o.threads;
  out.repeat = o.repeat;
  out.document = std::move(doc);
  return out;
}

std::string to_text(const bench_result& r) {
  std::string out = fmt::format(
      "workload: {}\n  {} alloc+free pairs per thread, {:.0f}% <= 1 MiB, mean request {}, "
      "peak live {}\n  {} thread{}, median of {} timed passes after one warm-up pass\n\n",
      r.source, r.pairs, 100.0 * static_cast<double>(r.small_pairs) / static_cast<double>(r.pairs),
      format_size(static_cast<std::size_t>(r.bytes / r.pairs)), format_size(r.peak_live_bytes),
      r.threads, r.threads == 1 ? "" : "s", r.repeat);
  out += fmt::format("{:<10} {:>12} {:>14} {:>10}\n", "allocator", "ns/op (cpu)", "ns/op (wall)",
                     "vs keel");
  for (const auto& row : r.document.at("results")) {
    if (row["ns_per_op"].is_null()) {
      out += fmt::format("{:<10} {:>12}   ({})\n", row["allocator"].get<std::string>(), "n/a",
                         row["error"].get<std::string>());
      continue;
    }
    out += fmt::format(
        "{:<10} {:>12.1f} {:>14.1f} {:>10}\n", row["allocator"].get<std::string>(),
        row["ns_per_op"].get<double>(), row["wall_ns_per_op"].get<double>(),
        row.contains("vs_keel") ? fmt::format("{:.2f}x", row["vs_keel"].get<double>()) : "");
  }
  const nlohmann::json& targets = r.document.at("targets");
  if (targets.contains("keel_over_mimalloc")) {
    out += fmt::format("\nkeel / mimalloc = {:.2f} (target <= 1.5)",
                       targets["keel_over_mimalloc"].get<double>());
  }
  if (targets.contains("keel_over_glibc")) {
    out += fmt::format("; keel / glibc = {:.2f} (target < 1)",
                       targets["keel_over_glibc"].get<double>());
  }
  out += "\n";
  return out;
}

}  // namespace keel::memory
