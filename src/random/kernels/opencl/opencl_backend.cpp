// Host side of keel::random's OpenCL kernels (keel/random/opencl.hpp). The kernel source is
// kernels/opencl/random.cl, embedded at configure time.
#include "keel/random/opencl.hpp"

#include <cstring>
#include <mutex>

#include "keel/core/config.hpp"
#include "keel/core/error.hpp"

#if KEEL_HAVE_OPENCL
// The OpenCL headers' own switch, named by them.
#define CL_TARGET_OPENCL_VERSION 120  // NOLINT(readability-identifier-naming)
#include <CL/cl.h>
#endif

namespace keel::random::opencl {

std::uint32_t max_ulp_distance(const float* a, const float* b, std::size_t n) {
  // Maps floats to a monotonic integer line so that the difference counts representable steps.
  auto line = [](float f) {
    std::int32_t i;
    std::memcpy(&i, &f, 4);
    return i < 0 ? std::int64_t{INT32_MIN} - i : std::int64_t{i};
  };
  std::uint64_t worst = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const std::int64_t d = line(a[k]) - line(b[k]);
    const std::uint64_t ad = static_cast<std::uint64_t>(d < 0 ? -d : d);
    if (ad > worst) worst = ad;
  }
  return worst > UINT32_MAX ? UINT32_MAX : static_cast<std::uint32_t>(worst);
}

#if KEEL_HAVE_OPENCL
namespace {

const char* k_source =
#include "random_cl.inc"
    ;

struct runtime {
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  cl_program program = nullptr;
  cl_kernel kernel = nullptr;
  std::string name;
  std::string failure;
  std::mutex mutex;

  runtime() {
    cl_platform_id platforms[8];
    cl_uint np = 0;
    if (clGetPlatformIDs(8, platforms, &np) != CL_SUCCESS || np == 0) {
      failure = "no OpenCL platform (install pocl-opencl-icd)";
      return;
    }
    for (cl_uint i = 0; i < np && !kernel; ++i) {
      cl_device_id device;
      cl_uint nd = 0;
      if (clGetDeviceIDs(platforms[i], CL_DEVICE_TYPE_ALL, 1, &device, &nd) != CL_SUCCESS ||
          nd == 0)
        continue;
      cl_int err = CL_SUCCESS;
      context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
      if (err != CL_SUCCESS) continue;
      queue = clCreateCommandQueue(context, device, 0, &err);
      program = clCreateProgramWithSource(context, 1, &k_source, nullptr, &err);
      if (err == CL_SUCCESS)
        err = clBuildProgram(program, 1, &device, "-cl-fp32-correctly-rounded-divide-sqrt", nullptr,
                             nullptr);
      if (err != CL_SUCCESS) {
        char log[4096] = {};
        clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, nullptr);
        failure = std::string("OpenCL build failed: ") + log;
        continue;
      }
      kernel = clCreateKernel(program, "philox_generate", &err);
      if (err != CL_SUCCESS) {
        kernel = nullptr;
        continue;
      }
      char pname[256] = {}, dname[256] = {};
      clGetPlatformInfo(platforms[i], CL_PLATFORM_NAME, sizeof pname - 1, pname, nullptr);
      clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof dname - 1, dname, nullptr);
      name = std::string(pname) + " / " + dname;
    }
    if (!kernel && failure.empty()) failure = "no usable OpenCL device";
  }
};

runtime& rt() {
  static runtime r;
  return r;
}

void ok(cl_int err, const char* what) {
  if (err != CL_SUCCESS)
    throw backend_error(std::string("keel::random::opencl: ") + what + " failed (" +
                        std::to_string(err) + ")");
}

}  // namespace

bool available() { return rt().kernel != nullptr; }
std::string device_name() { return available() ? rt().name : rt().failure; }

void philox_generate(output kind, void* out, std::size_t n, std::uint64_t seed,
                     std::uint64_t position, float mean, float stddev, math m) {
  runtime& r = rt();
  if (!r.kernel) throw backend_error("keel::random::opencl: " + r.failure);
  if (n == 0) return;
  std::lock_guard lock(r.mutex);
  cl_int err = CL_SUCCESS;
  cl_mem buffer = clCreateBuffer(r.context, CL_MEM_WRITE_ONLY, n * 4, nullptr, &err);
  ok(err, "clCreateBuffer");
  const cl_int k = static_cast<cl_int>(kind);
  const cl_ulong pos = position, count = n;
  const cl_uint key0 = static_cast<cl_uint>(seed), key1 = static_cast<cl_uint>(seed >> 32);
  const cl_int exact = m == math::exact ? 1 : 0;
  err = clSetKernelArg(r.kernel, 0, sizeof k, &k);
  // NOLINTNEXTLINE(bugprone-sizeof-expression): the size of the cl_mem handle itself
  err |= clSetKernelArg(r.kernel, 1, sizeof buffer, &buffer);
  err |= clSetKernelArg(r.kernel, 2, sizeof pos, &pos);
  err |= clSetKernelArg(r.kernel, 3, sizeof count, &count);
  err |= clSetKernelArg(r.kernel, 4, sizeof key0, &key0);
  err |= clSetKernelArg(r.kernel, 5, sizeof key1, &key1);
  err |= clSetKernelArg(r.kernel, 6, sizeof mean, &mean);
  err |= clSetKernelArg(r.kernel, 7, sizeof stddev, &stddev);
  err |= clSetKernelArg(r.kernel, 8, sizeof exact, &exact);
  if (err == CL_SUCCESS) {
    const std::size_t groups = static_cast<std::size_t>((position + n + 3) / 4 - position / 4);
    err = clEnqueueNDRangeKernel(r.queue, r.kernel, 1, nullptr, &groups, nullptr, 0, nullptr,
                                 nullptr);
    if (err == CL_SUCCESS)
      err = clEnqueueReadBuffer(r.queue, buffer, CL_TRUE, 0, n * 4, out, 0, nullptr, nullptr);
  }
  clReleaseMemObject(buffer);
  ok(err, "running the Philox kernel");
}

#else

bool available() { return false; }
std::string device_name() { return "keel was built without OpenCL"; }
void philox_generate(output, void*, std::size_t, std::uint64_t, std::uint64_t, float, float, math) {
  throw backend_error("keel::random::opencl: keel was built without OpenCL");
}

#endif

}  // namespace keel::random::opencl
