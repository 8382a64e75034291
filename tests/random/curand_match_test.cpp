// Bit-exactness against libcurand's host generator: the representative slice of the
// verification matrix (every generator x distribution x ordering, short lengths), compared
// directly with libcurand when it can be loaded, and always with the golden answers captured
// from it in tests/data/random/golden.txt. `keel rand verify --full` runs the whole matrix.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "keel/random/curand_reference.hpp"
#include "keel/random/mtgp32_tables.hpp"
#include "keel/random/sobol_tables.hpp"
#include "keel/random/verify.hpp"

namespace kr = keel::random;

namespace {

constexpr std::size_t k_slice_length = 6000;
constexpr std::uint64_t k_slice_random_seed = 0x5eed5eed12345678ull;

std::vector<kr::verify_case> slice() {
  return kr::standard_cases(k_slice_length, false, k_slice_random_seed);
}

// libcurand's MRG32k3a host generator is slow (most of the direct comparison's time), so its
// cases are compared directly in a rotating 1-in-k_mrg_rotation subset: the subset of the day
// (UTC days since the epoch), or that of $KEEL_CURAND_ROTATION to reproduce a run. Over
// k_mrg_rotation days every case is compared directly; slice_equals_golden_answers compares
// every case, MRG32k3a's included, with libcurand's captured answers in every run.
constexpr std::size_t k_mrg_rotation = 8;

std::size_t mrg_rotation() {
  if (const char* env = std::getenv("KEEL_CURAND_ROTATION"))
    return std::strtoull(env, nullptr, 10) % k_mrg_rotation;
  const auto days = std::chrono::floor<std::chrono::days>(std::chrono::system_clock::now());
  return static_cast<std::size_t>(days.time_since_epoch().count()) % k_mrg_rotation;
}

template <class T>
struct aligned_alloc64 {
  using value_type = T;
  aligned_alloc64() = default;
  template <class U>
  aligned_alloc64(const aligned_alloc64<U>&) {}
  T* allocate(std::size_t n) {
    return static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{64}));
  }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete (p, std::align_val_t{64}); }
  template <class U>
  bool operator==(const aligned_alloc64<U>&) const {
    return true;
  }
};
using aligned_allocator = aligned_alloc64<unsigned char>;

// One step of a call sequence, applied to keel's generator and to libcurand's alike.
struct step {
  enum { seed, offset, order, gen } what;
  std::uint64_t value = 0;
  kr::distribution dist = kr::distribution::raw;
  std::size_t n = 0;
};

template <class G>
std::vector<unsigned char, aligned_allocator> play(G& g, const std::vector<step>& steps,
                                                   std::vector<kr::status>& statuses) {
  std::vector<unsigned char, aligned_allocator> bytes;
  bytes.reserve(std::size_t{32} << 20);  // never reallocated: outputs stay 64-byte aligned
  const kr::dist_params params{0.5, 1.5, 1.0};
  for (const auto& s : steps) {
    switch (s.what) {
      case step::seed: statuses.push_back(g.set_seed(s.value)); break;
      case step::offset: statuses.push_back(g.set_offset(s.value)); break;
      case step::order:
        statuses.push_back(g.set_ordering(static_cast<kr::ordering>(s.value)));
        break;
      case step::gen: {
        // Each call's output starts 64-byte aligned within the buffer (libcurand's double
        // paths fault on misaligned pointers).
        const std::size_t at = (bytes.size() + 63) / 64 * 64;
        bytes.resize(at + s.n * kr::value_size(s.dist));
        statuses.push_back(kr::generate(g, s.dist, bytes.data() + at, s.n, params));
        break;
      }
    }
  }
  return bytes;
}

std::string golden_path() { return std::string(KEEL_SOURCE_DIR) + "/tests/data/random/golden.txt"; }

}  // namespace

TEST(random_curand_match, slice_equals_libcurand) {
  const auto& ref = kr::curand_reference::get();
  if (!ref.available()) GTEST_SKIP() << ref.description();
  const std::size_t rotation = mrg_rotation();
  RecordProperty("mrg32k3a_rotation", static_cast<int>(rotation));
  std::size_t mrg_index = 0;
  for (const auto& c : slice()) {
    // Each libcurand MT19937 case costs seconds (it initializes 8192 generators per seed):
    // the golden answers and mt19937_call_sequence_equals_libcurand cover those.
    if (c.type == kr::rng_type::mt19937) continue;
    if (c.type == kr::rng_type::mrg32k3a && mrg_index++ % k_mrg_rotation != rotation) continue;
    const auto ours = kr::run_keel(c, 2);
    const auto theirs = kr::run_curand(c);
    const auto m = kr::compare(ours, theirs, kr::value_size(c.dist));
    EXPECT_FALSE(m.has_value()) << c.name() << ": " << (m ? m->count : 0)
                                << " values differ, first at " << (m ? m->first_index : 0)
                                << " (status keel " << static_cast<int>(ours.first_error)
                                << ", curand " << static_cast<int>(theirs.first_error) << ")"
                                << (c.type == kr::rng_type::mrg32k3a
                                        ? " (KEEL_CURAND_ROTATION=" + std::to_string(rotation) + ")"
                                        : std::string());
  }
}

TEST(random_curand_match, slice_equals_golden_answers) {
  std::ifstream in(golden_path());
  ASSERT_TRUE(in) << "missing " << golden_path()
                  << " (regenerate with `keel rand verify --write-golden`)";
  std::map<std::string, std::string> golden;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    golden[line.substr(0, line.find(' '))] = line;
  }
  for (const auto& c : slice()) {
    // Scrambled Sobol' needs NVIDIA's tables (libcurand or $KEEL_SOBOL_SCRAMBLE_TABLES).
    if (c.type == kr::rng_type::scrambled_sobol32 && !kr::sobol32_scramble_tables()) continue;
    const auto it = golden.find(c.name());
    ASSERT_NE(it, golden.end()) << "no golden answer for " << c.name();
    EXPECT_EQ(kr::golden_line(c, kr::run_keel(c, 1)), it->second);
  }
}

// A new seed or ordering in the middle of a stream re-initializes the threads at the position
// (XORWOW, MRG32k3a; whatever the words per slot were) or at Philox's lagging restart point,
// while the same seed or ordering again changes nothing; 32-bit calls between Philox double
// calls leave the double state alone; a new offset rewinds everything.
TEST(random_curand_match, call_sequences_equal_libcurand) {
  const auto& ref = kr::curand_reference::get();
  if (!ref.available()) GTEST_SKIP() << ref.description();
  using d = kr::distribution;
  const auto best = static_cast<std::uint64_t>(kr::ordering::pseudo_best);
  const auto legacy = static_cast<std::uint64_t>(kr::ordering::pseudo_legacy);
  const auto seeded = static_cast<std::uint64_t>(kr::ordering::pseudo_seeded);
  const auto deflt = static_cast<std::uint64_t>(kr::ordering::pseudo_default);
  const std::vector<step> pseudo = {
      {step::seed, 99},
      {step::gen, 0, d::raw, 10001},
      {step::seed, 7},
      {step::gen, 0, d::normal, 4000},
      {step::seed, 11},
      {step::gen, 0, d::raw, 9000},
      {step::order, best},
      {step::gen, 0, d::uniform, 3001},
      {step::gen, 0, d::uniform_double, 2000},
      {step::offset, 12345},
      {step::gen, 0, d::log_normal, 5000},
      {step::order, legacy},
      {step::gen, 0, d::raw, 7000},
      {step::gen, 0, d::normal_double, 3000},
      {step::seed, 11},
      {step::order, legacy},
      {step::gen, 0, d::uniform, 9000},
      {step::order, seeded},
      {step::gen, 0, d::normal, 6000},
      {step::seed, 5},
      {step::gen, 0, d::log_normal_double, 5000},
      {step::order, best},
      {step::gen, 0, d::raw, 9001},
      {step::seed, 5},
      {step::gen, 0, d::raw, 4099}};  // word counts re-derived from the position
  const std::vector<step> philox_doubles = {{step::seed, 1234},
                                            {step::offset, 5},
                                            {step::gen, 0, d::uniform_double, 1001},
                                            {step::gen, 0, d::uniform, 300001},
                                            {step::gen, 0, d::normal_double, 400000},
                                            {step::gen, 0, d::raw, 3},
                                            {step::gen, 0, d::log_normal_double, 262147},
                                            {step::offset, 1000003},
                                            {step::gen, 0, d::normal_double, 300000},
                                            {step::seed, 1234},
                                            {step::order, deflt},
                                            {step::gen, 0, d::uniform_double, 70001},
                                            {step::seed, 99},
                                            {step::gen, 0, d::normal, 5001},
                                            {step::gen, 0, d::normal_double, 262143},
                                            {step::order, best},
                                            {step::gen, 0, d::uniform_double, 3},
                                            {step::order, legacy},
                                            {step::gen, 0, d::raw, 300001}};
  const std::pair<kr::rng_type, const std::vector<step>*> runs[] = {
      {kr::rng_type::xorwow, &pseudo},
      {kr::rng_type::mrg32k3a, &pseudo},
      {kr::rng_type::philox4_32_10, &philox_doubles},
      {kr::rng_type::mtgp32, &pseudo}};
  for (const auto& [type, steps] : runs) {
    if (type == kr::rng_type::mtgp32 && !kr::mtgp32_default_tables().tables) continue;
    kr::generator ours(type);
    std::unique_ptr<kr::curand_generator> theirs;
    ASSERT_EQ(ref.create_host_generator(type, theirs), kr::status::success);
    std::vector<kr::status> st_ours, st_theirs;
    const auto a = play(ours, *steps, st_ours);
    const auto b = play(*theirs, *steps, st_theirs);
    EXPECT_EQ(st_ours, st_theirs) << kr::to_string(type);
    ASSERT_EQ(a.size(), b.size());
    // Report the first call whose output differs.
    std::size_t at = 0, call = 0;
    for (const auto& s : *steps) {
      if (s.what != step::gen) continue;
      at = (at + 63) / 64 * 64;
      const std::size_t len = s.n * kr::value_size(s.dist);
      EXPECT_TRUE(std::equal(a.begin() + at, a.begin() + at + len, b.begin() + at))
          << kr::to_string(type) << ": call " << call << " (" << kr::to_string(s.dist) << " x"
          << s.n << ") differs from libcurand";
      at += len;
      ++call;
    }
  }
}

// MT19937 on one libcurand generator, so that it initializes only three times: every
// distribution, odd counts, refused offsets, the same seed and ordering again (no effect),
// then a new seed and a new ordering (each restarts the stream).
TEST(random_curand_match, mt19937_call_sequence_equals_libcurand) {
  const auto& ref = kr::curand_reference::get();
  if (!ref.available()) GTEST_SKIP() << ref.description();
  using d = kr::distribution;
  const auto def = static_cast<std::uint64_t>(kr::ordering::pseudo_default);
  const auto legacy = static_cast<std::uint64_t>(kr::ordering::pseudo_legacy);
  const std::vector<step> steps = {{step::seed, 0x1234567800000042ull},
                                   {step::gen, 0, d::raw, 70001},
                                   {step::gen, 0, d::uniform, 3},
                                   {step::offset, 3},
                                   {step::gen, 0, d::normal, 65537},
                                   {step::seed, 0x1234567800000042ull},
                                   {step::order, def},
                                   {step::gen, 0, d::log_normal, 999},
                                   {step::gen, 0, d::uniform_double, 140000},
                                   {step::gen, 0, d::normal_double, 70001},
                                   {step::gen, 0, d::log_normal_double, 3},
                                   {step::seed, 5},
                                   {step::gen, 0, d::normal, 1001},
                                   {step::gen, 0, d::log_normal_double, 65535},
                                   {step::order, legacy},
                                   {step::gen, 0, d::normal_double, 9},
                                   {step::gen, 0, d::raw, 600000},
                                   {step::gen, 0, d::uniform, 5111808}};
  kr::generator ours(kr::rng_type::mt19937);
  std::unique_ptr<kr::curand_generator> theirs;
  ASSERT_EQ(ref.create_host_generator(kr::rng_type::mt19937, theirs), kr::status::success);
  std::vector<kr::status> st_ours, st_theirs;
  const auto a = play(ours, steps, st_ours);
  const auto b = play(*theirs, steps, st_theirs);
  EXPECT_EQ(st_ours, st_theirs);
  ASSERT_EQ(a.size(), b.size());
  std::size_t at = 0, call = 0;
  for (const auto& s : steps) {
    if (s.what != step::gen) continue;
    at = (at + 63) / 64 * 64;
    const std::size_t len = s.n * kr::value_size(s.dist);
    EXPECT_TRUE(std::equal(a.begin() + at, a.begin() + at + len, b.begin() + at))
        << "call " << call << " (" << kr::to_string(s.dist) << " x" << s.n
        << ") differs from libcurand";
    at += len;
    ++call;
  }
}

// set_ordering's answer for every generator x ordering, as libcurand's host generator gives it.
TEST(random_curand_match, ordering_statuses_match_curand) {
  const auto& ref = kr::curand_reference::get();
  if (!ref.available()) GTEST_SKIP() << ref.description();
  for (auto type : {kr::rng_type::philox4_32_10, kr::rng_type::xorwow, kr::rng_type::mrg32k3a,
                    kr::rng_type::mt19937, kr::rng_type::mtgp32})
    for (auto order :
         {kr::ordering::pseudo_best, kr::ordering::pseudo_default, kr::ordering::pseudo_seeded,
          kr::ordering::pseudo_legacy, kr::ordering::pseudo_dynamic, kr::ordering::quasi_default}) {
      if (type == kr::rng_type::mtgp32 && !kr::mtgp32_default_tables().tables) continue;
      kr::generator ours(type);
      std::unique_ptr<kr::curand_generator> theirs;
      ASSERT_EQ(ref.create_host_generator(type, theirs), kr::status::success);
      EXPECT_EQ(ours.set_ordering(order), theirs->set_ordering(order))
          << kr::to_string(type) << " " << kr::to_string(order);
    }
}

TEST(random_curand_match, statuses_match_curand) {
  kr::generator x(kr::rng_type::xorwow);
  float buf[3];
  EXPECT_EQ(x.generate_normal(buf, 3, 0, 1), kr::status::length_not_multiple);
  kr::generator p(kr::rng_type::philox4_32_10);
  EXPECT_EQ(p.generate_normal(buf, 3, 0, 1), kr::status::success);
  EXPECT_EQ(p.set_ordering(kr::ordering::pseudo_dynamic), kr::status::out_of_range);
  EXPECT_EQ(p.set_ordering(kr::ordering::pseudo_seeded), kr::status::out_of_range);
  kr::generator m(kr::rng_type::mrg32k3a);
  EXPECT_EQ(m.set_ordering(kr::ordering::pseudo_seeded), kr::status::out_of_range);
  kr::generator mt(kr::rng_type::mt19937);
  EXPECT_EQ(mt.generate_normal(buf, 3, 0, 1), kr::status::success);
  double dbuf[3];
  EXPECT_EQ(mt.generate_normal_double(dbuf, 3, 0, 1), kr::status::success);
  EXPECT_EQ(mt.generate_log_normal_double(dbuf, 3, 0, 1), kr::status::success);
  EXPECT_EQ(mt.set_offset(0), kr::status::type_error);
  EXPECT_EQ(mt.set_ordering(kr::ordering::pseudo_best), kr::status::out_of_range);
  std::unique_ptr<kr::generator> g;
  EXPECT_EQ(kr::generator::create(static_cast<kr::rng_type>(7), g), kr::status::type_error);
}

// MTGP32's normals are inverse-CDF values of single words: 2^24 of them (every block, 341
// rounds) exercise keel's erfcinv on that many inputs against libcurand's.
TEST(random_curand_match, mtgp32_normals_equal_libcurand_on_16m_values) {
  const auto& ref = kr::curand_reference::get();
  if (!ref.available()) GTEST_SKIP() << ref.description();
  if (!kr::mtgp32_default_tables().tables) GTEST_SKIP() << kr::mtgp32_default_tables().description;
  constexpr std::size_t n = std::size_t{1} << 24;
  std::vector<float> ours(n), theirs(n);
  kr::generator g(kr::rng_type::mtgp32);
  std::unique_ptr<kr::curand_generator> c;
  ASSERT_EQ(ref.create_host_generator(kr::rng_type::mtgp32, c), kr::status::success);
  g.set_seed(20240611);
  c->set_seed(20240611);
  ASSERT_EQ(g.generate_normal(ours.data(), n, 0.0f, 1.0f), kr::status::success);
  ASSERT_EQ(c->generate_normal(theirs.data(), n, 0.0f, 1.0f), kr::status::success);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < n; ++i)
    differ += std::memcmp(&ours[i], &theirs[i], sizeof(float)) != 0;
  EXPECT_EQ(differ, 0u);
}
