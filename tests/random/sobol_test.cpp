// Sobol32 and scrambled Sobol32: the header-only core (Gray code, jumps, the recurrence), the
// Joe-Kuo table (golden hash, and libcurand's own vectors when it loads), the scrambled tables'
// file format, and the generator's statuses, layout and call sequences against libcurand.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <vector>

#include "keel/core/error.hpp"
#include "keel/random/curand_reference.hpp"
#include "keel/random/generator.hpp"
#include "keel/random/sobol.hpp"
#include "keel/random/sobol_tables.hpp"
#include "keel/random/verify.hpp"
#include "process.hpp"

namespace kr = keel::random;

namespace {

constexpr kr::sobol32_directions k_vdc = kr::sobol32_van_der_corput();
static_assert(kr::sobol32_point(k_vdc, 0) == 0 && kr::sobol32_point(k_vdc, 1) == 0x80000000u &&
              kr::sobol32_point(k_vdc, 2) == 0xc0000000u &&
              kr::sobol32_point(k_vdc, 3) == 0x40000000u);
static_assert(kr::sobol32_next(k_vdc, 0xffffffffu, kr::sobol32_point(k_vdc, 0xffffffffu)) == 0);

std::uint64_t fnv(const void* p, std::size_t n) {
  return kr::fnv1a64(static_cast<const unsigned char*>(p), n);
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("keel_sobol_test_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

}  // namespace

TEST(random_sobol, first_points_are_curands_gray_code_order) {
  // curandGenerate on a default CURAND_RNG_QUASI_SOBOL32 host generator.
  const std::uint32_t expected[] = {0x00000000, 0x80000000, 0xc0000000, 0x40000000,
                                    0x60000000, 0xe0000000, 0xa0000000, 0x20000000};
  kr::generator g(kr::rng_type::sobol32);
  std::uint32_t out[8];
  ASSERT_EQ(g.generate(out, 8), kr::status::success);
  EXPECT_TRUE(std::equal(out, out + 8, expected));
}

TEST(random_sobol, jumps_equal_gray_code_steps) {
  const kr::sobol32_directions* table = kr::sobol32_joe_kuo6();
  std::mt19937 rng(7);
  for (std::uint32_t dim : {0u, 1u, 2u, 17u, 999u, 19999u}) {
    const auto& d = table[dim];
    const std::uint32_t shift = rng();
    for (std::uint32_t start : {0u, 1u, 15u, 16u, 1000u, 0x7ffffff0u, 0xfffffff0u}) {
      std::uint32_t x = kr::sobol32_point(d, start, shift);
      for (std::uint32_t i = start; i != start + 40; ++i) {
        ASSERT_EQ(x, kr::sobol32_point(d, i, shift)) << "dimension " << dim + 1 << " index " << i;
        x = kr::sobol32_next(d, i, x);
      }
    }
  }
}

TEST(random_sobol, recurrence_of_dimension_two_is_pascals_triangle) {
  // x + 1 with m_1 = 1: v[k] has bit 31 - j set iff binomial(k, j) is odd (Lucas: j & k == j).
  const std::uint32_t m[] = {1};
  const kr::sobol32_directions d = kr::sobol32_directions_from(1, 0, m);
  for (std::uint32_t k = 0; k < 32; ++k)
    for (std::uint32_t j = 0; j <= k; ++j)
      EXPECT_EQ((d.v[k] >> (31 - j)) & 1u, (j & k) == j ? 1u : 0u) << k << " " << j;
  EXPECT_EQ(kr::sobol32_joe_kuo6()[1], d);
}

TEST(random_sobol, joe_kuo_table_matches_libcurands_golden_hash) {
  std::ifstream in(std::string(KEEL_SOURCE_DIR) + "/tests/data/random/sobol_directions.txt");
  ASSERT_TRUE(in);
  std::string line;
  while (std::getline(in, line) && (line.empty() || line[0] == '#')) {
  }
  const std::uint64_t golden = std::stoull(line, nullptr, 16);
  EXPECT_EQ(
      fnv(kr::sobol32_joe_kuo6(), kr::k_sobol32_max_dimensions * sizeof(kr::sobol32_directions)),
      golden);
}

TEST(random_sobol, joe_kuo_table_equals_libcurands_vectors) {
  const auto& ref = kr::curand_reference::get();
  if (!ref.available()) GTEST_SKIP() << ref.description();
  const std::uint32_t* theirs = nullptr;
  ASSERT_EQ(ref.sobol32_direction_vectors(false, theirs), kr::status::success);
  const kr::sobol32_directions* ours = kr::sobol32_joe_kuo6();
  for (std::uint32_t d = 0; d < kr::k_sobol32_max_dimensions; ++d)
    ASSERT_EQ(std::memcmp(ours[d].v, theirs + 32 * d, sizeof ours[d].v), 0)
        << "dimension " << d + 1;
}

TEST(random_sobol, statuses_match_curand) {
  using st = kr::status;
  for (auto type : {kr::rng_type::sobol32, kr::rng_type::quasi_default}) {
    kr::generator g(type);
    EXPECT_EQ(g.set_seed(5), st::type_error);
    EXPECT_EQ(g.set_ordering(kr::ordering::quasi_default), st::success);
    for (auto o :
         {kr::ordering::pseudo_default, kr::ordering::pseudo_best, kr::ordering::pseudo_legacy,
          kr::ordering::pseudo_seeded, kr::ordering::pseudo_dynamic})
      EXPECT_EQ(g.set_ordering(o), st::out_of_range);
    EXPECT_EQ(g.set_dimensions(0), st::out_of_range);
    EXPECT_EQ(g.set_dimensions(20001), st::out_of_range);
    EXPECT_EQ(g.set_dimensions(20000), st::success);
    EXPECT_EQ(g.set_dimensions(3), st::success);
    std::uint32_t raw[12];
    float f[12];
    double d[12];
    EXPECT_EQ(g.generate(raw, 7), st::length_not_multiple);
    EXPECT_EQ(g.generate_uniform(f, 4), st::length_not_multiple);
    EXPECT_EQ(g.generate_normal_double(d, 5, 0, 1), st::length_not_multiple);
    EXPECT_EQ(g.generate(raw, 0), st::success);
    // Refused calls do not move the position: the next 3 values are point 0 of each dimension.
    ASSERT_EQ(g.generate(raw, 3), st::success);
    EXPECT_EQ(raw[0] | raw[1] | raw[2], 0u);
    EXPECT_EQ(g.generate_normal(f, 3, 0, 1), st::success);  // any multiple of D, odd or not
  }
  kr::generator pseudo(kr::rng_type::philox4_32_10);
  EXPECT_EQ(pseudo.set_dimensions(2), kr::status::type_error);
}

TEST(random_sobol, layout_is_points_of_each_dimension_in_turn) {
  kr::generator g(kr::rng_type::sobol32);
  ASSERT_EQ(g.set_dimensions(4), kr::status::success);
  ASSERT_EQ(g.set_offset(1000), kr::status::success);
  std::vector<std::uint32_t> out(4 * 50);
  ASSERT_EQ(g.generate(out.data(), out.size()), kr::status::success);
  for (std::uint32_t dim = 0; dim < 4; ++dim)
    for (std::uint32_t i = 0; i < 50; ++i)
      EXPECT_EQ(out[dim * 50 + i], kr::sobol32_point(kr::sobol32_joe_kuo6()[dim], 1000 + i));
  // The dimension count may change between calls; the point index carries on.
  ASSERT_EQ(g.set_dimensions(1), kr::status::success);
  ASSERT_EQ(g.generate(out.data(), 1), kr::status::success);
  EXPECT_EQ(out[0], kr::sobol32_point(kr::sobol32_joe_kuo6()[0], 1050));
}

TEST(random_sobol, output_does_not_depend_on_threads_or_splits) {
  using d = kr::distribution;
  for (auto dist : {d::raw, d::uniform, d::uniform_double, d::normal, d::normal_double,
                    d::log_normal, d::log_normal_double}) {
    const std::size_t dims = 3, points = 300001, n = dims * points, vs = kr::value_size(dist);
    const kr::dist_params params{0.25, 1.5, 1.0};
    std::vector<unsigned char> one(n * vs), many(n * vs);
    kr::generator a(kr::rng_type::sobol32), b(kr::rng_type::sobol32);
    a.set_threads(1);
    b.set_threads(7);
    for (auto* g : {&a, &b}) {
      ASSERT_EQ(g->set_dimensions(dims), kr::status::success);
      ASSERT_EQ(g->set_offset(0xffff0000u), kr::status::success);  // crosses index 2^32
    }
    ASSERT_EQ(kr::generate(a, dist, one.data(), n, params), kr::status::success);
    ASSERT_EQ(kr::generate(b, dist, many.data(), n, params), kr::status::success);
    EXPECT_EQ(one, many) << kr::to_string(dist);
    // With one dimension, split calls equal one call.
    kr::generator c(kr::rng_type::sobol32);
    std::vector<unsigned char> split(n * vs);
    c.set_offset(0xffff0000u);
    ASSERT_EQ(kr::generate(c, dist, split.data(), 12345, params), kr::status::success);
    ASSERT_EQ(kr::generate(c, dist, split.data() + 12345 * vs, n - 12345, params),
              kr::status::success);
    kr::generator e(kr::rng_type::sobol32);
    e.set_offset(0xffff0000u);
    ASSERT_EQ(kr::generate(e, dist, one.data(), n, params), kr::status::success);
    EXPECT_EQ(one, split) << kr::to_string(dist);
  }
}

// KEEL_RANDOM_SIMD caps the level (scalar, avx2; unset: the best the CPU has): the vector
// conversions, the erfcinv of the normals included, write the scalar code's bits.
TEST(random_sobol, simd_levels_write_the_same_bits) {
  for (const char* dist : {"raw", "uniform", "uniform-double", "normal", "normal-double",
                           "log-normal", "log-normal-double"}) {
    std::vector<std::string> args = {
        "rand",       dist,      "--generator", "sobol32",  "--dimensions", "5",         "--offset",
        "4294900000", "--count", "400000",      "--format", "bin",          "--threads", "1"};
    if (std::string(dist).find("normal") != std::string::npos)
      args.insert(args.end(), {"--mean", "0.5", "--stddev", "1.5"});
    std::vector<std::string> outputs;
    for (const char* level : {"scalar", "avx2", ""}) {
      if (*level)
        ::setenv("KEEL_RANDOM_SIMD", level, 1);
      else
        ::unsetenv("KEEL_RANDOM_SIMD");
      const auto r = keel::test::run_keel(args);
      ASSERT_EQ(r.exit_code, 0) << r.err;
      outputs.push_back(r.out);
    }
    EXPECT_EQ(outputs[0].size(), 400000u * kr::value_size(kr::parse_distribution(dist)));
    EXPECT_TRUE(outputs[0] == outputs[1]) << dist << ": scalar and avx2 differ";
    EXPECT_TRUE(outputs[0] == outputs[2]) << dist << ": scalar and the CPU's best level differ";
  }
}

TEST(random_sobol, scramble_table_files_round_trip_and_refuse_damage) {
  kr::sobol32_scrambled t;
  t.directions.assign(kr::sobol32_joe_kuo6(),
                      kr::sobol32_joe_kuo6() + kr::k_sobol32_max_dimensions);
  for (std::uint32_t d = 0; d < kr::k_sobol32_max_dimensions; ++d)
    t.shifts.push_back(d * 2654435761u);
  const std::string path = temp_path("tables.bin");
  kr::write_sobol32_scramble_tables(path, t);
  const kr::sobol32_scrambled back = kr::read_sobol32_scramble_tables(path);
  EXPECT_TRUE(back.directions == t.directions);
  EXPECT_EQ(back.shifts, t.shifts);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(1000);
    f.put('\x5a');
  }
  EXPECT_THROW(kr::read_sobol32_scramble_tables(path), keel::parse_error);
  std::filesystem::resize_file(path, 100);
  EXPECT_THROW(kr::read_sobol32_scramble_tables(path), keel::parse_error);
  std::filesystem::remove(path);
  EXPECT_THROW(kr::read_sobol32_scramble_tables(path), keel::io_error);
}

TEST(random_sobol, scrambled_points_follow_the_tables) {
  std::string why;
  const kr::sobol32_scrambled* t = kr::sobol32_scramble_tables(&why);
  std::unique_ptr<kr::generator> g;
  if (!t) {
    EXPECT_EQ(kr::generator::create(kr::rng_type::scrambled_sobol32, g), kr::status::type_error);
    EXPECT_FALSE(why.empty());
    GTEST_SKIP() << why;
  }
  ASSERT_EQ(kr::generator::create(kr::rng_type::scrambled_sobol32, g), kr::status::success);
  ASSERT_EQ(g->set_dimensions(2), kr::status::success);
  std::uint32_t out[8];
  ASSERT_EQ(g->generate(out, 8), kr::status::success);
  for (std::uint32_t dim = 0; dim < 2; ++dim)
    for (std::uint32_t i = 0; i < 4; ++i)
      EXPECT_EQ(out[4 * dim + i], kr::sobol32_point(t->directions[dim], i, t->shifts[dim]));
}

// Steps applied to keel's generator and libcurand's alike: offsets (near 2^32 too),
// dimension changes, orderings, refused calls and every distribution in between.
TEST(random_sobol, call_sequences_equal_libcurand) {
  const auto& ref = kr::curand_reference::get();
  if (!ref.available()) GTEST_SKIP() << ref.description();
  using d = kr::distribution;
  struct step {
    enum { offset, dims, order, gen } what;
    std::uint64_t value = 0;
    d dist = d::raw;
    std::size_t n = 0;
  };
  const std::vector<step> steps = {
      {step::dims, 5},
      {step::gen, 0, d::raw, 1000},
      {step::gen, 0, d::normal, 7},
      {step::gen, 0, d::uniform, 505},
      {step::dims, 2},
      {step::gen, 0, d::normal_double, 4002},
      {step::order, static_cast<std::uint64_t>(kr::ordering::quasi_default)},
      {step::gen, 0, d::log_normal, 3000},
      {step::offset, 0xfffffff0ull},
      {step::gen, 0, d::uniform_double, 64},
      {step::dims, 20000},
      {step::gen, 0, d::raw, 40000},
      {step::gen, 0, d::raw, 30000},
      {step::offset, (std::uint64_t{7} << 32) + 99},
      {step::dims, 3},
      {step::gen, 0, d::log_normal_double, 3333},
      {step::gen, 0, d::normal, 300000}};
  std::vector<kr::rng_type> types = {kr::rng_type::sobol32, kr::rng_type::quasi_default};
  if (kr::sobol32_scramble_tables()) types.push_back(kr::rng_type::scrambled_sobol32);
  const kr::dist_params params{0.5, 1.5, 1.0};
  for (auto type : types) {
    kr::generator ours(type);
    std::unique_ptr<kr::curand_generator> theirs;
    ASSERT_EQ(ref.create_host_generator(type, theirs), kr::status::success);
    std::size_t call = 0;
    for (const auto& s : steps) {
      kr::status a = kr::status::success, b = kr::status::success;
      if (s.what == step::offset) {
        a = ours.set_offset(s.value);
        b = theirs->set_offset(s.value);
      } else if (s.what == step::dims) {
        a = ours.set_dimensions(static_cast<std::uint32_t>(s.value));
        b = theirs->set_dimensions(static_cast<std::uint32_t>(s.value));
      } else if (s.what == step::order) {
        a = ours.set_ordering(static_cast<kr::ordering>(s.value));
        b = theirs->set_ordering(static_cast<kr::ordering>(s.value));
      } else {
        // 64-byte aligned buffers: libcurand's double paths fault on misaligned pointers.
        const std::size_t bytes = (s.n * kr::value_size(s.dist) + 63) / 64 * 64;
        std::unique_ptr<unsigned char, void (*)(void*)> x(
            static_cast<unsigned char*>(std::aligned_alloc(64, bytes)), std::free),
            y(static_cast<unsigned char*>(std::aligned_alloc(64, bytes)), std::free);
        std::memset(x.get(), 0, bytes);
        std::memset(y.get(), 0, bytes);
        a = kr::generate(ours, s.dist, x.get(), s.n, params);
        b = kr::generate(*theirs, s.dist, y.get(), s.n, params);
        EXPECT_EQ(std::memcmp(x.get(), y.get(), bytes), 0)
            << kr::to_string(type) << ": call " << call << " (" << kr::to_string(s.dist) << " x"
            << s.n << ") differs";
        ++call;
      }
      EXPECT_EQ(a, b) << kr::to_string(type) << " step " << (&s - steps.data());
    }
  }
}
