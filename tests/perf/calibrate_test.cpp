// keel perf calibrate: the measurements are plausible for a CPU and the device document it
// writes loads back into the GPU database's schema.
#include "keel/perf/calibrate.hpp"
#include "keel/core/error.hpp"
#include "keel/perf/gpu_database.hpp"

#include <gtest/gtest.h>

namespace keel::perf {
namespace {

TEST(Calibrate, MeasuresAPlausibleCpuAndRoundTrips) {
  calibrate_options o;
  o.seconds_per_test = 0.02;
  o.dram_bytes = 128.0 * 1024 * 1024;
  const calibration c = calibrate_cpu(o);
  EXPECT_FALSE(c.cpu.empty());
  // One core of anything that runs this: between 1 GFLOP/s and 1 TFLOP/s fp32, fp64 at most fp32.
  EXPECT_GT(c.fp32_gflops, 1);
  EXPECT_LT(c.fp32_gflops, 1000);
  EXPECT_GT(c.fp64_gflops, 0.3);
  EXPECT_LE(c.fp64_gflops, c.fp32_gflops * 1.1);
  ASSERT_EQ(c.levels.size(), 5u);
  for (const memory_level& l : c.levels) EXPECT_GT(l.bandwidth_gbs, 0.5) << l.name;
  EXPECT_GT(c.dram_gbs, 0.5);
  EXPECT_LT(c.dram_gbs, 1000);

  const gpu_database db = gpu_database::load(calibration_document(c, "my-cpu"), "calibration");
  const gpu_spec& d = db.at("my-cpu");
  EXPECT_DOUBLE_EQ(*d.rate("fp32"), c.fp32_gflops / 1e3);
  EXPECT_DOUBLE_EQ(d.bandwidth_gbs, c.dram_gbs);
  ASSERT_EQ(d.cache_levels.size(), 5u);
  EXPECT_DOUBLE_EQ(d.bandwidth_for(1), c.levels[0].bandwidth_gbs * 1e9);
  EXPECT_DOUBLE_EQ(d.bandwidth_for(1e12), c.dram_gbs * 1e9);
  EXPECT_NE(d.source_text().find("keel perf calibrate"), std::string::npos);
}

TEST(Calibrate, RejectsBadOptions) {
  calibrate_options o;
  o.threads = 0;
  EXPECT_THROW(calibrate_cpu(o), invalid_argument);
  o.threads = 1;
  o.seconds_per_test = 0;
  EXPECT_THROW(calibrate_cpu(o), invalid_argument);
  o.seconds_per_test = 0.1;
  o.dram_bytes = 1000;
  EXPECT_THROW(calibrate_cpu(o), invalid_argument);
}

}  // namespace
}  // namespace keel::perf
