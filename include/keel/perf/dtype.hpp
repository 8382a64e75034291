// keel::perf's element types: keel::dtype (keel/core/dtype.hpp), of which the performance model
// knows fp64, fp32, tf32, fp16, bf16, fp8, int8 and fp4.
//
// A dtype names both a storage width (bytes per element, used for memory traffic: fp4 is 0.5,
// tf32 is stored as fp32) and the arithmetic a GPU runs it on (which peak rate applies, see
// gpu_spec::peak). Pure values and free functions; thread-safe.
#pragma once

#include <string_view>

#include "keel/core/dtype.hpp"

namespace keel::perf {

using keel::bytes_of;
using keel::dtype;
using keel::name_of;

// The types of the model, in the order its messages list them.
inline constexpr dtype k_model_dtypes[] = {dtype::f64,  dtype::f32, dtype::tf32, dtype::f16,
                                           dtype::bf16, dtype::f8,  dtype::i8,   dtype::f4};

// One of k_model_dtypes by any of its spellings (keel/core/dtype.hpp: "fp32", "float32",
// "half", "e4m3", ...). Throws keel::invalid_argument listing the model's names.
dtype parse_dtype(std::string_view text);

}  // namespace keel::perf
