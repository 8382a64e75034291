// GPU check of keel::random's CUDA kernels (needs an NVIDIA GPU; built when nvcc exists, run
// by run.sh, not by ctest): bit equality with cuRAND's device generator (curandCreateGenerator)
// for Philox4x32-10 and XORWOW raw, uniform and normal output over several seeds and
// offsets, then generation throughput in GB/s next to the card's device-to-device copy
// bandwidth. Prints one JSON document; exit status 1 when any value differs.
#include <cuda_runtime.h>
#include <curand.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "keel/random/cuda.hpp"

namespace kc = keel::random::cuda;

#define CHECK_CUDA(x)                                                               \
  do {                                                                              \
    if ((x) != cudaSuccess) {                                                       \
      std::fprintf(stderr, "keel gpu check: %s failed at line %d\n", #x, __LINE__); \
      return 2;                                                                     \
    }                                                                               \
  } while (0)

namespace {

curandStatus_t curand_generate(curandGenerator_t g, kc::output kind, void* out, std::size_t n) {
  switch (kind) {
    case kc::output::raw: return curandGenerate(g, static_cast<unsigned*>(out), n);
    case kc::output::uniform: return curandGenerateUniform(g, static_cast<float*>(out), n);
    default: return curandGenerateNormal(g, static_cast<float*>(out), n, 0.5f, 2.0f);
  }
}

const char* name(kc::output k) {
  return k == kc::output::raw ? "raw" : k == kc::output::uniform ? "uniform" : "normal";
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "keel gpu check: no CUDA device\n");
    return 2;
  }
  const std::size_t n = std::size_t{1} << 24;
  void *a = nullptr, *b = nullptr;
  CHECK_CUDA(cudaMalloc(&a, n * 4));
  CHECK_CUDA(cudaMalloc(&b, n * 4));
  std::vector<unsigned char> ha(n * 4), hb(n * 4);
  std::size_t mismatches = 0, cases = 0;
  std::printf("{\"equality\": [\n");
  const std::uint64_t seeds[] = {0, 42, 1234, ~std::uint64_t{0}};
  const std::uint64_t offsets[] = {0, 1, 3, 1000003};
  for (int gen = 0; gen < 2; ++gen)
    for (kc::output kind : {kc::output::raw, kc::output::uniform, kc::output::normal})
      for (std::uint64_t seed : seeds)
        for (std::uint64_t offset : offsets) {
          curandGenerator_t g;
          if (curandCreateGenerator(
                  &g, gen == 0 ? CURAND_RNG_PSEUDO_PHILOX4_32_10 : CURAND_RNG_PSEUDO_XORWOW) !=
              CURAND_STATUS_SUCCESS)
            return 2;
          curandSetPseudoRandomGeneratorSeed(g, seed);
          curandSetGeneratorOffset(g, offset);
          const curandStatus_t cs = curand_generate(g, kind, b, n);
          curandDestroyGenerator(g);
          const keel::random::status ks =
              gen == 0 ? kc::philox_generate(kind, a, n, seed, offset, 0.5f, 2.0f, nullptr)
                       : kc::xorwow_generate(kind, a, n, seed, offset, 0.5f, 2.0f, nullptr);
          CHECK_CUDA(cudaDeviceSynchronize());
          CHECK_CUDA(cudaMemcpy(ha.data(), a, n * 4, cudaMemcpyDeviceToHost));
          CHECK_CUDA(cudaMemcpy(hb.data(), b, n * 4, cudaMemcpyDeviceToHost));
          std::size_t diff = 0;
          for (std::size_t i = 0; i < n; ++i) diff += std::memcmp(&ha[4 * i], &hb[4 * i], 4) != 0;
          if (static_cast<int>(cs) != static_cast<int>(ks)) diff = n;
          mismatches += diff;
          std::printf(
              "%s  {\"generator\": \"%s\", \"dist\": \"%s\", \"seed\": %llu, \"offset\": %llu, "
              "\"values\": %zu, "
              "\"mismatches\": %zu}",
              cases++ ? ",\n" : "", gen == 0 ? "philox4_32_10" : "xorwow", name(kind),
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(offset), n,
              diff);
        }
  std::printf("\n],\n");
  CHECK_CUDA(cudaFree(a));
  CHECK_CUDA(cudaFree(b));

  // Throughput: 2^28 floats (1 GiB) per call, best of 5, against a device-to-device copy.
  const std::size_t big = std::size_t{1} << 28;
  void *x = nullptr, *y = nullptr;
  CHECK_CUDA(cudaMalloc(&x, big * 4));
  CHECK_CUDA(cudaMalloc(&y, big * 4));
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  auto best_ms = [&](auto&& fn) {
    float best = 1e30f;
    for (int r = 0; r < 5; ++r) {
      cudaEventRecord(e0);
      fn();
      cudaEventRecord(e1);
      cudaEventSynchronize(e1);
      float ms = 0;
      cudaEventElapsedTime(&ms, e0, e1);
      if (ms < best) best = ms;
    }
    return best;
  };
  const float copy_ms = best_ms([&] { cudaMemcpy(y, x, big * 4, cudaMemcpyDeviceToDevice); });
  const double copy_gbps = 2.0 * big * 4 / (copy_ms * 1e-3) / 1e9;  // read + write
  std::printf("\"copy_gbps\": %.1f,\n\"throughput\": [\n", copy_gbps);
  int row = 0;
  for (int gen = 0; gen < 2; ++gen)
    for (kc::output kind : {kc::output::raw, kc::output::uniform, kc::output::normal}) {
      const float ms = best_ms([&] {
        if (gen == 0)
          kc::philox_generate(kind, x, big, 1234, 0, 0.f, 1.f, nullptr);
        else
          kc::xorwow_generate(kind, x, big, 1234, 0, 0.f, 1.f, nullptr);
      });
      curandGenerator_t g;
      curandCreateGenerator(&g,
                            gen == 0 ? CURAND_RNG_PSEUDO_PHILOX4_32_10 : CURAND_RNG_PSEUDO_XORWOW);
      curandSetPseudoRandomGeneratorSeed(g, 1234);
      const float cms = best_ms([&] { curand_generate(g, kind, y, big); });
      curandDestroyGenerator(g);
      const double gbps = big * 4 / (ms * 1e-3) / 1e9, cgbps = big * 4 / (cms * 1e-3) / 1e9;
      std::printf(
          "%s  {\"generator\": \"%s\", \"dist\": \"%s\", \"keel_gbps\": %.1f, \"curand_gbps\": "
          "%.1f, "
          "\"fraction_of_copy_bandwidth\": %.3f}",
          row++ ? ",\n" : "", gen == 0 ? "philox4_32_10" : "xorwow", name(kind), gbps, cgbps,
          gbps / copy_gbps);
    }
  std::printf("\n],\n\"mismatches\": %zu\n}\n", mismatches);
  cudaFree(x);
  cudaFree(y);
  return mismatches == 0 ? 0 : 1;
}
