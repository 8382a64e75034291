// Bit-exactness against libcurand's host generator: the representative slice of the
// verification matrix (every generator x distribution x ordering, short lengths), compared
// directly with libcurand when it can be loaded, and always with the golden answers captured
// from it in tests/data/random/golden.txt. `keel rand verify --full` runs the whole matrix.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "keel/random/curand_reference.hpp"
#include "keel/random/verify.hpp"

namespace kr = keel::random;

namespace {

constexpr std::size_t k_slice_length = 6000;
constexpr std::uint64_t k_slice_random_seed = 0x5eed5eed12345678ull;

// Combinations keel does not reproduce yet (reported, not silently skipped).
bool implemented(const kr::verify_case& c) {
  const bool is_double = c.dist == kr::distribution::uniform_double || c.dist == kr::distribution::normal_double ||
                         c.dist == kr::distribution::log_normal_double;
  return !(c.type == kr::rng_type::philox4_32_10 && is_double);
}

std::vector<kr::verify_case> slice() {
  std::vector<kr::verify_case> out;
  for (auto& c : kr::standard_cases(k_slice_length, false, k_slice_random_seed))
    if (implemented(c)) out.push_back(c);
  return out;
}

std::string golden_path() { return std::string(KEEL_SOURCE_DIR) + "/tests/data/random/golden.txt"; }

}  // namespace

TEST(random_curand_match, slice_equals_libcurand) {
  const auto& ref = kr::curand_reference::get();
  if (!ref.available()) GTEST_SKIP() << ref.description();
  for (const auto& c : slice()) {
    const auto ours = kr::run_keel(c, 2);
    const auto theirs = kr::run_curand(c);
    const auto m = kr::compare(ours, theirs, kr::value_size(c.dist));
    EXPECT_FALSE(m.has_value()) << c.name() << ": " << (m ? m->count : 0) << " values differ, first at "
                                << (m ? m->first_index : 0) << " (status keel "
                                << static_cast<int>(ours.first_error) << ", curand "
                                << static_cast<int>(theirs.first_error) << ")";
  }
}

TEST(random_curand_match, slice_equals_golden_answers) {
  std::ifstream in(golden_path());
  ASSERT_TRUE(in) << "missing " << golden_path() << " (regenerate with `keel rand verify --write-golden`)";
  std::map<std::string, std::string> golden;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    golden[line.substr(0, line.find(' '))] = line;
  }
  for (const auto& c : slice()) {
    const auto it = golden.find(c.name());
    ASSERT_NE(it, golden.end()) << "no golden answer for " << c.name();
    EXPECT_EQ(kr::golden_line(c, kr::run_keel(c, 1)), it->second);
  }
}

TEST(random_curand_match, statuses_match_curand) {
  kr::generator x(kr::rng_type::xorwow);
  float buf[3];
  EXPECT_EQ(x.generate_normal(buf, 3, 0, 1), kr::status::length_not_multiple);
  kr::generator p(kr::rng_type::philox4_32_10);
  EXPECT_EQ(p.generate_normal(buf, 3, 0, 1), kr::status::success);
  std::unique_ptr<kr::generator> g;
  EXPECT_EQ(kr::generator::create(static_cast<kr::rng_type>(7), g), kr::status::type_error);
}
