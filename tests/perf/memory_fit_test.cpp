// check_memory_fit: the per-GPU need against one device's memory, and the message that says
// what does not fit and by how much.
#include "keel/perf/memory_fit.hpp"

#include "keel/core/error.hpp"
#include "keel/perf/gpu_database.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace keel::perf {
namespace {

const gpu_spec& gpu(const char* name) { return gpu_database::builtin().at(name); }

TEST(MemoryFit, FitsWithHeadroom) {
  memory_need need;
  need.weights = 13.5e9;
  need.kv_cache = 0.5e9;
  const memory_fit f = check_memory_fit(need, gpu("h100-sxm"));
  EXPECT_TRUE(f.fits);
  EXPECT_DOUBLE_EQ(f.capacity, 80.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(f.headroom, f.capacity - 14e9);
  EXPECT_EQ(f.shortfall, 0);
  EXPECT_EQ(
      f.message.rfind("fits: 14 GB of 85.9 GB on one GPU (weights 13.5 GB, KV cache 500 MB)", 0),
      0u)
      << f.message;
}

TEST(MemoryFit, SaysWhatDoesNotFitAndByHowMuch) {
  memory_need need;
  need.weights = 2e9;
  need.activations = 0.25e9;
  need.kv_cache = 1e9;
  const memory_fit f = check_memory_fit(need, gpu("gtx-1050"));
  EXPECT_FALSE(f.fits);
  const double capacity = 2.0 * 1024 * 1024 * 1024;
  EXPECT_DOUBLE_EQ(f.shortfall, 3.25e9 - capacity);
  EXPECT_EQ(f.headroom, 0);
  // Largest part first, zero parts left out, the shortfall at the end.
  EXPECT_EQ(f.message,
            "does not fit: needs 3.25 GB on one GPU (weights 2 GB, KV cache 1 GB, activations "
            "250 MB) but gtx-1050 has 2.147 GB, 1.103 GB short");
}

TEST(MemoryFit, ExactlyFullFitsAndPerGpuWording) {
  memory_need need;
  need.weights = gpu("a100-sxm4-80gb").memory_bytes();
  const memory_fit f = check_memory_fit(need, gpu("a100-sxm4-80gb"), 8);
  EXPECT_TRUE(f.fits);
  EXPECT_NE(f.message.find("per GPU"), std::string::npos) << f.message;
  need.weights += 1;
  EXPECT_FALSE(check_memory_fit(need, gpu("a100-sxm4-80gb"), 8).fits);
  // A usable fraction shrinks the capacity.
  need.weights = 0.95 * gpu("a100-sxm4-80gb").memory_bytes();
  EXPECT_FALSE(check_memory_fit(need, gpu("a100-sxm4-80gb"), 1, 0.9).fits);
}

TEST(MemoryFit, RejectsBadInput) {
  memory_need bad;
  bad.gradients = -1;
  EXPECT_THROW(check_memory_fit(bad, gpu("h100-sxm")), invalid_argument);
  bad.gradients = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(check_memory_fit(bad, gpu("h100-sxm")), invalid_argument);
  EXPECT_THROW(check_memory_fit({}, gpu("h100-sxm"), 0), invalid_argument);
  EXPECT_THROW(check_memory_fit({}, gpu("h100-sxm"), 1, 0), invalid_argument);
  EXPECT_THROW(check_memory_fit({}, gpu("h100-sxm"), 1, 1.5), invalid_argument);
  gpu_spec no_memory = gpu("h100-sxm");
  no_memory.memory_gb = 0;
  EXPECT_THROW(check_memory_fit({}, no_memory), invalid_argument);
}

}  // namespace
}  // namespace keel::perf
