// table_export — `keel rand export-tables`: the tables keel reads at run time but does not
// ship (NVIDIA's data), written in keel's documented formats for machines without libcurand
// or the CUDA toolkit: scrambled Sobol32's direction vectors and shifts from libcurand (for
// KEEL_SOBOL_SCRAMBLE_TABLES; format: keel/random/sobol_tables.hpp), MTGP32's parameter sets
// (KEEL_MTGP32_PARAMS; keel/random/mtgp32_tables.hpp) and the coefficients of libcurand's
// double erfcinv (KEEL_ERFCINV_COEFFICIENTS; keel/random/erfcinv_tables.hpp), the last two
// from whichever source the default lookup found. The file is written through
// keel::output_file (complete or not at all). Reentrant.
//
// Part of keel::random_verify (link it; keel::random alone never includes this header).
#pragma once

#include <cstddef>
#include <string>

namespace keel::random {

enum class exported_table { sobol, mtgp32, erfcinv };

// Exactly one of the flags names the table.
struct table_export_request {
  bool sobol = false, mtgp32 = false, erfcinv = false;
  std::string out;  // the file to write
};

struct table_export_result {
  exported_table table = exported_table::sobol;
  std::string path;
  int libcurand = 0;           // sobol: the version of libcurand the tables came from
  std::size_t dimensions = 0;  // sobol: dimensions written
};

// Throws keel::invalid_argument unless exactly one table is named ("export-tables: name one
// table to export (--sobol, --mtgp32 or --erfcinv)") and when the named MTGP32 or erfcinv
// tables have no source (the lookup's description); keel::backend_error when --sobol finds
// no libcurand; keel::io_error when the file cannot be written.
table_export_result export_table(const table_export_request& request);

// What the CLI prints: for sobol "wrote PATH: scrambled Sobol32 tables of libcurand V (D
// dimensions)" and a newline; nothing for the others.
std::string to_text(const table_export_result& result);

}  // namespace keel::random
