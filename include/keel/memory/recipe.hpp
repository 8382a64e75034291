// recipe — a complete recommendation a PyTorch user can paste: the shell lines and Python lines
// that select an allocator setting, and what it costs.
//
// For PyTorch's allocator the recipe is the exact `export PYTORCH_CUDA_ALLOC_CONF=...` line
// (`unset PYTORCH_CUDA_ALLOC_CONF` for PyTorch's defaults, never an empty value), plus
// torch.cuda.set_per_process_memory_fraction(F) when a fraction is given or a
// garbage_collection_threshold needs one. For keel's policy it is the KEEL_ALLOC_CONF line and
// the Python lines that load libkeel_pluggable_alloc.so through
// torch.cuda.memory.CUDAPluggableAllocator before anything allocates CUDA memory; the library's
// path is written relative to keel's install prefix ($KEEL_PREFIX, default /usr/local). Costs
// name what each setting gives up (for keel's policy: what PyTorch's pluggable-allocator
// interface does not provide). Shell values are single-quoted when they hold characters the
// shell would read (roundup lists hold [ ] and >). recipe_for() is a pure function; to_json's
// shape, {"title", "steps": [{"kind": "shell"|"python", "text"}], "costs": [...]}, is read by
// other code.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "keel/memory/allocator_config.hpp"

namespace keel::memory {

struct recipe_step {
  enum class kind { shell, python } kind;
  std::string text;
};

struct recipe {
  std::string title;
  std::vector<recipe_step> steps;
  std::vector<std::string> costs;
};

// The recipe that selects `config` (with torch.cuda.set_per_process_memory_fraction(F) when
// `memory_fraction` is given; a garbage_collection_threshold without one gets F = 1.0, since
// the threshold acts only under a fraction). Throws keel::invalid_argument for a fraction
// outside (0, 1].
recipe recipe_for(const allocator_config& config, std::optional<double> memory_fraction);

// The value of an `export NAME=value` line as the shell reads it: "value" or "'value'".
std::string shell_quote(std::string_view value);

nlohmann::json to_json(const recipe& r);
std::string_view to_string(enum recipe_step::kind kind) noexcept;

}  // namespace keel::memory
