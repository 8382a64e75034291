// keel._keel.kv: request traces, the documents of keel kv replay / sweep (the same library
// calls the CLI makes: keel/kv/report.hpp), and keel::kv::block_pool itself. Replays run with
// the GIL released; a Trace is immutable and may be shared by concurrent replays. A
// BlockPool is not thread-safe, as the C++ pool is not: its methods keep the GIL.
#include <pybind11/stl.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "bindings.hpp"
#include "keel/core/error.hpp"
#include "keel/kv/block_hash.hpp"
#include "keel/kv/block_pool.hpp"
#include "keel/kv/eviction_policy.hpp"
#include "keel/kv/prefix_index.hpp"
#include "keel/kv/report.hpp"

namespace keel::python {
namespace {

namespace kv = keel::kv;

// A loaded trace, shared by the Python objects and the replays that use it.
struct py_trace {
  std::shared_ptr<const kv::timed_trace> value;
};

// A size from Python: the CLI's message for a negative value.
std::size_t block_size_of(std::int64_t v) {
  if (v < 0) {
    throw invalid_argument(fmt::format(
        "--block-size: {} is negative, expected an integer in [1, {}]", v, kv::k_max_block_size));
  }
  return static_cast<std::size_t>(v);
}

std::size_t count_of(std::int64_t v, const char* what) {
  if (v < 0) throw invalid_argument(fmt::format("{} {} is negative", what, v));
  return static_cast<std::size_t>(v);
}

py_trace load(const std::string& path, std::int64_t block_size) {
  const std::size_t b = block_size_of(block_size);
  std::shared_ptr<const kv::timed_trace> t;
  {
    py::gil_scoped_release release;
    kv::trace_replay_options o;
    o.block_size = b;
    kv::validate(o);
    t = std::make_shared<const kv::timed_trace>(kv::load_timed_trace(path, b));
  }
  return {std::move(t)};
}

py::dict request_dict(const kv::trace_request& r) {
  py::dict d;
  d["timestamp"] = r.timestamp_ms;
  d["input_length"] = r.input_length;
  d["output_length"] = r.output_length;
  d["hash_ids"] = r.hashes;
  return d;
}

kv::trace_replay_options options_of(std::size_t block_size, const std::string& index, bool hold,
                                    double prefill_tps, double tpot_ms, bool no_hit_cap) {
  kv::trace_replay_options o;
  o.block_size = block_size;
  o.index = index;
  o.hold = hold;
  o.model.prefill_tokens_per_s = prefill_tps;
  o.model.decode_ms_per_token = tpot_ms;
  o.cap_hit_at_last_token = !no_hit_cap;
  return o;
}

// The trace argument: a loaded Trace (block_size None: its own) or a path (None: 512).
struct trace_arg {
  std::shared_ptr<const kv::timed_trace> loaded;
  std::string path;
  std::size_t block_size = 512;
};

trace_arg trace_of(const py::object& trace, std::optional<std::int64_t> block_size) {
  trace_arg a;
  if (py::isinstance<py_trace>(trace)) {
    a.loaded = trace.cast<const py_trace&>().value;
    a.block_size = block_size ? block_size_of(*block_size) : a.loaded->value.block_size;
  } else if (py::isinstance<py::str>(trace)) {
    a.path = trace.cast<std::string>();
    a.block_size = block_size ? block_size_of(*block_size) : 512;
  } else {
    throw py::type_error("trace: expected a path or a keel.kv.Trace, not " +
                         std::string(py::str(trace.get_type().attr("__name__"))));
  }
  return a;
}

// A running sequence of one BlockPool (the pool's id guards against mixing pools).
struct py_sequence {
  kv::sequence value;
  std::uint64_t owner = 0;
};

std::atomic<std::uint64_t> next_pool_id{1};

class py_block_pool {
 public:
  py_block_pool(std::int64_t num_blocks, std::int64_t block_size, const std::string& policy,
                const std::string& index, bool cap_hit_at_last_token)
      : pool_(make(num_blocks, block_size, policy, index, cap_hit_at_last_token)),
        id_(next_pool_id++) {}

  std::size_t lookup(const std::vector<kv::block_hash>& hashes, std::int64_t num_tokens) const {
    return pool_->lookup(hashes, count_of(num_tokens, "lookup: num_tokens"));
  }
  std::optional<py_sequence> allocate(const std::vector<kv::block_hash>& hashes,
                                      std::int64_t num_tokens) {
    auto seq = pool_->allocate(hashes, count_of(num_tokens, "allocate: num_tokens"));
    if (!seq) return std::nullopt;
    return py_sequence{std::move(*seq), id_};
  }
  void release(py_sequence& s) { pool_->release(own(s, "release")); }
  py_sequence fork(py_sequence& s) { return {pool_->fork(own(s, "fork")), id_}; }
  std::optional<std::vector<std::pair<kv::block_id, kv::block_id>>> append_tokens(py_sequence& s,
                                                                                  std::int64_t n) {
    auto copies = pool_->append_tokens(own(s, "append_tokens"), count_of(n, "append_tokens: n"));
    if (!copies) return std::nullopt;
    std::vector<std::pair<kv::block_id, kv::block_id>> out;
    for (const kv::block_copy& c : *copies) out.emplace_back(c.src, c.dst);
    return out;
  }
  void cache_blocks(py_sequence& s, const std::vector<kv::block_hash>& hashes) {
    pool_->cache_blocks(own(s, "cache_blocks"), hashes);
  }
  std::uint32_t ref_count(std::int64_t b) const { return pool_->ref_count(block(b)); }
  bool is_cached(std::int64_t b) const { return pool_->is_cached(block(b)); }
  py::dict stats() const {
    const kv::pool_stats& s = pool_->stats();
    py::dict d;
    d["requests"] = s.requests;
    d["query_tokens"] = s.query_tokens;
    d["hit_tokens"] = s.hit_tokens;
    d["query_blocks"] = s.query_blocks;
    d["hit_blocks"] = s.hit_blocks;
    d["evictions"] = s.evictions;
    d["allocated_blocks"] = s.allocated_blocks;
    d["cow_copies"] = s.cow_copies;
    d["token_hit_rate"] = s.token_hit_rate();
    d["block_hit_rate"] = s.block_hit_rate();
    return d;
  }
  std::string check_invariants() const {
    try {
      pool_->check_invariants();
    } catch (const std::logic_error& e) {
      return e.what();
    }
    return {};
  }
  const kv::block_pool& pool() const { return *pool_; }
  kv::block_pool& pool() { return *pool_; }

 private:
  static std::unique_ptr<kv::block_pool> make(std::int64_t num_blocks, std::int64_t block_size,
                                              const std::string& policy, const std::string& index,
                                              bool cap) {
    kv::block_pool_options o;
    o.num_blocks = count_of(num_blocks, "BlockPool: num_blocks");
    o.block_size = count_of(block_size, "BlockPool: block_size");
    o.cap_hit_at_last_token = cap;
    auto p = kv::make_policy(policy);
    // The index is sized by the pool; block_pool refuses the sizes before allocating.
    if (o.num_blocks == 0 || o.block_size == 0 || o.num_blocks >= kv::k_no_block) {
      return std::make_unique<kv::block_pool>(o, std::move(p));
    }
    return std::make_unique<kv::block_pool>(o, std::move(p), kv::make_index(index, o.num_blocks));
  }
  kv::sequence& own(py_sequence& s, const char* what) const {
    if (s.owner != id_) {
      throw invalid_argument(std::string(what) + ": the sequence belongs to another BlockPool");
    }
    return s.value;
  }
  kv::block_id block(std::int64_t b) const {
    if (b < 0 || static_cast<std::uint64_t>(b) >= pool_->num_blocks()) {
      throw py::index_error(fmt::format("block {} is not in [0, {})", b, pool_->num_blocks()));
    }
    return static_cast<kv::block_id>(b);
  }

  std::unique_ptr<kv::block_pool> pool_;
  std::uint64_t id_;
};

}  // namespace

void register_kv(py::module_& m) {
  py::class_<py_trace>(m, "Trace",
                       "A request trace (Mooncake JSONL or raw tokens), cut into blocks; "
                       "immutable. len(t) requests; t[i] is a dict of request i.")
      .def_property_readonly(
          "source", [](const py_trace& t) { return t.value->value.source; },
          "The file it came from.")
      .def_property_readonly(
          "block_size", [](const py_trace& t) { return t.value->value.block_size; },
          "Tokens per block.")
      .def_property_readonly(
          "load_ms", [](const py_trace& t) { return t.value->load_ms; },
          "How long loading took, in ms.")
      .def("__len__", [](const py_trace& t) { return t.value->value.requests.size(); })
      .def(
          "__getitem__",
          [](const py_trace& t, std::int64_t i) {
            const auto& r = t.value->value.requests;
            const auto n = static_cast<std::int64_t>(r.size());
            if (i < 0) i += n;
            if (i < 0 || i >= n) throw py::index_error("trace index out of range");
            return request_dict(r[static_cast<std::size_t>(i)]);
          },
          py::arg("i"),
          "Request i: timestamp (ms), input_length, output_length, hash_ids (chained block "
          "hashes).")
      .def("__repr__", [](const py_trace& t) {
        return fmt::format("<keel.kv.Trace {}: {} requests, {}-token blocks>",
                           t.value->value.source, t.value->value.requests.size(),
                           t.value->value.block_size);
      });

  m.def("load_trace", &load, py::arg("path"), py::arg("block_size") = 512,
        "Reads a JSONL trace (keel kv's TRACE argument), cut into block_size-token blocks. "
        "Raises keel.IOError, keel.ParseError (file:line:column) or keel.InvalidArgument (no "
        "requests, a bad block size).");

  m.def(
      "replay",
      [](const py::object& trace, const std::string& capacity, const std::string& policy,
         std::optional<std::int64_t> block_size, const std::string& index, bool hold,
         double prefill_tps, double tpot_ms, bool no_hit_cap) {
        const trace_arg t = trace_of(trace, block_size);
        kv::replay_request r;
        r.options = options_of(t.block_size, index, hold, prefill_tps, tpot_ms, no_hit_cap);
        r.capacity = capacity;
        r.policy = policy;
        nlohmann::ordered_json doc;
        {
          py::gil_scoped_release release;
          doc = kv::to_json(t.loaded ? kv::run_replay(*t.loaded, r) : kv::run_replay(t.path, r));
        }
        return to_python(doc);
      },
      py::arg("trace"), py::arg("capacity") = "inf", py::arg("policy") = "lru",
      py::arg("block_size") = py::none(), py::arg("index") = "hash", py::arg("hold") = false,
      py::arg("prefill_tps") = 10000.0, py::arg("tpot_ms") = 30.0, py::arg("no_hit_cap") = false,
      "keel kv replay --json: the trace (a path or a Trace) replayed against one cache.");

  m.def(
      "sweep",
      [](const py::object& trace, std::optional<std::vector<std::string>> capacities,
         std::optional<std::vector<std::string>> policies, std::optional<std::int64_t> block_size,
         const std::string& index, bool hold, double prefill_tps, double tpot_ms, bool no_hit_cap,
         std::optional<std::string> svg) {
        const trace_arg t = trace_of(trace, block_size);
        kv::sweep_request r;
        r.options = options_of(t.block_size, index, hold, prefill_tps, tpot_ms, no_hit_cap);
        if (capacities) r.capacities = std::move(*capacities);
        if (policies) r.policies = std::move(*policies);
        r.svg = std::move(svg);
        nlohmann::ordered_json doc;
        {
          py::gil_scoped_release release;
          doc = kv::to_json(t.loaded ? kv::run_sweep(*t.loaded, r) : kv::run_sweep(t.path, r));
        }
        return to_python(doc);
      },
      py::arg("trace"), py::arg("capacities") = py::none(), py::arg("policies") = py::none(),
      py::arg("block_size") = py::none(), py::arg("index") = "hash", py::arg("hold") = false,
      py::arg("prefill_tps") = 10000.0, py::arg("tpot_ms") = 30.0, py::arg("no_hit_cap") = false,
      py::arg("svg") = py::none(),
      "keel kv sweep --json: every policy at every capacity; the chart only where svg names "
      "a file.");

  m.def(
      "parse_capacity",
      [](const std::string& text, std::int64_t block_size) {
        return kv::parse_capacity(text, block_size_of(block_size));
      },
      py::arg("text"), py::arg("block_size") = 512,
      "Blocks in a capacity such as '3M' (tokens, rounded down to blocks), '5859blocks'; None "
      "for 'inf'.");
  m.def("policy_names", &kv::policy_names, "The eviction policies keel ships.");
  m.def(
      "hash_blocks",
      [](const std::vector<std::uint32_t>& tokens, std::int64_t block_size, std::uint64_t salt) {
        return kv::hash_blocks(tokens, count_of(block_size, "hash_blocks: block_size"), salt);
      },
      py::arg("tokens"), py::arg("block_size"), py::arg("salt") = 0,
      "Chained XXH3 hashes of the full blocks of a token sequence (vLLM's scheme).");

  py::class_<py_sequence>(m, "Sequence",
                          "The blocks of one running sequence of a BlockPool: blocks[i] holds "
                          "tokens [i*B, (i+1)*B).")
      .def_property_readonly(
          "blocks", [](const py_sequence& s) { return s.value.blocks; }, "Block ids, in order.")
      .def_property_readonly(
          "num_tokens", [](const py_sequence& s) { return s.value.num_tokens; }, "Tokens held.")
      .def("__len__", [](const py_sequence& s) { return s.value.blocks.size(); })
      .def("__repr__", [](const py_sequence& s) {
        return fmt::format("<keel.kv.Sequence {} tokens in {} blocks>", s.value.num_tokens,
                           s.value.blocks.size());
      });

  py::class_<py_block_pool>(
      m, "BlockPool",
      "keel::kv::block_pool: a KV-cache block manager with reference counts, prefix caching "
      "under chained block hashes and lazy eviction by a policy (vLLM's v1 block pool). Not "
      "thread-safe.")
      .def(py::init<std::int64_t, std::int64_t, const std::string&, const std::string&, bool>(),
           py::arg("num_blocks"), py::arg("block_size") = 16, py::arg("policy") = "lru",
           py::arg("index") = "hash", py::arg("cap_hit_at_last_token") = true)
      .def("lookup", &py_block_pool::lookup, py::arg("hashes"), py::arg("num_tokens"),
           "The prefix hit, in blocks, that allocate() would count now; changes nothing.")
      .def("allocate", &py_block_pool::allocate, py::arg("hashes"), py::arg("num_tokens"),
           "Blocks for a request of num_tokens tokens whose first blocks are named by hashes: "
           "cached blocks are reused, the rest allocated and cached. None when the free blocks "
           "do not suffice.")
      .def("release", &py_block_pool::release, py::arg("sequence"),
           "Drops the sequence's references, last block first; the sequence becomes empty.")
      .def("fork", &py_block_pool::fork, py::arg("sequence"),
           "A second sequence sharing all of the sequence's blocks.")
      .def("append_tokens", &py_block_pool::append_tokens, py::arg("sequence"), py::arg("n"),
           "Grows the sequence by n tokens; returns the (src, dst) block copies the engine must "
           "make (copy-on-write), or None when the free blocks do not suffice.")
      .def("cache_blocks", &py_block_pool::cache_blocks, py::arg("sequence"), py::arg("hashes"),
           "Registers the sequence's first len(hashes) full blocks under hashes.")
      .def("ref_count", &py_block_pool::ref_count, py::arg("block"), "A block's reference count.")
      .def("is_cached", &py_block_pool::is_cached, py::arg("block"),
           "Whether a block holds a cached hash.")
      .def("stats", &py_block_pool::stats,
           "requests, query/hit tokens and blocks, evictions, allocated_blocks, cow_copies and "
           "the hit rates.")
      .def(
          "reset_stats", [](py_block_pool& p) { p.pool().reset_stats(); }, "Zeroes the stats.")
      .def("check_invariants", &py_block_pool::check_invariants,
           "'' when the pool's invariants hold, else the first violated one.")
      .def_property_readonly("num_blocks",
                             [](const py_block_pool& p) { return p.pool().num_blocks(); })
      .def_property_readonly("block_size",
                             [](const py_block_pool& p) { return p.pool().block_size(); })
      .def_property_readonly(
          "free_blocks", [](const py_block_pool& p) { return p.pool().free_blocks(); },
          "Empty plus evictable blocks.")
      .def_property_readonly("empty_blocks",
                             [](const py_block_pool& p) { return p.pool().empty_blocks(); })
      .def_property_readonly(
          "evictable_blocks", [](const py_block_pool& p) { return p.pool().evictable_blocks(); },
          "Cached blocks nobody references.")
      .def_property_readonly("cached_blocks",
                             [](const py_block_pool& p) { return p.pool().cached_blocks(); })
      .def_property_readonly(
          "policy", [](const py_block_pool& p) { return std::string(p.pool().policy().name()); })
      .def_property_readonly(
          "index", [](const py_block_pool& p) { return std::string(p.pool().index().name()); })
      .def("__repr__", [](const py_block_pool& p) {
        return fmt::format("<keel.kv.BlockPool {} blocks of {} tokens, {} free, {} cached, {}>",
                           p.pool().num_blocks(), p.pool().block_size(), p.pool().free_blocks(),
                           p.pool().cached_blocks(), p.pool().policy().name());
      });
}

}  // namespace keel::python
