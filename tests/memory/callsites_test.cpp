// Call-site attribution: module collapse on the path shapes of the real traces, which frame
// wins, the category rules, grouping and JSON; and, when the shared data is present, the
// category shares on the real snapshots.
#include "keel/memory/callsites.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

namespace keel::memory {
namespace {

namespace fs = std::filesystem;

const fs::path k_traces = fs::path(KEEL_SHARED_DIR) / "traces" / "pytorch";

constexpr const char* k_sp = "/home/u/envs/a/lib/python3.11/site-packages/";

frame py(const std::string& file, std::int64_t line, const std::string& name) {
  return {file, line, name};
}
frame torch_py(const std::string& rel, std::int64_t line, const std::string& name) {
  return {std::string(k_sp) + "torch/" + rel, line, name};
}
frame native(const std::string& name, const std::string& file = "??") { return {file, 0, name}; }

// The frames PyTorch records under any C++ stack: unwinder and allocator first.
std::vector<frame> allocator_frames() {
  return {
      native("torch::unwind::unwind()"),
      native("torch::CapturedTraceback::gather(bool, bool, bool)"),
      native("torch::cuda::(anonymous namespace)::gather_with_cpp()", "memory_snapshot.cpp"),
      native("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, "
             "unsigned long, CUstream_st*)",
             "CUDACachingAllocator.cpp"),
      native(
          "at::TensorBase at::detail::_empty_generic<long>(c10::ArrayRef<long>, c10::Allocator*)",
          "")};
}

frame_stack stack(std::vector<frame> inner, bool with_allocator = false) {
  std::vector<frame> all = with_allocator ? allocator_frames() : std::vector<frame>{};
  all.insert(all.end(), inner.begin(), inner.end());
  return frame_stack(std::move(all));
}

TEST(CollapseModule, RealPathShapes) {
  struct row {
    std::string file, module;
  };
  const std::vector<row> rows = {
      {std::string(k_sp) + "torch/nn/modules/module.py", "torch"},
      {std::string(k_sp) + "transformers/models/qwen3/modeling_qwen3.py",
       "transformers/models/qwen3/modeling_qwen3.py"},
      {std::string(k_sp) + "transformers/modeling_utils.py", "transformers"},
      {"/usr/local/lib/python3.10/dist-packages/megatron/core/optimizer/distrib_optimizer.py",
       "megatron"},
      {"/usr/local/lib/python3.10/dist-packages/vllm/model_executor/models/qwen2.py",
       "vllm/model_executor/models/qwen2.py"},
      {"/usr/local/lib/python3.10/dist-packages/vllm/worker/cache_engine.py", "vllm"},
      {"C:\\research\\DeComFL\\.venv\\lib\\site-packages\\transformers\\models\\opt\\modeling_opt."
       "py",
       "transformers/models/opt/modeling_opt.py"},
      {"C:\\research\\DeComFL\\.venv\\lib\\site-packages\\torch\\nn\\functional.py", "torch"},
      {"C:\\research\\DeComFL\\cezo_fl\\client.py", "cezo_fl/client.py"},
      {"C:\\research\\DeComFL\\decomfl_main.py", "DeComFL/decomfl_main.py"},
      {"C:\\Users\\Z\\AppData\\Roaming\\uv\\python\\cpython-3.10.19-windows-x86_64-none\\lib\\copy."
       "py",
       "stdlib:copy"},
      {"C:\\Python311\\Lib\\asyncio\\events.py", "stdlib:asyncio"},
      {"/home/h/anaconda3/envs/gnn/lib/python3.11/threading.py", "stdlib:threading"},
      {"/root/miniconda3/envs/py3.10/lib/python3.10/asyncio/base_events.py", "stdlib:asyncio"},
      {"/home/c/assignment1/cs336_basics/transformer.py", "cs336_basics/transformer.py"},
      {"/home/lin/cs336/assignment2-systems/scripts/../cs336_systems/nsys_profile.py",
       "cs336_systems/nsys_profile.py"},
      {"/mnt/mcx/select_n/lib/transformers/models/llama/modeling_llama.py",
       "transformers/models/llama/modeling_llama.py"},
      {"/home/u/src/pytorch/torch/nn/modules/module.py", "torch"},
      {"/root/.local/lib/python3.10/site-packages/foo-1.0-py3.10.egg/foo/bar.py", "foo"},
      {std::string(k_sp) + "ipykernel_launcher.py", "ipykernel_launcher"},
      {"train.py", "train.py"},
      {"<frozen runpy>", "stdlib:runpy"},
      {"<string>", "<string>"},
  };
  for (const row& r : rows) EXPECT_EQ(collapse_module(r.file), r.module) << r.file;
  EXPECT_EQ(collapse_module(
                "??", "torch::autograd::generated::BmmBackward0::apply(std::vector<at::Tensor>&&)"),
            "native:torch");
  EXPECT_EQ(collapse_module("", "at::_ops::bmm::call(at::Tensor const&, at::Tensor const&)"),
            "native:torch");
  EXPECT_EQ(collapse_module("ProcessGroupNCCL.cpp",
                            "c10d::ProcessGroupNCCL::allreduce(std::vector<at::Tensor>&)"),
            "native:c10d");
  EXPECT_EQ(collapse_module("??", "_PyEval_EvalFrameDefault"), "native");
  EXPECT_EQ(collapse_module("/build/glibc-B3wQXB/glibc-2.31/nptl/pthread_create.c", "start_thread"),
            "native");
}

TEST(Attribute, UserCodeWinsOverTorchAndWrappers) {
  const frame_stack s =
      stack({native("torch::autograd::THPVariable_einsum(_object*, _object*, _object*)",
                    "python_torch_functions_0.cpp"),
             torch_py("functional.py", 407, "einsum"),
             py(std::string(k_sp) + "einops/_backends.py", 288, "einsum"),
             py(std::string(k_sp) + "einops/einops.py", 916, "einsum"),
             py("/home/c/assignment1/cs336_basics/transformer.py", 22, "forward"),
             torch_py("nn/modules/module.py", 1750, "_call_impl"),
             py("/home/c/a2/cs336_systems/benchmark.py", 441, "<module>")},
            true);
  const attribution a = attribute(s);
  EXPECT_EQ(a.site, "cs336_basics/transformer.py:22:forward");
  EXPECT_EQ(a.module, "cs336_basics/transformer.py");
  EXPECT_EQ(a.category, memory_category::activation);
  EXPECT_EQ(a.frame, allocator_frames().size() + 4);

  // accelerate's hook and transformers' plumbing are skipped for the model file.
  const frame_stack hooked = stack(
      {torch_py("nn/modules/linear.py", 114, "forward"),
       py(std::string(k_sp) + "accelerate/hooks.py", 166, "new_forward"),
       torch_py("nn/modules/module.py", 1527, "_call_impl"),
       py(std::string(k_sp) + "transformers/integrations/sdpa_attention.py", 89, "sdpa"),
       py(std::string(k_sp) + "transformers/models/llama/modeling_llama.py", 1183, "forward")});
  EXPECT_EQ(attribute(hooked).site, "transformers/models/llama/modeling_llama.py:1183:forward");

  // Only torch frames: the innermost Python frame.
  const frame_stack torch_only = stack({torch_py("nn/modules/linear.py", 116, "forward"),
                                        torch_py("nn/modules/module.py", 1520, "_call_impl")});
  EXPECT_EQ(attribute(torch_only).site, "torch/nn/modules/linear.py:116:forward");
  EXPECT_EQ(attribute(torch_only).module, "torch");
}

TEST(Attribute, NativeOnlyStacksNameTheAutogradNodeOrTheOperator) {
  const frame_stack backward =
      stack({native("at::_ops::bmm::call(at::Tensor const&, at::Tensor const&)"),
             native("torch::autograd::generated::BmmBackward0::apply(std::vector<at::Tensor, "
                    "std::allocator<at::Tensor> >&&)"),
             native("torch::autograd::Node::operator()(std::vector<at::Tensor, "
                    "std::allocator<at::Tensor> >&&)",
                    ""),
             native("torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::"
                    "GraphTask>&, "
                    "torch::autograd::Node*, torch::autograd::InputBuffer&, "
                    "std::shared_ptr<torch::autograd::ReadyQueue> const&)"),
             native("torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::"
                    "GraphTask> const&)"),
             native("execute_native_thread_routine", "thread48.o")},
            true);
  const attribution a = attribute(backward);
  EXPECT_EQ(a.site, "??:0:torch::autograd::generated::BmmBackward0::apply");
  EXPECT_EQ(a.module, "native:torch");
  EXPECT_EQ(a.category, memory_category::gradient);

  const frame_stack op =
      stack({native("at::_ops::empty_memory_format::call(c10::ArrayRef<c10::SymInt>)"),
             native("at::_ops::zeros::call(c10::ArrayRef<c10::SymInt>)"),
             native("c10d::ProcessGroupNCCL::allreduce(std::vector<at::Tensor>&)",
                    "ProcessGroupNCCL.cpp")},
            true);
  EXPECT_EQ(attribute(op).site, "??:0:at::_ops::zeros::call");
  EXPECT_EQ(attribute(op).category, memory_category::unknown);

  const attribution none = attribute(frame_stack{});
  EXPECT_EQ(none.site, "no frames recorded");
  EXPECT_EQ(none.module, "no frames recorded");
  EXPECT_EQ(none.category, memory_category::unknown);
}

TEST(Classify, RulesFromStacks) {
  const std::string vllm = "/usr/local/lib/python3.10/dist-packages/vllm/";
  const frame user = py("/home/u/proj/train.py", 10, "main");
  const frame call = torch_py("nn/modules/module.py", 1750, "_call_impl");
  struct row {
    const char* what;
    frame_stack frames;
    memory_category expected;
  };
  const std::vector<row> rows = {
      {"adam state",
       stack({torch_py("optim/adam.py", 111, "_init_group"), torch_py("optim/adam.py", 157, "step"),
              torch_py("optim/optimizer.py", 385, "wrapper"), user}),
       memory_category::optimizer_state},
      {"a user's optimizer", stack({py("/home/c/a1/cs336_basics/optimizers.py", 82, "step"), user}),
       memory_category::optimizer_state},
      {"megatron master weights",
       stack({py("/usr/local/lib/python3.10/dist-packages/megatron/core/optimizer/"
                 "distrib_optimizer.py",
                 376, "_build_model_and_main_param_groups"),
              user}),
       memory_category::optimizer_state},
      {"model.to()",
       stack({torch_py("nn/modules/module.py", 1355, "convert"),
              torch_py("nn/modules/module.py", 955, "_apply"),
              torch_py("nn/modules/module.py", 1369, "to"), user}),
       memory_category::parameter},
      {"from_pretrained",
       stack({py(std::string(k_sp) + "transformers/modeling_utils.py", 4000, "from_pretrained"),
              user}),
       memory_category::parameter},
      {"vllm weights",
       stack({py(vllm + "model_executor/layers/linear.py", 178, "create_weights"), user}),
       memory_category::parameter},
      {"flexgen weights",
       stack({py("/h/flexgen/pytorch_backend.py", 195, "allocate"),
              py("/h/flexgen/flex_opt.py", 135, "init_weight_list"), user}),
       memory_category::parameter},
      {"DataParallel replicas",
       stack({torch_py("nn/parallel/replicate.py", 120, "replicate"),
              torch_py("nn/parallel/data_parallel.py", 190, "forward"), call, user}),
       memory_category::parameter},
      {"vllm kv cache",
       stack({py(vllm + "worker/cache_engine.py", 83, "_allocate_kv_cache"),
              py(vllm + "engine/llm_engine.py", 445, "_initialize_kv_caches"), user}),
       memory_category::kv_cache},
      {"DynamicCache inside a forward",
       stack({torch_py("functional.py", 1, "cat"),
              py(std::string(k_sp) + "transformers/cache_utils.py", 400, "update"),
              py(std::string(k_sp) + "transformers/models/llama/modeling_llama.py", 300, "forward"),
              call, user}),
       memory_category::kv_cache},
      {"vllm's profile run is a forward",
       stack({py(vllm + "model_executor/layers/linear.py", 191, "apply"),
              py(vllm + "model_executor/models/qwen2.py", 174, "forward"), call,
              py(vllm + "engine/llm_engine.py", 432, "_initialize_kv_caches"), user}),
       memory_category::activation},
      {"a forward", stack({py("/home/u/proj/model.py", 20, "forward"), call, user}),
       memory_category::activation},
      {"a DataLoader", stack({torch_py("utils/data/_utils/pin_memory.py", 20, "pin_memory"), user}),
       memory_category::input},
      {"batch.to(device)",
       stack({native("at::_ops::_to_copy::call(at::Tensor const&)"),
              native("torch::autograd::THPVariable_to(_object*, _object*, _object*)",
                     "python_variable_methods.cpp"),
              user},
             true),
       memory_category::input},
      {"AccumulateGrad",
       stack({native("torch::autograd::AccumulateGrad::apply(std::vector<at::Tensor>&&)"),
              native("torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::"
                     "GraphTask>&)")},
             true),
       memory_category::gradient},
      {"loss.backward() on the calling thread",
       stack({native("at::_ops::mm::call(at::Tensor const&, at::Tensor const&)"),
              torch_py("autograd/graph.py", 768, "_engine_run_backward"),
              torch_py("autograd/__init__.py", 347, "backward"),
              torch_py("_tensor.py", 581, "backward"), user}),
       memory_category::gradient},
      {"engine bookkeeping",
       stack({native("at::_ops::sum_dim_IntList::call(at::Tensor const&)"),
              native("torch::autograd::InputMetadata::reduce_grad(at::Tensor&) const"),
              native("torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::"
                     "GraphTask>&)")},
             true),
       memory_category::autograd_detail},
      {"checkpoint recompute",
       stack({py("/home/u/proj/model.py", 20, "forward"), call,
              torch_py("utils/checkpoint.py", 1100, "recompute_fn"),
              native("torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::"
                     "GraphTask> const&)")}),
       memory_category::activation},
      {"a plain function", stack({py("/home/u/proj/attn.py", 12, "attention"), user}),
       memory_category::unknown},
      {"no frames", frame_stack{}, memory_category::unknown},
  };
  for (const row& r : rows) {
    EXPECT_EQ(to_string(classify(r.frames)), to_string(r.expected)) << r.what;
    EXPECT_EQ(attribute(r.frames).category, r.expected) << r.what;
  }
  for (std::size_t c = 0; c < k_memory_categories; ++c) {
    EXPECT_FALSE(to_string(static_cast<memory_category>(c)).empty());
  }
  EXPECT_EQ(to_string(memory_category::optimizer_state), "optimizer_state");
}

TEST(SummarizeCallsites, GroupsSortsCutsAndTotals) {
  const frame call = torch_py("nn/modules/module.py", 1750, "_call_impl");
  const frame_stack fwd_a = stack({py("/p/model.py", 10, "forward"), call});
  const frame_stack fwd_b = stack({py("/p/model.py", 20, "forward"), call});
  const frame_stack opt =
      stack({torch_py("optim/adam.py", 111, "_init_group"), py("/p/train.py", 5, "main")});
  const frame_stack other_file = stack({py("/p/train.py", 7, "main")});
  std::vector<live_allocation> live = {
      {1024, 1000, fwd_a}, {2048, 2000, fwd_b},  {1024, 1000, fwd_a},
      {4096, 4096, opt},   {512, 0, other_file}, {8192, 8000, frame_stack{}},
  };
  callsite_options o;
  o.top = 0;
  const callsite_summary all = summarize_callsites(live, o);
  ASSERT_EQ(all.sites.size(), 5u);
  EXPECT_EQ(all.total_rows, 5u);
  EXPECT_EQ(all.total_bytes, 16896u);
  EXPECT_EQ(all.total_requested, 16096u);
  EXPECT_EQ(all.total_count, 6u);
  EXPECT_EQ(all.sites[0].site, "no frames recorded");
  EXPECT_EQ(all.sites[1].site, "p/train.py:5:main");
  EXPECT_EQ(all.sites[1].category, memory_category::optimizer_state);
  // Equal bytes: by site.
  EXPECT_EQ(all.sites[2].site, "p/model.py:10:forward");
  EXPECT_EQ(all.sites[2].bytes, 2048u);
  EXPECT_EQ(all.sites[2].requested, 2000u);
  EXPECT_EQ(all.sites[2].count, 2u);
  EXPECT_EQ(all.sites[3].site, "p/model.py:20:forward");
  EXPECT_EQ(all.sites[4].site, "p/train.py:7:main");
  EXPECT_EQ(all.sites[4].category, memory_category::unknown);
  EXPECT_EQ(all.category_bytes[static_cast<std::size_t>(memory_category::activation)], 4096u);
  EXPECT_EQ(all.category_bytes[static_cast<std::size_t>(memory_category::optimizer_state)], 4096u);
  EXPECT_EQ(all.category_bytes[static_cast<std::size_t>(memory_category::unknown)], 8704u);
  EXPECT_EQ(std::accumulate(all.category_bytes.begin(), all.category_bytes.end(), std::uint64_t{0}),
            all.total_bytes);

  o.top = 2;
  const callsite_summary top = summarize_callsites(live, o);
  EXPECT_EQ(top.sites.size(), 2u);
  EXPECT_EQ(top.total_rows, 5u);
  EXPECT_EQ(top.total_bytes, all.total_bytes);

  // By module: one row per (module, category), named after its largest site.
  o.top = 0;
  o.group_by = callsite_grouping::module;
  const callsite_summary modules = summarize_callsites(live, o);
  ASSERT_EQ(modules.sites.size(), 4u);
  EXPECT_EQ(modules.sites[1].module, "p/model.py");
  EXPECT_EQ(modules.sites[1].bytes, 4096u);
  EXPECT_EQ(modules.sites[1].count, 3u);
  EXPECT_EQ(modules.sites[1].site, "p/model.py:10:forward");  // 2048 each: the first by name
  EXPECT_EQ(modules.sites[2].module, "p/train.py");
  EXPECT_EQ(modules.sites[2].category, memory_category::optimizer_state);

  EXPECT_TRUE(summarize_callsites({}).sites.empty());
}

TEST(SummarizeCallsites, JsonRowsAndTheirFrames) {
  std::vector<frame> deep = allocator_frames();
  deep.push_back(native("at::_ops::bmm::call(at::Tensor const&, at::Tensor const&)"));
  deep.push_back(torch_py("functional.py", 407, "einsum"));
  deep.push_back(py("/p/model.py", 22, "forward"));
  for (int i = 0; i < 40; ++i) deep.push_back(py("/p/model.py", 100 + i, "forward"));
  deep.push_back(native("_PyEval_EvalFrameDefault"));
  const std::vector<live_allocation> live = {{2048, 2000, frame_stack(deep)}};
  const nlohmann::json j = to_json(summarize_callsites(live));
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 1u);
  const nlohmann::json& row = j[0];
  EXPECT_EQ(row["site"], "p/model.py:22:forward");
  EXPECT_EQ(row["module"], "p/model.py");
  EXPECT_EQ(row["category"], "activation");
  EXPECT_EQ(row["bytes"], 2048);
  EXPECT_EQ(row["requested"], 2000);
  EXPECT_EQ(row["count"], 1);
  const nlohmann::json& frames = row["frames"];
  ASSERT_EQ(frames.size(), 20u);
  // Three shown frames inside the attributed one (the allocator's last frame, the op, torch's
  // einsum), then outward; memory_viz's hidden frames never appear.
  EXPECT_EQ(
      frames[0][2],
      "at::TensorBase at::detail::_empty_generic<long>(c10::ArrayRef<long>, c10::Allocator*)");
  EXPECT_EQ(frames[1][2], "at::_ops::bmm::call(at::Tensor const&, at::Tensor const&)");
  EXPECT_EQ(frames[3][0], "/p/model.py");
  EXPECT_EQ(frames[3][1], 22);
  EXPECT_EQ(frames[3][2], "forward");
  for (const auto& f : frames) {
    ASSERT_TRUE(f.is_array());
    ASSERT_EQ(f.size(), 3u);
    EXPECT_EQ(f[2].get<std::string>().find("unwind"), std::string::npos);
  }
  EXPECT_EQ(frames_to_json(frame_stack{}, 0), nlohmann::json::array());
}

TEST(LiveAllocations, ActiveAndPendingBlocksOfOneDevice) {
  const frame_stack a = stack({py("/p/a.py", 1, "f")});
  const frame_stack traced = stack({py("/p/b.py", 2, "g")});
  snapshot s;
  snapshot_segment seg0;
  seg0.device = 0;
  seg0.address = 0x1000;
  seg0.total_size = 4096;
  seg0.blocks = {{0x1000, 1024, 1000, block_state::active_allocated, a},
                 {0x1400, 1024, 0, block_state::inactive, {}},
                 {0x1800, 1024, 900, block_state::active_pending_free, {}},
                 {0x1c00, 1024, 512, block_state::active_allocated, {}}};
  snapshot_segment seg1 = seg0;
  seg1.device = 1;
  s.segments = {seg0, seg1};
  // Device 0's trace allocated 0x1800 (900 bytes, free requested, not completed) and 0x1c00
  // with another size: only the first lends its frames.
  s.device_traces.resize(2);
  s.device_traces[0] = {{trace_action::alloc, 0x1800, 900, 0, std::nullopt, 0, traced},
                        {trace_action::free_requested, 0x1800, 900, 0, std::nullopt, 0, traced},
                        {trace_action::alloc, 0x1c00, 700, 0, std::nullopt, 0, traced}};
  const std::vector<live_allocation> live = live_allocations(s, 0);
  ASSERT_EQ(live.size(), 3u);
  EXPECT_EQ(live[0], (live_allocation{1024, 1000, a}));
  EXPECT_EQ(live[1].frames, traced);
  EXPECT_EQ(live[1].requested, 900u);
  EXPECT_TRUE(live[2].frames.empty());
  EXPECT_EQ(live_allocations(s, 1).size(), 3u);
  EXPECT_TRUE(live_allocations(s, 5).empty());
}

// ---- the shared real snapshots ----

class SharedTraceSites : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(k_traces)) GTEST_SKIP() << "shared traces not found at " << k_traces;
  }
  static callsite_summary summary(const char* file, int device = 0, std::size_t top = 0) {
    const snapshot s = read_snapshot((k_traces / file).string());
    callsite_options o;
    o.top = top;
    return summarize_callsites(live_allocations(s, device), o);
  }
  static double share(const callsite_summary& s, memory_category c) {
    return static_cast<double>(s.category_bytes[static_cast<std::size_t>(c)]) /
           static_cast<double>(s.total_bytes);
  }
  static const callsite* find(const callsite_summary& s, const std::string& site) {
    for (const callsite& c : s.sites) {
      if (c.site == site) return &c;
    }
    return nullptr;
  }
};

TEST_F(SharedTraceSites, FullStepSplitsOptimizerGradientsAndWhatWasNeverRecorded) {
  const callsite_summary s = summary("cs336a2kk-ctx128-fullstep.pickle");
  EXPECT_EQ(s.total_count, 1201u);
  // Adam's two moments (49.7 %), the gradients left by backward (25.1 %), and 13.76 GB
  // allocated before recording began (25.1 %, unknown: no frames).
  EXPECT_NEAR(share(s, memory_category::optimizer_state), 0.497, 0.005);
  EXPECT_NEAR(share(s, memory_category::gradient), 0.251, 0.005);
  EXPECT_NEAR(share(s, memory_category::unknown), 0.251, 0.005);
  const callsite* none = find(s, "no frames recorded");
  ASSERT_NE(none, nullptr);
  EXPECT_EQ(none->bytes, 13'763'491'840u);
  const callsite* moments = find(s, "cs336_basics/optimizers.py:82:step");
  ASSERT_NE(moments, nullptr);
  EXPECT_EQ(moments->category, memory_category::optimizer_state);
  EXPECT_EQ(moments->module, "cs336_basics/optimizers.py");
  const callsite* bmm = find(s, "??:0:torch::autograd::generated::BmmBackward0::apply");
  ASSERT_NE(bmm, nullptr);
  EXPECT_EQ(bmm->category, memory_category::gradient);
}

TEST_F(SharedTraceSites, VerlInitIsMostlyTheVllmKvCache) {
  const callsite_summary s = summary("verl-megatron-init-state.pickle");
  EXPECT_EQ(s.total_count, 534u + 9u);  // active_allocated + active_pending_free
  ASSERT_FALSE(s.sites.empty());
  EXPECT_EQ(s.sites[0].site, "vllm/worker/cache_engine.py:83:_allocate_kv_cache");
  EXPECT_EQ(s.sites[0].category, memory_category::kv_cache);
  EXPECT_GT(share(s, memory_category::kv_cache), 0.85);
  EXPECT_NEAR(share(s, memory_category::parameter), 0.090, 0.005);
  EXPECT_NEAR(share(s, memory_category::optimizer_state), 0.019, 0.005);
  EXPECT_NEAR(share(s, memory_category::unknown), 0.036, 0.005);
  const nlohmann::json j = to_json(s);
  ASSERT_EQ(j.size(), s.sites.size());
  EXPECT_LE(j[0]["frames"].size(), 20u);
  EXPECT_GT(j[0]["frames"].size(), 3u);
}

TEST_F(SharedTraceSites, AnOomStateWithoutFramesIsAllUnknown) {
  const callsite_summary s = summary("eqposteriors-oom-state.pickle");
  ASSERT_EQ(s.sites.size(), 1u);
  EXPECT_EQ(s.sites[0].site, "no frames recorded");
  EXPECT_EQ(s.sites[0].module, "no frames recorded");
  EXPECT_EQ(s.sites[0].category, memory_category::unknown);
  EXPECT_EQ(s.sites[0].bytes, s.total_bytes);
  EXPECT_EQ(to_json(s)[0]["frames"], nlohmann::json::array());
}

TEST_F(SharedTraceSites, TheOldFormatAndWindowsPathsAttribute) {
  // 2.0-era: frames come from each block's history; FlexGen allocates its weights itself.
  const callsite_summary flexgen = summary("flexgen-opt1.3b-state-2.0fmt.pickle");
  EXPECT_EQ(flexgen.total_count, 785u);
  ASSERT_FALSE(flexgen.sites.empty());
  EXPECT_EQ(flexgen.sites[0].module, "flexgen/pytorch_backend.py");
  EXPECT_GT(share(flexgen, memory_category::parameter), 0.99);

  const callsite_summary decomfl = summary("decomfl-opt-zo-finetune.pickle");
  const callsite* model = find(decomfl, "cezo_fl/client.py:176:reset_model");
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(model->category, memory_category::parameter);
  bool opt = false;
  for (const callsite& c : decomfl.sites)
    opt = opt || c.module == "transformers/models/opt/modeling_opt.py";
  EXPECT_TRUE(opt);
}

TEST_F(SharedTraceSites, EveryTraceGivesRelativeModulesAndConsistentTotals) {
  for (const auto& entry : fs::directory_iterator(k_traces)) {
    if (entry.path().extension() != ".pickle") continue;
    const snapshot snap = read_snapshot(entry.path().string());
    std::vector<int> devices;
    for (const snapshot_segment& seg : snap.segments) {
      if (std::find(devices.begin(), devices.end(), seg.device) == devices.end())
        devices.push_back(seg.device);
    }
    for (int device : devices) {
      callsite_options o;
      o.top = 0;
      const callsite_summary s = summarize_callsites(live_allocations(snap, device), o);
      std::uint64_t bytes = 0;
      for (const callsite& c : s.sites) {
        bytes += c.bytes;
        EXPECT_EQ(c.module.find('\\'), std::string::npos) << entry.path() << " " << c.module;
        EXPECT_NE(c.module.front(), '/') << entry.path() << " " << c.module;
        EXPECT_EQ(c.site.find('\\'), std::string::npos) << entry.path() << " " << c.site;
        EXPECT_EQ(c.site.find("/home/"), std::string::npos) << entry.path() << " " << c.site;
      }
      EXPECT_EQ(bytes, s.total_bytes) << entry.path();
      EXPECT_EQ(std::accumulate(s.category_bytes.begin(), s.category_bytes.end(), std::uint64_t{0}),
                s.total_bytes)
          << entry.path();
    }
  }
}

}  // namespace
}  // namespace keel::memory
