#include "keel/core/dtype.hpp"

#include <gtest/gtest.h>

#include <cctype>
#include <string>

#include "keel/core/error.hpp"

namespace keel {
namespace {

constexpr dtype k_every[] = {dtype::f64,  dtype::f32, dtype::tf32, dtype::f16,
                             dtype::bf16, dtype::f8,  dtype::f4,   dtype::i64,
                             dtype::i32,  dtype::i8,  dtype::u8,   dtype::i16,
                             dtype::u16,  dtype::u32, dtype::u64,  dtype::boolean};

TEST(Dtype, SizesAreTheStorageWidths) {
  EXPECT_EQ(bits_of(dtype::f64), 64u);
  EXPECT_EQ(bits_of(dtype::tf32), 32u);  // stored as fp32
  EXPECT_EQ(bits_of(dtype::bf16), 16u);
  EXPECT_EQ(bits_of(dtype::u8), 8u);
  EXPECT_EQ(bits_of(dtype::boolean), 8u);
  EXPECT_EQ(bits_of(dtype::u16), 16u);
  EXPECT_EQ(bits_of(dtype::u64), 64u);
  EXPECT_DOUBLE_EQ(bytes_of(dtype::f4), 0.5);
  EXPECT_DOUBLE_EQ(bytes_of(dtype::i64), 8.0);
}

TEST(Dtype, EveryNameOfEveryStyleParsesBack) {
  for (const dtype t : k_every) {
    for (const std::string_view name : {name_of(t), nccl_name(t), triton_name(t), short_name(t)}) {
      EXPECT_EQ(parse_dtype(name, k_every, dtype_style::keel), t) << name;
      std::string upper(name);
      for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      EXPECT_EQ(parse_dtype(upper, k_every, dtype_style::keel), t) << upper;
    }
  }
  EXPECT_EQ(name_of(dtype::f32), "fp32");
  EXPECT_EQ(nccl_name(dtype::f32), "float");
  EXPECT_EQ(short_name(dtype::f32), "f32");
  EXPECT_EQ(name_of(dtype::f16, dtype_style::nccl), "half");
  EXPECT_EQ(triton_name(dtype::boolean), "BOOL");
  EXPECT_EQ(name_of(dtype::u16, dtype_style::triton), "UINT16");
  EXPECT_EQ(name_of(dtype::bf16, dtype_style::triton), "BF16");
}

TEST(Dtype, FrameworkSpellingsParse) {
  EXPECT_EQ(parse_dtype("float32", k_every, dtype_style::keel), dtype::f32);
  EXPECT_EQ(parse_dtype("Double", k_every, dtype_style::keel), dtype::f64);
  EXPECT_EQ(parse_dtype("bfloat16", k_every, dtype_style::keel), dtype::bf16);
  EXPECT_EQ(parse_dtype("e5m2", k_every, dtype_style::keel), dtype::f8);
  EXPECT_EQ(parse_dtype("nvfp4", k_every, dtype_style::keel), dtype::f4);
  EXPECT_EQ(parse_dtype("int", k_every, dtype_style::keel), dtype::i32);
}

TEST(Dtype, AModuleAcceptsOnlyItsSubsetAndListsIt) {
  constexpr dtype buffers[] = {dtype::f32, dtype::f16, dtype::u8};
  EXPECT_EQ(parse_dtype("half", buffers, dtype_style::nccl), dtype::f16);
  for (const char* bad : {"fp4", "tf32", "complex64", ""}) {
    try {
      parse_dtype(bad, buffers, dtype_style::nccl);
      FAIL() << bad;
    } catch (const invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()),
                std::string("unknown dtype '") + bad + "': expected float, half or uint8");
    }
  }
  EXPECT_THROW(parse_dtype("f32", {}, dtype_style::keel), invalid_argument);
}

}  // namespace
}  // namespace keel
