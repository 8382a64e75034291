// Snapshot reader: the plain-value tree (pickle or JSON) -> keel::memory::snapshot.
#include "keel/core/bytes.hpp"
#include "keel/core/error.hpp"
#include "keel/core/input_file.hpp"
#include "keel/memory/allocator_config.hpp"
#include "keel/memory/backend.hpp"
#include "keel/memory/pickle.hpp"
#include "keel/memory/snapshot.hpp"
#include "keel/memory/trace_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <unordered_map>

namespace keel::memory {

namespace {

using pickle::kind;
using pickle::value;

// The materialisation budget (see snapshot.hpp): units per value or slot of the document, and
// a floor for small documents. A unit is one segment, block, device trace, trace entry or frame
// of a newly built stack, or 64 bytes of string copied into the snapshot.
constexpr std::uint64_t k_units_per_element = 4;
constexpr std::uint64_t k_units_floor = 1u << 16;
constexpr std::uint64_t k_string_unit = 64;

std::uint64_t string_units(std::size_t bytes) { return bytes / k_string_unit; }

class converter {
 public:
  explicit converter(const pickle::document& doc)
      : doc_(doc),
        stack_of_list_(doc.node_count(), -1),
        frame_of_dict_(doc.node_count(), -1),
        elements_(static_cast<std::uint64_t>(doc.node_count()) + doc.slot_count()),
        budget_(k_units_per_element * elements_ + k_units_floor),
        left_(budget_) {}

  snapshot run() {
    snapshot s;
    const value root = doc_.root();
    if (root.is(kind::list)) {
      // torch.cuda.memory_snapshot(): the plain list of segments.
      s.segments_only = true;
      read_segments(root, s);
      return s;
    }
    expect(root, kind::dict, "the top level");
    const auto segments = root.get("segments");
    if (!segments) fail(root, "a snapshot dict has no 'segments' key");
    path_.push_back({"segments", k_npos});
    expect(*segments, kind::list, "'segments'");
    read_segments(*segments, s);
    path_.pop_back();

    if (const auto traces = present(root, "device_traces")) {
      path_.push_back({"device_traces", k_npos});
      expect(*traces, kind::list, "'device_traces'");
      s.device_traces.resize(traces->size());
      for (std::size_t d = 0; d < traces->size(); ++d) {
        path_.back().index = d;
        const value trace = (*traces)[d];
        expect(trace, kind::list, "a device trace");
        spend(trace, 1 + trace.size());
        auto& out = s.device_traces[d];
        out.reserve(trace.size());
        path_.push_back({"", k_npos});
        for (std::size_t i = 0; i < trace.size(); ++i) {
          path_.back().index = i;
          out.push_back(read_entry(trace[i]));
        }
        path_.pop_back();
      }
      path_.pop_back();
    }
    if (const auto settings = present(root, "allocator_settings")) {
      path_.push_back({"allocator_settings", k_npos});
      s.settings = read_settings(*settings);
      path_.pop_back();
    }
    return s;
  }

  std::uint64_t units_used() const noexcept { return budget_ - left_; }
  std::uint64_t elements() const noexcept { return elements_; }

 private:
  static constexpr std::size_t k_npos = std::numeric_limits<std::size_t>::max();
  struct step {
    const char* name;
    std::size_t index;
  };

  std::string where() const {
    std::string p;
    for (const step& s : path_) {
      if (*s.name) {
        if (!p.empty()) p += '.';
        p += s.name;
      }
      if (s.index != k_npos) p += fmt::format("[{}]", s.index);
    }
    return p.empty() ? std::string("top level") : p;
  }

  [[noreturn]] void fail(const value& at, const std::string& message) const {
    const std::string text = fmt::format("{}: {}", where(), message);
    if (doc_.is_text()) throw doc_.text_error(at.offset(), text);
    if (doc_.is_built()) throw parse_error::in_object(doc_.source(), text);
    throw parse_error::at_offset(doc_.source(), at.offset(), text);
  }

  void expect(const value& v, kind k, std::string_view what) const {
    if (!v.is(k))
      fail(v, fmt::format("{} must be a {}, not a {}", what, pickle::to_string(k),
                          pickle::to_string(v.type())));
  }

  // A key that is present and not None.
  static std::optional<value> present(const value& dict, std::string_view key) {
    auto v = dict.get(key);
    if (v && v->is(kind::none)) return std::nullopt;
    return v;
  }

  value required(const value& dict, std::string_view key) const {
    auto v = present(dict, key);
    if (!v) fail(dict, fmt::format("missing '{}'", key));
    return *v;
  }

  std::uint64_t to_u64(const value& v, std::string_view key) const {
    if (!v.is(kind::integer))
      fail(v, fmt::format("'{}' must be an int, not a {}", key, pickle::to_string(v.type())));
    if (!v.is_big_unsigned() && v.as_int() < 0)
      fail(v, fmt::format("'{}' must not be negative", key));
    return v.as_uint64();
  }
  std::int64_t to_i64(const value& v, std::string_view key) const {
    if (!v.is(kind::integer) || v.is_big_unsigned())
      fail(v, fmt::format("'{}' must be an int in the int64 range", key));
    return v.as_int();
  }
  std::uint64_t u64(const value& dict, std::string_view key, std::uint64_t fallback = 0) const {
    const auto v = present(dict, key);
    return v ? to_u64(*v, key) : fallback;
  }
  // Stream handles are raw cudaStream_t values; keep the bits whatever the sign.
  std::uint64_t bits64(const value& dict, std::string_view key) const {
    const auto v = present(dict, key);
    if (!v) return 0;
    if (!v->is(kind::integer))
      fail(*v, fmt::format("'{}' must be an int, not a {}", key, pickle::to_string(v->type())));
    return v->is_big_unsigned() ? v->as_uint64() : static_cast<std::uint64_t>(v->as_int());
  }
  bool boolean(const value& dict, std::string_view key, bool fallback) const {
    const auto v = present(dict, key);
    if (!v) return fallback;
    if (v->is(kind::boolean)) return v->as_bool();
    if (v->is(kind::integer)) return to_i64(*v, key) != 0;
    fail(*v, fmt::format("'{}' must be a bool, not a {}", key, pickle::to_string(v->type())));
  }
  std::string_view str(const value& v, std::string_view key) const {
    if (!v.is(kind::string))
      fail(v, fmt::format("'{}' must be a str, not a {}", key, pickle::to_string(v.type())));
    return v.as_string();
  }

  // Charges `units` to the materialisation budget; fails at `at` once it is spent.
  void spend(const value& at, std::uint64_t units) {
    if (units <= left_) {
      left_ -= units;
      return;
    }
    fail(at, fmt::format("the snapshot would materialise more than its budget of {} units ({} "
                         "per value or container slot of the document, which has {}, plus {}): "
                         "shared references (the pickle memo) repeat its parts more often than "
                         "a snapshot does",
                         budget_, k_units_per_element, elements_, k_units_floor));
  }

  // max_split_size, max_non_split_rounding_size: PyTorch accepts 20 MiB and more.
  static bool split_limit(std::int64_t v) {
    return v >= std::int64_t{20} << 20 && v <= static_cast<std::int64_t>(k_max_device_bytes);
  }

  // A byte count: an int in [0, k_max_device_bytes].
  std::uint64_t to_size(const value& v, std::string_view key) const {
    const std::uint64_t n = to_u64(v, key);
    if (n > k_max_device_bytes)
      fail(v, fmt::format("'{}' {} is larger than any device (2^62 bytes)", key, n));
    return n;
  }
  std::uint64_t size(const value& dict, std::string_view key) const {
    const auto v = present(dict, key);
    return v ? to_size(*v, key) : 0;
  }

  void read_segments(const value& list, snapshot& s) {
    s.segments.reserve(list.size());
    std::vector<value> at;  // where each segment was read, for errors found across segments
    at.reserve(list.size());
    path_.push_back({"", k_npos});
    for (std::size_t i = 0; i < list.size(); ++i) {
      path_.back().index = i;
      at.push_back(list[i]);
      s.segments.push_back(read_segment(list[i]));
    }
    // Segments of one device do not overlap (each byte is held once).
    std::vector<std::size_t> order(s.segments.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    const auto key = [&](std::size_t i) {
      return std::pair{s.segments[i].device, s.segments[i].address};
    };
    std::sort(order.begin(), order.end(),
              [&](std::size_t a, std::size_t b) { return key(a) < key(b); });
    for (std::size_t k = 1; k < order.size(); ++k) {
      const snapshot_segment& before = s.segments[order[k - 1]];
      const snapshot_segment& seg = s.segments[order[k]];
      if (seg.device != before.device || seg.address >= before.address + before.total_size)
        continue;
      const std::size_t later = std::max(order[k - 1], order[k]);
      const std::size_t other = std::min(order[k - 1], order[k]);
      path_.back().index = later;
      fail(at[later], fmt::format("the segment at {:#x} overlaps segments[{}] ({:#x}, {} bytes) "
                                  "on device {}",
                                  s.segments[later].address, other, s.segments[other].address,
                                  s.segments[other].total_size, seg.device));
    }
    path_.pop_back();
  }

  snapshot_segment read_segment(const value& v) {
    expect(v, kind::dict, "a segment");
    snapshot_segment seg;
    const std::int64_t device = present(v, "device") ? to_i64(required(v, "device"), "device") : 0;
    if (device < 0 || device > 1'000'000) fail(v, fmt::format("device {} is out of range", device));
    seg.device = static_cast<int>(device);
    seg.address = to_u64(required(v, "address"), "address");
    seg.total_size = to_size(required(v, "total_size"), "total_size");
    if (seg.total_size == 0) fail(v, "a segment of 0 bytes (PyTorch never holds one)");
    if (seg.total_size > std::numeric_limits<std::uint64_t>::max() - seg.address)
      fail(v, "the segment extends past the end of the address space");
    seg.allocated_size = size(v, "allocated_size");
    seg.active_size = size(v, "active_size");
    seg.requested_size = size(v, "requested_size");
    seg.stream = bits64(v, "stream");
    if (const auto type = present(v, "segment_type")) {
      const auto t = str(*type, "segment_type");
      if (t == "large") {
        seg.is_large = true;
      } else if (t == "small") {
        seg.is_large = false;
      } else {
        fail(*type, fmt::format("segment_type '{}' is neither 'large' nor 'small'", t));
      }
    } else {
      // Small-pool segments are always exactly 2 MiB (kSmallBuffer); large ones never are.
      seg.is_large = seg.total_size != 2 * k_mib;
    }
    if (const auto pool = present(v, "segment_pool_id")) {
      if (!(pool->is(kind::tuple) || pool->is(kind::list)) || pool->size() != 2)
        fail(*pool, "'segment_pool_id' must be a pair of ints");
      seg.pool_id = {to_i64((*pool)[0], "segment_pool_id"), to_i64((*pool)[1], "segment_pool_id")};
    }
    seg.is_expandable = boolean(v, "is_expandable", false);
    if (const auto frames = present(v, "frames")) seg.frames = stack(*frames);

    const value blocks = required(v, "blocks");
    expect(blocks, kind::list, "'blocks'");
    spend(v, 1 + blocks.size());
    seg.blocks.reserve(blocks.size());
    path_.push_back({"blocks", k_npos});
    // Blocks tile the segment: each starts where the one before it ends (2.0-era blocks have
    // no address and are placed so), and together they cover it exactly.
    std::uint64_t next = seg.address;
    const std::uint64_t end = seg.address + seg.total_size;
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      path_.back().index = i;
      const value b = blocks[i];
      expect(b, kind::dict, "a block");
      snapshot_block block;
      block.size = to_size(required(b, "size"), "size");
      block.requested_size = size(b, "requested_size");
      block.address = present(b, "address") ? to_u64(required(b, "address"), "address") : next;
      if (block.size == 0) fail(b, "a block of 0 bytes (PyTorch's smallest is 512)");
      if (block.address != next) {
        fail(b, fmt::format("the block at {:#x} does not start where {} ({:#x}): blocks must "
                            "tile their segment",
                            block.address, i == 0 ? "its segment starts" : "the block before ends",
                            next));
      }
      if (block.size > end - block.address) {
        fail(b, fmt::format("the block at {:#x} ({} bytes) ends {} bytes past the end of its "
                            "segment ({:#x}, {} bytes)",
                            block.address, block.size, block.size - (end - block.address),
                            seg.address, seg.total_size));
      }
      next = block.address + block.size;
      const value state = required(b, "state");
      const auto st = str(state, "state");
      if (st == "active_allocated") {
        block.state = block_state::active_allocated;
      } else if (st == "active_pending_free") {
        block.state = block_state::active_pending_free;
      } else if (st == "inactive") {
        block.state = block_state::inactive;
      } else {
        fail(state, fmt::format("unknown block state '{}'", st));
      }
      // PyTorch rounds every request up, so a block in use holds at most its own size (a free
      // block may keep a stale, larger requested_size from before it was merged).
      if (block.state != block_state::inactive && block.requested_size > block.size) {
        fail(b, fmt::format("a block in use ({}) of {} bytes cannot hold a request of {} bytes", st,
                            block.size, block.requested_size));
      }
      if (const auto frames = present(b, "frames")) {
        block.frames = stack(*frames);
      } else if (const auto history = present(b, "history")) {
        // 2.0-era: each history entry is one allocation made in this block; the last one
        // is the allocation the block holds (or held last).
        expect(*history, kind::list, "'history'");
        if (history->size() > 0) {
          const value last = (*history)[history->size() - 1];
          expect(last, kind::dict, "a history entry");
          if (const auto frames = present(last, "frames")) block.frames = stack(*frames);
        }
      }
      seg.blocks.push_back(std::move(block));
    }
    path_.pop_back();
    if (next != end) {
      fail(v, fmt::format("its blocks cover {} of the segment's {} bytes: blocks must tile their "
                          "segment",
                          next - seg.address, seg.total_size));
    }
    return seg;
  }

  trace_entry read_entry(const value& v) {
    expect(v, kind::dict, "a trace entry");
    trace_entry e;
    const value action = required(v, "action");
    const auto a = str(action, "action");
    const std::optional<trace_action> named = trace_action_named(a);
    if (!named) fail(action, fmt::format("unknown trace action '{}'", a));
    e.action = *named;
    if (e.action == trace_action::oom) {
      // PyTorch writes the driver's free bytes as device_free in place of addr.
      e.device_free = present(v, "device_free") ? size(v, "device_free") : size(v, "addr");
    } else {
      e.addr = u64(v, "addr");
    }
    e.size = size(v, "size");
    // An entry about memory names bytes inside the address space.
    if (e.action != trace_action::oom && e.action != trace_action::snapshot &&
        e.action != trace_action::annotate &&
        e.size > std::numeric_limits<std::uint64_t>::max() - e.addr) {
      fail(v, fmt::format("{} of {} bytes at {:#x} extends past the end of the address space", a,
                          e.size, e.addr));
    }
    e.stream = bits64(v, "stream");
    if (const auto t = present(v, "time_us")) e.time_us = to_i64(*t, "time_us");
    if (const auto frames = present(v, "frames")) e.frames = stack(*frames);
    return e;
  }

  allocator_settings read_settings(const value& v) {
    expect(v, kind::dict, "'allocator_settings'");
    allocator_settings s;
    spend(v, 1 + v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (!v.key(i).is(kind::string)) continue;
      const auto k = str(v.key(i), "allocator_settings key");
      spend(v.key(i), string_units(k.size()));
      s.keys.emplace_back(k);
    }
    std::optional<value> conf_at;
    if (const auto conf = present(v, "PYTORCH_CUDA_ALLOC_CONF")) {
      s.conf = std::string(str(*conf, "PYTORCH_CUDA_ALLOC_CONF"));
      spend(*conf, string_units(s.conf.size()));
      conf_at = conf;
    }
    s.expandable_segments = boolean(v, "expandable_segments", false);
    if (const auto m = present(v, "max_split_size")) {
      s.max_split_size = to_i64(*m, "max_split_size");
      // -1 (SIZE_MAX as PyTorch writes it) is unlimited; else a size PyTorch accepts.
      if (s.max_split_size != -1 && !split_limit(s.max_split_size))
        fail(*m, fmt::format("'max_split_size' {} is neither -1 (unlimited) nor a size from 20 "
                             "MiB (PyTorch's smallest) to 2^62",
                             s.max_split_size));
    }
    if (const auto g = present(v, "garbage_collection_threshold")) {
      if (!g->is(kind::floating) && !g->is(kind::integer))
        fail(*g, "'garbage_collection_threshold' must be a number");
      s.garbage_collection_threshold = g->as_double();
      // 0 is PyTorch's "not set"; a set threshold lies strictly inside (0, 1), as --conf
      // and PyTorch itself require.
      if (!(s.garbage_collection_threshold >= 0.0 && s.garbage_collection_threshold < 1.0))
        fail(*g, fmt::format("'garbage_collection_threshold' {} is outside [0, 1): PyTorch "
                             "refuses it (garbage_collect_threshold is invalid, set it in (0.0, "
                             "1.0))",
                             s.garbage_collection_threshold));
    }
    if (const auto r = present(v, "roundup_power2_divisions")) {
      const auto divisions = [&](const value& d) {
        const std::int64_t n = to_i64(d, "roundup_power2_divisions");
        if (n < 0 || (n != 0 && !std::has_single_bit(static_cast<std::uint64_t>(n))))
          fail(d, fmt::format("roundup_power2_divisions {} is neither 0 nor a power of 2, as "
                              "PyTorch requires",
                              n));
        return n;
      };
      spend(*r, r->size());
      if (r->is(kind::dict)) {
        // {"1": d, "2": d, ..., "32768": d}: interval start in MiB -> divisions.
        std::vector<std::pair<std::uint64_t, std::int64_t>> pairs;
        for (std::size_t i = 0; i < r->size(); ++i) {
          const auto k = str(r->key(i), "roundup_power2_divisions key");
          std::uint64_t start = 0;
          const auto res = std::from_chars(k.data(), k.data() + k.size(), start);
          if (res.ec != std::errc() || res.ptr != k.data() + k.size())
            fail(r->key(i), fmt::format("roundup_power2_divisions key '{}' is not a number", k));
          pairs.emplace_back(start, divisions(r->item(i)));
        }
        std::sort(pairs.begin(), pairs.end());
        for (const auto& p : pairs) s.roundup_power2_divisions.push_back(p.second);
      } else if (r->is(kind::list) || r->is(kind::tuple)) {
        for (std::size_t i = 0; i < r->size(); ++i)
          s.roundup_power2_divisions.push_back(divisions((*r)[i]));
      } else {
        fail(*r, "'roundup_power2_divisions' must be a dict or a list");
      }
    }
    if (const auto m = present(v, "max_non_split_rounding_size")) {
      s.max_non_split_rounding_size = to_i64(*m, "max_non_split_rounding_size");
      if (!split_limit(*s.max_non_split_rounding_size))
        fail(*m, fmt::format("'max_non_split_rounding_size' {} is not a size from 20 MiB "
                             "(PyTorch's smallest) to 2^62",
                             *s.max_non_split_rounding_size));
    }
    // The recorded PYTORCH_CUDA_ALLOC_CONF, and the config the settings amount to, are held to
    // the grammar `--conf` reads: what no PyTorch accepts was not recorded by one (what only
    // the other grammar accepts is a model note, see trace_model).
    try {
      (void)recorded_config(s);
    } catch (const invalid_argument& e) {
      fail(conf_at ? *conf_at : v, e.what());
    }
    return s;
  }

  // Frames: PyTorch shares frame dicts (and sometimes whole lists) through the memo, so the
  // same node ids recur; each distinct stack is built once and shared.
  frame_stack stack(const value& list) {
    if (!list.is(kind::list) && !list.is(kind::tuple))
      fail(list, fmt::format("'frames' must be a list, not a {}", pickle::to_string(list.type())));
    if (list.size() == 0) return {};
    if (const std::int32_t cached = stack_of_list_[list.id()]; cached >= 0)
      return stacks_[static_cast<std::size_t>(cached)];
    key_.clear();
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::uint32_t f = frame_index(list[i]);
      key_.append(reinterpret_cast<const char*>(&f), sizeof f);
    }
    auto [it, inserted] =
        stack_by_key_.try_emplace(key_, static_cast<std::int32_t>(stacks_.size()));
    if (inserted) {
      // A new stack copies its frames: charged before anything is copied.
      std::uint64_t units = 0;
      for (std::size_t i = 0; i < key_.size(); i += sizeof(std::uint32_t)) {
        std::uint32_t f;
        std::memcpy(&f, key_.data() + i, sizeof f);
        units += frame_units_[f];
      }
      spend(list, units);
      std::vector<frame> frames;
      frames.reserve(list.size());
      for (std::size_t i = 0; i < key_.size(); i += sizeof(std::uint32_t)) {
        std::uint32_t f;
        std::memcpy(&f, key_.data() + i, sizeof f);
        frames.push_back(frames_[f]);
      }
      stacks_.emplace_back(std::move(frames));
    }
    stack_of_list_[list.id()] = it->second;
    return stacks_[static_cast<std::size_t>(it->second)];
  }

  std::uint32_t frame_index(const value& f) {
    if (const std::int32_t cached = frame_of_dict_[f.id()]; cached >= 0)
      return static_cast<std::uint32_t>(cached);
    expect(f, kind::dict, "a frame");
    std::string_view filename, name;
    std::int64_t line = 0;
    if (const auto file = present(f, "filename")) filename = str(*file, "filename");
    if (const auto n = present(f, "name")) name = str(*n, "name");
    if (const auto l = present(f, "line")) line = to_i64(*l, "line");
    // Reading a distinct frame dict touches its strings (memo-shared ones too): charged.
    const std::uint64_t units = 1 + string_units(filename.size() + name.size());
    spend(f, units);
    // Intern by content too: JSON (and some pickles) repeat equal frames as distinct nodes.
    frame_key_.clear();
    frame_key_.append(filename).append(1, '\0').append(name).append(1, '\0');
    frame_key_.append(reinterpret_cast<const char*>(&line), sizeof line);
    auto [it, inserted] =
        frame_by_key_.try_emplace(frame_key_, static_cast<std::uint32_t>(frames_.size()));
    if (inserted) {
      frames_.push_back(frame{std::string(filename), line, std::string(name)});
      frame_units_.push_back(units);
    }
    frame_of_dict_[f.id()] = static_cast<std::int32_t>(it->second);
    return it->second;
  }

  const pickle::document& doc_;
  std::vector<step> path_;
  std::vector<std::int32_t> stack_of_list_;  // node id -> index in stacks_
  std::vector<std::int32_t> frame_of_dict_;  // node id -> index in frames_
  std::vector<frame_stack> stacks_;
  std::vector<frame> frames_;
  std::vector<std::uint64_t> frame_units_;  // what copying frames_[i] into a stack costs
  std::unordered_map<std::string, std::int32_t> stack_by_key_;
  std::unordered_map<std::string, std::uint32_t> frame_by_key_;
  std::string key_, frame_key_;
  std::uint64_t elements_;  // values plus container slots of the document
  std::uint64_t budget_;    // units this document may materialise
  std::uint64_t left_;
};

}  // namespace

snapshot parse_snapshot_pickle(std::span<const std::byte> bytes, std::string_view source) {
  const pickle::document doc = pickle::parse(bytes, source);
  return converter(doc).run();
}

snapshot snapshot_from_document(const pickle::document& doc) { return converter(doc).run(); }

snapshot parse_snapshot_json(std::string_view text, std::string_view source) {
  const pickle::document doc = pickle::parse_json(text, source);
  return converter(doc).run();
}

snapshot read_snapshot(const std::string& path) {
  const std::string data = read_input_file(path);
  // JSON starts with '{' or '[' (after whitespace); neither byte, nor whitespace, is a
  // pickle opcode, and a pickle of protocol 2+ starts with PROTO (0x80).
  std::size_t i = 0;
  while (i < data.size() &&
         (data[i] == ' ' || data[i] == '\n' || data[i] == '\r' || data[i] == '\t'))
    ++i;
  if (i < data.size() && (data[i] == '{' || data[i] == '[')) return parse_snapshot_json(data, path);
  if (data.empty()) throw parse_error::at_offset(path, 0, "empty file: not a snapshot");
  return parse_snapshot_pickle(std::as_bytes(std::span(data.data(), data.size())), path);
}

}  // namespace keel::memory
