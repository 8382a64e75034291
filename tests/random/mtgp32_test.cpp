// MTGP32: the header-only core against a plain sequential statement of the recursion, the
// parameter-set formats (keel's text format and the CUDA toolkit's C initializer) on
// synthetic sets, and the generator's behaviour with the real sets when they are available.
// Bit-exactness against libcurand is in curand_match_test.cpp and the golden file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <vector>

#include "keel/core/error.hpp"
#include "keel/random/generator.hpp"
#include "keel/random/mtgp32.hpp"
#include "keel/random/mtgp32_tables.hpp"

#include "../../src/random/cpu_kernels/simd.hpp"
#include "../../src/random/engines/normal_icdf.hpp"

namespace kr = keel::random;
namespace kd = keel::random::detail;

namespace {

// A valid but made-up parameter set (MTGP's real sets are not part of keel).
kr::mtgp32_params synthetic_set(std::mt19937& rng) {
  kr::mtgp32_params p;
  p.pos = 1 + static_cast<int>(rng() % 95);
  p.sh1 = 1 + static_cast<int>(rng() % 31);
  p.sh2 = 1 + static_cast<int>(rng() % 31);
  std::uint32_t basis[4], tmp[4];
  for (int k = 0; k < 4; ++k) {
    basis[k] = rng();
    tmp[k] = rng();
  }
  for (int i = 0; i < 16; ++i) {
    for (int k = 0; k < 4; ++k)
      if (i >> k & 1) {
        p.tbl[i] ^= basis[k];
        p.tmp_tbl[i] ^= tmp[k];
      }
    p.flt_tmp_tbl[i] = (p.tmp_tbl[i] >> 9) | 0x3f800000u;
  }
  return p;
}

kr::mtgp32_tables synthetic_tables() {
  std::mt19937 rng(7);
  kr::mtgp32_tables t;
  t.source = "synthetic";
  for (int i = 0; i < kr::k_mtgp32_param_sets; ++i) t.sets.push_back(synthetic_set(rng));
  return t;
}

std::string text_of(const kr::mtgp32_tables& t) {
  std::ostringstream s;
  kr::write_mtgp32_tables(s, t);
  return s.str();
}

// The same sets as a C initializer in the CUDA toolkit header's layout.
std::string header_of(const kr::mtgp32_tables& t) {
  std::ostringstream s;
  s << "/* a comment with { braces } */\n#if !defined X\n#define X\n#include \"curand_mtgp32.h\"\n"
       "static const int mtgpdc_params_11213_num = 200;\n"
       "#if (__cplusplus >= 201703L)\ninline mtgp32_params_fast_t "
       "mtgp32dc_params_fast_11213[]\n#else\n"
       "static mtgp32_params_fast_t mtgp32dc_params_fast_11213[]\n#endif\n = {\n";
  for (const auto& p : t.sets) {
    s << "    {\n        /* No.x delta:1 weight:2 */\n        11213,\n        " << p.pos
      << ",\n        " << p.sh1 << ",\n        " << p.sh2 << ",\n";
    for (const auto* tbl : {p.tbl, p.tmp_tbl, p.flt_tmp_tbl}) {
      s << "        {";
      for (int j = 0; j < 16; ++j)
        s << "(0x" << std::hex << tbl[j] << std::dec << ")" << (j < 15 ? ",\n" : "},\n");
    }
    s << "        (0x" << std::hex << p.mask << std::dec
      << "),\n        {0x86,0x1e,0x5b,0x00}\n    },\n";
  }
  s << "};\n#endif\n";
  return s.str();
}

// The recursion as the definition states it, over a growing array: no ring, no rounds.
std::vector<std::uint32_t> sequential(const kr::mtgp32_params& p, std::uint32_t seed,
                                      std::size_t n) {
  kr::mtgp32_state st{};
  kr::mtgp32_init(st, p, seed);
  std::vector<std::uint32_t> x(st.s, st.s + kr::k_mtgp32_n), out;
  for (std::size_t i = 0; i < n; ++i) {
    x.push_back(kr::mtgp32_recursion(p, x[i], x[i + 1], x[i + p.pos]));
    out.push_back(kr::mtgp32_temper(p, x.back(), x[i + p.pos - 1]));
  }
  return out;
}

bool real_tables() { return kr::mtgp32_default_tables().tables != nullptr; }

}  // namespace

static_assert(kr::k_mtgp32_n == 351 && kr::k_mtgp32_mask == 0xfff80000u);
static_assert(kr::mtgp32_block_seed(0, 0) == 1 && kr::mtgp32_block_seed(1234, 5) == 1240);
// seed ^ (seed >> 32) keeps the low word of the high half folded in.
static_assert(kr::mtgp32_block_seed(0x0000000100000001ull, 0) == 1 &&
              kr::mtgp32_block_seed(~0ull, 2) == 3);

TEST(random_mtgp32, rounds_equal_the_sequential_recursion) {
  std::mt19937 rng(1);
  for (int trial = 0; trial < 8; ++trial) {
    const kr::mtgp32_params p = synthetic_set(rng);
    const std::uint32_t seed = rng();
    constexpr int rounds = 9;  // more than one trip around the 1024-word ring
    const auto expected = sequential(p, seed, rounds * kr::k_mtgp32_threads);
    kr::mtgp32_state st{};
    kr::mtgp32_init(st, p, seed);
    std::vector<std::uint32_t> got(rounds * kr::k_mtgp32_threads);
    for (int r = 0; r < rounds; ++r) kr::mtgp32_round(st, p, got.data() + r * kr::k_mtgp32_threads);
    ASSERT_EQ(got, expected) << "pos " << p.pos;
  }
}

TEST(random_mtgp32, float_tempering_gives_floats_in_one_to_two) {
  std::mt19937 rng(2);
  const kr::mtgp32_params p = synthetic_set(rng);
  for (int i = 0; i < 1000; ++i) {
    const std::uint32_t bits = kr::mtgp32_temper_float_bits(p, rng(), rng());
    float f;
    std::memcpy(&f, &bits, sizeof f);
    EXPECT_GE(f, 1.0f);
    EXPECT_LT(f, 2.0f);
  }
}

TEST(random_mtgp32, text_format_round_trips) {
  const kr::mtgp32_tables t = synthetic_tables();
  std::istringstream in(text_of(t));
  const kr::mtgp32_tables back = kr::read_mtgp32_tables(in, "t.txt");
  EXPECT_EQ(back.sets, t.sets);
  EXPECT_EQ(back.source, "t.txt");
}

TEST(random_mtgp32, text_format_errors_name_the_line) {
  const std::string good = text_of(synthetic_tables());
  // The first set is on line 3, after the two comment lines write_mtgp32_tables puts first.
  const std::size_t line3 = good.find('\n', good.find('\n') + 1) + 1;
  auto broken = [&](const std::string& first_set) {
    std::string s = good;
    s.replace(line3, s.find('\n', line3) - line3, first_set);
    return s;
  };
  const std::string set0 = good.substr(line3, good.find('\n', line3) - line3);
  auto with_field = [&](int k, const std::string& v) {
    std::istringstream f(set0);
    std::vector<std::string> fields{std::istream_iterator<std::string>(f), {}};
    fields[k] = v;
    std::string s;
    for (const auto& x : fields) s += (s.empty() ? "" : " ") + x;
    return broken(s);
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {broken("11213 1 2 3"), "fields"},
      {with_field(0, "19937"), "exponent"},
      {with_field(1, "96"), "pos"},
      {with_field(2, "0"), "shifts"},
      {with_field(4, "ffffffff"), "mask"},
      {with_field(5, "00000001"), "tbl[0]"},
      {with_field(40, "00000000"), "flt_tmp_tbl"},
      {with_field(6, "xyz"), "hexadecimal"},
      {with_field(6, "123456789"), "hexadecimal"},
  };
  for (const auto& [text, what] : cases) {
    std::istringstream in(text);
    try {
      kr::read_mtgp32_tables(in, "t.txt");
      ADD_FAILURE() << "accepted a set with a bad " << what;
    } catch (const keel::parse_error& e) {
      EXPECT_EQ(e.line(), 3u) << e.what();
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  }
  std::istringstream short_file(good.substr(0, good.rfind('\n', good.size() - 2) + 1));
  EXPECT_THROW(kr::read_mtgp32_tables(short_file, "t.txt"), keel::parse_error);  // 199 sets
}

TEST(random_mtgp32, cuda_header_initializer_is_parsed) {
  const kr::mtgp32_tables t = synthetic_tables();
  std::istringstream in(header_of(t));
  EXPECT_EQ(kr::parse_mtgp32_cuda_header(in, "h.h").sets, t.sets);

  std::string bad = header_of(t);
  bad.replace(bad.find("(0x"), 3, "(zz");
  std::istringstream in2(bad);
  try {
    kr::parse_mtgp32_cuda_header(in2, "h.h");
    ADD_FAILURE() << "accepted a malformed initializer";
  } catch (const keel::parse_error& e) {
    EXPECT_EQ(e.line(), 18u) << e.what();  // the first table entry
    EXPECT_EQ(e.column(), 11u) << e.what();
  }
  std::istringstream deep("mtgp32dc_params_fast_11213[] = {{{{{1}}}}};");
  EXPECT_THROW(kr::parse_mtgp32_cuda_header(deep, "h.h"), keel::parse_error);
  std::istringstream none("int x = 1;");
  EXPECT_THROW(kr::parse_mtgp32_cuda_header(none, "h.h"), keel::parse_error);
}

TEST(random_mtgp32, lookup_follows_the_environment) {
  const kr::mtgp32_tables t = synthetic_tables();
  const std::string path = testing::TempDir() + "keel_mtgp32_params.txt";
  {
    std::ofstream out(path);
    kr::write_mtgp32_tables(out, t);
  }
  const char* old = std::getenv("KEEL_MTGP32_PARAMS");
  const std::string saved = old ? old : "";
  setenv("KEEL_MTGP32_PARAMS", path.c_str(), 1);
  const auto found = kr::find_mtgp32_tables();
  setenv("KEEL_MTGP32_PARAMS", (path + ".missing").c_str(), 1);
  const auto missing = kr::find_mtgp32_tables();
  if (old)
    setenv("KEEL_MTGP32_PARAMS", saved.c_str(), 1);
  else
    unsetenv("KEEL_MTGP32_PARAMS");
  ASSERT_TRUE(found.tables) << found.description;
  EXPECT_EQ(found.tables->sets, t.sets);
  EXPECT_EQ(found.description, path);
  EXPECT_FALSE(missing.tables);
  EXPECT_NE(missing.description.find("no such file"), std::string::npos) << missing.description;
}

TEST(random_mtgp32, generator_exists_exactly_when_the_sets_do) {
  std::unique_ptr<kr::generator> g;
  EXPECT_EQ(kr::generator::create(kr::rng_type::mtgp32, g),
            real_tables() ? kr::status::success : kr::status::type_error);
  if (!real_tables()) EXPECT_THROW(kr::generator{kr::rng_type::mtgp32}, keel::invalid_argument);
}

TEST(random_mtgp32, exported_sets_read_back_equal) {
  if (!real_tables()) GTEST_SKIP() << kr::mtgp32_default_tables().description;
  const auto& t = *kr::mtgp32_default_tables().tables;
  std::istringstream in(text_of(t));
  EXPECT_EQ(kr::read_mtgp32_tables(in, "x").sets, t.sets);
}

TEST(random_mtgp32, output_is_independent_of_threads_and_splits) {
  if (!real_tables()) GTEST_SKIP() << kr::mtgp32_default_tables().description;
  constexpr std::size_t n = (std::size_t{1} << 21) + 333;
  auto run = [&](unsigned threads, const std::vector<std::size_t>& calls, kr::ordering order) {
    kr::generator g(kr::rng_type::mtgp32);
    g.set_threads(threads);
    EXPECT_EQ(g.set_ordering(order), kr::status::success);
    g.set_seed(77);
    std::vector<float> out(n);
    std::size_t at = 0;
    for (std::size_t c : calls) {
      EXPECT_EQ(g.generate_normal(out.data() + at, c, 0.0f, 1.0f), kr::status::success);
      at += c;
    }
    EXPECT_EQ(at, n);
    return out;
  };
  for (auto order : {kr::ordering::pseudo_default, kr::ordering::pseudo_legacy}) {
    const auto one = run(1, {n}, order);
    EXPECT_EQ(run(2, {n}, order), one);
    EXPECT_EQ(run(3, {n}, order), one);
    EXPECT_EQ(
        run(2, {1, 255, 256, 257, 49151, 49153, 3, n - 1 - 255 - 256 - 257 - 49151 - 49153 - 3},
            order),
        one);
  }
}

// The AVX2 and AVX-512 kernels (round, uniform conversions, inverse CDF) give the scalar
// path's bits.
TEST(random_mtgp32, output_is_independent_of_the_simd_level) {
  if (!real_tables()) GTEST_SKIP() << kr::mtgp32_default_tables().description;
  namespace simd = keel::random::detail::simd;
  const simd::level saved = simd::active_level();
  constexpr std::size_t n = 3 * 192 * 256 + 77;
  auto run = [&](simd::level l) {
    simd::force_level(l);
    kr::generator g(kr::rng_type::mtgp32);
    g.set_threads(1);
    g.set_seed(31337);
    std::vector<std::uint32_t> raw(n);
    std::vector<float> floats(3 * n);
    std::vector<double> doubles(n);
    EXPECT_EQ(g.generate(raw.data(), n), kr::status::success);
    EXPECT_EQ(g.generate_normal(floats.data(), n, 0.5f, 2.0f), kr::status::success);
    EXPECT_EQ(g.generate_uniform(floats.data() + n, n), kr::status::success);
    EXPECT_EQ(g.generate_log_normal(floats.data() + 2 * n, n, 0.5f, 2.0f), kr::status::success);
    EXPECT_EQ(g.generate_uniform_double(doubles.data(), n), kr::status::success);
    std::vector<unsigned char> bytes(raw.size() * 4 + floats.size() * 4 + doubles.size() * 8);
    std::memcpy(bytes.data(), raw.data(), raw.size() * 4);
    std::memcpy(bytes.data() + raw.size() * 4, floats.data(), floats.size() * 4);
    std::memcpy(bytes.data() + raw.size() * 4 + floats.size() * 4, doubles.data(),
                doubles.size() * 8);
    return bytes;
  };
  const auto scalar = run(simd::level::scalar);
  for (auto l : {simd::level::avx2, simd::level::avx512}) {
    EXPECT_TRUE(run(l) == scalar) << "level " << static_cast<int>(simd::active_level());
  }
  simd::force_level(saved);
}

TEST(random_mtgp32, seed_and_ordering_changes_restart_the_stream) {
  if (!real_tables()) GTEST_SKIP() << kr::mtgp32_default_tables().description;
  kr::generator g(kr::rng_type::mtgp32);
  g.set_seed(5);
  std::vector<std::uint32_t> first(2000), again(1000);
  ASSERT_EQ(g.generate(first.data(), first.size()), kr::status::success);
  kr::generator h(kr::rng_type::mtgp32);
  h.set_seed(5);
  h.generate(again.data(), 1000);
  EXPECT_EQ(h.set_seed(5), kr::status::success);  // the same seed: the stream goes on
  h.generate(again.data(), 1000);
  EXPECT_TRUE(std::equal(again.begin(), again.end(), first.begin() + 1000));
  h.set_seed(6);
  h.set_seed(5);  // changed and back: a restart
  h.generate(again.data(), 1000);
  EXPECT_TRUE(std::equal(again.begin(), again.end(), first.begin()));
  EXPECT_EQ(h.set_ordering(kr::ordering::pseudo_best),
            kr::status::success);  // another ordering: a restart
  h.generate(again.data(), 1000);
  EXPECT_TRUE(std::equal(again.begin(), again.end(), first.begin()));
  EXPECT_EQ(h.set_ordering(kr::ordering::pseudo_seeded), kr::status::out_of_range);
  EXPECT_EQ(h.set_offset(10), kr::status::type_error);
  // The double log-normal: the double inverse-CDF normal of one word per value.
  double d[2];
  EXPECT_EQ(h.generate_log_normal_double(d, 2, 0.25, 0.5), kr::status::success);
  for (int i = 0; i < 2; ++i)
    EXPECT_EQ(d[i], std::exp(0.25 + 0.5 * kd::normal_icdf_double(first[1000 + i]))) << i;
  float f[3];
  EXPECT_EQ(h.generate_normal(f, 3, 0.0f, 1.0f), kr::status::success);  // odd counts are fine
  h.generate(again.data(), 995);
  EXPECT_TRUE(std::equal(again.begin(), again.begin() + 995, first.begin() + 1005));
}
