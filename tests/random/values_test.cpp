// keel::random::write_values and write_random_values: what `keel rand DIST` writes, in each
// format, independent of the chunking, and the setup errors it reports.
#include "keel/random/values.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <vector>

#include "keel/core/error.hpp"
#include "keel/random/generator_config.hpp"

namespace kr = keel::random;

namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("keel_values_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A source of the values 0.5, 1.5, 2.5, ... as T.
template <class T>
kr::value_source counting() {
  auto next = std::make_shared<T>(T(0.5));
  return [next](unsigned char* out, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i, *next += 1)
      std::memcpy(out + i * sizeof(T), &*next, sizeof(T));
  };
}

std::string write(kr::distribution d, std::size_t count, kr::value_format f,
                  const kr::value_source& next) {
  kr::value_layout layout;
  layout.dist = d;
  layout.count = count;
  layout.format = f;
  std::ostringstream os;
  kr::write_values(os, layout, next);
  return os.str();
}

}  // namespace

TEST(random_values, text_prints_each_type_as_the_cli_does) {
  EXPECT_EQ(write(kr::distribution::uniform, 3, kr::value_format::txt, counting<float>()),
            "0.5\n1.5\n2.5\n");
  const kr::value_source words = [](unsigned char* out, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t v = 4000000000u + static_cast<std::uint32_t>(i);
      std::memcpy(out + 4 * i, &v, 4);
    }
  };
  EXPECT_EQ(write(kr::distribution::raw, 2, kr::value_format::txt, words),
            "4000000000\n4000000001\n");
  EXPECT_EQ(write(kr::distribution::poisson, 1, kr::value_format::txt, words), "4000000000\n");
  const kr::value_source third = [](unsigned char* out, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      const double v = 1.0 / 3;
      std::memcpy(out + 8 * i, &v, 8);
    }
  };
  EXPECT_EQ(write(kr::distribution::normal_double, 1, kr::value_format::txt, third),
            "0.33333333333333331\n");
  const kr::value_source tenth = [](unsigned char* out, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      const float v = 0.1f;
      std::memcpy(out + 4 * i, &v, 4);
    }
  };
  EXPECT_EQ(write(kr::distribution::normal, 1, kr::value_format::txt, tenth), "0.100000001\n");
}

TEST(random_values, bin_is_the_bytes_and_npy_adds_an_aligned_header) {
  const std::string bin =
      write(kr::distribution::uniform_double, 4, kr::value_format::bin, counting<double>());
  ASSERT_EQ(bin.size(), 32u);
  double third;
  std::memcpy(&third, bin.data() + 16, 8);
  EXPECT_EQ(third, 2.5);
  const struct {
    kr::distribution d;
    const char* descr;
  } cases[] = {{kr::distribution::raw, "<u4"},
               {kr::distribution::poisson, "<u4"},
               {kr::distribution::uniform, "<f4"},
               {kr::distribution::log_normal_double, "<f8"}};
  for (const auto& c : cases) {
    const std::size_t vs = kr::value_size(c.d);
    const kr::value_source zeros = [](unsigned char* out, std::size_t n) {
      std::memset(out, 0, n * 4);
      (void)n;
    };
    const kr::value_source source = vs == 8 ? counting<double>() : zeros;
    const std::string npy = write(c.d, 5, kr::value_format::npy, source);
    ASSERT_GE(npy.size(), 10u);
    EXPECT_EQ(npy.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
    const std::size_t header =
        static_cast<unsigned char>(npy[8]) + 256u * static_cast<unsigned char>(npy[9]);
    EXPECT_EQ((10 + header) % 64, 0u);
    EXPECT_EQ(npy.size(), 10 + header + 5 * vs);
    const std::string text = npy.substr(10, header);
    EXPECT_EQ(text.rfind(std::string("{'descr': '") + c.descr +
                             "', 'fortran_order': False, 'shape': (5,), }",
                         0),
              0u)
        << text;
    EXPECT_EQ(text.back(), '\n');
  }
  // No values: the header alone.
  EXPECT_EQ(write(kr::distribution::raw, 0, kr::value_format::npy, counting<float>()).size(), 128u);
  EXPECT_EQ(write(kr::distribution::raw, 0, kr::value_format::txt, counting<float>()), "");
}

TEST(random_values, chunks_are_whole_points_and_after_chunk_sees_each) {
  EXPECT_EQ(kr::value_chunk(1), std::size_t{1} << 22);
  EXPECT_EQ(kr::value_chunk(3) % 3, 0u);
  EXPECT_GT(kr::value_chunk(3), (std::size_t{1} << 22) - 3);
  EXPECT_EQ(kr::value_chunk(20000) % 20000, 0u);
  kr::value_layout layout;
  layout.dist = kr::distribution::raw;
  layout.count = kr::value_chunk(1) + 6;
  layout.format = kr::value_format::bin;
  std::vector<std::size_t> calls;
  int after = 0;
  std::ostringstream os;
  kr::write_values(
      os, layout,
      [&](unsigned char* out, std::size_t n) {
        calls.push_back(n);
        std::memset(out, 0, n * 4);
      },
      [&] { ++after; });
  EXPECT_EQ(calls, (std::vector<std::size_t>{kr::value_chunk(1), 6}));
  EXPECT_EQ(after, 2);
  EXPECT_EQ(os.str().size(), layout.count * 4);
}

TEST(random_values, chunked_output_equals_one_generate_call) {
  kr::values_request r;
  r.generator = "xorwow";
  r.seed = 42;
  r.offset = 3;
  r.count = kr::value_chunk(1) + 10;  // two chunks
  r.format = "bin";
  r.out = temp_path("two_chunks.bin");
  kr::write_random_values(kr::distribution::normal, r);
  kr::generator_config config;
  config.type = kr::rng_type::xorwow;
  config.seed = 42;
  config.offset = 3;
  kr::generator g = kr::make_generator(config);
  std::vector<float> expected(r.count);
  ASSERT_EQ(g.generate_normal(expected.data(), expected.size(), 0.0f, 1.0f), kr::status::success);
  const std::string bytes = read_file(r.out);
  ASSERT_EQ(bytes.size(), expected.size() * 4);
  EXPECT_EQ(std::memcmp(bytes.data(), expected.data(), bytes.size()), 0);
  std::filesystem::remove(r.out);
}

TEST(random_values, quasi_random_output_is_laid_out_as_one_call) {
  kr::values_request r;
  r.generator = "sobol32";
  r.dimensions = 3;
  r.count = 12;
  r.out = temp_path("sobol.txt");
  kr::write_random_values(kr::distribution::raw, r);
  kr::generator_config config;
  config.type = kr::rng_type::sobol32;
  config.dimensions = 3;
  kr::generator g = kr::make_generator(config);
  std::vector<std::uint32_t> expected(12);
  ASSERT_EQ(g.generate(expected.data(), expected.size()), kr::status::success);
  std::string text;
  for (const auto v : expected) text += std::to_string(v) + "\n";
  EXPECT_EQ(read_file(r.out), text);
  std::filesystem::remove(r.out);
}

TEST(random_values, setup_errors_name_the_option) {
  const auto message = [](kr::distribution d, const kr::values_request& r) -> std::string {
    try {
      kr::write_random_values(d, r);
    } catch (const keel::invalid_argument& e) {
      return e.what();
    }
    return "no error";
  };
  kr::values_request r;
  r.generator = "sobol32";
  r.seed = 5;
  EXPECT_EQ(message(kr::distribution::raw, r), "sobol32 is quasi-random and takes no --seed");
  r.seed.reset();
  r.dimensions = 3;
  r.count = 7;
  EXPECT_EQ(message(kr::distribution::raw, r), "--count 7 is not a multiple of --dimensions 3");
  kr::values_request philox;
  philox.dimensions = 2;
  EXPECT_EQ(message(kr::distribution::raw, philox), "set dimensions: CURAND_STATUS_TYPE_ERROR");
  kr::values_request mt;
  mt.generator = "mt19937";
  mt.offset = 5;
  EXPECT_EQ(message(kr::distribution::raw, mt), "set offset: CURAND_STATUS_TYPE_ERROR");
  kr::values_request odd;
  odd.generator = "xorwow";
  odd.count = 3;
  odd.out = temp_path("odd.txt");
  EXPECT_EQ(message(kr::distribution::normal, odd), "generate: CURAND_STATUS_LENGTH_NOT_MULTIPLE");
  EXPECT_FALSE(std::filesystem::exists(odd.out));  // nothing half-written is left
  kr::values_request bad;
  bad.generator = "nope";
  EXPECT_THROW(kr::write_random_values(kr::distribution::raw, bad), keel::invalid_argument);
  bad.generator = "philox4_32_10";
  bad.format = "csv";
  EXPECT_THROW(kr::write_random_values(kr::distribution::raw, bad), keel::invalid_argument);
  bad.format = "txt";
  bad.out = "/nonexistent-dir/x.txt";
  EXPECT_THROW(kr::write_random_values(kr::distribution::raw, bad), keel::io_error);
}

TEST(random_values, parses_format_names) {
  EXPECT_EQ(kr::parse_value_format("txt"), kr::value_format::txt);
  EXPECT_EQ(kr::parse_value_format("bin"), kr::value_format::bin);
  EXPECT_EQ(kr::parse_value_format("npy"), kr::value_format::npy);
  EXPECT_THROW(kr::parse_value_format("NPY"), keel::invalid_argument);
}
