// Byte sizes as people write them: "1.39 GiB", "512MB", "20MiB", "4096", "80G".
//
// parse_size accepts an optional decimal fraction, optional spaces and a case-insensitive
// unit: B/byte/bytes; K, KB, KiB; M, MB, MiB; G, GB, GiB; T, TB, TiB; P, PB, PiB. Every unit
// is a power of 1024: keel follows the JEDEC memory convention that PyTorch users, nvidia-smi
// and GPU datasheets use (an "80GB" A100 holds 80 k_gib). A fractional value is rounded to the
// nearest byte, ties up. format_size prints the way PyTorch's allocator messages do;
// format_size_exact prints a string that parse_size maps back to exactly the same number.
// All functions are pure and thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace keel {

inline constexpr std::uint64_t k_kib = 1024;
inline constexpr std::uint64_t k_mib = 1024 * k_kib;
inline constexpr std::uint64_t k_gib = 1024 * k_mib;
inline constexpr std::uint64_t k_tib = 1024 * k_gib;

// Parses a byte size. Throws keel::invalid_argument naming the text and the accepted units
// when the text is empty, negative, has an unknown unit or does not fit in 64 bits.
std::uint64_t parse_size(std::string_view text);

// PyTorch's format: "512 bytes", "2.00 MiB", "1.39 GiB" (two decimals, IEC units).
std::string format_size(std::uint64_t bytes);

// Exact and short: "20 MiB", "1.5 GiB", "4097 bytes". parse_size(format_size_exact(n)) == n.
std::string format_size_exact(std::uint64_t bytes);

}  // namespace keel
