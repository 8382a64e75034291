// allocator_config — the caching allocator's settings, in PYTORCH_CUDA_ALLOC_CONF syntax, read
// with PyTorch's own rules.
//
// Syntax: `key:value,key:value`, a value is a word or a list `[a:b,c:d]`; spaces are ignored and
// a trailing comma is allowed, as PyTorch's tokenizers do. PyTorch has had two parsers and
// parse() reproduces either (pytorch_grammar): c10/cuda's CUDAAllocatorConfig with its own
// lexer (PyTorch 2.0 to 2.9) and c10/core's AcceleratorAllocatorConfig with the CUDA keys
// registered as a hook (2.10 and later, the default). Where they differ:
//
//   rule                          cuda_allocator_config (2.0-2.9)   accelerator_allocator_config
//   max_split_size_mb             > 20                              >= large_segment_size_mb (20)
//   max_non_split_rounding_mb     > 20                              >= large_segment_size_mb (20)
//   roundup list, ">:d"           fills from the last named         fills the intervals after the
//                                 interval on (overwriting it)      last named one
//   per_process_memory_fraction,  unknown keys (an error)           accepted
//   large_segment_size_mb,
//   pinned_free_catch_all,
//   throw_on_cudamalloc_oom
//   error words                   "Unrecognized CachingAllocator    "Unrecognized key 'k' in CUDA
//                                 option: k", "Expected a single    allocator config.", "Expected
//                                 True/False argument for k", ...   'True' or 'False' at index i
//                                                                   in ConfigTokenizer but got 'v'"
//
// accelerator_allocator_config follows PyTorch's main branch: a release between 2.10 and the
// newest may lack its newest keys (large_segment_size_mb, pinned_free_catch_all,
// throw_on_cudamalloc_oom).
//
// Common to both: True/False spelled exactly so (not true, yes or 1); garbage_collection_threshold
// strictly inside (0, 1); roundup_power2_divisions a power of two, or a list of
// `interval_mb:divisions` whose intervals are powers of two (MiB, 1 to 32768) and divisions 0
// or powers of two, the first entry also filling every interval below it; backend native or
// cudaMallocAsync; a repeated key overrides the earlier one. Keys that do not change what a
// replay computes (the pinned-host-memory keys, release_lock_on_cudamalloc,
// graph_capture_record_stream_reuse, throw_on_cudamalloc_oom) are accepted and listed in
// parsed_allocator_config::ignored_keys. keel is stricter in one place: a number must be all
// digits (PyTorch's stoi/stod would take the leading digits of "256MB"). Sizes in MiB are
// capped at k_max_device_bytes (2^42 MiB), where PyTorch's own product would wrap.
//
// keel adds one key, policy:pytorch|keel. It is accepted in keel's own strings (config_source::
// keel: KEEL_ALLOC_CONF, `keel mem --conf`, the advisor's candidates) and refused in a
// PYTORCH_CUDA_ALLOC_CONF value (config_source::pytorch), where PyTorch itself would stop at it.
//
// Errors throw keel::invalid_argument as "<origin>: invalid value '<value>' for <key>: <rule>",
// the rule in PyTorch's words where PyTorch has words. A config is a plain value; to_string()
// is canonical, parse(to_string()) == config.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace keel::memory {

enum class policy_kind {
  pytorch,  // PyTorch's CUDA caching allocator, rule for rule
  keel,     // page-mapped segments with physical page recycling (see docs/memory.md)
};

std::string_view to_string(policy_kind policy) noexcept;

// Which of PyTorch's parsers a config string is read with (see the table above).
enum class pytorch_grammar {
  cuda_allocator_config,         // PyTorch 2.0 to 2.9
  accelerator_allocator_config,  // PyTorch 2.10 and later
};
inline constexpr pytorch_grammar k_newest_pytorch_grammar =
    pytorch_grammar::accelerator_allocator_config;

std::string_view to_string(pytorch_grammar grammar) noexcept;

// The grammar of a torch.__version__ ("2.9.1+cu128" -> cuda_allocator_config, "2.10.0" ->
// accelerator_allocator_config); text that is not a 2.x version gives the newest.
pytorch_grammar grammar_for_torch_version(std::string_view version) noexcept;

// The grammar a snapshot's allocator_settings dict implies, from the dict's keys and the
// PYTORCH_CUDA_ALLOC_CONF it recorded (may be empty). Simple on purpose: a key that only the
// accelerator era writes (PYTORCH_ALLOC_CONF, per_process_memory_fraction,
// large_segment_size_mb) -> accelerator_allocator_config; no graph_capture_record_stream_reuse
// key (PyTorch 2.8 or older wrote the dict) -> cuda_allocator_config; otherwise (2.9 or later)
// the grammar that alone accepts the recorded string, else the newest.
pytorch_grammar grammar_for_settings(std::span<const std::string> settings_keys,
                                     std::string_view recorded_conf = {}) noexcept;

enum class config_source {
  keel,     // keel's strings: PyTorch's keys plus policy
  pytorch,  // a PYTORCH_CUDA_ALLOC_CONF value: PyTorch's keys only
};

struct config_parse_options {
  pytorch_grammar grammar = k_newest_pytorch_grammar;
  config_source source = config_source::keel;
};

struct parsed_allocator_config;

struct allocator_config {
  static constexpr std::size_t k_unlimited = ~std::size_t{0};
  static constexpr std::size_t k_intervals = 16;  // 1 MiB .. 64 GiB, one per power of two
  static constexpr std::size_t k_large_segment = 20u << 20;  // PyTorch's kLargeBuffer

  policy_kind policy = policy_kind::pytorch;
  std::size_t max_split_size = k_unlimited;
  std::size_t max_non_split_rounding_size = k_large_segment;
  double garbage_collection_threshold = 0.0;
  std::array<std::size_t, k_intervals> roundup_power2_divisions{};
  bool expandable_segments = false;
  // release_lock_on_cudamalloc: the device allocation of a plain segment runs with the
  // allocator lock released (caching_allocator.hpp); no effect on memory or on a replay.
  bool release_lock_on_malloc = false;
  // backend:cudaMallocAsync: CUDA's stream-ordered allocator replaces the caching allocator.
  // Accepted and kept, not modelled: see replay_limitation().
  bool cuda_malloc_async = false;
  // large_segment_size_mb (newer PyTorch only): the segment size of 1-10 MiB requests. keel's
  // allocator uses PyTorch's fixed 20 MiB; another value is not modelled.
  std::size_t large_segment_size = k_large_segment;
  // per_process_memory_fraction (PyTorch 2.10+), what torch.cuda.set_per_process_memory_fraction
  // sets; replay takes its fraction from replay_options::memory_fraction.
  std::optional<double> per_process_memory_fraction;

  // Parses a config string of keel's (config_source::keel, the newest grammar); `origin` names
  // its source in errors. Keys not in the text keep their default (or, in the second form,
  // their value in `base`).
  static allocator_config parse(std::string_view text, std::string_view origin = "config");
  static allocator_config parse(std::string_view text, std::string_view origin,
                                const allocator_config& base);
  // The general form: the grammar and the source are the caller's, and the ignored keys are
  // reported.
  static parsed_allocator_config parse(std::string_view text, std::string_view origin,
                                       const allocator_config& base,
                                       const config_parse_options& options);
  // A PYTORCH_CUDA_ALLOC_CONF value, strictly as the given PyTorch reads it (policy refused).
  static parsed_allocator_config parse_pytorch(std::string_view text,
                                               pytorch_grammar grammar = k_newest_pytorch_grammar,
                                               std::string_view origin = "PYTORCH_CUDA_ALLOC_CONF");

  // PYTORCH_CUDA_ALLOC_CONF (else PYTORCH_ALLOC_CONF, PyTorch's newer name) read strictly with
  // `grammar`, then KEEL_ALLOC_CONF (keel's keys and any PyTorch key, overriding) on top;
  // the defaults when neither is set. A policy key in the PyTorch variable is an error that
  // says to use KEEL_ALLOC_CONF.
  static allocator_config from_environment(pytorch_grammar grammar = k_newest_pytorch_grammar);
  static parsed_allocator_config parse_environment(
      pytorch_grammar grammar = k_newest_pytorch_grammar);

  // Canonical string that parse() maps back to an equal config ("" for the defaults). The
  // roundup list is written so that both grammars read it the same way.
  std::string to_string() const;
  // to_string() without keel's policy key: the PYTORCH_CUDA_ALLOC_CONF value of this config.
  std::string pytorch_string() const;

  // Why a replay of this config would not be faithful (backend:cudaMallocAsync, a
  // large_segment_size_mb other than 20), or nullopt when it is modelled. Callers refuse with it.
  std::optional<std::string> replay_limitation() const;

  // PyTorch's divisions for a (rounded) size: the interval of its power of two.
  std::size_t divisions_for(std::size_t size) const noexcept;
  // PyTorch's round_size: at least 512 bytes; with d > 1 divisions for the size's interval and
  // size > 512 * d, up to the next of d steps between powers of two; else up to 512 bytes.
  // Never wraps: a size whose rounding does not fit in size_t rounds to SIZE_MAX (which no
  // allocator serves; the caching allocator refuses anything above k_max_device_bytes first).
  std::size_t round_size(std::size_t size) const noexcept;

  bool operator==(const allocator_config&) const = default;
};

struct parsed_allocator_config {
  allocator_config config;
  // Keys accepted that do not affect a replay, in the order of the text, each once.
  std::vector<std::string> ignored_keys;
};

// "ignored (does not affect replay): pinned_use_cuda_host_register, ..." or "" when none.
std::string ignored_keys_line(std::span<const std::string> keys);

}  // namespace keel::memory
