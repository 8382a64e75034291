#include "keel/memory/recipe.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

#include "keel/core/error.hpp"

// Where `cmake --install` puts libkeel_pluggable_alloc.so, relative to the prefix
// (CMAKE_INSTALL_LIBDIR; src/memory/CMakeLists.txt passes it).
#ifndef KEEL_INSTALL_LIBDIR
#define KEEL_INSTALL_LIBDIR "lib"
#endif

namespace keel::memory {
namespace {

constexpr std::size_t k_mb = 1u << 20;

// A float as Python writes it: 1.0, 0.8, 0.25.
std::string python_float(double x) {
  std::string s = fmt::format("{}", x);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

std::string roundup_words(const allocator_config& c) {
  const auto& d = c.roundup_power2_divisions;
  if (std::all_of(d.begin(), d.end(), [&](std::size_t v) { return v == d[0]; })) {
    return fmt::format("{} steps between powers of two: up to 1/{} of a block is rounding waste",
                       d[0], d[0]);
  }
  const std::size_t most = *std::max_element(d.begin(), d.end());
  return fmt::format(
      "up to {} steps between powers of two (per size interval): up to 1/{} of a "
      "block is rounding waste in the intervals with the fewest steps",
      most, std::max<std::size_t>(1, *std::min_element(d.begin(), d.end())));
}

void pytorch_costs(const allocator_config& c, std::optional<double> fraction,
                   std::vector<std::string>& costs) {
  const std::string line = c.pytorch_string();
  if (line.empty()) costs.emplace_back("none: PyTorch's default settings");
  if (c.cuda_malloc_async) {
    costs.emplace_back(
        "backend:cudaMallocAsync: CUDA's stream-ordered allocator replaces PyTorch's caching "
        "allocator; it ignores max_split_size_mb, roundup_power2_divisions and "
        "garbage_collection_threshold, and keel's replay does not model it");
  }
  if (c.max_split_size != allocator_config::k_unlimited) {
    const std::size_t mb = c.max_split_size / k_mb;
    costs.push_back(fmt::format(
        "max_split_size_mb:{}: cached blocks of {} MiB or more are never split, so requests "
        "above {} MiB of varying sizes get their own segments: more cudaMalloc calls, and on "
        "memory pressure cudaFree of the oversize blocks (cudaFree synchronises the device)",
        mb, mb, mb));
  }
  if (c.max_non_split_rounding_size != c.large_segment_size) {
    const std::size_t mb = c.max_non_split_rounding_size / k_mb;
    costs.push_back(fmt::format(
        "max_non_split_rounding_mb:{}: an oversize request may take a cached block up to {} MiB "
        "larger than itself; the excess is unusable while the block lives",
        mb, mb));
  }
  if (std::any_of(c.roundup_power2_divisions.begin(), c.roundup_power2_divisions.end(),
                  [](std::size_t d) { return d > 1; })) {
    costs.push_back(fmt::format(
        "roundup_power2_divisions: requests are rounded up to one of {}, in exchange for blocks "
        "that fit later requests",
        roundup_words(c)));
  }
  if (c.garbage_collection_threshold > 0) {
    costs.push_back(fmt::format(
        "garbage_collection_threshold:{}: once reserved memory passes {} of the allowed maximum, "
        "cached blocks that were not reused are freed: more cudaFree/cudaMalloc calls; it acts "
        "only under a memory fraction",
        c.garbage_collection_threshold, c.garbage_collection_threshold));
  }
  if (fraction) {
    costs.push_back(
        *fraction >= 1.0
            ? std::string("set_per_process_memory_fraction(1.0) caps the process at the whole "
                          "GPU: no limit in practice, it is there for the threshold to act")
            : fmt::format("set_per_process_memory_fraction({}) caps this process's reserved "
                          "memory at {} of the GPU's total memory: an allocation past it raises "
                          "torch.cuda.OutOfMemoryError even when the GPU has memory free",
                          python_float(*fraction), python_float(*fraction)));
  }
  if (c.expandable_segments) {
    costs.emplace_back(
        "expandable_segments:True: memory in expandable segments cannot be shared through CUDA "
        "IPC (sending such CUDA tensors to another process, e.g. with torch.multiprocessing, "
        "fails), and segments grow by mapping pages (cuMemCreate/cuMemMap/cuMemSetAccess): "
        "more driver calls than one cudaMalloc per segment");
  }
  if (c.release_lock_on_malloc) {
    costs.emplace_back(
        "release_lock_on_cudamalloc:True: cudaMalloc runs outside the allocator's lock (other "
        "threads allocate meanwhile); no cost in memory");
  }
  if (c.per_process_memory_fraction) {
    costs.push_back(fmt::format(
        "per_process_memory_fraction:{} caps reserved memory at that fraction of the GPU (an "
        "OutOfMemoryError past it); PyTorch 2.10 or later reads this key",
        python_float(*c.per_process_memory_fraction)));
  }
  if (c.large_segment_size != allocator_config::k_large_segment) {
    costs.emplace_back(
        "large_segment_size_mb: only the newest PyTorch reads it, and keel's replay does not "
        "model it");
  }
  // The line must mean the same to every PyTorch that may read it.
  if (!line.empty()) {
    try {
      const allocator_config legacy =
          allocator_config::parse_pytorch(line, pytorch_grammar::cuda_allocator_config).config;
      allocator_config expected = c;
      expected.policy = policy_kind::pytorch;
      if (!(legacy == expected)) {
        costs.emplace_back("PyTorch 2.9 and earlier read this line differently");
      }
    } catch (const invalid_argument& e) {
      costs.push_back(fmt::format("PyTorch 2.9 and earlier refuse this line ({})", e.what()));
    }
  }
}

void keel_costs(std::vector<std::string>& costs) {
  costs.emplace_back(
      "it must be loaded before the first CUDA allocation and stays for the life of the "
      "process: change_current_allocator refuses once PyTorch's allocator is in use (\"Can't "
      "swap an already initialized allocator\")");
  costs.emplace_back(
      "PyTorch's pluggable-allocator interface has no statistics or history: "
      "torch.cuda.memory_stats() and what is built on it (memory_allocated, memory_reserved, "
      "max_memory_allocated, memory_summary), reset_peak_memory_stats(), "
      "torch.cuda.memory._record_memory_history() and torch.cuda.memory._snapshot() raise "
      "\"CUDAPluggableAllocator does not yet support ...\"; keel's statistics are in "
      "keel_memory_stats_json (include/keel/memory/pluggable.h)");
  costs.emplace_back(
      "torch.cuda.empty_cache() and torch.cuda.set_per_process_memory_fraction() do not reach "
      "keel (the Python class registers only malloc and free): call the library's "
      "keel_empty_cache(-1) and keel_set_memory_fraction(fraction, device) through ctypes");
  costs.emplace_back(
      "Tensor.record_stream() does nothing: a tensor used on a second stream must be "
      "synchronised with that stream before it is freed");
  costs.emplace_back(
      "CUDA IPC of tensors (sharing CUDA tensors between processes), CUDA graph trees "
      "(torch.compile mode=\"reduce-overhead\") and the cuDNN benchmark's workspace query "
      "(torch.backends.cudnn.benchmark) raise: the interface does not support them; CUDA "
      "graphs' private memory pools are not kept apart");
  costs.emplace_back(
      "PyTorch records every pointer in its own map under one lock: a map insert and erase per "
      "allocation on top of keel's work");
}

std::string library_path_python() {
  std::string libdir = KEEL_INSTALL_LIBDIR;
  const std::string file = libdir + "/libkeel_pluggable_alloc.so";
  if (!libdir.empty() && libdir.front() == '/') return fmt::format("\"{}\"", file);
  return fmt::format("os.path.join(os.environ.get(\"KEEL_PREFIX\", \"/usr/local\"), \"{}\")", file);
}

}  // namespace

std::string shell_quote(std::string_view value) {
  const bool plain = !value.empty() && std::all_of(value.begin(), value.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':' || c == ',' ||
           c == '.' || c == '=' || c == '+' || c == '-' || c == '/' || c == '@' || c == '%';
  });
  if (plain) return std::string(value);
  std::string out = "'";
  for (char c : value) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

recipe recipe_for(const allocator_config& config, std::optional<double> memory_fraction) {
  if (memory_fraction && !(*memory_fraction >= 0.0 && *memory_fraction <= 1.0)) {
    throw invalid_argument(fmt::format("memory fraction {} is outside [0, 1]", *memory_fraction));
  }
  // The threshold acts only under a fraction: give it the whole GPU when none is named.
  std::optional<double> fraction = memory_fraction;
  if (!fraction && config.garbage_collection_threshold > 0 && !config.per_process_memory_fraction) {
    fraction = 1.0;
  }

  recipe r;
  if (config.policy == policy_kind::keel) {
    r.title = "keel's allocator (policy keel) in PyTorch, through CUDAPluggableAllocator";
    // keel's library reads PYTORCH_CUDA_ALLOC_CONF too, under KEEL_ALLOC_CONF: the whole
    // setting goes in KEEL_ALLOC_CONF.
    r.steps.push_back({recipe_step::kind::shell, "unset PYTORCH_CUDA_ALLOC_CONF"});
    r.steps.push_back(
        {recipe_step::kind::shell, "export KEEL_ALLOC_CONF=" + shell_quote(config.to_string())});
    std::string python =
        "import ctypes, os\n"
        "import torch\n"
        "# The first lines of the program, before anything allocates CUDA memory\n"
        "# (KEEL_PREFIX: where keel is installed, e.g. cmake --install build --prefix DIR):\n"
        "keel_library = " +
        library_path_python() +
        "\n"
        "keel_allocator = torch.cuda.memory.CUDAPluggableAllocator(\n"
        "    keel_library, \"keel_malloc\", \"keel_free\")\n"
        "torch.cuda.memory.change_current_allocator(keel_allocator)";
    if (fraction) {
      python += fmt::format(
          "\n# The memory fraction, once per GPU the process uses (here GPU 0):\n"
          "ctypes.CDLL(keel_library).keel_set_memory_fraction(ctypes.c_double({}), 0)",
          python_float(*fraction));
    }
    r.steps.push_back({recipe_step::kind::python, std::move(python)});
    keel_costs(r.costs);
    return r;
  }

  const std::string line = config.pytorch_string();
  r.title = line.empty() ? "PyTorch's caching allocator with its default settings"
                         : "PyTorch's caching allocator with " + line;
  if (fraction) r.title += fmt::format(" and memory fraction {}", python_float(*fraction));
  r.steps.push_back({recipe_step::kind::shell,
                     line.empty() ? std::string("unset PYTORCH_CUDA_ALLOC_CONF")
                                  : "export PYTORCH_CUDA_ALLOC_CONF=" + shell_quote(line)});
  if (fraction) {
    r.steps.push_back(
        {recipe_step::kind::python,
         fmt::format("import torch\n"
                     "# Before the first CUDA allocation, once per GPU the process uses\n"
                     "# (device=i); it limits allocations from then on, and the garbage\n"
                     "# collection threshold acts only once it is set:\n"
                     "torch.cuda.set_per_process_memory_fraction({})",
                     python_float(*fraction))});
  }
  pytorch_costs(config, fraction, r.costs);
  return r;
}

std::string_view to_string(enum recipe_step::kind kind) noexcept {
  return kind == recipe_step::kind::python ? "python" : "shell";
}

nlohmann::json to_json(const recipe& r) {
  nlohmann::json steps = nlohmann::json::array();
  for (const recipe_step& s : r.steps) {
    steps.push_back({{"kind", std::string(to_string(s.kind))}, {"text", s.text}});
  }
  return {{"title", r.title}, {"steps", std::move(steps)}, {"costs", r.costs}};
}

}  // namespace keel::memory
