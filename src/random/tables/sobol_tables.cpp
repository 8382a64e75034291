// Joe & Kuo's direction numbers (embedded from src/random/tables/data/sobol_joe_kuo_6.bin, format
// in src/random/tables/data/README.md) expanded into direction vectors, and the scrambled tables
// from $KEEL_SOBOL_SCRAMBLE_TABLES or libcurand.
#include "keel/random/sobol_tables.hpp"

#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>

#include "keel/core/error.hpp"
#include "keel/core/fnv1a.hpp"
#include "keel/core/input_file.hpp"
#include "keel/core/output_file.hpp"
#include "keel/random/status.hpp"
#include "tables/curand_library.hpp"
#include "tables/toolkit_data.hpp"

namespace keel::random {
namespace {

constexpr unsigned char k_joe_kuo6[] = {
#include "sobol_joe_kuo_6.inc"
};

[[noreturn]] void corrupt(std::size_t offset) {
  throw parse_error::at_offset("keel's embedded Sobol' direction numbers", offset,
                               "malformed (rebuild keel)");
}

// Reads the packed stream: fields of `width` bits, least significant bit first.
class bit_reader {
 public:
  bit_reader(const unsigned char* data, std::size_t size) : data_(data), size_(size) {}
  std::uint32_t take(unsigned width) {
    std::uint32_t v = 0;
    for (unsigned i = 0; i < width; ++i, ++bit_) {
      if (bit_ / 8 >= size_) corrupt(size_);
      v |= std::uint32_t{(data_[bit_ / 8] >> (bit_ % 8)) & 1u} << i;
    }
    return v;
  }
  std::size_t offset() const { return bit_ / 8; }

 private:
  const unsigned char* data_;
  std::size_t size_;
  std::size_t bit_ = 0;
};

std::vector<sobol32_directions> expand_joe_kuo6() {
  if (sizeof k_joe_kuo6 < 12 || std::memcmp(k_joe_kuo6, "sobolJK6", 8) != 0) corrupt(0);
  std::uint32_t count = 0;
  for (int i = 0; i < 4; ++i) count |= std::uint32_t{k_joe_kuo6[8 + i]} << (8 * i);
  if (count != k_sobol32_max_dimensions) corrupt(8);
  std::vector<sobol32_directions> out(count);
  out[0] = sobol32_van_der_corput();
  bit_reader bits(k_joe_kuo6 + 12, sizeof k_joe_kuo6 - 12);
  std::uint32_t m[31];
  for (std::uint32_t d = 1; d < count; ++d) {
    const unsigned s = bits.take(5);
    if (s == 0) corrupt(12 + bits.offset());
    const std::uint32_t a = bits.take(s - 1);
    for (unsigned k = 1; k <= s; ++k) m[k - 1] = (bits.take(k - 1) << 1) | 1u;
    out[d] = sobol32_directions_from(s, a, m);
  }
  return out;
}

constexpr char k_scramble_magic[8] = {'k', 'e', 'e', 'l', 'S', 'S', '3', '2'};

void put32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xffu));
}
std::uint32_t get32(const unsigned char* p) {
  return std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 | std::uint32_t{p[2]} << 16 |
         std::uint32_t{p[3]} << 24;
}

// Serialized tables without the checksum.
std::string serialize(const sobol32_scrambled& t) {
  std::string out(k_scramble_magic, sizeof k_scramble_magic);
  put32(out, static_cast<std::uint32_t>(t.directions.size()));
  for (std::size_t d = 0; d < t.directions.size(); ++d) {
    for (std::uint32_t v : t.directions[d].v) put32(out, v);
    put32(out, t.shifts[d]);
  }
  return out;
}

}  // namespace

const sobol32_directions* sobol32_joe_kuo6() {
  static const std::vector<sobol32_directions> table = expand_joe_kuo6();
  return table.data();
}

sobol32_scramble_lookup find_sobol32_scramble_tables() {
  return detail::find_toolkit_data<sobol32_scramble_lookup>(
      "KEEL_SOBOL_SCRAMBLE_TABLES", "scrambled Sobol' tables",
      "; scrambled_sobol32 needs NVIDIA's tables, which keel does not ship (write the file with "
      "`keel rand export-tables --sobol --out FILE` where libcurand is installed)",
      read_sobol32_scramble_tables, [](std::string& source) {
        const auto& lib = detail::curand_library::get();
        if (!lib.found())
          throw detail::toolkit_missing(lib.description() +
                                        " and KEEL_SOBOL_SCRAMBLE_TABLES is not set");
        source = lib.description();
        return sobol32_scramble_tables_from_curand();
      });
}

const sobol32_scramble_lookup& sobol32_scramble_default_tables() {
  static const sobol32_scramble_lookup lookup = find_sobol32_scramble_tables();
  return lookup;
}

const sobol32_scrambled* sobol32_scramble_tables(std::string* why) {
  const sobol32_scramble_lookup& lookup = sobol32_scramble_default_tables();
  if (!lookup.tables && why) *why = lookup.description;
  return lookup.tables.get();
}

sobol32_scrambled sobol32_scramble_tables_from_curand() {
  const auto& lib = detail::curand_library::get();
  if (!lib.found()) throw backend_error("keel::random: " + lib.description());
  // curandGetDirectionVectors32 and curandGetScrambleConstants32, declared by signature (no
  // CUDA header is needed); CURAND_SCRAMBLED_DIRECTION_VECTORS_32_JOEKUO6 is 102.
  const auto directions = lib.symbol<int (*)(unsigned(**)[32], int)>("curandGetDirectionVectors32");
  const auto constants = lib.symbol<int (*)(unsigned**)>("curandGetScrambleConstants32");
  unsigned(*vectors)[32] = nullptr;
  unsigned* shifts = nullptr;
  status st = directions && constants ? static_cast<status>(directions(&vectors, 102))
                                      : status::initialization_failed;
  if (st == status::success) st = static_cast<status>(constants(&shifts));
  if (st != status::success || !vectors || !shifts)
    throw backend_error("libcurand's scrambled Sobol' tables: " + std::string(to_string(st)));
  sobol32_scrambled t;
  t.directions.resize(k_sobol32_max_dimensions);
  std::memcpy(t.directions.data(), &vectors[0][0],
              k_sobol32_max_dimensions * sizeof(sobol32_directions));
  t.shifts.assign(shifts, shifts + k_sobol32_max_dimensions);
  return t;
}

void write_sobol32_scramble_tables(const std::string& path, const sobol32_scrambled& tables) {
  if (tables.directions.size() != tables.shifts.size())
    throw invalid_argument("scrambled Sobol' tables: as many shifts as dimensions are needed");
  std::string bytes = serialize(tables);
  const std::uint64_t h =
      fnv1a64(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  put32(bytes, static_cast<std::uint32_t>(h));
  put32(bytes, static_cast<std::uint32_t>(h >> 32));
  write_output_file(path, bytes);
}

sobol32_scrambled read_sobol32_scramble_tables(const std::string& path) {
  const std::string bytes = read_input_file(path);
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() < 12 || std::memcmp(p, k_scramble_magic, 8) != 0)
    throw parse_error::at_offset(
        path, 0, "not a keel scrambled Sobol' table file (from `keel rand export-tables --sobol`)");
  const std::uint32_t count = get32(p + 8);
  if (count != k_sobol32_max_dimensions)
    throw parse_error::at_offset(path, 8,
                                 "expected " + std::to_string(k_sobol32_max_dimensions) +
                                     " dimensions, found " + std::to_string(count));
  const std::size_t body = 12 + std::size_t{count} * 33 * 4;
  if (bytes.size() != body + 8)
    throw parse_error::at_offset(
        path, bytes.size(),
        "truncated or oversized (expected " + std::to_string(body + 8) + " bytes)");
  const std::uint64_t h = fnv1a64(p, body);
  if (get32(p + body) != static_cast<std::uint32_t>(h) ||
      get32(p + body + 4) != static_cast<std::uint32_t>(h >> 32))
    throw parse_error::at_offset(path, body, "checksum mismatch (the file is damaged)");
  sobol32_scrambled t;
  t.directions.resize(count);
  t.shifts.resize(count);
  for (std::uint32_t d = 0; d < count; ++d) {
    const unsigned char* q = p + 12 + std::size_t{d} * 33 * 4;
    for (std::size_t b = 0; b < 32; ++b) t.directions[d].v[b] = get32(q + 4 * b);
    t.shifts[d] = get32(q + 128);
  }
  return t;
}

}  // namespace keel::random
