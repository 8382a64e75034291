#include "keel/memory/pool_summary.hpp"

#include <gtest/gtest.h>

namespace keel::memory {
namespace {

constexpr std::uint64_t k_mib = 1 << 20;

TEST(PoolSummary, FragmentsStayLargestFirst) {
  pool_summary p;
  for (std::uint64_t s : {3, 9, 1, 9, 4}) add_free_fragment(p, s * k_mib);
  EXPECT_EQ(p.free, 26 * k_mib);
  EXPECT_EQ(p.largest_free, 9 * k_mib);
  EXPECT_EQ(p.free_fragments,
            (std::vector<std::uint64_t>{9 * k_mib, 9 * k_mib, 4 * k_mib, 3 * k_mib, 1 * k_mib}));
}

TEST(PoolSummary, DescribesAPoolInOneSentence) {
  pool_summary p;
  EXPECT_EQ(describe(p), "Large pool: empty.");
  p.small = true;
  p.segments = 2;
  p.reserved = 4 * k_mib;
  p.allocated = 3 * k_mib;
  add_free_fragment(p, 2 * k_mib);
  EXPECT_EQ(describe(p),
            "Small pool: 2 segments, 4.00 MiB reserved, 3.00 MiB allocated, 2.00 MiB free in 1 "
            "fragment (2.00 MiB).");
  for (int i = 0; i < 7; ++i) add_free_fragment(p, 2 * k_mib);
  EXPECT_NE(describe(p).find("free in 8 fragments (2.00 MiB, 2.00 MiB, 2.00 MiB, 2.00 MiB, 2.00 "
                             "MiB, 2.00 MiB and 2 more)."),
            std::string::npos)
      << describe(p);
}

}  // namespace
}  // namespace keel::memory
