// keel::random's OpenCL Philox kernel (run by PoCL on the CPU) against the host generator:
// raw and uniform bit for bit; normals bit for bit with keel's exact math in the kernel and
// within a small ULP distance with the OpenCL implementation's own math (reported).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "keel/random/generator.hpp"
#include "keel/random/opencl.hpp"

namespace kr = keel::random;
namespace ko = keel::random::opencl;

#if defined(__SANITIZE_ADDRESS__)
// Under ASan: LeakSanitizer's exit check crashes (signal 11 in its tracer) reading the thread-
// local storage of PoCL's worker threads, so the roots it scans leave TLS out, for this test
// program (keel::random keeps nothing in thread_local storage).
extern "C" const char* __lsan_default_options() { return "use_tls=0"; }
#endif

TEST(random_opencl, ulp_distance_counts_representable_steps) {
  const float a[] = {1.0f, -0.0f, 1.0f};
  float b[] = {1.0f, 0.0f, 0.0f};
  std::uint32_t one_up;
  std::memcpy(&one_up, &a[0], 4);
  ++one_up;
  std::memcpy(&b[2], &one_up, 4);
  EXPECT_EQ(ko::max_ulp_distance(a, b, 2),
            0u);  // 1 == 1, -0 and +0 are one line point apart at most
  EXPECT_EQ(ko::max_ulp_distance(a + 2, b + 2, 1), 1u);
}

TEST(random_opencl, philox_matches_host_generator) {
  if (!ko::available()) GTEST_SKIP() << ko::device_name();
  const std::size_t n = 100003;
  for (std::uint64_t seed : {0ull, 1234ull, ~0ull})
    for (std::uint64_t offset : {0ull, 3ull, 1000003ull}) {
      kr::generator g(kr::rng_type::philox4_32_10);
      g.set_seed(seed);
      std::vector<std::uint32_t> host(n), dev(n);
      g.set_offset(offset);
      ASSERT_EQ(g.generate(host.data(), n), kr::status::success);
      ko::philox_generate(ko::output::raw, dev.data(), n, seed, offset, 0, 1, ko::math::exact);
      EXPECT_EQ(host, dev) << "raw seed " << seed << " offset " << offset;

      std::vector<float> hf(n), df(n);
      g.set_offset(offset);
      ASSERT_EQ(g.generate_uniform(hf.data(), n), kr::status::success);
      ko::philox_generate(ko::output::uniform, df.data(), n, seed, offset, 0, 1, ko::math::exact);
      EXPECT_EQ(std::memcmp(hf.data(), df.data(), n * 4), 0)
          << "uniform seed " << seed << " offset " << offset;

      g.set_offset(offset);
      ASSERT_EQ(g.generate_normal(hf.data(), n, 0.5f, 2.0f), kr::status::success);
      ko::philox_generate(ko::output::normal, df.data(), n, seed, offset, 0.5f, 2.0f,
                          ko::math::exact);
      EXPECT_EQ(ko::max_ulp_distance(hf.data(), df.data(), n), 0u)
          << "normal (exact math) seed " << seed;

      ko::philox_generate(ko::output::normal, df.data(), n, seed, offset, 0.5f, 2.0f,
                          ko::math::native);
      const std::uint32_t ulp = ko::max_ulp_distance(hf.data(), df.data(), n);
      RecordProperty("native_math_max_ulp", static_cast<int>(ulp));
      std::printf("OpenCL native math (%s): max %u ULP from libcurand's bits (seed %llu)\n",
                  ko::device_name().c_str(), ulp, static_cast<unsigned long long>(seed));
      // Near a zero of sin/cos the relative error of any float sin is large: bound loosely.
      EXPECT_LT(ulp, 1u << 20);
    }
}
