// keel::random::erfcinv_tables — the coefficients of libcurand's double-precision erfcinv,
// read at run time, because keel does not ship them.
//
// libcurand's host generator computes its double inverse-CDF normals (MT19937, MTGP32 and
// Sobol' normal/log-normal doubles; its float erfcinvf rounds the same double) with the CUDA
// math library's erfcinv: the rational Chebyshev approximations of J. M. Blair, C. A. Edwards
// and J. H. Johnson, "Rational Chebyshev approximations for the inverse of the error
// function", Math. Comp. 30 (1976) 827-830, Tables 18, 39 and 59, with the coefficient
// values of the CUDA toolkit's crt/math_functions.hpp. To give libcurand's bits keel needs
// those exact values, and reads them, in this order, from
//   1. the file named by $KEEL_ERFCINV_COEFFICIENTS, in keel's text format (below);
//   2. crt/math_functions.hpp in the CUDA toolkit's include directory: $KEEL_CUDA_INCLUDE_DIR,
//      else the directory found when keel was configured. The Horner lines of the "Table 18",
//      "Table 39" and "Table 59" blocks of its double erfinv (and erfcinv's Table 59, which
//      must agree) are parsed; nothing of the header is compiled into keel.
// Without either, keel's inverse-CDF double normals use keel's own erfcinv (within an ulp, not
// bit-exact with libcurand); erfcinv_default_tables().description says which is in use.
// `keel rand export-tables --erfcinv --out FILE` writes the text format from whichever source
// was found, for machines without the toolkit.
//
// Text format: '#' starts a comment line; every other non-blank line is one polynomial, its
// name (p18 q18 p39 q39 p59 q59, each once, in any order) and its coefficients from the
// constant term up, separated by blanks, as C floating-point literals (keel writes hexadecimal
// ones, which are exact). Pn is Table n's numerator (7, 9, 11 coefficients); Qn its monic
// denominator without the leading 1 (7, 8, 10).
// Every source is validated: the counts, finite values, and each table's value at one point
// of its interval against keel's own erfcinv (relative difference below 1e-9), which catches
// a misread sign or a swapped line.
//
// Thread-safety: the functions are reentrant; erfcinv_default_tables() loads once, on first
// use, and the tables are immutable afterwards.
#pragma once

#include <array>
#include <iosfwd>
#include <memory>
#include <string>

namespace keel::random {

struct erfcinv_tables {
  // Coefficients from the constant term up; q without its leading 1.
  std::array<double, 7> p18, q18;
  std::array<double, 9> p39;
  std::array<double, 8> q39;
  std::array<double, 11> p59;
  std::array<double, 10> q59;
  std::string source;  // the file they were read from
};

// Reads keel's text format. Throws keel::parse_error (source:line:column) for malformed or
// invalid input.
erfcinv_tables read_erfcinv_tables(std::istream& in, const std::string& source);
// Parses the CUDA toolkit's crt/math_functions.hpp. Throws keel::parse_error.
erfcinv_tables parse_erfcinv_cuda_header(std::istream& in, const std::string& source);
// Writes keel's text format. Throws keel::io_error when the stream fails.
void write_erfcinv_tables(std::ostream& out, const erfcinv_tables& tables);

struct erfcinv_table_lookup {
  std::shared_ptr<const erfcinv_tables> tables;  // null when no source was usable
  std::string description;                       // the source, or why none was usable
};

// Looks the sources up now (environment and files as they are at the call).
erfcinv_table_lookup find_erfcinv_tables();
// The process-wide lookup, done once on first use; keel's generators use these tables.
const erfcinv_table_lookup& erfcinv_default_tables();

}  // namespace keel::random
