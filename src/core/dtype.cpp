#include "keel/core/dtype.hpp"

#include <fmt/format.h>

#include "keel/core/enum_names.hpp"
#include "keel/core/error.hpp"

namespace keel {
namespace {

using dt = dtype;
// keel's names first, then every other accepted spelling (the first entry of a value names it).
constexpr enum_entry<dtype> k_entries[] = {
    {dt::f64, "fp64"},      {dt::f32, "fp32"},   {dt::tf32, "tf32"},   {dt::f16, "fp16"},
    {dt::bf16, "bf16"},     {dt::f8, "fp8"},     {dt::f4, "fp4"},      {dt::i64, "int64"},
    {dt::i32, "int32"},     {dt::i8, "int8"},    {dt::u8, "uint8"},    {dt::f64, "double"},
    {dt::f64, "float64"},   {dt::f64, "f64"},    {dt::f32, "float"},   {dt::f32, "float32"},
    {dt::f32, "f32"},       {dt::f16, "half"},   {dt::f16, "float16"}, {dt::f16, "f16"},
    {dt::bf16, "bfloat16"}, {dt::f8, "e4m3"},    {dt::f8, "e5m2"},     {dt::f8, "f8"},
    {dt::f4, "nvfp4"},      {dt::f4, "f4"},      {dt::i64, "i64"},     {dt::i32, "i32"},
    {dt::i32, "int"},       {dt::i8, "i8"},      {dt::u8, "u8"},       {dt::i16, "int16"},
    {dt::u16, "uint16"},    {dt::u32, "uint32"}, {dt::u64, "uint64"},  {dt::boolean, "bool"},
    {dt::i16, "i16"},       {dt::u16, "u16"},    {dt::u32, "u32"},     {dt::u64, "u64"},
    {dt::i16, "short"},     {dt::boolean, "b8"},
};
constexpr enum_names<dtype> k_names{"dtype", k_entries, name_case::ignore, "?"};

constexpr enum_entry<dtype> k_nccl_entries[] = {
    {dt::f64, "double"}, {dt::f32, "float"},  {dt::f16, "half"},   {dt::bf16, "bfloat16"},
    {dt::i64, "int64"},  {dt::i32, "int32"},  {dt::i8, "int8"},    {dt::u8, "uint8"},
    {dt::tf32, "tf32"},  {dt::f8, "fp8"},     {dt::f4, "fp4"},     {dt::i16, "int16"},
    {dt::u16, "uint16"}, {dt::u32, "uint32"}, {dt::u64, "uint64"}, {dt::boolean, "bool"},
};
constexpr enum_names<dtype> k_nccl_names{"dtype", k_nccl_entries, name_case::ignore, "?"};

constexpr enum_entry<dtype> k_triton_entries[] = {
    {dt::f64, "FP64"},   {dt::f32, "FP32"},   {dt::tf32, "TF32"},  {dt::f16, "FP16"},
    {dt::bf16, "BF16"},  {dt::f8, "FP8"},     {dt::f4, "FP4"},     {dt::i64, "INT64"},
    {dt::i32, "INT32"},  {dt::i8, "INT8"},    {dt::u8, "UINT8"},   {dt::i16, "INT16"},
    {dt::u16, "UINT16"}, {dt::u32, "UINT32"}, {dt::u64, "UINT64"}, {dt::boolean, "BOOL"},
};
constexpr enum_names<dtype> k_triton_names{"dtype", k_triton_entries, name_case::ignore, "?"};

constexpr enum_entry<dtype> k_short_entries[] = {
    {dt::f64, "f64"},   {dt::f32, "f32"}, {dt::tf32, "tf32"}, {dt::f16, "f16"},
    {dt::bf16, "bf16"}, {dt::f8, "f8"},   {dt::f4, "f4"},     {dt::i64, "i64"},
    {dt::i32, "i32"},   {dt::i8, "i8"},   {dt::u8, "u8"},     {dt::i16, "i16"},
    {dt::u16, "u16"},   {dt::u32, "u32"}, {dt::u64, "u64"},   {dt::boolean, "b8"},
};
constexpr enum_names<dtype> k_short_names{"dtype", k_short_entries, name_case::ignore, "?"};

}  // namespace

unsigned bits_of(dtype t) noexcept {
  switch (t) {
    case dtype::f64:
    case dtype::i64:
    case dtype::u64: return 64;
    case dtype::f32:
    case dtype::tf32:
    case dtype::i32:
    case dtype::u32: return 32;
    case dtype::f16:
    case dtype::bf16:
    case dtype::i16:
    case dtype::u16: return 16;
    case dtype::f8:
    case dtype::i8:
    case dtype::u8:
    case dtype::boolean: return 8;
    case dtype::f4: return 4;
  }
  return 32;
}

double bytes_of(dtype t) noexcept { return bits_of(t) / 8.0; }

std::string_view name_of(dtype t) noexcept { return k_names.name(t); }
std::string_view nccl_name(dtype t) noexcept { return k_nccl_names.name(t); }
std::string_view triton_name(dtype t) noexcept { return k_triton_names.name(t); }
std::string_view short_name(dtype t) noexcept { return k_short_names.name(t); }
std::string_view name_of(dtype t, dtype_style style) noexcept {
  switch (style) {
    case dtype_style::nccl: return nccl_name(t);
    case dtype_style::triton: return triton_name(t);
    case dtype_style::keel: break;
  }
  return name_of(t);
}

dtype parse_dtype(std::string_view text, std::span<const dtype> supported, dtype_style style) {
  if (const auto t = k_names.find(text))
    for (const dtype s : supported)
      if (s == *t) return s;
  std::string expected;
  for (std::size_t i = 0; i < supported.size(); ++i) {
    if (i > 0) expected += i + 1 == supported.size() ? " or " : ", ";
    expected += name_of(supported[i], style);
  }
  throw invalid_argument(fmt::format("unknown dtype '{}': expected {}", text, expected));
}

}  // namespace keel
