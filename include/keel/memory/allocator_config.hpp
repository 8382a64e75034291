// allocator_config — the caching allocator's settings, in PYTORCH_CUDA_ALLOC_CONF syntax.
//
// Keys (PyTorch's meaning and limits): max_split_size_mb (>= 20; blocks this large are never
// split), max_non_split_rounding_mb (>= 20; how much larger than an oversize request a cached
// oversize block may be), garbage_collection_threshold (in (0, 1); effective with a memory
// fraction), roundup_power2_divisions (a power of two, or a list like [256:1,512:2,>:8]
// mapping interval starts in MiB to divisions, 0 = no rounding), expandable_segments
// (True/False), release_lock_on_cudamalloc (True/False, accepted for compatibility), and
// keel's own policy (pytorch|keel). from_environment() reads KEEL_ALLOC_CONF, or
// PYTORCH_CUDA_ALLOC_CONF when that is unset. Errors throw keel::invalid_argument naming the
// key, the value and what is allowed. A config is a plain value.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

namespace keel::memory {

enum class policy_kind {
  pytorch,  // PyTorch's CUDA caching allocator, rule for rule
  keel,     // page-mapped segments with physical page recycling (see docs/memory.md)
};

std::string_view to_string(policy_kind policy) noexcept;

struct allocator_config {
  static constexpr std::size_t k_unlimited = ~std::size_t{0};
  static constexpr std::size_t k_intervals = 16;  // 1 MiB .. 64 GiB, one per power of two

  policy_kind policy = policy_kind::pytorch;
  std::size_t max_split_size = k_unlimited;
  std::size_t max_non_split_rounding_size = 20u << 20;
  double garbage_collection_threshold = 0.0;
  std::array<std::size_t, k_intervals> roundup_power2_divisions{};
  bool expandable_segments = false;
  bool release_lock_on_malloc = false;

  // Parses a config string; `origin` names its source in errors. Keys not in the text keep
  // their default (or, in the second form, their value in `base`).
  static allocator_config parse(std::string_view text, std::string_view origin = "config");
  static allocator_config parse(std::string_view text, std::string_view origin,
                                const allocator_config& base);
  // KEEL_ALLOC_CONF, else PYTORCH_CUDA_ALLOC_CONF, else the defaults.
  static allocator_config from_environment();

  // Canonical string that parse() maps back to an equal config ("" for the defaults).
  std::string to_string() const;

  // PyTorch's divisions for a (rounded) size: the interval of its power of two.
  std::size_t divisions_for(std::size_t size) const noexcept;
  // PyTorch's round_size: at least 512 bytes; with d > 1 divisions for the size's interval and
  // size > 512 * d, up to the next of d steps between powers of two; else up to 512 bytes.
  std::size_t round_size(std::size_t size) const noexcept;

  bool operator==(const allocator_config&) const = default;
};

}  // namespace keel::memory
