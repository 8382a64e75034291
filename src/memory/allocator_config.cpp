#include "keel/memory/allocator_config.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <vector>

#include "keel/core/config_string.hpp"
#include "keel/core/error.hpp"

namespace keel::memory {
namespace {

constexpr std::size_t k_mb = 1u << 20;
constexpr std::size_t k_min_split_mb = 20;  // kLargeBuffer / 1 MiB
constexpr std::array<std::string_view, 7> k_keys{
    "max_split_size_mb",       "max_non_split_rounding_mb", "garbage_collection_threshold",
    "roundup_power2_divisions", "expandable_segments",       "release_lock_on_cudamalloc",
    "policy"};

std::size_t power_of_two_or_zero(const config_item& item, std::string_view word,
                                 std::string_view origin, bool zero_ok) {
  config_item scalar{item.key, std::string(word), false, {}, item.column};
  const std::uint64_t v = config_uint(scalar, 0, 1u << 30, origin);
  if ((v == 0 && !zero_ok) || (v != 0 && !std::has_single_bit(v))) {
    throw invalid_argument(fmt::format("{}: invalid value '{}' for {}: expected a power of two{}",
                                       origin, word, item.key, zero_ok ? " or 0" : ""));
  }
  return v;
}

}  // namespace

std::string_view to_string(policy_kind policy) noexcept {
  return policy == policy_kind::keel ? "keel" : "pytorch";
}

allocator_config allocator_config::parse(std::string_view text, std::string_view origin) {
  return parse(text, origin, allocator_config{});
}

allocator_config allocator_config::parse(std::string_view text, std::string_view origin,
                                         const allocator_config& base) {
  allocator_config c = base;
  const config_string parsed = config_string::parse(text, k_keys, origin);
  for (const config_item& item : parsed.items()) {
    if (item.key == "max_split_size_mb") {
      c.max_split_size = config_uint(item, k_min_split_mb, k_unlimited / k_mb, origin) * k_mb;
    } else if (item.key == "max_non_split_rounding_mb") {
      c.max_non_split_rounding_size =
          config_uint(item, k_min_split_mb, k_unlimited / k_mb, origin) * k_mb;
    } else if (item.key == "garbage_collection_threshold") {
      c.garbage_collection_threshold = config_double(item, 0.0, 1.0, true, true, origin);
    } else if (item.key == "expandable_segments") {
      c.expandable_segments = config_bool(item, origin);
    } else if (item.key == "release_lock_on_cudamalloc") {
      c.release_lock_on_malloc = config_bool(item, origin);
    } else if (item.key == "policy") {
      const std::string& v = config_word(item, origin);
      if (v == "pytorch") {
        c.policy = policy_kind::pytorch;
      } else if (v == "keel") {
        c.policy = policy_kind::keel;
      } else {
        throw invalid_argument(fmt::format(
            "{}: invalid value '{}' for policy: expected pytorch or keel", origin, v));
      }
    } else if (item.key == "roundup_power2_divisions") {
      auto& d = c.roundup_power2_divisions;
      if (!item.is_list) {
        d.fill(power_of_two_or_zero(item, item.value, origin, false));
        continue;
      }
      // PyTorch's semantics: "N:d" sets the interval starting at N MiB (a power of two);
      // the first entry also fills every interval below it; ">:d" fills from the last
      // interval named to the end.
      bool first = true;
      std::size_t last_index = 0;
      for (const config_elem& e : item.list) {
        if (!e.value) {
          throw invalid_argument(fmt::format(
              "{}: invalid element '{}' for roundup_power2_divisions: expected SIZE_MB:DIVISIONS "
              "or >:DIVISIONS", origin, e.key));
        }
        const std::size_t divisions = power_of_two_or_zero(item, *e.value, origin, true);
        if (e.key == ">") {
          std::fill(d.begin() + static_cast<std::ptrdiff_t>(last_index), d.end(), divisions);
          continue;
        }
        const std::size_t interval = power_of_two_or_zero(item, e.key, origin, false);
        const std::size_t index =
            std::min<std::size_t>(static_cast<std::size_t>(std::bit_width(interval) - 1), k_intervals - 1);
        if (first) {
          std::fill(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(index), divisions);
          first = false;
        }
        d[index] = divisions;
        last_index = index;
      }
    }
  }
  return c;
}

allocator_config allocator_config::from_environment() {
  if (const char* keel_conf = std::getenv("KEEL_ALLOC_CONF")) {
    return parse(keel_conf, "KEEL_ALLOC_CONF");
  }
  if (const char* torch_conf = std::getenv("PYTORCH_CUDA_ALLOC_CONF")) {
    return parse(torch_conf, "PYTORCH_CUDA_ALLOC_CONF");
  }
  return {};
}

std::string allocator_config::to_string() const {
  std::vector<std::string> items;
  if (policy != policy_kind::pytorch) items.push_back(fmt::format("policy:{}", keel::memory::to_string(policy)));
  if (max_split_size != k_unlimited) items.push_back(fmt::format("max_split_size_mb:{}", max_split_size / k_mb));
  if (max_non_split_rounding_size != 20u << 20) {
    items.push_back(fmt::format("max_non_split_rounding_mb:{}", max_non_split_rounding_size / k_mb));
  }
  if (garbage_collection_threshold > 0) {
    items.push_back(fmt::format("garbage_collection_threshold:{}", garbage_collection_threshold));
  }
  if (std::any_of(roundup_power2_divisions.begin(), roundup_power2_divisions.end(),
                  [](std::size_t d) { return d != 0; })) {
    if (std::all_of(roundup_power2_divisions.begin(), roundup_power2_divisions.end(),
                    [&](std::size_t d) { return d == roundup_power2_divisions[0]; })) {
      items.push_back(fmt::format("roundup_power2_divisions:{}", roundup_power2_divisions[0]));
    } else {
      // Runs of equal divisions. PyTorch's list syntax: the first entry also fills every
      // interval below it, unnamed intervals stay 0, and '>' fills from the last named one on.
      const auto& d = roundup_power2_divisions;
      std::vector<std::pair<std::size_t, std::size_t>> runs;  // [start, end]
      for (std::size_t i = 0; i < k_intervals; ++i) {
        if (i == 0 || d[i] != d[i - 1]) runs.push_back({i, i});
        runs.back().second = i;
      }
      std::vector<std::string> parts;
      const auto name = [&](std::size_t i) { parts.push_back(fmt::format("{}:{}", std::size_t{1} << i, d[i])); };
      name(runs.front().second);
      for (std::size_t r = 1; r < runs.size(); ++r) {
        const auto [start, end] = runs[r];
        if (r + 1 == runs.size()) {
          name(start);
          if (end > start) parts.push_back(fmt::format(">:{}", d[start]));
        } else {
          for (std::size_t i = start; i <= end; ++i) name(i);
        }
      }
      items.push_back(fmt::format("roundup_power2_divisions:[{}]", fmt::join(parts, ",")));
    }
  }
  if (expandable_segments) items.push_back("expandable_segments:True");
  if (release_lock_on_malloc) items.push_back("release_lock_on_cudamalloc:True");
  return fmt::format("{}", fmt::join(items, ","));
}

std::size_t allocator_config::divisions_for(std::size_t size) const noexcept {
  const int log_size = std::bit_width(size) - 1;
  const int index = std::clamp(log_size - 20, 0, static_cast<int>(k_intervals) - 1);
  return roundup_power2_divisions[static_cast<std::size_t>(index)];
}

std::size_t allocator_config::round_size(std::size_t size) const noexcept {
  constexpr std::size_t k_min_block = 512;
  if (size < k_min_block) return k_min_block;
  const std::size_t divisions = divisions_for(size);
  if (divisions <= 1 || size <= k_min_block * divisions) {
    return (size + k_min_block - 1) / k_min_block * k_min_block;
  }
  // The next of `divisions` equal steps between the surrounding powers of two.
  if (std::has_single_bit(size)) return size;
  const std::size_t floor = std::bit_floor(size);
  const std::size_t step = floor >> (std::bit_width(divisions) - 1);
  if (step == 0) return floor << 1;
  const std::size_t rounded_down = size & ~(step - 1);
  return rounded_down == size ? size : rounded_down + step;
}

}  // namespace keel::memory
