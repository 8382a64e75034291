#include "keel/core/output_file.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <thread>

#include "keel/core/error.hpp"

namespace keel {
namespace {

namespace fs = std::filesystem;

class OutputFile : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(testing::TempDir()) / ("keel_output_file_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string at(const std::string& name) const { return (dir_ / name).string(); }
  static std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }
  // Entries of the directory, to see that no temporary is left behind.
  std::size_t entries() const {
    return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir_), {}));
  }
  fs::path dir_;
};

template <class F>
std::string io_message(F&& f) {
  try {
    f();
  } catch (const io_error& e) {
    return e.what();
  }
  return "";
}

TEST_F(OutputFile, WritesANewFileAndReplacesAnOldOne) {
  write_output_file(at("a.svg"), "first");
  EXPECT_EQ(slurp(at("a.svg")), "first");
  ::chmod(at("a.svg").c_str(), 0640);
  write_output_file(at("a.svg"), [](std::ostream& out) { out << "second " << 2; });
  EXPECT_EQ(slurp(at("a.svg")), "second 2");
  EXPECT_EQ(fs::status(at("a.svg")).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  EXPECT_EQ(entries(), 1u);
}

TEST_F(OutputFile, AFailedWriterLeavesTheOldFileAndNoTemporary) {
  write_output_file(at("keep"), "old");
  EXPECT_THROW(write_output_file(at("keep"),
                                 [](std::ostream& out) {
                                   out << std::string(1 << 20, 'z');
                                   throw std::runtime_error("halfway");
                                 }),
               std::runtime_error);
  EXPECT_EQ(slurp(at("keep")), "old");
  {
    output_file never(at("never"));
    never.stream() << "not committed";
  }
  EXPECT_FALSE(fs::exists(at("never")));
  EXPECT_EQ(entries(), 1u);
}

TEST_F(OutputFile, ErrorsNameThePathAndTheReason) {
  EXPECT_EQ(io_message([&] { write_output_file(dir_.string(), "x"); }),
            dir_.string() + ": is a directory, expected a file");
  const std::string m = io_message([&] { write_output_file(at("no/such/dir/x.svg"), "x"); });
  EXPECT_NE(m.find("no/such/dir/x.svg: "), std::string::npos) << m;
  EXPECT_NE(m.find("no such file or directory"), std::string::npos) << m;
  EXPECT_EQ(io_message([] { write_output_file("/dev/full", std::string(1 << 20, 'f')); }),
            "/dev/full: write failed: No space left on device");
  EXPECT_EQ(io_message([] { write_output_file("", "x"); }), "output path is empty");
}

TEST_F(OutputFile, LongWritersStopAtTheFirstFailure) {
  output_file out("/dev/full");
  for (int i = 0; i < 100 && out.stream(); ++i) out.stream() << std::string(1 << 16, 'q');
  EXPECT_THROW(out.check(), io_error);
  EXPECT_THROW(out.commit(), io_error);
}

TEST_F(OutputFile, DevicesAreWrittenInPlace) {
  write_output_file("/dev/null", "gone");
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
}

TEST_F(OutputFile, ASymbolicLinkStaysALink) {
  write_output_file(at("target"), "old");
  fs::create_symlink(at("target"), at("link"));
  write_output_file(at("link"), "new");
  EXPECT_TRUE(fs::is_symlink(at("link")));
  EXPECT_EQ(slurp(at("target")), "new");
  fs::create_symlink("later", at("dangling"));  // relative, to a file not there yet
  write_output_file(at("dangling"), "made");
  EXPECT_TRUE(fs::is_symlink(at("dangling")));
  EXPECT_EQ(slurp(at("later")), "made");
  EXPECT_EQ(entries(), 4u);
}

TEST_F(OutputFile, TwoWritersOfOnePathLeaveOneWholeFile) {
  const std::string a(4 << 20, 'a'), b(3 << 20, 'b');
  for (int round = 0; round < 5; ++round) {
    std::thread t1([&] { write_output_file(at("race.html"), a); });
    std::thread t2([&] { write_output_file(at("race.html"), b); });
    t1.join();
    t2.join();
    const std::string got = slurp(at("race.html"));
    EXPECT_TRUE(got == a || got == b) << got.size();
  }
  EXPECT_EQ(entries(), 1u);
}

}  // namespace
}  // namespace keel
