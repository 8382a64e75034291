// keel::random::cuda — keel's generators as CUDA kernels writing into device memory, in the
// layout of cuRAND's generator API (the same positions, counters and subsequences as
// keel::random::generator and libcurand; normals use the device math of cuRAND's device
// generator, see philox_device.hpp). Declared always; defined only in builds with
// KEEL_HAVE_CUDA (library keel::random_cuda). `out` is device memory of n values; `stream`
// is a cudaStream_t (nullptr: the default stream). Calls are asynchronous on `stream`; the
// functions are thread-safe (no shared state besides what CUDA itself keeps). Errors come
// back as status::launch_failure (kernel launch) or status::allocation_failed.
#pragma once

#include <cstddef>
#include <cstdint>

#include "keel/random/status.hpp"

namespace keel::random::cuda {

enum class output { raw, uniform, normal };

// Philox4x32-10: positions [position, position + n) of `seed`'s stream.
status philox_generate(output kind, void* out, std::size_t n, std::uint64_t seed,
                       std::uint64_t position, float mean, float stddev, void* stream);

// XORWOW with cuRAND's 4096 subsequences: output slot s belongs to subsequence s mod 4096
// and is its element s / 4096 (normals: a slot is one Box-Muller pair of two consecutive
// elements). `position` counts slots as the host generator does; n must be even for normals.
status xorwow_generate(output kind, void* out, std::size_t n, std::uint64_t seed,
                       std::uint64_t position, float mean, float stddev, void* stream);

}  // namespace keel::random::cuda
