// keel::random::mtgp32_tables — MTGP32's 200 parameter sets for exponent 11213, read at run
// time, because keel does not ship them.
//
// The sets are the output of MTGP's dynamic creator (a random search by Saito and
// Matsumoto); they cannot be recomputed from a definition, and the copy in the CUDA toolkit
// is NVIDIA's. keel therefore reads them, in this order, from
//   1. the file named by $KEEL_MTGP32_PARAMS, in keel's text format (below);
//   2. curand_mtgp32dc_p_11213.h in the CUDA toolkit's include directory: $KEEL_CUDA_INCLUDE_DIR,
//      else the directory found when keel was configured. The header's initializer is parsed;
//      nothing of it is compiled into keel.
// `keel rand export-tables --mtgp32 --out FILE` writes the text format from whichever source
// was found, for machines without the toolkit.
//
// Text format: '#' starts a comment line; every other non-blank line is one set, 200 lines in
// the order of the sets, 53 fields separated by blanks:
//   mexp pos sh1 sh2 (decimal), then mask, tbl[0..15], tmp_tbl[0..15], flt_tmp_tbl[0..15]
//   (49 32-bit words in hexadecimal, without 0x).
// Every source is validated: 200 sets, mexp 11213, 1 <= pos <= 95 (so that a round of 256
// threads is well defined), shifts in 1..31, the mask, tables that are linear in their 4 index
// bits, and flt_tmp_tbl[i] = (tmp_tbl[i] >> 9) | 0x3f800000.
//
// Thread-safety: the functions are reentrant; mtgp32_default_tables() loads once, on first
// use, and the tables are immutable afterwards.
#pragma once

#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "keel/random/mtgp32.hpp"

namespace keel::random {

struct mtgp32_tables {
  std::vector<mtgp32_params> sets;  // k_mtgp32_param_sets sets, validated
  std::string source;               // the file they were read from
};

// Reads keel's text format. Throws keel::parse_error (source:line:column) for malformed or
// invalid input.
mtgp32_tables read_mtgp32_tables(std::istream& in, const std::string& source);
// Parses the initializer of the CUDA toolkit's curand_mtgp32dc_p_11213.h (a C array of
// mtgp32_params_fast_t). Throws keel::parse_error.
mtgp32_tables parse_mtgp32_cuda_header(std::istream& in, const std::string& source);
// Writes keel's text format. Throws keel::io_error when the stream fails.
void write_mtgp32_tables(std::ostream& out, const mtgp32_tables& tables);

struct mtgp32_table_lookup {
  std::shared_ptr<const mtgp32_tables> tables;  // null when no source was usable
  std::string description;                      // the source, or why none was usable
};

// Looks the sources up now (environment and files as they are at the call).
mtgp32_table_lookup find_mtgp32_tables();
// The process-wide lookup, done once on first use.
const mtgp32_table_lookup& mtgp32_default_tables();

}  // namespace keel::random
