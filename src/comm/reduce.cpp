// Compiled with -O3 (see CMakeLists.txt); each kernel is cloned for AVX-512, AVX2 and the
// baseline and picked at load time (GCC target_clones), so one binary runs everywhere.
#include "reduce.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace keel::comm::detail {
namespace {

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define KEEL_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define KEEL_CLONES
#endif

// Signed integers compute in their unsigned type: wrap-around instead of UB.
template <class T, bool = std::is_integral_v<T>>
struct wide {
  using type = T;
};
template <class T>
struct wide<T, true> {
  using type = std::make_unsigned_t<T>;
};
template <class T>
using wide_t = typename wide<T>::type;

template <class T, reduce_op Op>
[[gnu::always_inline]] inline T apply(T x, T y) {
  if constexpr (Op == reduce_op::sum || Op == reduce_op::avg) {
    return static_cast<T>(static_cast<wide_t<T>>(x) + static_cast<wide_t<T>>(y));
  } else if constexpr (Op == reduce_op::prod) {
    if constexpr (std::is_integral_v<T>) {
      using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, wide_t<T>>;
      return static_cast<T>(static_cast<U>(static_cast<wide_t<T>>(x)) *
                            static_cast<U>(static_cast<wide_t<T>>(y)));
    } else {
      return x * y;
    }
  } else if constexpr (Op == reduce_op::min) {
    return y < x ? y : x;
  } else {
    return x < y ? y : x;
  }
}

template <class T, reduce_op Op>
[[gnu::always_inline]] inline void loop(T* d, const T* a, const T* b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) d[i] = apply<T, Op>(a[i], b[i]);
}

// 16-bit floats: widen to f32, reduce, narrow (round to nearest even).
[[gnu::always_inline]] inline float bf_in(std::uint16_t v) {
  const std::uint32_t u = static_cast<std::uint32_t>(v) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
[[gnu::always_inline]] inline std::uint16_t bf_out(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  const std::uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const std::uint32_t nan = (u >> 16) | 0x40u;
  return static_cast<std::uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

template <reduce_op Op>
[[gnu::always_inline]] inline void loop_bf16(std::uint16_t* d, const std::uint16_t* a,
                                             const std::uint16_t* b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) d[i] = bf_out(apply<float, Op>(bf_in(a[i]), bf_in(b[i])));
}

#if defined(__FLT16_MAX__)
typedef _Float16 half_t __attribute__((may_alias));  // read through uint16_t buffers
template <reduce_op Op>
[[gnu::always_inline]] inline void loop_f16(std::uint16_t* d, const std::uint16_t* a,
                                            const std::uint16_t* b, std::size_t n) {
  auto* hd = reinterpret_cast<half_t*>(d);
  const auto* ha = reinterpret_cast<const half_t*>(a);
  const auto* hb = reinterpret_cast<const half_t*>(b);
  for (std::size_t i = 0; i < n; ++i) {
    hd[i] =
        static_cast<half_t>(apply<float, Op>(static_cast<float>(ha[i]), static_cast<float>(hb[i])));
  }
}
#else
template <reduce_op Op>
void loop_f16(std::uint16_t* d, const std::uint16_t* a, const std::uint16_t* b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    d[i] = float_to_half(apply<float, Op>(half_to_float(a[i]), half_to_float(b[i])));
  }
}
#endif

template <reduce_op Op>
KEEL_CLONES void kernel(void* dst, const void* a, const void* b, std::size_t n, dtype t) {
  switch (t) {
    case dtype::f32:
      loop<float, Op>(static_cast<float*>(dst), static_cast<const float*>(a),
                      static_cast<const float*>(b), n);
      break;
    case dtype::f64:
      loop<double, Op>(static_cast<double*>(dst), static_cast<const double*>(a),
                       static_cast<const double*>(b), n);
      break;
    case dtype::i32:
      loop<std::int32_t, Op>(static_cast<std::int32_t*>(dst), static_cast<const std::int32_t*>(a),
                             static_cast<const std::int32_t*>(b), n);
      break;
    case dtype::i64:
      loop<std::int64_t, Op>(static_cast<std::int64_t*>(dst), static_cast<const std::int64_t*>(a),
                             static_cast<const std::int64_t*>(b), n);
      break;
    case dtype::u8:
      loop<std::uint8_t, Op>(static_cast<std::uint8_t*>(dst), static_cast<const std::uint8_t*>(a),
                             static_cast<const std::uint8_t*>(b), n);
      break;
    case dtype::bf16:
      loop_bf16<Op>(static_cast<std::uint16_t*>(dst), static_cast<const std::uint16_t*>(a),
                    static_cast<const std::uint16_t*>(b), n);
      break;
    case dtype::f16:
      loop_f16<Op>(static_cast<std::uint16_t*>(dst), static_cast<const std::uint16_t*>(a),
                   static_cast<const std::uint16_t*>(b), n);
      break;
    default: break;  // not a buffer type: communicator::impl::begin refuses it
  }
}

}  // namespace

void reduce(void* dst, const void* a, const void* b, std::size_t count, dtype t, reduce_op op) {
  // The kernels write d[i] after reading a[i], b[i]: exact aliasing is fine, partial
  // overlap never happens (callers pass whole, disjoint or identical ranges).
  switch (op) {
    case reduce_op::sum:
    case reduce_op::avg: kernel<reduce_op::sum>(dst, a, b, count, t); break;
    case reduce_op::prod: kernel<reduce_op::prod>(dst, a, b, count, t); break;
    case reduce_op::min: kernel<reduce_op::min>(dst, a, b, count, t); break;
    case reduce_op::max: kernel<reduce_op::max>(dst, a, b, count, t); break;
  }
}

void finish_avg(void* buf, std::size_t count, dtype t, int ranks) {
  if (ranks <= 1) return;
  auto each = [&](auto* p, auto f) {
    for (std::size_t i = 0; i < count; ++i) p[i] = f(p[i]);
  };
  const double inv = 1.0 / ranks;
  switch (t) {
    case dtype::f32:
      each(static_cast<float*>(buf), [&](float x) { return static_cast<float>(x * inv); });
      break;
    case dtype::f64: each(static_cast<double*>(buf), [&](double x) { return x / ranks; }); break;
    case dtype::i32:
      each(static_cast<std::int32_t*>(buf),
           [&](std::int32_t x) { return static_cast<std::int32_t>(x / ranks); });
      break;
    case dtype::i64:
      each(static_cast<std::int64_t*>(buf), [&](std::int64_t x) { return x / ranks; });
      break;
    case dtype::u8:
      each(static_cast<std::uint8_t*>(buf),
           [&](std::uint8_t x) { return static_cast<std::uint8_t>(x / ranks); });
      break;
    case dtype::bf16:
      each(static_cast<std::uint16_t*>(buf),
           [&](std::uint16_t x) { return bf_out(static_cast<float>(bf_in(x) / ranks)); });
      break;
    case dtype::f16:
      each(static_cast<std::uint16_t*>(buf), [&](std::uint16_t x) {
        return float_to_half(half_to_float(x) / static_cast<float>(ranks));
      });
      break;
    default: break;  // not a buffer type: communicator::impl::begin refuses it
  }
}

}  // namespace keel::comm::detail
