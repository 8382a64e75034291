#include "keel/memory/allocator_config.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>

#include "config_syntax.hpp"
#include "keel/core/error.hpp"
#include "keel/memory/backend.hpp"

namespace keel::memory {
namespace {

using namespace config_detail;

constexpr std::size_t k_mb = 1u << 20;
constexpr std::size_t k_min_large_alloc_mb = 10;  // PyTorch's kMinLargeAlloc / 1 MiB
constexpr std::size_t k_max_register_threads = 128;
constexpr std::uint64_t k_max_limit_mb = k_max_device_bytes / k_mb;  // 2^42 MiB

// ---- the keys
// ------------------------------------------------------------------------------------

enum class key_id {
  max_split_size_mb,
  max_non_split_rounding_mb,
  garbage_collection_threshold,
  roundup_power2_divisions,
  expandable_segments,
  release_lock_on_cudamalloc,
  backend,
  pinned_use_cuda_host_register,
  pinned_num_register_threads,
  pinned_reserve_segment_size_mb,
  pinned_use_background_threads,
  graph_capture_record_stream_reuse,
  // accelerator_allocator_config only
  per_process_memory_fraction,
  large_segment_size_mb,
  pinned_free_catch_all,
  throw_on_cudamalloc_oom,
  // keel only
  policy,
};

struct key_info {
  std::string_view name;
  key_id id;
  bool newer_only;  // accelerator_allocator_config only
  bool ignored;     // accepted; no effect on a replay
  bool listed;      // named in "valid keys" (the ROCm spellings are accepted, not listed)
};

constexpr std::array<key_info, 19> k_keys{{
    {"max_split_size_mb", key_id::max_split_size_mb, false, false, true},
    {"max_non_split_rounding_mb", key_id::max_non_split_rounding_mb, false, false, true},
    {"garbage_collection_threshold", key_id::garbage_collection_threshold, false, false, true},
    {"roundup_power2_divisions", key_id::roundup_power2_divisions, false, false, true},
    {"expandable_segments", key_id::expandable_segments, false, false, true},
    {"release_lock_on_cudamalloc", key_id::release_lock_on_cudamalloc, false, true, true},
    {"release_lock_on_hipmalloc", key_id::release_lock_on_cudamalloc, false, true, false},
    {"backend", key_id::backend, false, false, true},
    {"pinned_use_cuda_host_register", key_id::pinned_use_cuda_host_register, false, true, true},
    {"pinned_use_hip_host_register", key_id::pinned_use_cuda_host_register, false, true, false},
    {"pinned_num_register_threads", key_id::pinned_num_register_threads, false, true, true},
    {"pinned_reserve_segment_size_mb", key_id::pinned_reserve_segment_size_mb, false, true, true},
    {"pinned_use_background_threads", key_id::pinned_use_background_threads, false, true, true},
    {"graph_capture_record_stream_reuse", key_id::graph_capture_record_stream_reuse, false, true,
     true},
    {"per_process_memory_fraction", key_id::per_process_memory_fraction, true, false, true},
    {"large_segment_size_mb", key_id::large_segment_size_mb, true, false, true},
    {"pinned_free_catch_all", key_id::pinned_free_catch_all, true, true, true},
    {"throw_on_cudamalloc_oom", key_id::throw_on_cudamalloc_oom, true, true, true},
    {"policy", key_id::policy, false, false, true},
}};

const key_info* find_key(std::string_view name, pytorch_grammar grammar) {
  for (const key_info& k : k_keys) {
    if (k.name == name && !(k.newer_only && is_legacy(grammar))) return &k;
  }
  return nullptr;
}

std::string valid_keys(const config_parse_options& o) {
  std::vector<std::string_view> names;
  for (const key_info& k : k_keys) {
    if (!k.listed || (k.newer_only && is_legacy(o.grammar))) continue;
    if (k.id == key_id::policy && o.source != config_source::keel) continue;
    names.push_back(k.name);
  }
  return fmt::format("{}", fmt::join(names, ", "));
}

// PyTorch's words for a key it does not know.
std::string unknown_key_words(std::string_view key, pytorch_grammar grammar) {
  return is_legacy(grammar) ? fmt::format("Unrecognized CachingAllocator option: {}", key)
                            : fmt::format("Unrecognized key '{}' in CUDA allocator config.", key);
}

// ---- values
// ----------------------------------------------------------------------------------------

class applier {
 public:
  applier(std::string_view origin, const config_parse_options& options, allocator_config& c)
      : origin_(origin), options_(options), c_(c) {}

  [[noreturn]] void bad(const item& it, std::string_view rule) const {
    throw invalid_argument(fmt::format("{}: invalid value '{}' for {}: {}", origin_, value_text(it),
                                       it.key->text, rule));
  }

  const token& scalar(const item& it) const {
    if (it.is_list) bad(it, "expected a single value, not a list");
    return *it.value;
  }

  // All digits (PyTorch's stoi/stoull would also take "20MB" as 20).
  std::uint64_t whole(const item& it, const token& t) const {
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
    if (ec != std::errc() || end != t.text.data() + t.text.size()) {
      if (&t == it.value) bad(it, "expected a whole number");
      throw invalid_argument(
          fmt::format("{}: invalid value '{}' in {} for {}: expected a whole number", origin_,
                      t.text, value_text(it), it.key->text));
    }
    return v;
  }
  std::uint64_t whole(const item& it) const { return whole(it, scalar(it)); }

  double number(const item& it) const {
    const std::string& s = scalar(it).text;
    const bool plain = !s.empty() && std::all_of(s.begin(), s.end(), [](char ch) {
      return std::isdigit(static_cast<unsigned char>(ch)) || ch == '.' || ch == 'e' || ch == 'E' ||
             ch == '+' || ch == '-';
    });
    char* end = nullptr;
    const double x = plain ? std::strtod(s.c_str(), &end) : 0.0;
    if (!plain || end != s.c_str() + s.size() || !std::isfinite(x)) bad(it, "expected a number");
    return x;
  }

  bool boolean(const item& it) const {
    const token& t = scalar(it);
    if (t.text == "True") return true;
    if (t.text == "False") return false;
    if (is_legacy(options_.grammar)) {
      bad(it, fmt::format("Expected a single True/False argument for {}", it.key->text));
    }
    bad(it, fmt::format("Expected 'True' or 'False' at index {} in ConfigTokenizer but got '{}'",
                        t.index, t.text));
  }

  // max_split_size_mb and max_non_split_rounding_mb: > 20 (2.0-2.9) or >= the large segment
  // size in MiB (newer), capped at what fits in bytes.
  std::size_t split_limit(const item& it) const {
    const std::uint64_t v = whole(it);
    if (is_legacy(options_.grammar)) {
      const std::size_t min = allocator_config::k_large_segment / k_mb;
      if (v <= min) {
        bad(it,
            fmt::format("CachingAllocator option {} too small, must be > {}", it.key->text, min));
      }
    } else {
      const std::size_t min = c_.large_segment_size / k_mb;
      if (v < min) {
        bad(it,
            fmt::format("CachingAllocator option {} too small, must be >= {}", it.key->text, min));
      }
    }
    // Capped at k_max_device_bytes, more than any request (PyTorch's own product wraps).
    return static_cast<std::size_t>(std::min(v, k_max_limit_mb)) * k_mb;
  }

  void roundup(const item& it) {
    auto& d = c_.roundup_power2_divisions;
    if (!roundup_seen_) d.fill(0);  // PyTorch starts from no rounding each time it parses
    roundup_seen_ = true;
    if (!it.is_list) {
      const std::uint64_t v = whole(it);
      if (!std::has_single_bit(v)) bad(it, "For roundups, the divisions has to be power of 2");
      d.fill(static_cast<std::size_t>(v));
      return;
    }
    bool first = true;
    std::size_t last_index = 0;
    for (const element& e : it.list) {
      if (e.value == nullptr) {
        throw invalid_argument(fmt::format(
            "{}: invalid element '{}' for roundup_power2_divisions: expected SIZE_MB:DIVISIONS "
            "or >:DIVISIONS",
            origin_, e.key->text));
      }
      const std::uint64_t divisions = whole(it, *e.value);
      if (divisions != 0 && !std::has_single_bit(divisions)) {
        bad(it, fmt::format("For roundups, the divisions has to be power of 2 or 0 to disable "
                            "roundup (got {})",
                            divisions));
      }
      if (e.key->text == ">") {
        // The rule that changed: 2.0-2.9 fill from the last named interval on (overwriting
        // it), the newer parser from the one after it.
        const std::size_t from = is_legacy(options_.grammar) ? last_index : last_index + 1;
        std::fill(d.begin() + static_cast<std::ptrdiff_t>(std::min(from, d.size())), d.end(),
                  static_cast<std::size_t>(divisions));
        continue;
      }
      const std::uint64_t interval = whole(it, *e.key);
      if (!std::has_single_bit(interval)) {
        throw invalid_argument(fmt::format(
            "{}: invalid interval '{}' in {} for roundup_power2_divisions: For roundups, the "
            "intervals have to be power of 2",
            origin_, e.key->text, value_text(it)));
      }
      const std::size_t index =
          std::min<std::size_t>(static_cast<std::size_t>(std::bit_width(interval) - 1),
                                allocator_config::k_intervals - 1);
      if (first) {
        std::fill(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(index),
                  static_cast<std::size_t>(divisions));
        first = false;
      }
      d[index] = static_cast<std::size_t>(divisions);
      last_index = index;
    }
  }

  void apply(const item& it, const key_info& k) {
    switch (k.id) {
      case key_id::max_split_size_mb: c_.max_split_size = split_limit(it); break;
      case key_id::max_non_split_rounding_mb:
        c_.max_non_split_rounding_size = split_limit(it);
        break;
      case key_id::garbage_collection_threshold: {
        const double v = number(it);
        if (is_legacy(options_.grammar) && v <= 0) {
          bad(it, "garbage_collect_threshold too small, set it 0.0~1.0");
        }
        if (is_legacy(options_.grammar) && v >= 1) {
          bad(it, "garbage_collect_threshold too big, set it 0.0~1.0");
        }
        if (v <= 0 || v >= 1) bad(it, "garbage_collect_threshold is invalid, set it in (0.0, 1.0)");
        c_.garbage_collection_threshold = v;
        break;
      }
      case key_id::roundup_power2_divisions: roundup(it); break;
      case key_id::expandable_segments: c_.expandable_segments = boolean(it); break;
      case key_id::release_lock_on_cudamalloc: c_.release_lock_on_malloc = boolean(it); break;
      case key_id::backend: {
        const std::string& v = scalar(it).text;
        if (v != "native" && v != "cudaMallocAsync") {
          bad(it, "Unknown allocator backend, options are native and cudaMallocAsync");
        }
        c_.cuda_malloc_async = v == "cudaMallocAsync";
        break;
      }
      case key_id::pinned_use_cuda_host_register:
      case key_id::pinned_use_background_threads:
      case key_id::graph_capture_record_stream_reuse:
      case key_id::pinned_free_catch_all:
      case key_id::throw_on_cudamalloc_oom: (void)boolean(it); break;
      case key_id::pinned_num_register_threads: {
        const std::uint64_t v = whole(it);
        const bool legacy = is_legacy(options_.grammar);
        if (!std::has_single_bit(v)) {
          bad(it, legacy
                      ? std::string("Number of register threads has to be power of 2")
                      : fmt::format("Number of register threads has to be power of 2, got {}", v));
        }
        if (v > k_max_register_threads) {
          bad(it, legacy ? fmt::format("Number of register threads should be less than or equal "
                                       "to {}",
                                       k_max_register_threads)
                         : fmt::format("Number of register threads should be less than or equal "
                                       "to {}, got {}",
                                       k_max_register_threads, v));
        }
        break;
      }
      case key_id::pinned_reserve_segment_size_mb:
        if (whole(it) == 0) bad(it, "Pinned reserve segment size has to be greater than 0");
        break;
      case key_id::per_process_memory_fraction: {
        const double v = number(it);
        if (v < 0 || v > 1) bad(it, "per_process_memory_fraction is invalid, set it in [0.0, 1.0]");
        c_.per_process_memory_fraction = v;
        break;
      }
      case key_id::large_segment_size_mb: {
        const std::uint64_t v = whole(it);
        if (v <= k_min_large_alloc_mb) {
          bad(it, fmt::format("CachingAllocator option large_segment_size_mb must be > {} MB",
                              k_min_large_alloc_mb));
        }
        c_.large_segment_size = static_cast<std::size_t>(std::min(v, k_max_limit_mb)) * k_mb;
        break;
      }
      case key_id::policy: {
        const std::string& v = scalar(it).text;
        if (v == "pytorch") {
          c_.policy = policy_kind::pytorch;
        } else if (v == "keel") {
          c_.policy = policy_kind::keel;
        } else {
          bad(it, "expected pytorch or keel");
        }
        break;
      }
    }
  }

 private:
  std::string_view origin_;
  config_parse_options options_;
  allocator_config& c_;
  bool roundup_seen_ = false;
};

std::optional<unsigned> leading_number(std::string_view& s) {
  unsigned v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end == s.data()) return std::nullopt;
  s.remove_prefix(static_cast<std::size_t>(end - s.data()));
  return v;
}

}  // namespace

std::string_view to_string(policy_kind policy) noexcept {
  return policy == policy_kind::keel ? "keel" : "pytorch";
}

std::string_view to_string(pytorch_grammar grammar) noexcept {
  return is_legacy(grammar) ? "cuda_allocator_config" : "accelerator_allocator_config";
}

pytorch_grammar grammar_for_torch_version(std::string_view version) noexcept {
  const auto major = leading_number(version);
  if (!major || version.empty() || version.front() != '.') return k_newest_pytorch_grammar;
  version.remove_prefix(1);
  const auto minor = leading_number(version);
  if (!minor) return k_newest_pytorch_grammar;
  if (*major < 2 || (*major == 2 && *minor <= 9)) return pytorch_grammar::cuda_allocator_config;
  return pytorch_grammar::accelerator_allocator_config;
}

pytorch_grammar grammar_for_settings(std::span<const std::string> settings_keys,
                                     std::string_view recorded_conf) noexcept {
  const auto has = [&](std::string_view key) {
    return std::find(settings_keys.begin(), settings_keys.end(), key) != settings_keys.end();
  };
  if (has("PYTORCH_ALLOC_CONF") || has("per_process_memory_fraction") ||
      has("large_segment_size_mb") || has("large_segment_size")) {
    return pytorch_grammar::accelerator_allocator_config;
  }
  if (!settings_keys.empty() && !has("graph_capture_record_stream_reuse")) {
    return pytorch_grammar::cuda_allocator_config;
  }
  const auto accepts = [&](pytorch_grammar g) {
    try {
      (void)allocator_config::parse_pytorch(recorded_conf, g);
      return true;
    } catch (const std::exception&) {
      return false;
    }
  };
  const bool legacy = accepts(pytorch_grammar::cuda_allocator_config);
  const bool newer = accepts(pytorch_grammar::accelerator_allocator_config);
  if (legacy && !newer) return pytorch_grammar::cuda_allocator_config;
  return k_newest_pytorch_grammar;
}

allocator_config allocator_config::parse(std::string_view text, std::string_view origin) {
  return parse(text, origin, allocator_config{});
}

allocator_config allocator_config::parse(std::string_view text, std::string_view origin,
                                         const allocator_config& base) {
  return parse(text, origin, base, config_parse_options{}).config;
}

parsed_allocator_config allocator_config::parse(std::string_view text, std::string_view origin,
                                                const allocator_config& base,
                                                const config_parse_options& options) {
  parsed_allocator_config out{base, {}};
  parser p(text, origin, options);
  const std::vector<item> items = p.items();

  std::vector<const key_info*> keys;  // null for a key the grammar does not know
  keys.reserve(items.size());
  for (const item& it : items) keys.push_back(find_key(it.key->text, options.grammar));

  applier a(origin, options, out.config);
  // The newer parser reads large_segment_size_mb before the rest: the limits of the split
  // sizes and the default of max_non_split_rounding_mb follow it.
  bool large_given = false;
  bool non_split_given = false;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (keys[i] != nullptr && keys[i]->id == key_id::large_segment_size_mb) {
      a.apply(items[i], *keys[i]);
      large_given = true;
    }
    non_split_given =
        non_split_given || (keys[i] != nullptr && keys[i]->id == key_id::max_non_split_rounding_mb);
  }
  if (large_given && !non_split_given) {
    out.config.max_non_split_rounding_size = out.config.large_segment_size;
  }
  // Then the items in text order, stopping at the first error as PyTorch does.
  for (std::size_t i = 0; i < items.size(); ++i) {
    const item& it = items[i];
    if (keys[i] == nullptr) {
      const bool newer_key = find_key(it.key->text, k_newest_pytorch_grammar) != nullptr;
      throw invalid_argument(
          fmt::format("{}: unknown key '{}' ({}{}); valid keys: {}", origin, it.key->text,
                      unknown_key_words(it.key->text, options.grammar),
                      newer_key ? "; PyTorch 2.10 and later accept it" : "", valid_keys(options)));
    }
    const key_info& k = *keys[i];
    if (k.id == key_id::policy && options.source != config_source::keel) {
      throw invalid_argument(fmt::format(
          "{}: 'policy' is keel's key, not PyTorch's (PyTorch would stop at it: \"{}\"); set it "
          "in KEEL_ALLOC_CONF instead, e.g. KEEL_ALLOC_CONF=policy:{}",
          origin, unknown_key_words("policy", options.grammar),
          it.value != nullptr ? it.value->text : "keel"));
    }
    if (k.id == key_id::large_segment_size_mb) continue;
    a.apply(it, k);
    if (k.ignored && std::find(out.ignored_keys.begin(), out.ignored_keys.end(), k.name) ==
                         out.ignored_keys.end()) {
      out.ignored_keys.emplace_back(k.name);
    }
  }
  return out;
}

parsed_allocator_config allocator_config::parse_pytorch(std::string_view text,
                                                        pytorch_grammar grammar,
                                                        std::string_view origin) {
  return parse(text, origin, allocator_config{}, {grammar, config_source::pytorch});
}

parsed_allocator_config allocator_config::parse_environment(pytorch_grammar grammar) {
  parsed_allocator_config out;
  const char* name = "PYTORCH_CUDA_ALLOC_CONF";
  const char* torch_conf = std::getenv(name);
  if (torch_conf == nullptr && !is_legacy(grammar)) {
    name = "PYTORCH_ALLOC_CONF";  // the newer parser's own name, read after the CUDA one
    torch_conf = std::getenv(name);
  }
  if (torch_conf != nullptr) out = parse_pytorch(torch_conf, grammar, name);
  if (const char* keel_conf = std::getenv("KEEL_ALLOC_CONF")) {
    parsed_allocator_config k =
        parse(keel_conf, "KEEL_ALLOC_CONF", out.config, {grammar, config_source::keel});
    out.config = k.config;
    for (std::string& key : k.ignored_keys) {
      if (std::find(out.ignored_keys.begin(), out.ignored_keys.end(), key) ==
          out.ignored_keys.end()) {
        out.ignored_keys.push_back(std::move(key));
      }
    }
  }
  return out;
}

allocator_config allocator_config::from_environment(pytorch_grammar grammar) {
  return parse_environment(grammar).config;
}

std::string allocator_config::pytorch_string() const {
  allocator_config c = *this;
  c.policy = policy_kind::pytorch;
  return c.to_string();
}

std::string allocator_config::to_string() const {
  std::vector<std::string> items;
  if (policy != policy_kind::pytorch) {
    items.push_back(fmt::format("policy:{}", keel::memory::to_string(policy)));
  }
  if (cuda_malloc_async) items.emplace_back("backend:cudaMallocAsync");
  if (large_segment_size != k_large_segment) {
    items.push_back(fmt::format("large_segment_size_mb:{}", large_segment_size / k_mb));
  }
  if (max_split_size != k_unlimited) {
    items.push_back(fmt::format("max_split_size_mb:{}", max_split_size / k_mb));
  }
  if (max_non_split_rounding_size != large_segment_size) {
    items.push_back(
        fmt::format("max_non_split_rounding_mb:{}", max_non_split_rounding_size / k_mb));
  }
  if (garbage_collection_threshold > 0) {
    items.push_back(fmt::format("garbage_collection_threshold:{}", garbage_collection_threshold));
  }
  const auto& d = roundup_power2_divisions;
  if (std::any_of(d.begin(), d.end(), [](std::size_t v) { return v != 0; })) {
    if (std::all_of(d.begin(), d.end(), [&](std::size_t v) { return v == d[0]; })) {
      items.push_back(fmt::format("roundup_power2_divisions:{}", d[0]));
    } else {
      // Runs of equal divisions. The first entry also fills every interval below it; the last
      // run is its first interval named and then '>' with the same divisions, which both
      // grammars read alike (whether '>' starts at that interval or after it).
      std::vector<std::pair<std::size_t, std::size_t>> runs;  // [start, end]
      for (std::size_t i = 0; i < k_intervals; ++i) {
        if (i == 0 || d[i] != d[i - 1]) runs.push_back({i, i});
        runs.back().second = i;
      }
      std::vector<std::string> parts;
      const auto name = [&](std::size_t i) {
        parts.push_back(fmt::format("{}:{}", std::size_t{1} << i, d[i]));
      };
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
  if (expandable_segments) items.emplace_back("expandable_segments:True");
  if (release_lock_on_malloc) items.emplace_back("release_lock_on_cudamalloc:True");
  if (per_process_memory_fraction) {
    items.push_back(fmt::format("per_process_memory_fraction:{}", *per_process_memory_fraction));
  }
  return fmt::format("{}", fmt::join(items, ","));
}

std::optional<std::string> allocator_config::replay_limitation() const {
  if (cuda_malloc_async) {
    return std::string(
        "backend:cudaMallocAsync replaces PyTorch's caching allocator with CUDA's stream-ordered "
        "allocator (cudaMallocAsync pools); keel does not model it, so a replay would not show "
        "what that run did");
  }
  if (large_segment_size != k_large_segment) {
    return fmt::format(
        "large_segment_size_mb:{} changes the segment size of 1-10 MiB requests; keel's allocator "
        "uses PyTorch's fixed 20 MiB, so a replay would not show what that run did",
        large_segment_size / k_mb);
  }
  return std::nullopt;
}

std::string ignored_keys_line(std::span<const std::string> keys) {
  if (keys.empty()) return {};
  return fmt::format("ignored (does not affect replay): {}", fmt::join(keys, ", "));
}

std::size_t allocator_config::divisions_for(std::size_t size) const noexcept {
  const int log_size = std::bit_width(size) - 1;
  const int index = std::clamp(log_size - 20, 0, static_cast<int>(k_intervals) - 1);
  return roundup_power2_divisions[static_cast<std::size_t>(index)];
}

std::size_t allocator_config::round_size(std::size_t size) const noexcept {
  constexpr std::size_t k_min_block = 512;
  constexpr std::size_t k_max = std::numeric_limits<std::size_t>::max();
  if (size < k_min_block) return k_min_block;
  const std::size_t divisions = divisions_for(size);
  // size <= 512 * divisions, without forming the product (it wraps for huge divisions).
  const std::size_t blocks = size / k_min_block + (size % k_min_block != 0);
  if (divisions <= 1 || blocks <= divisions) {
    if (size > k_max - (k_min_block - 1)) return k_max;  // saturates: no allocator serves it
    return (size + k_min_block - 1) / k_min_block * k_min_block;
  }
  // The next of `divisions` equal steps between the surrounding powers of two.
  if (std::has_single_bit(size)) return size;
  const std::size_t floor = std::bit_floor(size);
  const std::size_t step = floor >> (std::bit_width(divisions) - 1);
  if (step == 0) return floor > k_max / 2 ? k_max : floor << 1;
  const std::size_t rounded_down = size & ~(step - 1);
  if (rounded_down == size) return size;
  return rounded_down > k_max - step ? k_max : rounded_down + step;
}

}  // namespace keel::memory
