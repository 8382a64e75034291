// keel::dtype — the one vocabulary of element types in keel: the buffers of the collectives
// (comm) and the arithmetic and storage of the performance model (perf) name their types with
// it, and so do the tensors of the inference server (serve). Each module supports a subset
// (comm has no tf32, fp8 or fp4 buffers; perf no uint8; serve no tf32, fp8 or fp4) and parses
// with that subset, naming it in errors.
//
// Three naming styles: keel's ("fp32", "bf16", "int8", the performance model's), nccl-tests'
// ("float", "half", "bfloat16", "int32", the collectives') and the KServe v2 protocol's as
// Triton spells it ("FP32", "BF16", "INT8", "BOOL", the server's); short_name() is the compact
// form ("f32", "i64"). parse_dtype accepts every spelling of any style, the short forms and
// PyTorch's and NumPy's ("float32", "double", "e4m3", "nvfp4"), ignoring ASCII case.
// Pure functions over constant tables: thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace keel {

enum class dtype : std::uint8_t {
  f64,
  f32,
  tf32,
  f16,
  bf16,
  f8,
  f4,
  i64,
  i32,
  i8,
  u8,
  i16,
  u16,
  u32,
  u64,
  boolean,
};

enum class dtype_style { keel, nccl, triton };

// Storage bits per element: f4 is 4; tf32 is stored as fp32 (32); a bool is one byte (8).
unsigned bits_of(dtype t) noexcept;
// Bytes per element (bits / 8: fp4 is 0.5).
double bytes_of(dtype t) noexcept;

// "fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "fp4", "int64", "int32", "int8", "uint8",
// "int16", "uint16", "uint32", "uint64", "bool".
std::string_view name_of(dtype t) noexcept;
// nccl-tests' names: "double", "float", "half", "bfloat16", "int64", "int32", "int8",
// "uint8"; keel's name for the types nccl-tests has none for (tf32, fp8, fp4).
std::string_view nccl_name(dtype t) noexcept;
// The KServe v2 protocol's names: "FP64", "FP32", "FP16", "BF16", "INT64" ... "UINT64",
// "BOOL"; keel's name upper-cased for the types it has none for ("TF32", "FP8", "FP4").
std::string_view triton_name(dtype t) noexcept;
// "f64", "f32", "tf32", "f16", "bf16", "f8", "f4", "i64", "i32", "i8", "u8", "i16", "u16",
// "u32", "u64", "b8".
std::string_view short_name(dtype t) noexcept;
std::string_view name_of(dtype t, dtype_style style) noexcept;

// The type `text` names, if it is one of `supported`; otherwise throws keel::invalid_argument
// "unknown dtype '<text>': expected a, b or c" listing `supported` in `style`.
dtype parse_dtype(std::string_view text, std::span<const dtype> supported, dtype_style style);

}  // namespace keel
