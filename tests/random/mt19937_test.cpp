// MT19937: the header-only core (std::mt19937 equality, the characteristic polynomial, jumps
// against stepping) and the engine's host layout, rebuilt here from the core alone (generator g
// is 2^2048 * g steps on, lanes and rows as measured against libcurand), plus the generator
// API's semantics on MT19937. No libcurand needed (curand_match_test compares with it).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "keel/random/distributions.hpp"
#include "keel/random/generator.hpp"
#include "keel/random/mt19937.hpp"

namespace kr = keel::random;

namespace {

// The C++ standard's check of std::mt19937: the 10000th output of the default seed (5489).
constexpr std::uint32_t output_10000() {
  kr::mt19937_state s = kr::mt19937_seed(5489u);
  std::uint32_t v = 0;
  for (int i = 0; i < 10000; ++i) v = kr::mt19937_next(s);
  return v;
}
static_assert(output_10000() == 4123659995u);

// Generator g's k-th output in libcurand's layout, from the core only: generator g starts
// g subsequences (Horner's rule) after the seeded state.
std::uint32_t layout_output(kr::mt19937_state start, std::uint64_t k) {
  kr::mt19937_skipahead(start, k);
  return kr::mt19937_next(start);
}

// Output index within generator t / 8's stream of position p: row R = p / 65536, lane
// c = p % 8, block R / 78 of 624 outputs, word of row r = R % 78 as measured.
std::uint64_t stream_index(std::uint64_t p) {
  static constexpr std::uint32_t row0[8] = {0, 113, 170, 283, 340, 397, 510, 567};
  static constexpr std::uint32_t runs[11] = {1, 57, 114, 171, 227, 284, 341, 398, 454, 511, 568};
  const std::uint64_t row = p / 65536, r = row % 78, c = p % 8;
  const std::uint64_t word = r == 0 ? row0[c] : runs[(r - 1) / 7] + 7 * c + (r - 1) % 7;
  return 624 * (row / 78) + word;
}

}  // namespace

TEST(random_mt19937, equals_std_mt19937) {
  for (std::uint32_t seed : {0u, 1u, 1234u, 5489u, 0xffffffffu}) {
    std::mt19937 ref(seed);
    kr::mt19937_state s = kr::mt19937_seed(seed);
    for (int i = 0; i < 5000; ++i) ASSERT_EQ(kr::mt19937_next(s), ref()) << seed << " output " << i;
  }
}

TEST(random_mt19937, characteristic_polynomial_from_berlekamp_massey) {
  const kr::mt19937_poly& p = kr::mt19937_characteristic_polynomial();
  int terms = 0;
  for (int k = 0; k <= kr::k_mt19937_mexp; ++k) terms += p.coef(k);
  EXPECT_TRUE(p.coef(kr::k_mt19937_mexp));
  EXPECT_TRUE(p.coef(0));
  EXPECT_EQ(terms, 135);  // MT19937's characteristic polynomial has 135 non-zero terms
  // P is primitive of degree 19937, so x^(2^19937) = x modulo P.
  kr::mt19937_poly x{};
  x.w[0] = 2;
  kr::mt19937_poly y = x;
  for (int k = 0; k < kr::k_mt19937_mexp; ++k) y = kr::detail::mt19937_square(y);
  EXPECT_EQ(y, x);
}

TEST(random_mt19937, skipahead_equals_stepping) {
  // Short jumps step; from 2^20 + 1 on they apply x^n mod P.
  for (std::uint64_t n :
       {0ull, 1ull, 623ull, 624ull, 625ull, 99991ull, (1ull << 20) + 1, 3000017ull}) {
    kr::mt19937_state a = kr::mt19937_seed(77u), b = a;
    for (std::uint64_t i = 0; i < n; ++i) kr::mt19937_step(a);
    kr::mt19937_skipahead(b, n);
    EXPECT_EQ(a, b) << n;
    for (int i = 0; i < 700; ++i) ASSERT_EQ(kr::mt19937_next(a), kr::mt19937_next(b)) << n;
  }
  // A jump polynomial applied to a freshly seeded state gives the same stream.
  kr::mt19937_state a = kr::mt19937_seed(9u), b = a;
  for (int i = 0; i < 2500000; ++i) kr::mt19937_step(a);
  kr::mt19937_apply(b, kr::mt19937_jump_polynomial(2500000));
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(kr::mt19937_next(a), kr::mt19937_next(b));
}

TEST(random_mt19937, subsequence_jumps_compose) {
  const auto& t = kr::mt19937_jumps();
  EXPECT_EQ(t.jump[1], kr::detail::mt19937_square(t.jump[0]));
  kr::mt19937_poly x20{};
  x20.w[0] = 2;
  for (int k = 0; k < 20; ++k) x20 = kr::detail::mt19937_square(x20);
  EXPECT_EQ(kr::mt19937_jump_polynomial(1ull << 20), x20);
  // x^a x^b = x^(a+b), by the general product.
  EXPECT_EQ(kr::detail::mt19937_multiply(kr::mt19937_jump_polynomial(1ull << 21),
                                         kr::mt19937_jump_polynomial(12345)),
            kr::mt19937_jump_polynomial((1ull << 21) + 12345));
  kr::mt19937_state a = kr::mt19937_seed(5u), b = a;
  kr::mt19937_step(a);
  kr::mt19937_step(b);
  kr::mt19937_skipahead_sequence(a, 3);
  for (int i = 0; i < 3; ++i) kr::mt19937_apply(b, t.jump[0]);
  EXPECT_EQ(a, b);
}

// The facts the engine is built on, checked on keel's generator against the core: positions in
// rows 0, 1, 77, 78 and 79 (blocks 0 and 1) for generators 0, 1, 2, 1025 and 8191.
TEST(random_mt19937, host_layout_from_the_core) {
  kr::generator g(kr::rng_type::mt19937);
  ASSERT_EQ(g.set_seed(1234), kr::status::success);
  const std::size_t n = 80 * 65536;
  std::vector<std::uint32_t> out(n);
  ASSERT_EQ(g.generate(out.data(), n), kr::status::success);
  // std::mt19937's outputs 0, 1 and 8 are at positions 0, 65536 and 65537 (generator 0).
  std::mt19937 ref(1234);
  const std::uint32_t o0 = ref(), o1 = ref();
  for (int i = 2; i < 8; ++i) ref();
  EXPECT_EQ(out[0], o0);
  EXPECT_EQ(out[65536], o1);
  EXPECT_EQ(out[65537], ref());
  for (std::uint32_t gen : {0u, 1u, 2u, 1025u, 8191u}) {
    kr::mt19937_state start = kr::mt19937_seed(1234u);
    kr::mt19937_skipahead_sequence(start, gen);
    for (std::uint64_t row : {0ull, 1ull, 77ull, 78ull, 79ull})
      for (std::uint64_t c : {0ull, 3ull, 7ull}) {
        const std::uint64_t p = row * 65536 + 8 * gen + c;
        EXPECT_EQ(out[p], layout_output(start, stream_index(p))) << "position " << p;
      }
  }
}

TEST(random_mt19937, seed_uses_its_low_32_bits) {
  kr::generator a(kr::rng_type::mt19937), b(kr::rng_type::mt19937);
  a.set_seed(0x123456789abcdef0ull);
  b.set_seed(0x9abcdef0ull);
  std::vector<std::uint32_t> x(9000), y(9000);
  ASSERT_EQ(a.generate(x.data(), x.size()), kr::status::success);
  ASSERT_EQ(b.generate(y.data(), y.size()), kr::status::success);
  EXPECT_EQ(x, y);
  EXPECT_EQ(x[0], std::mt19937(0x9abcdef0u)());
}

// Every distribution converts the word at its own position: split calls of mixed kinds equal
// the raw stream converted.
TEST(random_mt19937, distributions_convert_one_word_per_position) {
  const std::size_t n = 3 * 65536 + 1001;
  kr::generator raw(kr::rng_type::mt19937);
  std::vector<std::uint32_t> w(n);
  ASSERT_EQ(raw.generate(w.data(), n), kr::status::success);
  kr::generator g(kr::rng_type::mt19937);
  g.set_threads(3);
  std::vector<std::uint32_t> a(1001);
  std::vector<float> u(65535), z(65537), l(7);
  std::vector<double> zd(999), ld(5), d(n - 1001 - 65535 - 65537 - 7 - 999 - 5);
  ASSERT_EQ(g.generate(a.data(), a.size()), kr::status::success);
  ASSERT_EQ(g.generate_uniform(u.data(), u.size()), kr::status::success);
  ASSERT_EQ(g.generate_normal(z.data(), z.size(), 1.5f, 2.0f),
            kr::status::success);  // odd counts are fine
  ASSERT_EQ(g.generate_log_normal(l.data(), l.size(), 0.25f, 0.5f), kr::status::success);
  ASSERT_EQ(g.generate_normal_double(zd.data(), zd.size(), 1.5, 2.0), kr::status::success);
  ASSERT_EQ(g.generate_log_normal_double(ld.data(), ld.size(), 0.25, 0.5), kr::status::success);
  ASSERT_EQ(g.generate_uniform_double(d.data(), d.size()), kr::status::success);
  std::size_t p = 0;
  for (auto v : a) ASSERT_EQ(v, w[p++]);
  for (auto v : u) ASSERT_EQ(v, static_cast<float>(kr::uniform_double_32_mid(w[p++])));
  for (auto v : z) {
    // The inverse CDF: uniform p below 1/2 gives a negative z, and the mirrored word the opposite.
    const double x = (v - 1.5) / 2.0, q = kr::uniform_double_32_mid(w[p++]);
    ASSERT_NEAR(0.5 * std::erfc(-x / std::sqrt(2.0)), q, 1e-6);
  }
  p += l.size();
  for (auto v : zd) {
    // Doubles: the inverse CDF in double precision (keel's own erfcinv without libcurand's
    // coefficients: within an ulp or so of it).
    const double x = (v - 1.5) / 2.0, q = kr::uniform_double_32_mid(w[p++]);
    ASSERT_NEAR(0.5 * std::erfc(-x / std::sqrt(2.0)) / q, 1.0, 1e-13);
  }
  for (auto v : ld) {
    const double x = (std::log(v) - 0.25) / 0.5, q = kr::uniform_double_32_mid(w[p++]);
    ASSERT_NEAR(0.5 * std::erfc(-x / std::sqrt(2.0)) / q, 1.0, 1e-12);
  }
  for (auto v : d) ASSERT_EQ(v, kr::uniform_double_32_mid(w[p++]));
}

TEST(random_mt19937, generator_semantics_follow_libcurand) {
  std::vector<std::uint32_t> first(1000), x(1000);
  kr::generator g(kr::rng_type::mt19937);
  g.set_seed(42);
  ASSERT_EQ(g.generate(first.data(), 1000), kr::status::success);
  // Offsets are refused and change nothing; the same seed or ordering changes nothing.
  EXPECT_EQ(g.set_offset(0), kr::status::type_error);
  EXPECT_EQ(g.set_offset(5), kr::status::type_error);
  EXPECT_EQ(g.set_seed(42), kr::status::success);
  EXPECT_EQ(g.set_ordering(kr::ordering::pseudo_default), kr::status::success);
  EXPECT_EQ(g.set_ordering(kr::ordering::pseudo_best), kr::status::out_of_range);
  EXPECT_EQ(g.set_ordering(kr::ordering::pseudo_seeded), kr::status::out_of_range);
  EXPECT_EQ(g.set_ordering(kr::ordering::pseudo_dynamic), kr::status::out_of_range);
  ASSERT_EQ(g.generate(x.data(), 1000), kr::status::success);
  kr::generator h(kr::rng_type::mt19937);
  h.set_seed(42);
  std::vector<std::uint32_t> two(2000);
  ASSERT_EQ(h.generate(two.data(), 2000), kr::status::success);
  EXPECT_TRUE(std::equal(x.begin(), x.end(), two.begin() + 1000));
  // A new seed (even 42 again after another) or a new ordering restarts at position 0.
  g.set_seed(7);
  g.set_seed(42);
  ASSERT_EQ(g.generate(x.data(), 1000), kr::status::success);
  EXPECT_EQ(x, first);
  EXPECT_EQ(g.set_ordering(kr::ordering::pseudo_legacy), kr::status::success);
  ASSERT_EQ(g.generate(x.data(), 1000), kr::status::success);
  EXPECT_EQ(x, first);
  // Double-precision normals take one word each, odd counts included.
  double dz[3];
  EXPECT_EQ(g.generate_normal_double(dz, 3, 0, 1), kr::status::success);
  EXPECT_EQ(g.generate_log_normal_double(dz, 3, 0, 1), kr::status::success);
  ASSERT_EQ(g.generate(x.data(), 994), kr::status::success);
  EXPECT_TRUE(std::equal(x.begin(), x.begin() + 994, two.begin() + 1006));
}

TEST(random_mt19937, output_does_not_depend_on_threads_or_splits) {
  const std::size_t n = 5 * 65536 + 12345;
  std::vector<std::uint32_t> ref(n);
  {
    kr::generator g(kr::rng_type::mt19937);
    g.set_seed(99);
    g.set_threads(1);
    ASSERT_EQ(g.generate(ref.data(), n), kr::status::success);
  }
  for (unsigned threads : {3u, 8u}) {
    kr::generator g(kr::rng_type::mt19937);
    g.set_seed(99);
    g.set_threads(threads);
    std::vector<std::uint32_t> out(n);
    std::size_t at = 0;
    for (std::size_t part :
         {std::size_t{7}, std::size_t{65536}, std::size_t{1}, std::size_t{200000}}) {
      ASSERT_EQ(g.generate(out.data() + at, part), kr::status::success);
      at += part;
    }
    ASSERT_EQ(g.generate(out.data() + at, n - at), kr::status::success);
    EXPECT_EQ(out, ref) << threads << " threads";
  }
}
