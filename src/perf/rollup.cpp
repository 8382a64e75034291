#include "keel/perf/rollup.hpp"

#include "keel/perf/report.hpp"

#include <fmt/format.h>

#include <cmath>
#include <iterator>
#include <limits>
#include <map>

namespace keel::perf {
namespace {

void add_totals(rollup_node& to, const rollup_node& from) {
  to.ops += from.ops;
  to.macs += from.macs;
  to.cost += from.cost;
  to.seconds += from.seconds;
  to.bound_seconds += from.bound_seconds;
  to.compute_seconds += from.compute_seconds;
  to.memory_seconds += from.memory_seconds;
}

rollup_node named(const std::string& name) {
  rollup_node n;
  n.name = name;
  return n;
}

// Inner nodes while building: children by name, to find the same scope again.
struct builder {
  rollup_node node;
  std::vector<builder> children;
  std::map<std::string, std::size_t> index;

  builder& child(const std::string& name) {
    auto [it, fresh] = index.emplace(name, children.size());
    if (fresh) children.push_back(builder{named(name), {}, {}});
    return children[it->second];
  }
  rollup_node finish() {
    for (builder& b : children) node.children.push_back(b.finish());
    return std::move(node);
  }
};

void text_lines(std::string& out, const rollup_node& n, int level, int depth, double total,
                bool times) {
  const std::string label = std::string(static_cast<std::size_t>(2 * level), ' ') + n.name +
                            (n.leaf() && n.op_type != n.name ? " (" + n.op_type + ")" : "");
  const double share = total > 0 ? 100 * n.seconds / total : 0;
  const double ai = n.intensity();
  fmt::format_to(std::back_inserter(out),
                 "{:<44} {:>6} {:>11} {:>11} {:>11} {:>8} {:>7} {:>11} {:>7}\n",
                 label.size() > 44 ? label.substr(0, 43) + "~" : label, n.ops, si_text(n.macs, ""),
                 si_text(n.cost.flops, ""), si_text(n.cost.bytes, "B"),
                 std::isfinite(ai) ? fmt::format("{:.3g}", ai) : "-", name_of(n.limit()),
                 times ? fmt::format("{:.4g}", n.seconds * 1e3) : "-",
                 times ? fmt::format("{:.1f}%", share) : "-");
  if (depth >= 0 && level >= depth) return;
  for (const rollup_node& c : n.children) text_lines(out, c, level + 1, depth, total, times);
}

}  // namespace

double rollup_node::intensity() const noexcept {
  return cost.bytes > 0 ? cost.flops / cost.bytes : std::numeric_limits<double>::infinity();
}

bound rollup_node::limit() const noexcept {
  return compute_seconds >= memory_seconds ? bound::compute : bound::memory;
}

std::vector<std::string> scope_of(const std::string& node_name) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= node_name.size(); ++i) {
    if (i == node_name.size() || node_name[i] == '/') {
      if (i > start) parts.push_back(node_name.substr(start, i - start));
      start = i + 1;
    }
  }
  if (!parts.empty()) parts.pop_back();  // the op itself
  return parts;
}

rollup_node build_rollup(const std::string& root, const std::vector<rollup_entry>& entries) {
  builder top{named(root), {}, {}};
  for (const rollup_entry& e : entries) {
    rollup_node leaf = named(e.name);
    leaf.op_type = e.op_type;
    leaf.ops = 1;
    leaf.macs = e.macs;
    leaf.cost = e.cost;
    leaf.seconds = e.seconds;
    leaf.bound_seconds = e.bound_seconds;
    (e.limit == bound::compute ? leaf.compute_seconds : leaf.memory_seconds) = e.seconds;
    builder* at = &top;
    add_totals(at->node, leaf);
    for (const std::string& s : e.scope) {
      at = &at->child(s);
      add_totals(at->node, leaf);
    }
    at->children.push_back(builder{std::move(leaf), {}, {}});
  }
  return top.finish();
}

rollup_node collapse(const rollup_node& tree, int depth) {
  rollup_node out = tree;
  out.children.clear();
  if (depth < 0 || depth > 0) {
    for (const rollup_node& c : tree.children) out.children.push_back(collapse(c, depth - 1));
  }
  return out;
}

nlohmann::json to_json(const rollup_node& n, bool times) {
  nlohmann::json children = nlohmann::json::array();
  for (const rollup_node& c : n.children) children.push_back(to_json(c, times));
  const double ai = n.intensity();
  nlohmann::json j = {
      {"name", n.name},
      {"ops", n.ops},
      {"macs", n.macs},
      {"flops", n.cost.flops},
      {"bytes", n.cost.bytes},
      {"intensity", std::isfinite(ai) ? nlohmann::json(ai) : nlohmann::json()},
      {"bound", std::string(name_of(n.limit()))},
      {"time_ms", times ? nlohmann::json(n.seconds * 1e3) : nlohmann::json()},
      {"bound_ms", times ? nlohmann::json(n.bound_seconds * 1e3) : nlohmann::json()},
      {"children", children}};
  if (n.leaf()) j["op_type"] = n.op_type;
  return j;
}

std::string rollup_text(const rollup_node& tree, int depth, bool times) {
  std::string out =
      fmt::format("{:<44} {:>6} {:>11} {:>11} {:>11} {:>8} {:>7} {:>11} {:>7}\n", "module", "ops",
                  "MACs", "FLOPs", "bytes", "FLOP/B", "bound", "time ms", "share");
  text_lines(out, tree, 0, depth, tree.seconds, times);
  return out;
}

}  // namespace keel::perf
