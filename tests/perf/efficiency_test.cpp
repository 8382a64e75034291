// Achievable fractions: measured GPUs use their own, others the class default, memory-bound
// ops on GPUs are unknown (fraction 1), calibrated CPU devices use their measured rates.
#include "keel/perf/efficiency.hpp"

#include <gtest/gtest.h>

namespace keel::perf {
namespace {

const gpu_spec& gpu(const char* name) { return gpu_database::builtin().at(name); }

TEST(Efficiency, MeasuredGpusUseTheirOwnFraction) {
  const efficiency gemm = achievable_fraction(gpu("h100-sxm"), op_class::gemm);
  EXPECT_TRUE(gemm.known);
  EXPECT_DOUBLE_EQ(gemm.fraction, 780.17 / 989);
  EXPECT_NE(gemm.basis.find("measured on h100-sxm"), std::string::npos);
  EXPECT_NE(gemm.source.find("https://"), std::string::npos);
  EXPECT_DOUBLE_EQ(achievable_fraction(gpu("h100-sxm"), op_class::attention).fraction, 0.75);
  EXPECT_DOUBLE_EQ(achievable_fraction(gpu("a100-sxm4-80gb"), op_class::attention).fraction, 0.615);
}

TEST(Efficiency, OtherGpusTakeTheMeanOfTheMeasuredOnes) {
  const efficiency a = achievable_fraction(gpu("rtx-4090"), op_class::attention);
  EXPECT_TRUE(a.known);
  double sum = 0;
  int n = 0;
  for (const efficiency_row& row : efficiency_table()) {
    if (row.cls == op_class::attention) sum += row.fraction, ++n;
  }
  ASSERT_GT(n, 0);
  EXPECT_DOUBLE_EQ(a.fraction, sum / n);
  EXPECT_EQ(a.basis.rfind("default: no measurement for rtx-4090", 0), 0u) << a.basis;
}

TEST(Efficiency, EveryRowIsSourcedAndAFraction) {
  for (const efficiency_row& row : efficiency_table()) {
    EXPECT_GT(row.fraction, 0) << row.gpu;
    EXPECT_LE(row.fraction, 1) << row.gpu;
    EXPECT_NE(row.source.find("<https://"), std::string::npos) << row.gpu;
    EXPECT_TRUE(gpu_database::builtin().find(row.gpu) != nullptr) << row.gpu;
  }
}

TEST(Efficiency, MemoryBoundIsUnknownOnGpusAndMeasuredOnCalibratedDevices) {
  const efficiency m = achievable_fraction(gpu("h100-sxm"), op_class::memory);
  EXPECT_FALSE(m.known);
  EXPECT_EQ(m.fraction, 1);
  EXPECT_EQ(m.basis.rfind("unknown", 0), 0u);
  gpu_spec cpu = gpu("h100-sxm");
  cpu.segment = "cpu";
  for (op_class c : {op_class::gemm, op_class::attention, op_class::memory}) {
    const efficiency e = achievable_fraction(cpu, c);
    EXPECT_TRUE(e.known);
    EXPECT_EQ(e.fraction, 1);
    EXPECT_EQ(e.basis.rfind("calibrated", 0), 0u);
  }
}

}  // namespace
}  // namespace keel::perf
