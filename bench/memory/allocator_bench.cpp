// allocate+free of one size in a loop, keel's caching allocator (policies keel and pytorch, on
// the host backend) next to mimalloc and glibc malloc. Every iteration writes the first and
// last byte of the block, so the allocators that return memory to the OS pay for the page
// faults they cause. mimalloc is loaded with dlopen(RTLD_LOCAL) and called as mi_malloc /
// mi_free, so it does not replace the process's malloc (which keel's own bookkeeping uses).
//
//   build/release/bench/memory/keel_memory_bench --benchmark_min_time=0.2
#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <memory>

#include "keel/memory/caching_allocator.hpp"
#include "keel/memory/host_backend.hpp"

namespace {

using namespace keel::memory;

void touch(benchmark::State& state, void* p, std::size_t size) {
  if (p == nullptr) {
    state.SkipWithError("allocation failed");
    return;
  }
  auto* bytes = static_cast<volatile std::uint8_t*>(p);
  bytes[0] = 1;
  bytes[size - 1] = 2;
}

void caching(benchmark::State& state, const char* config) {
  const auto size = static_cast<std::size_t>(state.range(0));
  host_backend backend(std::size_t{8} << 30);
  caching_allocator allocator(backend, allocator_config::parse(config));
  for (auto _ : state) {
    const std::uint64_t p = allocator.allocate(size);
    touch(state, reinterpret_cast<void*>(p), size);
    allocator.deallocate(p);
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_keel(benchmark::State& state) { caching(state, "policy:keel"); }
void BM_pytorch(benchmark::State& state) { caching(state, "policy:pytorch"); }

void BM_mimalloc(benchmark::State& state) {
  static void* library = dlopen("libmimalloc.so.2", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    state.SkipWithError("libmimalloc.so.2 cannot be loaded");
    for (auto _ : state) {
    }
    return;
  }
  static auto* mi_malloc = reinterpret_cast<void* (*)(std::size_t)>(dlsym(library, "mi_malloc"));
  static auto* mi_free = reinterpret_cast<void (*)(void*)>(dlsym(library, "mi_free"));
  const auto size = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    void* p = mi_malloc(size);
    touch(state, p, size);
    mi_free(p);
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_glibc(benchmark::State& state) {
  const auto size = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    void* p = std::malloc(size);
    touch(state, p, size);
    std::free(p);
  }
  state.SetItemsProcessed(state.iterations());
}

// 512 B (a scalar), 64 KiB, 1 MiB (largest small-pool request), 8 MiB, 64 MiB.
#define KEEL_SIZES ->Arg(512)->Arg(64 << 10)->Arg(1 << 20)->Arg(8 << 20)->Arg(64 << 20)
BENCHMARK(BM_keel) KEEL_SIZES;
BENCHMARK(BM_pytorch) KEEL_SIZES;
BENCHMARK(BM_mimalloc) KEEL_SIZES;
BENCHMARK(BM_glibc) KEEL_SIZES;

}  // namespace
