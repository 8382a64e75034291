#include "keel/perf/dtype.hpp"

#include "keel/core/error.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

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

std::string_view name_of(dtype t) noexcept {
  switch (t) {
    case dtype::fp64: return "fp64";
    case dtype::fp32: return "fp32";
    case dtype::tf32: return "tf32";
    case dtype::fp16: return "fp16";
    case dtype::bf16: return "bf16";
    case dtype::fp8: return "fp8";
    case dtype::int8: return "int8";
    case dtype::fp4: return "fp4";
  }
  return "fp32";
}

dtype parse_dtype(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  static constexpr std::array<std::pair<std::string_view, dtype>, 18> k_names{{
      {"fp64", dtype::fp64},
      {"float64", dtype::fp64},
      {"double", dtype::fp64},
      {"fp32", dtype::fp32},
      {"float32", dtype::fp32},
      {"float", dtype::fp32},
      {"tf32", dtype::tf32},
      {"fp16", dtype::fp16},
      {"float16", dtype::fp16},
      {"half", dtype::fp16},
      {"bf16", dtype::bf16},
      {"bfloat16", dtype::bf16},
      {"fp8", dtype::fp8},
      {"e4m3", dtype::fp8},
      {"e5m2", dtype::fp8},
      {"int8", dtype::int8},
      {"fp4", dtype::fp4},
      {"nvfp4", dtype::fp4},
  }};
  for (const auto& [name, t] : k_names) {
    if (lower == name) return t;
  }
  throw invalid_argument("unknown dtype '" + std::string(text) +
                         "' (expected fp64, fp32, tf32, fp16, bf16, fp8, int8 or fp4)");
}

}  // namespace keel::perf
