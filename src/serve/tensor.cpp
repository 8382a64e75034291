#include "keel/serve/tensor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "keel/core/error.hpp"
#include "keel/core/float16.hpp"

namespace keel::serve {

std::size_t element_bytes(dtype type) noexcept { return std::max(1u, bits_of(type) / 8); }

std::int64_t element_count(std::span<const std::int64_t> shape) {
  std::int64_t n = 1;
  for (const std::int64_t d : shape) {
    if (d < 0)
      throw invalid_argument(fmt::format("shape {}: negative extent", shape_string(shape)));
    if (d != 0 && n > std::numeric_limits<std::int64_t>::max() / 16 / d)
      throw invalid_argument(fmt::format("shape {}: too many elements", shape_string(shape)));
    n *= d;
  }
  return n;
}

std::string shape_string(std::span<const std::int64_t> shape) {
  return fmt::format("[{}]", fmt::join(shape, ","));
}

tensor::tensor(dtype type, std::vector<std::int64_t> shape)
    : type_(type), shape_(std::move(shape)), elements_(element_count(shape_)) {
  data_.resize(static_cast<std::size_t>(elements_) * element_bytes(type_));
}

tensor::tensor(dtype type, std::vector<std::int64_t> shape, std::vector<std::byte> data)
    : type_(type),
      shape_(std::move(shape)),
      elements_(element_count(shape_)),
      data_(std::move(data)) {
  const std::size_t want = static_cast<std::size_t>(elements_) * element_bytes(type_);
  if (data_.size() != want)
    throw invalid_argument(fmt::format("a {} tensor of shape {} holds {} bytes, not {}",
                                       triton_name(type_), shape_string(shape_), want,
                                       data_.size()));
}

void fill_random(tensor& t, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> real(0, 1);
  std::uniform_int_distribution<int> integer(0, 99), boolean(0, 1);
  const auto each = [&]<class T>(std::span<T> values, auto draw) {
    for (T& v : values) v = static_cast<T>(draw());
  };
  switch (t.type()) {
    case dtype::boolean: each(t.values<std::uint8_t>(), [&] { return boolean(rng); }); break;
    case dtype::u8: each(t.values<std::uint8_t>(), [&] { return integer(rng); }); break;
    case dtype::i8: each(t.values<std::int8_t>(), [&] { return integer(rng); }); break;
    case dtype::i16: each(t.values<std::int16_t>(), [&] { return integer(rng); }); break;
    case dtype::i32: each(t.values<std::int32_t>(), [&] { return integer(rng); }); break;
    case dtype::i64: each(t.values<std::int64_t>(), [&] { return integer(rng); }); break;
    case dtype::f16:
      each(t.values<std::uint16_t>(), [&] { return float_to_half(real(rng)); });
      break;
    case dtype::bf16:
      each(t.values<std::uint16_t>(), [&] { return float_to_bf16(real(rng)); });
      break;
    case dtype::f32: each(t.values<float>(), [&] { return real(rng); }); break;
    case dtype::f64: each(t.values<double>(), [&] { return real(rng); }); break;
    default: break;  // parse_dtype admits k_tensor_dtypes only
  }
}

tensor concat_batch(std::span<const tensor* const> parts) {
  if (parts.empty()) throw invalid_argument("concat_batch: no tensors");
  const tensor& first = *parts[0];
  if (first.shape().empty())
    throw invalid_argument("concat_batch: a scalar has no batch dimension");
  std::vector<std::int64_t> shape = first.shape();
  std::int64_t rows = 0;
  std::size_t bytes = 0;
  for (const tensor* p : parts) {
    const auto& s = p->shape();
    if (p->type() != first.type() || s.size() != shape.size() ||
        !std::equal(s.begin() + 1, s.end(), shape.begin() + 1))
      throw invalid_argument(fmt::format("concat_batch: {} {} does not batch with {} {}",
                                         triton_name(p->type()), shape_string(s),
                                         triton_name(first.type()), shape_string(shape)));
    rows += s[0];
    bytes += p->bytes().size();
  }
  shape[0] = rows;
  std::vector<std::byte> data(bytes);
  std::size_t at = 0;
  for (const tensor* p : parts) {
    if (!p->bytes().empty()) std::memcpy(data.data() + at, p->bytes().data(), p->bytes().size());
    at += p->bytes().size();
  }
  return tensor(first.type(), std::move(shape), std::move(data));
}

tensor slice_batch(const tensor& t, std::int64_t begin, std::int64_t count) {
  const auto& s = t.shape();
  if (s.empty() || begin < 0 || count < 0 || begin > s[0] || count > s[0] - begin)
    throw invalid_argument(
        fmt::format("slice_batch: rows {}..{} of shape {}", begin, begin + count, shape_string(s)));
  std::vector<std::int64_t> shape = s;
  shape[0] = count;
  const std::size_t row = s[0] == 0 ? 0 : t.bytes().size() / static_cast<std::size_t>(s[0]);
  const auto first = t.bytes().begin() + static_cast<std::ptrdiff_t>(row * begin);
  return tensor(t.type(), std::move(shape),
                std::vector<std::byte>(first, first + static_cast<std::ptrdiff_t>(row * count)));
}

}  // namespace keel::serve
