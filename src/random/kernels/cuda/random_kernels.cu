// CUDA kernels of keel::random (see keel/random/cuda.hpp): Philox4x32-10 and XORWOW raw,
// uniform and normal output in cuRAND's generator layout. Compiled only when nvcc exists.
#include <cuda_runtime.h>

#include <vector>

#include "keel/random/cuda.hpp"
#include "keel/random/philox_device.hpp"
#include "keel/random/xorwow.hpp"

namespace keel::random::cuda {
namespace {

constexpr unsigned k_block = 256;
constexpr std::uint64_t k_philox_threads = 65536;
constexpr unsigned k_xorwow_threads = 4096;

// One CUDA thread per group of four positions: group q reads Philox block q / 65536 of
// "thread" q mod 65536 (the host generator's layout, before any double-precision call).
__global__ void philox_kernel(output kind, void* out, std::uint64_t position, std::uint64_t n,
                              philox_key key, float mean, float stddev) {
  const std::uint64_t q0 = position / 4;
  const std::uint64_t q = q0 + blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x;
  const std::uint64_t end = position + n;
  if (4 * q >= end) return;
  const philox_ctr ctr = philox_ctr_of(q / k_philox_threads, q % k_philox_threads);
  float4_values f;
  philox_ctr w{};
  if (kind == output::raw) {
    w = philox4x32_10(ctr, key);
  } else if (kind == output::uniform) {
    f = philox_uniform4(ctr, key);
  } else {
    f = philox_normal4(ctr, key);
    for (float& v : f.v) v = v * stddev + mean;
  }
  for (unsigned lane = 0; lane < 4; ++lane) {
    const std::uint64_t p = 4 * q + lane;
    if (p < position || p >= end) continue;
    if (kind == output::raw)
      static_cast<std::uint32_t*>(out)[p - position] = w.v[lane];
    else
      static_cast<float*>(out)[p - position] = f.v[lane];
  }
}

// One CUDA thread per XORWOW subsequence t: its slots s = t, t + 4096, ... at or after
// `position`, consuming one word per slot (two for a normal pair).
__global__ void xorwow_kernel(output kind, void* out, std::uint64_t position, std::uint64_t slots,
                              xorwow_state* states, float mean, float stddev) {
  const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= k_xorwow_threads) return;
  xorwow_state s = states[t];
  const std::uint64_t first =
      position + (t + k_xorwow_threads - position % k_xorwow_threads) % k_xorwow_threads;
  for (std::uint64_t slot = first; slot < position + slots; slot += k_xorwow_threads) {
    const std::uint64_t i = slot - position;
    if (kind == output::raw) {
      static_cast<std::uint32_t*>(out)[i] = xorwow_next(s);
    } else if (kind == output::uniform) {
      static_cast<float*>(out)[i] = uniform_float(xorwow_next(s));
    } else {
      const std::uint32_t x = xorwow_next(s);
      const std::uint32_t y = xorwow_next(s);
      const float_pair z = box_muller<native_math>(x, y);
      static_cast<float*>(out)[2 * i] = z.x * stddev + mean;
      static_cast<float*>(out)[2 * i + 1] = z.y * stddev + mean;
    }
  }
  states[t] = s;
}

unsigned blocks_for(std::uint64_t items) {
  return static_cast<unsigned>((items + k_block - 1) / k_block);
}

}  // namespace

status philox_generate(output kind, void* out, std::size_t n, std::uint64_t seed,
                       std::uint64_t position, float mean, float stddev, void* stream) {
  if (n == 0) return status::success;
  const std::uint64_t groups = (position + n + 3) / 4 - position / 4;
  philox_kernel<<<blocks_for(groups), k_block, 0, static_cast<cudaStream_t>(stream)>>>(
      kind, out, position, n, philox_key_from_seed(seed), mean, stddev);
  return cudaGetLastError() == cudaSuccess ? status::success : status::launch_failure;
}

status xorwow_generate(output kind, void* out, std::size_t n, std::uint64_t seed,
                       std::uint64_t position, float mean, float stddev, void* stream) {
  if (kind == output::normal && n % 2 != 0) return status::length_not_multiple;
  if (n == 0) return status::success;
  const std::uint64_t slots = kind == output::normal ? n / 2 : n;
  const unsigned words_per_slot = kind == output::normal ? 2 : 1;
  // Subsequence t, advanced past the words of its slots before `position` (the host
  // generator's state there when every earlier call was of the same kind).
  std::vector<xorwow_state> host(k_xorwow_threads);
  for (unsigned t = 0; t < k_xorwow_threads; ++t) {
    const std::uint64_t before = t < position ? (position - t - 1) / k_xorwow_threads + 1 : 0;
    host[t] = xorwow_init(seed, t, before * words_per_slot);
  }
  xorwow_state* states = nullptr;
  if (cudaMalloc(&states, sizeof(xorwow_state) * k_xorwow_threads) != cudaSuccess)
    return status::allocation_failed;
  const auto cs = static_cast<cudaStream_t>(stream);
  status result = status::success;
  if (cudaMemcpyAsync(states, host.data(), sizeof(xorwow_state) * k_xorwow_threads,
                      cudaMemcpyHostToDevice, cs) != cudaSuccess) {
    result = status::launch_failure;
  } else {
    xorwow_kernel<<<blocks_for(k_xorwow_threads), k_block, 0, cs>>>(kind, out, position, slots,
                                                                    states, mean, stddev);
    if (cudaGetLastError() != cudaSuccess) result = status::launch_failure;
  }
  // The host vector must outlive the copy, and the states the kernel.
  if (cudaStreamSynchronize(cs) != cudaSuccess) result = status::launch_failure;
  cudaFree(states);
  return result;
}

}  // namespace keel::random::cuda
