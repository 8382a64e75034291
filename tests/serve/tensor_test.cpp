#include "keel/serve/tensor.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "keel/core/error.hpp"

namespace keel::serve {
namespace {

tensor iota(std::vector<std::int64_t> shape, float from) {
  tensor t(dtype::f32, std::move(shape));
  float v = from;
  for (float& x : t.values<float>()) x = v++;
  return t;
}

TEST(Tensor, BatchesJoinAndSplitAlongTheFirstDimension) {
  const tensor a = iota({1, 3}, 0), b = iota({2, 3}, 10);
  const tensor* parts[] = {&a, &b};
  const tensor joined = concat_batch(parts);
  EXPECT_EQ(joined.shape(), (std::vector<std::int64_t>{3, 3}));
  const std::vector<float> want = {0, 1, 2, 10, 11, 12, 13, 14, 15};
  EXPECT_EQ(std::vector<float>(joined.values<float>().begin(), joined.values<float>().end()), want);
  const tensor back = slice_batch(joined, 1, 2);
  EXPECT_EQ(back.shape(), b.shape());
  EXPECT_TRUE(std::equal(back.bytes().begin(), back.bytes().end(), b.bytes().begin()));
  EXPECT_EQ(slice_batch(joined, 3, 0).elements(), 0);
}

TEST(Tensor, SizesAreChecked) {
  EXPECT_EQ(tensor(dtype::boolean, {2, 2}).bytes().size(), 4u);
  EXPECT_EQ(tensor(dtype::i64, {0, 5}).bytes().size(), 0u);
  EXPECT_THROW(tensor(dtype::f32, {2}, std::vector<std::byte>(7)), invalid_argument);
  EXPECT_THROW(tensor(dtype::f32, {-1}), invalid_argument);
  const std::int64_t big = std::numeric_limits<std::int64_t>::max() / 2;
  EXPECT_THROW(element_count(std::vector<std::int64_t>{big, big}), invalid_argument);
  const tensor a = iota({1, 3}, 0), wide = iota({1, 4}, 0);
  const tensor ints(dtype::i32, {1, 3});
  const tensor* mixed_shape[] = {&a, &wide};
  const tensor* mixed_type[] = {&a, &ints};
  EXPECT_THROW(concat_batch(mixed_shape), invalid_argument);
  EXPECT_THROW(concat_batch(mixed_type), invalid_argument);
  EXPECT_THROW(slice_batch(a, 1, 1), invalid_argument);
  EXPECT_THROW(slice_batch(a, -1, 1), invalid_argument);
}

}  // namespace
}  // namespace keel::serve
