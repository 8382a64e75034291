// allocator_bench — nanoseconds per alloc+free of keel's caching allocator (both policies, on
// the host backend, real memory) against glibc malloc, jemalloc and mimalloc, on one replayed
// sequence of allocation sizes and lifetimes, in one run (`keel mem bench`,
// docs/memory.md).
//
// The sequence (a bench_workload) is a built-in mix modelled on a transformer training step
// (transformer_mix), or the alloc/free trace of a PyTorch memory snapshot (trace_workload).
// Every allocator writes a tag into the first and last byte of each allocation and checks both
// at the free, so every allocator pays for touching the memory it hands out (page faults
// included) and overlapping blocks are caught. jemalloc and mimalloc are loaded with
// dlopen(RTLD_LOCAL) and called through their own symbols (Debian's jemalloc exports
// unprefixed malloc/free; mimalloc's mi_malloc/mi_free), so neither replaces the process's
// malloc; a loaded peer is never unloaded (it owns live memory).
//
// Workloads are immutable values; building them is pure (trace_workload reads one file).
// A bench_allocator is used by the threads of one measure() call at once (the caching
// allocator and the C allocators are thread-safe). run_allocator_bench never changes the
// process itself: when Debian's jemalloc cannot get the static TLS it needs from a dlopen, it
// calls bench_options::on_static_tls_shortage (the program may re-execute itself with more
// surplus reserved) and otherwise reports jemalloc's row as not loadable.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "keel/core/bytes.hpp"

namespace keel::memory {

// One call of the replayed sequence.
struct bench_event {
  std::uint64_t size;  // bytes asked for (also carried by the free, to check the last byte)
  std::uint32_t id;    // slot of the allocation, reused after its free
  bool is_free;
};

struct bench_workload {
  std::string source;  // what the sequence was made from, in words or as a path
  std::vector<bench_event> events;
  std::size_t slots = 0;  // distinct ids; every event's id is below this
  std::size_t pairs = 0;
  std::size_t small_pairs = 0;  // requests <= 1 MiB (PyTorch's small pool)
  std::uint64_t bytes = 0;      // sum of requested sizes
  std::uint64_t peak_live_bytes = 0;
};

// One training step of a 12-layer decoder (hidden 1024, 16 heads, batch 4 x 512 tokens, bf16
// activations, fp32 Adam state), repeated until at least `target_pairs` alloc+free pairs, at
// the granularity of PyTorch's allocator calls. Deterministic (a fixed seed).
bench_workload transformer_mix(std::size_t target_pairs);

// The alloc/free sequence of every device trace in the snapshot at `path` (pickle or JSON),
// repeated until at least `target_pairs` pairs (once when 0). Blocks alive when a trace ends
// are freed at its end; frees of blocks allocated before the trace began are skipped. Throws
// keel::io_error for an unreadable file, what read_snapshot throws, and
// keel::invalid_argument when the snapshot has no alloc events.
bench_workload trace_workload(const std::string& path, std::size_t target_pairs);

// The allocators the bench knows, in their default order.
const std::vector<std::string>& bench_allocator_names();

// A comma-separated subset of bench_allocator_names() (empty names skipped). Throws
// keel::invalid_argument ("--allocators: ...") for an unknown name or an empty list.
std::vector<std::string> parse_bench_allocators(const std::string& list);

// An allocator under test: malloc/free and what it reports about itself after a run.
class bench_allocator {
 public:
  virtual ~bench_allocator() = default;
  virtual void* allocate(std::size_t size) = 0;
  virtual void deallocate(void* p) = 0;
  virtual nlohmann::json context() const { return nlohmann::json::object(); }
};

// The allocator called `name` ("keel" and "pytorch": a caching allocator with that policy on a
// host backend of `capacity` bytes). Returns null and sets `error` when a peer library or one
// of its symbols is missing; throws keel::invalid_argument for an unknown name.
std::unique_ptr<bench_allocator> make_bench_allocator(const std::string& name, std::size_t capacity,
                                                      std::string& error);

// True when `error` from make_bench_allocator("jemalloc") says the dlopen ran out of static
// TLS (glibc's surplus is too small for Debian's initial-exec jemalloc).
bool needs_static_tls(const std::string& error);

struct bench_timing {
  std::vector<double> cpu_ns_per_op;   // one per timed pass
  std::vector<double> wall_ns_per_op;  // one per timed pass
  nlohmann::json context;              // the allocator's context() after the last pass
};

// A warm-up pass, then `repeat` timed passes; each pass runs `threads` replays of `w` at once
// against `a`. Two clocks: the CPU time of the replaying threads (user + kernel, so page faults
// and system calls count, time spent descheduled or asleep on a lock does not) per alloc+free
// pair, and wall time * threads per pair, which equals the CPU figure when threads run in
// parallel without waiting and grows with lock contention (and with threads > cores).
// Preconditions: threads >= 1, repeat >= 1. Rethrows what an allocation threw (std::bad_alloc
// for a null pointer); throws std::runtime_error when a live block's tag was overwritten.
bench_timing measure(const bench_workload& w, bench_allocator& a, int threads, int repeat);

// The median of `v` (the mean of the two middle values for an even count); v is not empty.
double median(std::vector<double> v);

// --ops: each pair is two 16-byte events held in memory (1.6 GB at the limit).
inline constexpr std::size_t k_bench_max_ops = 50'000'000;
// --capacity: address space for 1.125x this must fit in the 128 TiB of a user process.
inline constexpr std::uint64_t k_bench_max_capacity = 64 * k_tib;

struct bench_options {
  std::string trace;  // a snapshot to replay; empty: the built-in transformer mix
  int threads = 1;
  std::size_t ops = 0;  // pairs per pass (mix: 0 means 20000; trace: 0 means once)
  int repeat = 3;
  std::string allocators = "keel,pytorch,glibc,jemalloc,mimalloc";
  std::size_t capacity = std::size_t{80} << 30;
  // Called when jemalloc is asked for and cannot get its static TLS (see the contract above).
  std::function<void()> on_static_tls_shortage;
};

// What one run measured: the workload's figures and the document `keel mem bench --json`
// prints.
struct bench_result {
  std::string source;  // the workload's
  std::size_t pairs = 0, small_pairs = 0;
  std::uint64_t bytes = 0, peak_live_bytes = 0;
  int threads = 1, repeat = 1;
  // workload, capacity_bytes, threads, repeat, clocks, hardware_threads, results (one row per
  // allocator: ns_per_op, ns_per_op_min, wall_ns_per_op, vs_keel, context; or ns_per_op null
  // and error), targets.
  nlohmann::json document;
};

// The whole bench: names checked, workload built, every allocator measured. Throws what
// parse_bench_allocators, trace_workload and measure throw.
bench_result run_allocator_bench(const bench_options& options);

// The table `keel mem bench` prints.
std::string to_text(const bench_result& result);

}  // namespace keel::memory
