// callsites — "where did my memory go", by code: live allocations attributed to the call
// site that made them, the module that site belongs to, and what the memory is for.
//
// Input is a set of live allocations (rounded bytes, requested bytes, call stack); output is
// the call sites holding the most bytes. Every function is pure and thread-safe; results are
// plain values that own their strings (stacks are shared, immutable frame_stacks).
//
// Attribution. The attributed frame is the innermost frame of the stack, innermost first as
// PyTorch records it, that is user code:
//   1. the innermost Python frame (file ending in .py, or "<...>") that is not library
//      internals: torch itself (site-/dist-packages/torch/..., or any path with a torch/
//      directory; also functorch and triton), the Python standard library ("<frozen ...>"
//      included), einops and accelerate (thin dispatch wrappers: einops forwards to torch
//      ops, accelerate/hooks.py wraps Module.forward), transformers and diffusers outside
//      their models/ directory (modeling_utils' to(), the sdpa integration, cache_utils:
//      the model file that called them is the site), and the harnesses a program runs
//      inside (IPython, ipykernel, tornado, traitlets, zmq, ray);
//   2. else the innermost Python frame of any kind (a torch op called from nowhere else);
//   3. else, for a stack of native (C++) frames only, e.g. allocations made by the autograd
//      engine's thread, the innermost autograd node (torch::autograd::generated::*Backward*,
//      AccumulateGrad), else the outermost operator (at::_ops::*: the op the caller asked
//      for, not the factory under it), else the innermost frame;
//   4. an empty stack is the site "no frames recorded" (module the same, category unknown).
// The site is "file:line:function": file is the display path below; a native function loses
// its argument list, return type and template arguments.
//
// Module collapse (collapse_module; backslashes read as '/', a drive letter dropped):
//   - site-packages/dist-packages paths: the path inside the package directory, collapsed to
//     the top-level package ("torch", "peft", "vllm") unless it has a models/ directory, in
//     which case it is kept whole: model zoos keep one file per architecture and that file is
//     the model ("transformers/models/qwen3/modeling_qwen3.py",
//     "vllm/model_executor/models/qwen2.py");
//   - the standard library (".../lib/pythonX.Y/...", or ".../lib/..." under a python or
//     cpython install on Windows): "stdlib:" and the top-level module ("stdlib:threading");
//   - any other Python path (user code, vendored or source checkouts): "torch" when the path
//     has a torch/ directory; else from the directory before a models/ directory when there
//     is one ("/x/lib/transformers/models/llama/m.py" -> "transformers/models/llama/m.py");
//     else the file and its directory ("cs336_basics/transformer.py"), which is the same on
//     every machine the code runs on; ".." is applied first;
//   - native frames: "native:torch" for at::, c10::, torch:: and caffe2:: symbols, else
//     "native:" and the first namespace, else "native".
// The display path of a site is the same path uncollapsed: the package-relative path for
// site-packages and the standard library, the path from the torch/ directory for a torch
// checkout, the module for other Python files, the base name for native files ("??" when
// the frame has none).
//
// Categories (classify), after torch/profiler/_memory_profiler.py's Category but from the
// stack alone. The first rule that matches wins:
//   kv_cache        a frame naming a KV cache (vLLM's cache_engine.py, transformers'
//                   cache_utils.py, "kv_cache"/"kvcache" in a function or file name) that
//                   is inside the innermost forward frame, or in a stack without one (so
//                   vLLM's profiling forward run under _initialize_kv_caches stays an
//                   activation). keel's addition: PyTorch's profiler has no such category,
//                   and in serving it is the largest one;
//   (backward)      the backward pass made it: autograd engine frames (Engine::,
//                   PythonEngine::, torch::autograd::generated::*Backward*, AccumulateGrad)
//                   or Python backward() / torch.autograd.grad / _engine_run_backward. Then:
//     activation      recomputation by torch.utils.checkpoint (a checkpoint.py frame);
//     autograd_detail the engine's bookkeeping: InputBuffer::add/accumulate,
//                     InputMetadata::reduce_grad, validate_outputs;
//     gradient        everything else. Still live after backward, that is a parameter's
//                     .grad (autograd hands a node's output to .grad without a copy); in a
//                     snapshot taken during backward it includes gradients in flight;
//   optimizer_state a frame in optimizer code: a path component (directory or file stem)
//                   "optim", "optimizer", "optimizers", or ending in "_optim"/"_optimizer"
//                   (torch/optim/, megatron/core/optimizer/, transformer_engine's
//                   optimizers/, a user's optimizers.py); mixed-precision master weights
//                   built there count as optimizer state;
//   parameter       model construction, loading or movement: Module._apply (to, cuda, half),
//                   to_empty, load_state_dict, _load_from_state_dict, torch/nn/parameter.py,
//                   torch/nn/init.py, torch/nn/parallel/replicate.py, __init__ or
//                   reset_parameters in torch/nn/modules/, and functions named get_model,
//                   build_model, load_model, _initialize_model, reset_parameters,
//                   set_module_tensor_to_device, _load_pretrained_model or containing
//                   load_state_dict, from_pretrained, load_weight, create_weight, init_weight,
//                   model_provider. Caveat: Megatron's param_and_grad_buffer allocates the
//                   gradient buffer next to the parameters, in the same frames: both land here;
//   input           data loading and scattering: torch/utils/data/, DataParallel's
//                   scatter_gather.py, torch_geometric/data/;
//   activation      inside a forward: Module.__call__ frames (_call_impl,
//                   _wrapped_call_impl, __call__ in torch/nn/modules/module.py) or a
//                   function named forward;
//   input           a tensor's .to()/.cuda() (native THPVariable_to/THPVariable_cuda frames)
//                   outside all of the above (seen only when native frames were recorded);
//   unknown         none of these, or no frames. temporary is never assigned: a temporary is
//                   defined by its lifetime (freed within the op that made it), which a stack
//                   cannot tell.
// On the shared real snapshots, the bytes in unknown are mostly blocks without frames
// (allocated before recording began): docs/memory.md has the table.
#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "keel/memory/snapshot.hpp"

namespace keel::memory {

enum class memory_category {
  parameter,
  optimizer_state,
  activation,
  gradient,
  autograd_detail,
  temporary,
  input,
  kv_cache,
  unknown,
};
inline constexpr std::size_t k_memory_categories = 9;

// "parameter", "optimizer_state", …, "unknown" (PyTorch's Category names, lower case).
std::string_view to_string(memory_category category) noexcept;

// One live allocation: a block of a snapshot, or anything else with a size and a stack.
struct live_allocation {
  std::uint64_t bytes = 0;      // rounded size the allocator handed out
  std::uint64_t requested = 0;  // what the program asked for (0 when unknown)
  frame_stack frames;           // innermost first
  friend bool operator==(const live_allocation&, const live_allocation&) = default;
};

// The live allocations of a snapshot's final state on `device`: its active_allocated and
// active_pending_free blocks, in segment and address order, with their frames (2.0-era
// files: the frames of the block's last history entry). A block written without frames takes
// those of the device trace's last `alloc` at its address that no free_completed followed,
// when the sizes agree (or the block's requested size is unknown); else it has none. A
// device with no segments gives an empty vector.
std::vector<live_allocation> live_allocations(const snapshot& s, int device);

// Where one stack is attributed (rules above).
struct attribution {
  std::string site;    // "file:line:function", or "no frames recorded"
  std::string module;  // the collapsed module of that frame
  memory_category category = memory_category::unknown;
  std::size_t frame = 0;  // index of the attributed frame in the stack (0 for an empty stack)
};
attribution attribute(const frame_stack& frames);

// The module a frame's file collapses to (rules above); `function` is used for native frames.
std::string collapse_module(std::string_view filename, std::string_view function = {});

// The category of a stack (rules above).
memory_category classify(const frame_stack& frames);

enum class callsite_grouping { site, module };

struct callsite_options {
  std::size_t top = 20;  // rows kept, largest first; 0 keeps every row
  // site: a row per (site, category); module: a row per (module, category), whose `site` is
  // the module's largest site.
  callsite_grouping group_by = callsite_grouping::site;
};

struct callsite {
  std::string site;
  std::string module;
  memory_category category = memory_category::unknown;
  std::uint64_t bytes = 0;      // rounded bytes, summed
  std::uint64_t requested = 0;  // requested bytes, summed
  std::uint64_t count = 0;      // allocations
  frame_stack frames;           // the full stack of the row's first allocation
};

struct callsite_summary {
  std::vector<callsite> sites;  // by bytes descending, then site; at most options.top
  // Over every allocation, including those of rows beyond `top`:
  std::uint64_t total_bytes = 0;
  std::uint64_t total_requested = 0;
  std::uint64_t total_count = 0;
  std::size_t total_rows = 0;                                       // rows before the cut to `top`
  std::array<std::uint64_t, k_memory_categories> category_bytes{};  // index: the enum value
};

// Attributes and groups the allocations. Stacks shared between allocations (the common
// case) are attributed once.
callsite_summary summarize_callsites(std::span<const live_allocation> allocations,
                                     const callsite_options& options = {});

// "activation 88.4%, parameter 10.9%, …": the categories holding at least 0.1% of the bytes,
// largest first.
std::string category_line(const callsite_summary& summary);

// An array of {"site","module","category","bytes","requested","count","frames"}; frames are
// [["file",line,"name"],…] of the row's first allocation, innermost first: from three frames
// inside the attributed one outward, without the frames memory_viz hides (unwinder, interpreter
// and dispatcher frames), at most 20.
nlohmann::json to_json(const callsite_summary& summary);

// The frames to_json writes for one row's stack (same rules), for other reports.
nlohmann::json frames_to_json(const frame_stack& frames, std::size_t attributed_frame);

}  // namespace keel::memory
