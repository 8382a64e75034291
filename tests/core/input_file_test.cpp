#include "keel/core/input_file.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "keel/core/error.hpp"

namespace keel {
namespace {

namespace fs = std::filesystem;

class InputFile : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(testing::TempDir()) / ("keel_input_file_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string file(const std::string& name, const std::string& text) {
    const std::string p = (dir_ / name).string();
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  fs::path dir_;
};

// The io_error message of f(), or "" when it does not throw one.
template <class F>
std::string io_message(F&& f) {
  try {
    f();
  } catch (const io_error& e) {
    return e.what();
  }
  return "";
}

TEST_F(InputFile, ReadsARegularFileWhole) {
  const std::string text(100000, 'x');
  EXPECT_EQ(read_input_file(file("a.txt", text)), text);
  EXPECT_EQ(read_input_file(file("empty", "")), "");
  auto in = open_input_file(file("lines", "one\ntwo\n"));
  std::string line, all;
  while (std::getline(*in, line)) all += line + ";";
  EXPECT_EQ(all, "one;two;");
}

TEST_F(InputFile, MissingFilesAndDirectoriesSayWhy) {
  const std::string missing = (dir_ / "nope").string();
  EXPECT_EQ(io_message([&] { read_input_file(missing); }), missing + ": no such file or directory");
  EXPECT_EQ(io_message([&] { check_input_file(dir_.string()); }),
            dir_.string() + ": is a directory, expected a file");
}

TEST_F(InputFile, DevicesAreRefusedBeforeAnyRead) {
  EXPECT_EQ(io_message([] { read_input_file("/dev/zero"); }),
            "/dev/zero: not a regular file (a character device)");
  EXPECT_NE(io_message([] { open_input_file("/dev/urandom"); }).find("not a regular file"),
            std::string::npos);
}

TEST_F(InputFile, AFifoWithoutWriterNeitherHangsNorIsRead) {
  const std::string fifo = (dir_ / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(io_message([&] { read_input_file(fifo); }),
            fifo + ": not a regular file (a FIFO or pipe)");
  input_options pipes;
  pipes.allow_pipe = true;
  EXPECT_EQ(read_input_file(fifo, pipes), "");  // no writer: end of file at once
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST_F(InputFile, ProcFilesThatRefuseReadsAreIoErrors) {
  const std::string m = io_message([] { read_input_file("/proc/self/mem"); });
  EXPECT_EQ(m.rfind("/proc/self/mem: read failed: ", 0), 0u) << m;
  EXPECT_NE(io_message([] { check_input_file("/proc/self/mem"); }), "");
}

TEST_F(InputFile, TheLimitHoldsForSizesAndForStreams) {
  input_options small;
  small.max_bytes = 10;
  const std::string eleven = file("eleven", "01234567890");
  EXPECT_EQ(io_message([&] { read_input_file(eleven, small); }),
            eleven + ": 11 bytes exceed the input limit of 10 bytes (KEEL_MAX_INPUT_BYTES)");
  EXPECT_EQ(read_input_file(file("ten", "0123456789"), small), "0123456789");
  // /proc files claim size 0: the limit stops them while they are read.
  EXPECT_NE(
      io_message([&] { read_input_file("/proc/self/maps", small); }).find("more than 10 bytes"),
      std::string::npos);
  auto in = open_input_file("/proc/self/maps", small);
  std::string line;
  EXPECT_THROW(while (std::getline(*in, line)){}, io_error);
}

TEST_F(InputFile, TheLimitComesFromTheEnvironment) {
  const std::string two_k = file("2k", std::string(2048, 'y'));
  ::setenv("KEEL_MAX_INPUT_BYTES", "1KiB", 1);
  EXPECT_EQ(max_input_bytes(), 1024u);
  EXPECT_NE(io_message([&] { read_input_file(two_k); }).find("exceed the input limit of 1 KiB"),
            std::string::npos);
  ::setenv("KEEL_MAX_INPUT_BYTES", "lots", 1);
  EXPECT_THROW(max_input_bytes(), invalid_argument);
  ::setenv("KEEL_MAX_INPUT_BYTES", "0", 1);
  EXPECT_THROW(read_input_file(two_k), invalid_argument);
  ::unsetenv("KEEL_MAX_INPUT_BYTES");
  EXPECT_EQ(max_input_bytes(), k_default_max_input_bytes);
  EXPECT_EQ(read_input_file(two_k).size(), 2048u);
}

TEST_F(InputFile, DashIsStdinOnlyWhenAsked) {
  EXPECT_EQ(io_message([] { read_input_file("-"); }), "-: no such file or directory");
}

}  // namespace
}  // namespace keel
