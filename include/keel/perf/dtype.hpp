// keel::perf::dtype — the element types the performance model knows, with their sizes.
//
// A dtype names both a storage width (bytes per element, used for memory traffic) and the
// arithmetic a GPU runs it on (which peak rate applies, see gpu_spec::peak). Pure values and
// free functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace keel::perf {

enum class dtype { fp64, fp32, tf32, fp16, bf16, fp8, int8, fp4 };

// Bytes per element; fp4 is 0.5. tf32 is stored as fp32 (4 bytes).
double bytes_of(dtype t) noexcept;

// "fp64", "fp32", ... The inverse of parse_dtype.
std::string_view name_of(dtype t) noexcept;

// Accepts the names above and the aliases float64/double, float32/float, float16/half,
// bfloat16, e4m3/e5m2 (fp8). Throws keel::invalid_argument listing the accepted names.
dtype parse_dtype(std::string_view text);

}  // namespace keel::perf
