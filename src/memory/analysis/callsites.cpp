// Call-site attribution of live allocations: the rules are in include/keel/memory/callsites.hpp.
#include "keel/memory/callsites.hpp"
#include "keel/core/enum_names.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <unordered_map>
#include <utility>

#include "frame_facts.hpp"

namespace keel::memory {
namespace {

using namespace callsite_detail;

constexpr std::string_view k_no_frames = "no frames recorded";
constexpr std::size_t k_json_frames = 20;
constexpr std::size_t k_json_inner_frames = 3;

std::string site_of(const frame& f, const frame_facts& x) {
  if (x.python) return fmt::format("{}:{}:{}", x.rel, f.line, f.name);
  return fmt::format("{}:{}:{}", native_file(f.filename), f.line, x.native);
}

std::size_t attributed_frame(const std::vector<frame_facts>& facts) {
  for (std::size_t i = 0; i < facts.size(); ++i) {
    if (facts[i].python && !facts[i].path.internal) return i;
  }
  for (std::size_t i = 0; i < facts.size(); ++i) {
    if (facts[i].python) return i;
  }
  for (std::size_t i = 0; i < facts.size(); ++i) {
    const std::string& n = facts[i].native;
    if ((n.starts_with("torch::autograd::generated::") && contains(n, "Backward")) ||
        contains(n, "AccumulateGrad::apply")) {
      return i;
    }
  }
  for (std::size_t i = facts.size(); i-- > 0;) {
    if (facts[i].native.starts_with("at::_ops::")) return i;
  }
  return 0;
}

bool is_optimizer_component(std::string_view c) {
  c = stem(c);
  return c == "optim" || c == "optimizer" || c == "optimizers" || c.ends_with("_optim") ||
         c.ends_with("_optimizer");
}

// A frame of a forward pass: Module.__call__ or a function named forward.
bool is_forward_frame(const frame_facts& x) {
  if (!x.python) return false;
  if (x.name == "forward") return true;
  return x.rel == "torch/nn/modules/module.py" &&
         (x.name == "_call_impl" || x.name == "_wrapped_call_impl" || x.name == "__call__");
}

bool any_frame(const std::vector<frame_facts>& facts, auto&& pred) {
  return std::any_of(facts.begin(), facts.end(), pred);
}

memory_category classify_facts(const std::vector<frame_facts>& facts) {
  if (facts.empty()) return memory_category::unknown;
  const auto py = [](auto&& pred) {
    return [pred](const frame_facts& x) { return x.python && pred(x); };
  };
  const auto nat = [](auto&& pred) {
    return [pred](const frame_facts& x) { return !x.python && pred(x.native); };
  };

  // kv_cache: a frame naming a KV cache, inside the innermost forward (a forward run inside
  // KV-cache set-up, such as vLLM's profile run, makes activations).
  for (const frame_facts& x : facts) {
    if (is_forward_frame(x)) break;
    const std::string n = lower(x.name);
    bool kv = contains(n, "kv_cache") || contains(n, "kvcache");
    if (x.python) {
      const std::string file = lower(x.path.rel.back());
      kv = kv || contains(file, "kv_cache") || contains(file, "kvcache") ||
           file == "cache_engine.py" || x.rel == "transformers/cache_utils.py";
    }
    if (kv) return memory_category::kv_cache;
  }

  // The backward pass.
  const bool backward =
      any_frame(
          facts, nat([](const std::string& n) {
            return n.starts_with("torch::autograd::Engine::") || contains(n, "PythonEngine::") ||
                   (n.starts_with("torch::autograd::generated::") && contains(n, "Backward")) ||
                   contains(n, "AccumulateGrad");
          })) ||
      any_frame(facts, py([](const frame_facts& x) {
                  return (x.rel == "torch/autograd/__init__.py" &&
                          (x.name == "backward" || x.name == "grad")) ||
                         (x.rel == "torch/_tensor.py" && x.name == "backward") ||
                         (x.rel == "torch/autograd/graph.py" && x.name == "_engine_run_backward");
                }));
  if (backward) {
    if (any_frame(facts,
                  py([](const frame_facts& x) { return x.rel == "torch/utils/checkpoint.py"; }))) {
      return memory_category::activation;
    }
    if (any_frame(facts, nat([](const std::string& n) {
                    return contains(n, "InputBuffer::add") ||
                           contains(n, "InputBuffer::accumulate") || contains(n, "reduce_grad") ||
                           contains(n, "validate_outputs");
                  }))) {
      return memory_category::autograd_detail;
    }
    return memory_category::gradient;
  }

  // Optimizer code.
  if (any_frame(facts, py([](const frame_facts& x) {
                  return std::any_of(
                      x.path.rel.begin(), x.path.rel.end(),
                      [](const std::string& c) { return is_optimizer_component(c); });
                }))) {
    return memory_category::optimizer_state;
  }

  // Model construction, loading, movement.
  if (any_frame(facts, py([](const frame_facts& x) {
                  const std::string_view n = x.name;
                  if (x.rel == "torch/nn/modules/module.py" &&
                      (n == "_apply" || n == "to_empty" || n == "load_state_dict" ||
                       n == "_load_from_state_dict")) {
                    return true;
                  }
                  if (x.rel == "torch/nn/parameter.py" || x.rel == "torch/nn/init.py" ||
                      x.rel == "torch/nn/parallel/replicate.py") {
                    return true;
                  }
                  if (x.rel.starts_with("torch/nn/modules/") &&
                      (n == "__init__" || n == "reset_parameters"))
                    return true;
                  static constexpr std::string_view k_exact[] = {"get_model",
                                                                 "build_model",
                                                                 "load_model",
                                                                 "_initialize_model",
                                                                 "reset_parameters",
                                                                 "set_module_tensor_to_device",
                                                                 "_load_pretrained_model"};
                  if (std::find(std::begin(k_exact), std::end(k_exact), n) != std::end(k_exact))
                    return true;
                  static constexpr std::string_view k_parts[] = {
                      "load_state_dict", "from_pretrained", "load_weight",
                      "create_weight",   "init_weight",     "model_provider"};
                  return std::any_of(std::begin(k_parts), std::end(k_parts),
                                     [&](std::string_view part) { return contains(n, part); });
                }))) {
    return memory_category::parameter;
  }

  // Data loading and scattering.
  if (any_frame(facts, py([](const frame_facts& x) {
                  return x.rel.starts_with("torch/utils/data/") ||
                         x.rel == "torch/nn/parallel/scatter_gather.py" ||
                         x.rel.starts_with("torch_geometric/data/");
                }))) {
    return memory_category::input;
  }

  // A forward.
  if (any_frame(facts, is_forward_frame)) {
    return memory_category::activation;
  }

  // tensor.to() / .cuda() outside a forward.
  if (any_frame(facts, nat([](const std::string& n) {
                  return n == "torch::autograd::THPVariable_to" ||
                         n == "torch::autograd::THPVariable_cuda";
                }))) {
    return memory_category::input;
  }
  return memory_category::unknown;
}

attribution attribute_facts(const frame_stack& frames, const std::vector<frame_facts>& facts) {
  attribution a;
  if (frames.empty()) {
    a.site = std::string(k_no_frames);
    a.module = std::string(k_no_frames);
    return a;
  }
  a.frame = attributed_frame(facts);
  const frame& f = frames[a.frame];
  const frame_facts& x = facts[a.frame];
  a.site = site_of(f, x);
  a.module = x.python ? x.path.module : native_module(f.name);
  a.category = classify_facts(facts);
  return a;
}

}  // namespace

namespace {
constexpr enum_entry<memory_category> k_memory_category_entries[] = {
    {memory_category::parameter, "parameter"},
    {memory_category::optimizer_state, "optimizer_state"},
    {memory_category::activation, "activation"},
    {memory_category::gradient, "gradient"},
    {memory_category::autograd_detail, "autograd_detail"},
    {memory_category::temporary, "temporary"},
    {memory_category::input, "input"},
    {memory_category::kv_cache, "kv_cache"},
    {memory_category::unknown, "unknown"},
};
constexpr enum_names<memory_category> k_memory_category_names{
    "memory category", k_memory_category_entries, name_case::exact, "unknown"};
}  // namespace

std::string_view to_string(memory_category category) noexcept {
  return k_memory_category_names.name(category);
}

std::vector<live_allocation> live_allocations(const snapshot& s, int device) {
  // The stacks of the trace's allocations that were never freed, by address, for blocks
  // written without frames.
  std::unordered_map<std::uint64_t, const trace_entry*> unfreed;
  if (device >= 0 && static_cast<std::size_t>(device) < s.device_traces.size()) {
    for (const trace_entry& e : s.device_traces[static_cast<std::size_t>(device)]) {
      if (e.action == trace_action::alloc) {
        unfreed[e.addr] = &e;
      } else if (e.action == trace_action::free_completed) {
        unfreed.erase(e.addr);
      }
    }
  }
  std::vector<live_allocation> out;
  for (const snapshot_segment& seg : s.segments) {
    if (seg.device != device) continue;
    for (const snapshot_block& b : seg.blocks) {
      if (b.state == block_state::inactive) continue;
      live_allocation a{b.size, b.requested_size, b.frames};
      if (a.frames.empty()) {
        const auto found = unfreed.find(b.address);
        if (found != unfreed.end() &&
            (b.requested_size == 0 || found->second->size == b.requested_size)) {
          a.frames = found->second->frames;
        }
      }
      out.push_back(std::move(a));
    }
  }
  return out;
}

std::string collapse_module(std::string_view filename, std::string_view function) {
  if (filename.ends_with(".py") || filename.starts_with('<')) return classify_path(filename).module;
  return native_module(function);
}

memory_category classify(const frame_stack& frames) { return classify_facts(facts_of(frames)); }

attribution attribute(const frame_stack& frames) {
  return attribute_facts(frames, facts_of(frames));
}

callsite_summary summarize_callsites(std::span<const live_allocation> allocations,
                                     const callsite_options& options) {
  callsite_summary out;
  std::unordered_map<const void*, attribution> by_stack;
  // Row key: (site or module, category).
  std::map<std::pair<std::string, memory_category>, std::size_t> rows;
  std::vector<callsite> sites;
  // For module rows: bytes per site inside the row, to name its largest site.
  std::vector<std::map<std::string, std::uint64_t>> site_bytes;
  for (const live_allocation& a : allocations) {
    const void* id = a.frames.identity();
    auto found = by_stack.find(id);
    if (found == by_stack.end()) found = by_stack.emplace(id, attribute(a.frames)).first;
    const attribution& at = found->second;
    const std::string& key = options.group_by == callsite_grouping::site ? at.site : at.module;
    auto [it, added] = rows.emplace(std::make_pair(key, at.category), sites.size());
    if (added) {
      sites.push_back({at.site, at.module, at.category, 0, 0, 0, a.frames});
      site_bytes.emplace_back();
    }
    callsite& row = sites[it->second];
    row.bytes += a.bytes;
    row.requested += a.requested;
    row.count += 1;
    if (options.group_by == callsite_grouping::module) site_bytes[it->second][at.site] += a.bytes;
    out.total_bytes += a.bytes;
    out.total_requested += a.requested;
    out.total_count += 1;
    out.category_bytes[static_cast<std::size_t>(at.category)] += a.bytes;
  }
  if (options.group_by == callsite_grouping::module) {
    for (std::size_t i = 0; i < sites.size(); ++i) {
      const auto largest =
          std::max_element(site_bytes[i].begin(), site_bytes[i].end(),
                           [](const auto& x, const auto& y) { return x.second < y.second; });
      if (largest != site_bytes[i].end()) sites[i].site = largest->first;
    }
  }
  std::sort(sites.begin(), sites.end(), [&](const callsite& x, const callsite& y) {
    if (x.bytes != y.bytes) return x.bytes > y.bytes;
    const std::string& kx = options.group_by == callsite_grouping::site ? x.site : x.module;
    const std::string& ky = options.group_by == callsite_grouping::site ? y.site : y.module;
    if (kx != ky) return kx < ky;
    return x.category < y.category;
  });
  out.total_rows = sites.size();
  if (options.top != 0 && sites.size() > options.top) sites.resize(options.top);
  out.sites = std::move(sites);
  return out;
}

nlohmann::json frames_to_json(const frame_stack& frames, std::size_t attributed) {
  nlohmann::json out = nlohmann::json::array();
  // Up to three shown frames inside the attributed one, then outward.
  std::size_t start = std::min(attributed, frames.size());
  for (std::size_t shown = 0; start > 0 && shown < k_json_inner_frames;) {
    --start;
    if (!memory_viz_hides(frames[start])) ++shown;
  }
  for (std::size_t i = start; i < frames.size() && out.size() < k_json_frames; ++i) {
    const frame& f = frames[i];
    if (memory_viz_hides(f)) continue;
    out.push_back(nlohmann::json::array({f.filename, f.line, f.name}));
  }
  return out;
}

nlohmann::json to_json(const callsite_summary& summary) {
  nlohmann::json out = nlohmann::json::array();
  for (const callsite& c : summary.sites) {
    out.push_back({{"site", c.site},
                   {"module", c.module},
                   {"category", std::string(to_string(c.category))},
                   {"bytes", c.bytes},
                   {"requested", c.requested},
                   {"count", c.count},
                   {"frames", frames_to_json(c.frames, attribute(c.frames).frame)}});
  }
  return out;
}

std::string category_line(const callsite_summary& s) {
  std::vector<std::pair<std::uint64_t, std::size_t>> order;
  for (std::size_t i = 0; i < k_memory_categories; ++i) order.emplace_back(s.category_bytes[i], i);
  std::sort(order.rbegin(), order.rend());
  std::vector<std::string> parts;
  for (const auto& [bytes, i] : order) {
    if (s.total_bytes == 0 || bytes * 1000 < s.total_bytes) continue;
    parts.push_back(
        fmt::format("{} {:.1f}%", to_string(static_cast<memory_category>(i)),
                    100.0 * static_cast<double>(bytes) / static_cast<double>(s.total_bytes)));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace keel::memory
