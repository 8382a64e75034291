// keel::random::opencl — Philox4x32-10 raw, uniform and normal output computed by an OpenCL
// kernel (Debian's pocl-opencl-icd runs it on the CPU), in cuRAND's host-generator layout:
// positions [position, position + n) of `seed`'s stream, equal bit for bit to
// keel::random::generator / libcurand for raw and uniform output. Normals depend on the
// math: math::exact runs keel's port of glibc 2.36's logf/sincosf inside the kernel (equal
// bits); math::native uses the OpenCL implementation's log/sincos/sqrt (compare with
// max_ulp_distance to see how far that is).
//
// available() says whether an OpenCL device could be opened (false in builds without
// KEEL_HAVE_OPENCL or without a platform). The device, context and compiled program are
// created once, on first use, and shared; calls are serialized internally, so the functions
// are safe to call from several threads. generate throws keel::backend_error when OpenCL
// fails or is unavailable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace keel::random::opencl {

enum class output { raw, uniform, normal };
enum class math { exact, native };

bool available();
// "platform / device" of the OpenCL device in use, or why there is none.
std::string device_name();

// Writes n 32-bit values (uint32 for raw, float otherwise) to host memory `out`.
void philox_generate(output kind, void* out, std::size_t n, std::uint64_t seed,
                     std::uint64_t position, float mean, float stddev, math m);

// Largest distance in units in the last place between two float arrays (0 = identical).
std::uint32_t max_ulp_distance(const float* a, const float* b, std::size_t n);

}  // namespace keel::random::opencl
