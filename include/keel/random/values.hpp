// values — random values written out as `keel rand DIST` writes them: txt (one value a line:
// floats as %.9g, doubles as %.17g, integers in decimal), bin (little-endian values back to
// back) or npy (a NumPy 1.0 header, then the values as in bin).
//
// write_values streams chunk by chunk: `next(buffer, n)` fills the next n values, so a large
// count never sits in memory (e.g. piped into dieharder). Chunks hold an even number of
// values (normals come in pairs that never straddle chunks) and, for quasi-random
// generators, whole points; since split calls give the same values as one call, the output
// does not depend on the chunk size. A file is written through keel::output_file (a
// temporary renamed when the last value is written, removed on failure); a failed write
// stops at once with keel::io_error naming the reason. Reentrant; write_values writes only
// the stream or file it is given (and std::cout for an empty path).
//
// Part of keel::random_verify (link it; keel::random alone never includes this header).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>

#include "keel/random/verify.hpp"

namespace keel::random {

enum class value_format { txt, bin, npy };

// "txt", "bin" or "npy"; throws keel::invalid_argument otherwise.
value_format parse_value_format(std::string_view name);

// Fills `n` values of the distribution's type (value_size bytes each) at `out`.
using value_source = std::function<void(unsigned char* out, std::size_t n)>;

// What to write: `count` values of `dist` (a multiple of `dimensions` for quasi-random
// output), in `format`.
struct value_layout {
  distribution dist = distribution::raw;
  std::size_t count = 0;
  std::uint32_t dimensions = 1;  // >= 1
  value_format format = value_format::txt;
};

// Values per chunk: the largest multiple of `dimensions` not above 2^22.
std::size_t value_chunk(std::uint32_t dimensions);

// Writes the layout's values to `os`, calling `after_chunk` (when set) after each chunk; it
// may throw to stop. Throws what `next` and `after_chunk` throw.
void write_values(std::ostream& os, const value_layout& layout, const value_source& next,
                  const std::function<void()>& after_chunk = {});

// Writes to the file at `path` (keel::output_file), or to std::cout when `path` is empty;
// throws keel::io_error when the file cannot be created or a write fails ("write to stdout
// failed: REASON" for standard output).
void write_values(const std::string& path, const value_layout& layout, const value_source& next);

// `keel rand DIST`: a generator set up from the options as the CLI takes them, its values
// written as above.
struct values_request {
  std::string generator = "philox4_32_10";  // parse_rng_type() names
  std::optional<std::uint64_t> seed;        // pseudo-random generators only (default 0)
  std::uint64_t offset = 0;                 // applied only when not 0 (MT19937 refuses any)
  std::string ordering = "default";         // parse_ordering() names
  std::size_t count = 10;
  std::uint32_t dimensions = 1;  // sobol32 / scrambled_sobol32: 1..20000
  dist_params params;            // mean and stddev (normal, log-normal), lambda (poisson)
  unsigned threads = 0;          // worker threads (0 = all)
  std::string format = "txt";    // parse_value_format() names
  std::string out;               // a file; empty: standard output
};

// Sets the generator up in cuRAND's order (ordering, then dimensions or seed, then offset)
// and writes `request.count` values of `dist`. Throws keel::invalid_argument for an unknown
// name or format, a seed for a quasi-random generator ("sobol32 is quasi-random and takes no
// --seed"), a count that is not a multiple of the dimensions, and a setting or call the
// generator refuses as bad input (the call and cuRAND's status: "set offset:
// CURAND_STATUS_TYPE_ERROR"); keel::backend_error for any other refusal; keel::io_error as
// write_values.
void write_random_values(distribution dist, const values_request& request);

}  // namespace keel::random
