#include "keel/core/bytes.hpp"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <limits>

#include "keel/core/error.hpp"

namespace keel {
namespace {

__extension__ using u128 = unsigned __int128;  // exact arithmetic on mantissa * unit

struct unit {
  std::string_view name;
  std::uint64_t factor;
};

// Lower-case spellings accepted by parse_size.
constexpr std::array<unit, 19> k_units{{{"", 1},
                                        {"b", 1},
                                        {"byte", 1},
                                        {"bytes", 1},
                                        {"k", k_kib},
                                        {"kb", k_kib},
                                        {"kib", k_kib},
                                        {"m", k_mib},
                                        {"mb", k_mib},
                                        {"mib", k_mib},
                                        {"g", k_gib},
                                        {"gb", k_gib},
                                        {"gib", k_gib},
                                        {"t", k_tib},
                                        {"tb", k_tib},
                                        {"tib", k_tib},
                                        {"p", 1024 * k_tib},
                                        {"pb", 1024 * k_tib},
                                        {"pib", 1024 * k_tib}}};

[[noreturn]] void fail(std::string_view text, std::string_view why) {
  throw invalid_argument(fmt::format(
      "invalid size '{}': {} (expected a number with an optional unit: B, KB/KiB, MB/MiB, "
      "GB/GiB, TB/TiB, PB/PiB)",
      text, why));
}

}  // namespace

std::uint64_t parse_size(std::string_view text) {
  std::size_t i = 0;
  const auto skip_space = [&] {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  };
  skip_space();
  if (i == text.size()) fail(text, "empty");
  if (text[i] == '-') fail(text, "sizes cannot be negative");
  if (text[i] == '+') ++i;

  // Mantissa as an exact integer with `scale` fractional digits.
  u128 mantissa = 0;
  int scale = 0;
  bool digits = false;
  bool point = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '.' && !point) {
      point = true;
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(c))) break;
    digits = true;
    if (mantissa > (static_cast<u128>(1) << 72)) fail(text, "does not fit in 64 bits");
    if (point) {
      if (scale >= 18) continue;  // beyond a billionth of a byte: irrelevant
      ++scale;
    }
    mantissa = mantissa * 10 + static_cast<unsigned>(c - '0');
  }
  if (!digits) fail(text, "no number");
  skip_space();

  std::string suffix;
  for (; i < text.size(); ++i) {
    suffix.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(text[i]))));
  }
  while (!suffix.empty() && std::isspace(static_cast<unsigned char>(suffix.back()))) {
    suffix.pop_back();
  }
  const unit* found = nullptr;
  for (const unit& u : k_units) {
    if (u.name == suffix) found = &u;
  }
  if (found == nullptr) fail(text, fmt::format("unknown unit '{}'", suffix));

  u128 divisor = 1;
  for (int s = 0; s < scale; ++s) divisor *= 10;
  const u128 scaled = mantissa * found->factor;  // < 2^76 * 2^50
  const u128 bytes = (scaled + divisor / 2) / divisor;
  if (bytes > std::numeric_limits<std::uint64_t>::max()) fail(text, "does not fit in 64 bits");
  return static_cast<std::uint64_t>(bytes);
}

std::string format_size(std::uint64_t bytes) {
  const auto b = static_cast<double>(bytes);
  if (bytes <= k_kib) return fmt::format("{} bytes", bytes);
  if (bytes <= k_mib) return fmt::format("{:.2f} KiB", b / k_kib);
  if (bytes <= k_gib) return fmt::format("{:.2f} MiB", b / k_mib);
  return fmt::format("{:.2f} GiB", b / k_gib);
}

std::string format_size_exact(std::uint64_t bytes) {
  constexpr std::array<unit, 5> k_units{
      {{"PiB", 1024 * k_tib}, {"TiB", k_tib}, {"GiB", k_gib}, {"MiB", k_mib}, {"KiB", k_kib}}};
  for (const unit& u : k_units) {
    if (bytes < u.factor) continue;
    // Up to three decimals, only when they are exact.
    for (int decimals = 0; decimals <= 3; ++decimals) {
      u128 pow10 = 1;
      for (int d = 0; d < decimals; ++d) pow10 *= 10;
      const u128 scaled = static_cast<u128>(bytes) * pow10;
      if (scaled % u.factor != 0) continue;
      const auto value = static_cast<std::uint64_t>(scaled / u.factor);
      if (decimals == 0) return fmt::format("{} {}", value, u.name);
      const auto p = static_cast<std::uint64_t>(pow10);
      std::string frac = fmt::format("{:0{}}", value % p, decimals);
      while (frac.back() == '0') frac.pop_back();
      return fmt::format("{}.{} {}", value / p, frac, u.name);
    }
  }
  return fmt::format("{} bytes", bytes);
}

}  // namespace keel
