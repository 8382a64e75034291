// keel::random::export_table: `keel rand export-tables` writes the tables keel reads at run
// time in the formats it reads back.
#include "keel/random/table_export.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "keel/core/error.hpp"
#include "keel/random/curand_reference.hpp"
#include "keel/random/erfcinv_tables.hpp"
#include "keel/random/mtgp32_tables.hpp"
#include "keel/random/sobol_tables.hpp"

namespace kr = keel::random;

namespace {

// The text after the first line (which names where the tables were read from).
std::string body(const std::string& text) { return text.substr(text.find('\n') + 1); }

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("keel_table_export_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

}  // namespace

TEST(random_table_export, exactly_one_table_is_named) {
  kr::table_export_request none;
  none.out = temp_path("none");
  kr::table_export_request two = none;
  two.mtgp32 = two.erfcinv = true;
  for (const auto& r : {none, two}) {
    try {
      kr::export_table(r);
      ADD_FAILURE() << "no error";
    } catch (const keel::invalid_argument& e) {
      EXPECT_STREQ(e.what(),
                   "export-tables: name one table to export (--sobol, --mtgp32 or --erfcinv)");
    }
  }
  EXPECT_FALSE(std::filesystem::exists(none.out));
}

TEST(random_table_export, mtgp32_tables_read_back) {
  const auto& lookup = kr::mtgp32_default_tables();
  kr::table_export_request r;
  r.mtgp32 = true;
  r.out = temp_path("mtgp32.txt");
  if (!lookup.tables) {
    EXPECT_THROW(kr::export_table(r), keel::invalid_argument);
    GTEST_SKIP() << lookup.description;
  }
  const kr::table_export_result result = kr::export_table(r);
  EXPECT_EQ(result.table, kr::exported_table::mtgp32);
  EXPECT_EQ(kr::to_text(result), "");
  std::ifstream in(r.out);
  const kr::mtgp32_tables back = kr::read_mtgp32_tables(in, r.out);
  std::ostringstream a, b;
  kr::write_mtgp32_tables(a, back);
  kr::write_mtgp32_tables(b, *lookup.tables);
  EXPECT_EQ(body(a.str()), body(b.str()));
  std::filesystem::remove(r.out);
  r.out = "/nonexistent-dir/mtgp32.txt";
  EXPECT_THROW(kr::export_table(r), keel::io_error);
}

TEST(random_table_export, erfcinv_tables_read_back) {
  const auto& lookup = kr::erfcinv_default_tables();
  kr::table_export_request r;
  r.erfcinv = true;
  r.out = temp_path("erfcinv.txt");
  if (!lookup.tables) {
    EXPECT_THROW(kr::export_table(r), keel::invalid_argument);
    GTEST_SKIP() << lookup.description;
  }
  const kr::table_export_result result = kr::export_table(r);
  EXPECT_EQ(result.table, kr::exported_table::erfcinv);
  EXPECT_EQ(kr::to_text(result), "");
  std::ifstream in(r.out);
  const kr::erfcinv_tables back = kr::read_erfcinv_tables(in, r.out);
  std::ostringstream a, b;
  kr::write_erfcinv_tables(a, back);
  kr::write_erfcinv_tables(b, *lookup.tables);
  EXPECT_EQ(body(a.str()), body(b.str()));
  std::filesystem::remove(r.out);
}

TEST(random_table_export, sobol_tables_come_from_libcurand) {
  const auto& ref = kr::curand_reference::get();
  kr::table_export_request r;
  r.sobol = true;
  r.out = temp_path("sobol.bin");
  if (!ref.available()) {
    EXPECT_THROW(kr::export_table(r), keel::backend_error);
    GTEST_SKIP() << ref.description();
  }
  const kr::table_export_result result = kr::export_table(r);
  EXPECT_EQ(result.libcurand, ref.version());
  EXPECT_EQ(kr::to_text(result), "wrote " + r.out + ": scrambled Sobol32 tables of libcurand " +
                                     std::to_string(ref.version()) + " (20000 dimensions)\n");
  const kr::sobol32_scrambled back = kr::read_sobol32_scramble_tables(r.out);
  EXPECT_EQ(back.shifts.size(), kr::k_sobol32_max_dimensions);
  std::filesystem::remove(r.out);
}
