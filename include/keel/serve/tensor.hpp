// keel::serve::tensor — the value a request carries in and a model hands back: an element
// type, a shape and the elements, row-major and contiguous, owned by the tensor.
//
// The server batches requests along dimension 0: concat_batch joins tensors whose shapes
// agree beyond dimension 0, slice_batch takes rows back out. Every size is checked (a shape
// whose element count overflows, data of the wrong length, a slice past the end) and a
// failure is keel::invalid_argument naming the shapes. A tensor is a plain value: move or copy
// it between threads; concurrent reads are safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "keel/core/dtype.hpp"

namespace keel::serve {

class tensor {
 public:
  tensor() = default;
  // Zero-filled.
  tensor(dtype type, std::vector<std::int64_t> shape);
  // Takes `data`, whose size must be the shape's element count times the element size.
  tensor(dtype type, std::vector<std::int64_t> shape, std::vector<std::byte> data);

  dtype type() const noexcept { return type_; }
  const std::vector<std::int64_t>& shape() const noexcept { return shape_; }
  std::int64_t elements() const noexcept { return elements_; }
  std::span<const std::byte> bytes() const noexcept { return data_; }
  std::span<std::byte> bytes() noexcept { return data_; }

  template <class T>
  std::span<const T> values() const noexcept {
    return {reinterpret_cast<const T*>(data_.data()), data_.size() / sizeof(T)};
  }
  template <class T>
  std::span<T> values() noexcept {
    return {reinterpret_cast<T*>(data_.data()), data_.size() / sizeof(T)};
  }

 private:
  dtype type_ = dtype::f32;
  std::vector<std::int64_t> shape_;
  std::int64_t elements_ = 0;
  std::vector<std::byte> data_;
};

// Bytes per element of a tensor of `type` (1 for bool).
std::size_t element_bytes(dtype type) noexcept;
// The element count of `shape`; keel::invalid_argument for a negative extent or overflow.
std::int64_t element_count(std::span<const std::int64_t> shape);
// "[2,3,224,224]".
std::string shape_string(std::span<const std::int64_t> shape);

// Fills `t` with values every model takes as input: floats (fp16, bf16, fp32, fp64) uniform in
// [0, 1), integers uniform in [0, 100) (valid token ids and class indices), booleans 0 or 1.
// Test data: the load generator's requests and model_warmup's random_data.
void fill_random(tensor& t, std::mt19937_64& rng);

// Joins `parts` along dimension 0; all have the same type and agree beyond dimension 0.
tensor concat_batch(std::span<const tensor* const> parts);
// Rows [begin, begin + count) of dimension 0.
tensor slice_batch(const tensor& t, std::int64_t begin, std::int64_t count);

}  // namespace keel::serve
