// keel's eviction policies. Each keeps exactly the evictable blocks (cached, ref count zero)
// in an order and hands out the first one; see eviction_policy.hpp for the contract.
#include <fmt/format.h>

#include <algorithm>

#include "hash_history.hpp"
#include "indexed_heap.hpp"
#include "keel/core/error.hpp"
#include "keel/kv/eviction_policy.hpp"
#include "keel/kv/free_block_queue.hpp"

namespace keel::kv {
namespace {

using detail::hash_history;
using detail::heap_key;
using detail::indexed_heap;

// vLLM's order: the free-block queue. A block joins the back when its last reference goes and
// leaves when it is hit again, so the front is the least recently freed block.
class lru_policy final : public eviction_policy {
  std::string_view do_name() const noexcept override { return "lru"; }
  void do_reset(std::size_t n) override { queue_.reset(n); }
  void do_insert(block_id, const block_access&) override {}
  void do_pin(block_id b) override { queue_.remove(b); }
  void do_access(block_id, const block_access&) override {}
  void do_unpin(block_id b) override { queue_.push_back(b); }
  block_id do_evict() override { return queue_.pop_front(); }
  std::size_t do_evictable() const noexcept override { return queue_.size(); }
  bool do_is_evictable(block_id b) const noexcept override { return queue_.contains(b); }

  free_block_queue queue_;
};

// Base of the policies that order evictable blocks by a key fixed while they are referenced:
// a block's key is computed on insert/access and the block enters the heap on unpin.
class keyed_policy : public eviction_policy {
 protected:
  void set_key(block_id b, const heap_key& k) { key_[b] = k; }
  const heap_key& key_of(block_id b) const { return key_[b]; }
  void reset_keys(std::size_t n) {
    heap_.reset(n);
    key_.assign(n, heap_key{});
  }
  indexed_heap heap_;

 private:
  void do_pin(block_id b) override { heap_.remove(b); }
  void do_unpin(block_id b) override { heap_.push(b, key_[b]); }
  block_id do_evict() override {
    const block_id b = heap_.pop();
    on_victim(b);
    return b;
  }
  virtual void on_victim(block_id) {}
  std::size_t do_evictable() const noexcept override { return heap_.size(); }
  bool do_is_evictable(block_id b) const noexcept override { return heap_.contains(b); }

  std::vector<heap_key> key_;
};

// Deeper blocks first among equals: evicting the end of a chain keeps its prefix usable.
std::uint64_t deeper_first(std::uint32_t depth) { return ~static_cast<std::uint64_t>(depth); }

class fifo_policy final : public keyed_policy {
  std::string_view do_name() const noexcept override { return "fifo"; }
  void do_reset(std::size_t n) override {
    reset_keys(n);
    seq_ = 0;
  }
  void do_insert(block_id b, const block_access&) override { set_key(b, {++seq_, 0, 0}); }
  void do_access(block_id, const block_access&) override {}
  std::uint64_t seq_ = 0;
};

// LFU with dynamic aging (LFU-DA, Arlitt et al. 2000): priority = L + use count, where L is the
// priority of the last victim, so long-idle popular blocks eventually age out.
class lfu_policy final : public keyed_policy {
  std::string_view do_name() const noexcept override { return "lfu"; }
  void do_reset(std::size_t n) override {
    reset_keys(n);
    count_.assign(n, 0);
    age_ = 0;
  }
  void touch(block_id b, const block_access& a) {
    set_key(b, {age_ + count_[b], a.time, deeper_first(a.depth)});
  }
  void do_insert(block_id b, const block_access& a) override {
    count_[b] = 1;
    touch(b, a);
  }
  void do_access(block_id b, const block_access& a) override {
    ++count_[b];
    touch(b, a);
  }
  void on_victim(block_id b) override { age_ = std::max(age_, key_of(b).a); }
  std::vector<std::uint64_t> count_;
  std::uint64_t age_ = 0;
};

// Belady's MIN: evict the block whose next use is farthest in the future (never first).
class belady_policy final : public keyed_policy {
  std::string_view do_name() const noexcept override { return "belady"; }
  void do_reset(std::size_t n) override { reset_keys(n); }
  void touch(block_id b, const block_access& a) {
    set_key(b, {~a.next_use, deeper_first(a.depth), 0});
  }
  void do_insert(block_id b, const block_access& a) override { touch(b, a); }
  void do_access(block_id b, const block_access& a) override { touch(b, a); }
  bool do_offline() const noexcept override { return true; }
};

// S3-FIFO (Yang et al., SOSP'23) over all cached blocks. Referenced blocks travel through the
// queues like accessed ones and are never returned.
class s3fifo_policy final : public eviction_policy {
  static constexpr unsigned char k_none = 0, k_small = 1, k_main = 2;
  std::string_view do_name() const noexcept override { return "s3fifo"; }
  void do_reset(std::size_t n) override {
    small_.reset(n);
    main_.reset(n);
    where_.assign(n, k_none);
    freq_.assign(n, 0);
    pinned_.assign(n, 0);
    hash_.assign(n, 0);
    ghost_.reset(n - n / 10);
    evictable_ = 0;
  }
  void do_insert(block_id b, const block_access& a) override {
    freq_[b] = 0;
    pinned_[b] = 1;
    hash_[b] = a.hash;
    if (ghost_.contains(a.hash)) {
      where_[b] = k_main;
      main_.push_back(b);
    } else {
      where_[b] = k_small;
      small_.push_back(b);
    }
  }
  void do_pin(block_id b) override {
    pinned_[b] = 1;
    --evictable_;
  }
  void do_access(block_id b, const block_access&) override {
    freq_[b] = static_cast<unsigned char>(std::min(3, freq_[b] + 1));
  }
  void do_unpin(block_id b) override {
    pinned_[b] = 0;
    ++evictable_;
  }
  block_id do_evict() override {
    // Referenced blocks are skipped; once main has been cycled through without a victim the
    // small queue is used regardless of its size, so a victim is always found.
    std::size_t main_skips = 0;
    for (;;) {
      const std::size_t cached = small_.size() + main_.size();
      if (!small_.empty() &&
          (small_.size() * 10 >= cached || main_.empty() || main_skips > main_.size())) {
        const block_id b = small_.pop_front();
        if (pinned_[b] || freq_[b] > 0) {
          freq_[b] = 0;
          where_[b] = k_main;
          main_.push_back(b);
          continue;
        }
        ghost_.add(hash_[b]);
        return forget(b);
      }
      const block_id b = main_.pop_front();
      if (pinned_[b] || freq_[b] > 0) {
        if (pinned_[b]) {
          ++main_skips;
        } else {
          --freq_[b];
        }
        main_.push_back(b);
        continue;
      }
      return forget(b);
    }
  }
  block_id forget(block_id b) {
    where_[b] = k_none;
    --evictable_;
    return b;
  }
  std::size_t do_evictable() const noexcept override { return evictable_; }
  bool do_is_evictable(block_id b) const noexcept override {
    return where_[b] != k_none && !pinned_[b];
  }

  free_block_queue small_, main_;
  std::vector<unsigned char> where_, freq_, pinned_;
  std::vector<block_hash> hash_;
  hash_history ghost_;  // hashes evicted from the small queue
  std::size_t evictable_ = 0;
};

// keel's policy (docs/kv.md has the measurements behind it): LRU within three classes, the
// classes evicted in this order:
//   last        a request's last block, when first seen: the (usually partial) block that ends a
//               prompt is specific to that request; on the Mooncake trace 5% come back.
//   first_time  other blocks whose hash is not in the history: a doorkeeper, so that one-time
//               documents cannot push out the ones that are being reused.
//   reused      blocks hit while cached, or inserted with a hash found in the history (the last
//               k_history_per_block * num_blocks inserted hashes): evicted or not, a returning
//               hash is a reused one.
// Each class is a free_block_queue in release order, as lru's, so every call is O(1).
class keel_policy final : public eviction_policy {
  static constexpr std::size_t k_history_per_block = 16;
  enum klass : unsigned char { k_last, k_first_time, k_reused, k_classes };

  std::string_view do_name() const noexcept override { return "keel"; }
  void do_reset(std::size_t n) override {
    for (free_block_queue& q : queue_) q.reset(n);
    class_.assign(n, k_first_time);
    seen_.reset(k_history_per_block * n);
  }
  void do_insert(block_id b, const block_access& a) override {
    if (seen_.contains(a.hash)) {
      class_[b] = k_reused;
    } else {
      class_[b] = a.depth + 1 == a.request_blocks ? k_last : k_first_time;
    }
    seen_.add(a.hash);
  }
  void do_access(block_id b, const block_access&) override { class_[b] = k_reused; }
  // A block's class changes only on insert and access, never while it is evictable, so the class
  // names the queue it is in.
  void do_pin(block_id b) override { queue_[class_[b]].remove(b); }
  void do_unpin(block_id b) override { queue_[class_[b]].push_back(b); }
  block_id do_evict() override {
    for (free_block_queue& q : queue_) {
      if (!q.empty()) return q.pop_front();
    }
    return k_no_block;  // unreachable: the precondition is evictable() > 0
  }
  std::size_t do_evictable() const noexcept override {
    std::size_t n = 0;
    for (const free_block_queue& q : queue_) n += q.size();
    return n;
  }
  bool do_is_evictable(block_id b) const noexcept override { return queue_[class_[b]].contains(b); }

  free_block_queue queue_[k_classes];
  std::vector<unsigned char> class_;
  hash_history seen_;
};

}  // namespace

std::vector<std::string> policy_names() {
  return {"lru", "fifo", "lfu", "s3fifo", "keel", "belady"};
}

std::vector<std::string> online_policy_names() { return {"lru", "fifo", "lfu", "s3fifo", "keel"}; }

std::unique_ptr<eviction_policy> make_policy(std::string_view name) {
  if (name == "lru") return std::make_unique<lru_policy>();
  if (name == "fifo") return std::make_unique<fifo_policy>();
  if (name == "lfu") return std::make_unique<lfu_policy>();
  if (name == "s3fifo") return std::make_unique<s3fifo_policy>();
  if (name == "keel") return std::make_unique<keel_policy>();
  if (name == "belady") return std::make_unique<belady_policy>();
  throw keel::invalid_argument(fmt::format(
      "unknown eviction policy '{}' (known: lru, fifo, lfu, s3fifo, keel, belady)", name));
}

}  // namespace keel::kv
