// The tables behind keel's Sobol' generators: Joe & Kuo's direction vectors (shipped with
// keel) and NVIDIA's scrambled tables (never shipped; taken from libcurand or from a file).
//
// sobol32_joe_kuo6() gives the direction vectors of dimensions 1..20000 that cuRAND calls
// CURAND_DIRECTION_VECTORS_32_JOEKUO6: S. Joe and F. Y. Kuo's published direction numbers
// (new-joe-kuo-6.21201; see src/random/tables/data/README.md for their licence), expanded by the
// Sobol' recurrence the first time it is called (a few milliseconds; 2.5 MB).
//
// Scrambled Sobol' (CURAND_RNG_QUASI_SCRAMBLED_SOBOL32) uses NVIDIA's own random data: per
// dimension 32 scrambled direction vectors and a 32-bit digital shift. keel does not ship
// them. sobol32_scramble_tables() obtains them, once per process, from the file named by
// $KEEL_SOBOL_SCRAMBLE_TABLES when that is set, else from libcurand (curandGetDirectionVectors32
// with CURAND_SCRAMBLED_DIRECTION_VECTORS_32_JOEKUO6 and curandGetScrambleConstants32) when it
// can be loaded; `keel rand export-tables --sobol --out FILE` writes such a file on a machine
// that has libcurand.
//
// Thread-safety: the getters may be called from any thread; the tables they return are
// immutable and live until the process exits.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "keel/random/sobol.hpp"

namespace keel::random {

// k_sobol32_max_dimensions entries; entry d - 1 is dimension d. Throws keel::parse_error
// only when the table embedded at build time is malformed (a broken build).
const sobol32_directions* sobol32_joe_kuo6();

struct sobol32_scrambled {
  std::vector<sobol32_directions> directions;  // k_sobol32_max_dimensions entries
  std::vector<std::uint32_t> shifts;           // the digital shift of each dimension
};

// The scrambled tables' lookup, as for MTGP32's and erfcinv's: $KEEL_SOBOL_SCRAMBLE_TABLES (a
// file `keel rand export-tables --sobol` wrote), else libcurand's own tables.
struct sobol32_scramble_lookup {
  std::shared_ptr<const sobol32_scrambled> tables;  // null when no source was usable
  std::string description;                          // the source, or why none was usable
};
// Looks the sources up now (environment and files as they are at the call).
sobol32_scramble_lookup find_sobol32_scramble_tables();
// The process-wide lookup, done once on first use.
const sobol32_scramble_lookup& sobol32_scramble_default_tables();

// The process-wide tables, or nullptr when neither source is available; then `why` (if given)
// says so in one line (file unreadable or malformed, or libcurand not found).
const sobol32_scrambled* sobol32_scramble_tables(std::string* why = nullptr);

// The tables as libcurand's host library reports them. Throws keel::backend_error when
// libcurand cannot be loaded or refuses.
sobol32_scrambled sobol32_scramble_tables_from_curand();

// The file format of $KEEL_SOBOL_SCRAMBLE_TABLES: "keelSS32", the dimension count, then per
// dimension its 32 vectors and its shift, then an FNV-1a 64 checksum of all that, every number
// little-endian. write_ throws keel::io_error; read_ throws keel::io_error when the file cannot
// be read and keel::parse_error when it is not such a file.
void write_sobol32_scramble_tables(const std::string& path, const sobol32_scrambled& tables);
sobol32_scrambled read_sobol32_scramble_tables(const std::string& path);

}  // namespace keel::random
