// The radix index: SGLang's RadixCache at block granularity. Each node holds a run of block keys
// and the blocks caching them; children are keyed by their first key. A request that diverges
// inside a node splits it. Evicting a block turns its slot into a hole; a node that is all holes
// and has no children is pruned, together with ancestors that become the same. Every block has a
// back pointer (node, offset), so erase and contains are O(1) plus pruning.
#include <unordered_map>
#include <vector>

#include "keel/kv/prefix_index.hpp"

namespace keel::kv {
namespace {

constexpr std::uint32_t k_no_node = 0xffffffffu;

struct node {
  std::vector<block_hash> keys;
  std::vector<block_id> blocks;  // k_no_block: a hole
  std::unordered_map<block_hash, std::uint32_t> children;
  std::uint32_t parent = k_no_node;
  std::size_t live = 0;  // slots that hold a block
};

struct location {
  std::uint32_t node = k_no_node;
  std::uint32_t offset = 0;
};

class radix_index final : public prefix_index {
 public:
  explicit radix_index(std::size_t num_blocks) : loc_(num_blocks) { nodes_.emplace_back(); }

 private:
  std::string_view do_name() const noexcept override { return "radix"; }

  std::size_t walk(std::span<const block_hash> keys, std::span<block_id> out) const {
    std::size_t pos = 0;
    std::size_t run = keys.size();
    std::uint32_t cur = 0;
    while (pos < keys.size()) {
      const auto it = nodes_[cur].children.find(keys[pos]);
      if (it == nodes_[cur].children.end()) break;
      const node& child = nodes_[it->second];
      std::size_t k = 0;
      while (k < child.keys.size() && pos < keys.size() && child.keys[k] == keys[pos]) {
        const block_id b = child.blocks[k];
        if (b == k_no_block && run == keys.size()) {
          run = pos;
          if (out.empty()) return run;
        }
        if (!out.empty()) out[pos] = b;
        ++k;
        ++pos;
      }
      if (k < child.keys.size()) break;
      cur = it->second;
    }
    if (run == keys.size()) run = pos;
    for (std::size_t j = pos; j < out.size() && j < keys.size(); ++j) out[j] = k_no_block;
    return run;
  }

  std::size_t do_resolve(std::span<const block_hash> keys, std::span<block_id> out) const override {
    return walk(keys, out.first(keys.size()));
  }

  std::size_t do_match(std::span<const block_hash> keys) const override { return walk(keys, {}); }

  std::uint32_t new_node() {
    if (!free_nodes_.empty()) {
      const std::uint32_t id = free_nodes_.back();
      free_nodes_.pop_back();
      return id;
    }
    nodes_.emplace_back();
    return static_cast<std::uint32_t>(nodes_.size() - 1);
  }

  void fill(std::uint32_t id, std::size_t k, block_id b) {
    node& n = nodes_[id];
    n.blocks[k] = b;
    ++n.live;
    ++size_;
    loc_[b] = {id, static_cast<std::uint32_t>(k)};
  }

  // Splits node `id` after its first k slots; the rest moves to a new child.
  void split(std::uint32_t id, std::size_t k) {
    const std::uint32_t tail = new_node();
    node& n = nodes_[id];
    node& t = nodes_[tail];
    t.keys.assign(n.keys.begin() + static_cast<std::ptrdiff_t>(k), n.keys.end());
    t.blocks.assign(n.blocks.begin() + static_cast<std::ptrdiff_t>(k), n.blocks.end());
    n.keys.resize(k);
    n.blocks.resize(k);
    t.children = std::move(n.children);
    n.children.clear();
    for (const auto& [key, c] : t.children) nodes_[c].parent = tail;
    t.parent = id;
    t.live = 0;
    for (std::size_t i = 0; i < t.blocks.size(); ++i) {
      if (t.blocks[i] == k_no_block) continue;
      ++t.live;
      loc_[t.blocks[i]] = {tail, static_cast<std::uint32_t>(i)};
    }
    n.live -= t.live;
    n.children.emplace(t.keys.front(), tail);
  }

  void do_insert(std::span<const block_hash> keys, std::span<block_id> blocks,
                 std::size_t from) override {
    auto wanted = [&](std::size_t j) { return j >= from ? blocks[j] : k_no_block; };
    // Slots already holding a block are reported back as k_no_block.
    auto taken = [&](std::size_t j) {
      if (j >= from) blocks[j] = k_no_block;
    };
    std::size_t pos = 0;
    std::uint32_t cur = 0;
    while (pos < keys.size()) {
      const auto it = nodes_[cur].children.find(keys[pos]);
      if (it == nodes_[cur].children.end()) {
        const std::uint32_t leaf = new_node();
        node& l = nodes_[leaf];
        l.keys.assign(keys.begin() + static_cast<std::ptrdiff_t>(pos), keys.end());
        l.blocks.assign(l.keys.size(), k_no_block);
        l.parent = cur;
        l.live = 0;
        nodes_[cur].children.emplace(keys[pos], leaf);
        for (std::size_t k = 0; k < l.keys.size(); ++k) {
          if (const block_id b = wanted(pos + k); b != k_no_block) fill(leaf, k, b);
        }
        return;
      }
      const std::uint32_t child = it->second;
      std::size_t k = 0;
      while (k < nodes_[child].keys.size() && pos < keys.size() &&
             nodes_[child].keys[k] == keys[pos]) {
        if (nodes_[child].blocks[k] == k_no_block) {
          if (const block_id b = wanted(pos); b != k_no_block) fill(child, k, b);
        } else {
          taken(pos);
        }
        ++k;
        ++pos;
      }
      if (pos == keys.size()) return;
      if (k < nodes_[child].keys.size()) split(child, k);
      cur = child;
    }
  }

  void do_erase(block_id b, block_hash) override {
    const location l = loc_[b];
    if (l.node == k_no_node) return;
    loc_[b] = {};
    node& n = nodes_[l.node];
    n.blocks[l.offset] = k_no_block;
    --n.live;
    --size_;
    // Prune nodes that hold nothing and lead nowhere.
    std::uint32_t id = l.node;
    while (id != 0 && nodes_[id].live == 0 && nodes_[id].children.empty()) {
      node& dead = nodes_[id];
      const std::uint32_t parent = dead.parent;
      nodes_[parent].children.erase(dead.keys.front());
      dead = node{};
      free_nodes_.push_back(id);
      id = parent;
    }
  }

  std::size_t do_size() const noexcept override { return size_; }

  bool do_contains(block_id b, block_hash key) const override {
    const location l = loc_[b];
    if (l.node == k_no_node) return false;
    const node& n = nodes_[l.node];
    return n.keys[l.offset] == key && n.blocks[l.offset] == b;
  }

  std::vector<node> nodes_;  // nodes_[0] is the root, with no keys
  std::vector<std::uint32_t> free_nodes_;
  std::vector<location> loc_;
  std::size_t size_ = 0;
};

}  // namespace

std::unique_ptr<prefix_index> make_radix_index(std::size_t num_blocks) {
  return std::make_unique<radix_index>(num_blocks);
}

}  // namespace keel::kv
