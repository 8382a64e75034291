#include "keel/perf/dtype.hpp"
#include "keel/core/enum_names.hpp"

#include "keel/core/error.hpp"

namespace keel::perf {

double bytes_of(dtype t) noexcept {
  switch (t) {
    case dtype::fp64: return 8;
    case dtype::fp32:
    case dtype::tf32: return 4;
    case dtype::fp16:
    case dtype::bf16: return 2;
    case dtype::fp8:
    case dtype::int8: return 1;
    case dtype::fp4: return 0.5;
  }
  return 4;
}

namespace {
// The canonical names first, then the spellings PyTorch, NumPy and vendor sheets use.
constexpr enum_entry<dtype> k_dtype_entries[] = {
    {dtype::fp64, "fp64"},    {dtype::fp32, "fp32"},    {dtype::tf32, "tf32"},
    {dtype::fp16, "fp16"},    {dtype::bf16, "bf16"},    {dtype::fp8, "fp8"},
    {dtype::int8, "int8"},    {dtype::fp4, "fp4"},      {dtype::fp64, "float64"},
    {dtype::fp64, "double"},  {dtype::fp32, "float32"}, {dtype::fp32, "float"},
    {dtype::fp16, "float16"}, {dtype::fp16, "half"},    {dtype::bf16, "bfloat16"},
    {dtype::fp8, "e4m3"},     {dtype::fp8, "e5m2"},     {dtype::fp4, "nvfp4"},
};
constexpr enum_names<dtype> k_dtype_names{"dtype", k_dtype_entries, name_case::ignore, "fp32"};
}  // namespace

std::string_view name_of(dtype t) noexcept { return k_dtype_names.name(t); }

dtype parse_dtype(std::string_view text) { return k_dtype_names.parse(text); }

}  // namespace keel::perf
