// keel._keel.mem: snapshots (from a file, bytes or the dict torch.cuda.memory._snapshot()
// returns), the documents of keel mem replay / advise / explain / compare, the HTML report,
// and a caching allocator on the sim or host backend. Work runs with the GIL released.
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <unordered_set>
#include <vector>

#include "bindings.hpp"
#include "keel/core/error.hpp"
#include "keel/core/json_value.hpp"
#include "keel/memory/analysis.hpp"
#include "keel/memory/caching_allocator.hpp"
#include "keel/memory/compare.hpp"
#include "keel/memory/host_backend.hpp"
#include "keel/memory/pickle.hpp"
#include "keel/memory/report_html.hpp"
#include "keel/memory/sim_backend.hpp"
#include "keel/memory/snapshot.hpp"
#include "keel/memory/synth.hpp"

namespace keel::python {
namespace {

using namespace keel::memory;

// A snapshot shared by the Python objects that use it; immutable.
struct py_snapshot {
  std::shared_ptr<const snapshot> value;
  std::string name;
};

py_snapshot load_path(const std::string& path) {
  std::shared_ptr<const snapshot> s;
  {
    py::gil_scoped_release release;
    s = std::make_shared<const snapshot>(read_snapshot(path));
  }
  return {std::move(s), path};
}

py_snapshot load_bytes(const py::bytes& data, const std::string& name) {
  const std::string_view view = data;  // the bytes object outlives the call
  std::shared_ptr<const snapshot> s;
  {
    py::gil_scoped_release release;
    s = std::make_shared<const snapshot>(
        parse_snapshot_pickle(std::as_bytes(std::span(view.data(), view.size())), name));
  }
  return {std::move(s), name};
}

// Object identity -> node, open addressing: the walk looks up ~700k objects per large snapshot.
class identity_map {
 public:
  using node = pickle::document_builder::node;
  identity_map() : slots_(1 << 16) {}
  const node* find(const void* key) const {
    for (std::size_t i = index(key);; i = (i + 1) & (slots_.size() - 1)) {
      if (slots_[i].key == key) return &slots_[i].value;
      if (slots_[i].key == nullptr) return nullptr;
    }
  }
  void insert(const void* key, node value) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    place(key, value);
    ++size_;
  }

 private:
  struct slot {
    const void* key = nullptr;
    node value = 0;
  };
  std::size_t index(const void* key) const {
    return (reinterpret_cast<std::uintptr_t>(key) >> 4) * 0x9E3779B97F4A7C15ull >> 20 &
           (slots_.size() - 1);
  }
  void place(const void* key, node value) {
    std::size_t i = index(key);
    while (slots_[i].key != nullptr) i = (i + 1) & (slots_.size() - 1);
    slots_[i] = {key, value};
  }
  void grow() {
    std::vector<slot> old(slots_.size() * 2);
    old.swap(slots_);
    for (const slot& s : old) {
      if (s.key != nullptr) place(s.key, s.value);
    }
  }
  std::vector<slot> slots_;
  std::size_t size_ = 0;
};

// The dict (or segment list) torch.cuda.memory._snapshot() returns, as a pickle document built
// node by node: plain values only, shared objects shared (by identity), never a pickle.
class object_walker {
 public:
  explicit object_walker(const std::string& name) : builder_(name) {}

  pickle::document run(const py::handle& root) {
    // A 19k-event snapshot holds ~800k values: grow the storage once (untouched pages cost
    // nothing).
    builder_.reserve(std::size_t{1} << 20, std::size_t{1} << 20);
    return builder_.finish(walk(root.ptr(), 0));
  }

 private:
  using node = pickle::document_builder::node;
  static constexpr int k_max_depth = 100;

  // Raw CPython calls: a 19k-event snapshot dict holds ~800k values.
  node walk(PyObject* o, int depth) {
    if (depth > k_max_depth)
      throw invalid_argument("snapshot object: nested deeper than 100 levels");
    if (o == Py_None) return builder_.none();
    if (o == Py_True || o == Py_False) return builder_.boolean(o == Py_True);
    if (PyLong_Check(o)) return integer(o);
    if (PyFloat_Check(o)) return builder_.floating(PyFloat_AS_DOUBLE(o));
    const bool is_str = PyUnicode_Check(o), is_bytes = PyBytes_Check(o);
    const bool is_list = PyList_Check(o), is_tuple = PyTuple_Check(o), is_dict = PyDict_Check(o);
    if (!is_str && !is_bytes && !is_list && !is_tuple && !is_dict) {
      throw invalid_argument("snapshot object: a value of type " +
                             std::string(Py_TYPE(o)->tp_name) +
                             " (only dict, list, tuple, str, bytes, int, float, bool and None)");
    }
    // Strings and containers are converted once per object: keys and frames repeat.
    if (const node* seen = done_.find(o)) return *seen;
    node n;
    if (is_str) {
      Py_ssize_t size = 0;
      const char* text = PyUnicode_AsUTF8AndSize(o, &size);
      if (text == nullptr) throw py::error_already_set();
      n = builder_.string(std::string_view(text, static_cast<std::size_t>(size)));
    } else if (is_bytes) {
      n = builder_.bytes(
          std::string_view(PyBytes_AS_STRING(o), static_cast<std::size_t>(PyBytes_GET_SIZE(o))));
    } else {
      if (!open_.insert(o).second)
        throw invalid_argument("snapshot object: a container holds itself");
      std::vector<node> items;
      if (is_dict) {
        items.reserve(2 * static_cast<std::size_t>(PyDict_GET_SIZE(o)));
        PyObject *k = nullptr, *v = nullptr;
        Py_ssize_t pos = 0;
        while (PyDict_Next(o, &pos, &k, &v)) {
          items.push_back(walk(k, depth + 1));
          items.push_back(walk(v, depth + 1));
        }
      } else {
        // The walk runs no Python code, so the sequence cannot change under it.
        const Py_ssize_t size = is_list ? PyList_GET_SIZE(o) : PyTuple_GET_SIZE(o);
        items.reserve(static_cast<std::size_t>(size));
        for (Py_ssize_t i = 0; i < size; ++i) {
          items.push_back(
              walk(is_list ? PyList_GET_ITEM(o, i) : PyTuple_GET_ITEM(o, i), depth + 1));
        }
      }
      open_.erase(o);
      n = is_dict ? builder_.dict(items) : is_list ? builder_.list(items) : builder_.tuple(items);
    }
    done_.insert(o, n);
    return n;
  }

  node integer(PyObject* o) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow == 0) {
      if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
      return builder_.integer(v);
    }
    if (overflow > 0) {
      const unsigned long long u = PyLong_AsUnsignedLongLong(o);
      if (!PyErr_Occurred()) return builder_.unsigned_integer(u);
      PyErr_Clear();
    }
    throw invalid_argument("snapshot object: an integer outside [-2^63, 2^64)");
  }

  pickle::document_builder builder_;
  identity_map done_;                         // strings and containers converted, by identity
  std::unordered_set<const PyObject*> open_;  // containers being converted
};

py_snapshot load_object(const py::handle& object, const std::string& name) {
  pickle::document doc = object_walker(name).run(object);
  std::shared_ptr<const snapshot> s;
  {
    py::gil_scoped_release release;
    s = std::make_shared<const snapshot>(snapshot_from_document(doc));
  }
  return {std::move(s), name};
}

py_snapshot synth(const std::string& kind, std::uint64_t seed, int steps) {
  synth_options o;
  if (kind == "infer") {
    o.kind = synth_kind::infer;
  } else if (kind != "train") {
    throw invalid_argument("unknown workload '" + kind + "': expected train or infer");
  }
  o.seed = seed;
  o.steps = steps;
  return {std::make_shared<const snapshot>(synthesize(o)), "synth-" + kind};
}

start_mode start_of(const std::string& text) { return parse_start_mode(text); }

// The allocator with the backend it owns.
class py_allocator {
 public:
  py_allocator(const std::string& backend_name, const std::optional<std::string>& settings,
               std::optional<std::uint64_t> capacity, int device) {
    if (backend_name == "sim") {
      backend_ = std::make_unique<sim_backend>(capacity.value_or(sim_backend::k_unlimited));
    } else if (backend_name == "host") {
      backend_ = std::make_unique<host_backend>(capacity.value_or(0));
    } else {
      throw invalid_argument("unknown backend '" + backend_name + "': expected sim or host");
    }
    const allocator_config config =
        settings ? allocator_config::parse(*settings, "settings") : allocator_config{};
    allocator_ = std::make_unique<caching_allocator>(*backend_, config, device);
  }

  std::uint64_t allocate(std::int64_t size, std::uint64_t stream) {
    if (size < 0) throw invalid_argument("allocate: size " + std::to_string(size) + " is negative");
    py::gil_scoped_release release;
    return allocator_->allocate(static_cast<std::size_t>(size), stream);
  }
  void free(std::uint64_t address) { allocator_->deallocate(address); }
  void record_stream(std::uint64_t address, std::uint64_t stream) {
    allocator_->record_stream(address, stream);
  }
  void empty_cache() { allocator_->empty_cache(); }
  void set_memory_fraction(double f) { allocator_->set_memory_fraction(f); }
  void record_history(bool enabled, std::size_t max_entries) {
    allocator_->record_history(enabled, max_entries);
  }
  void reset_peak_stats() { allocator_->reset_peak_stats(); }

  py::dict memory_stats() const {
    py::dict out;
    for (const auto& [key, value] : allocator_->stats().flatten()) out[py::str(key)] = value;
    return out;
  }
  py::object memory_snapshot() const {
    std::ostringstream text;
    write_snapshot_json(allocator_->take_snapshot(), text);
    return to_python(parse_json(text.str(), "allocator snapshot"));
  }
  std::string check_invariants() const { return allocator_->check_invariants(); }

 private:
  std::unique_ptr<backend> backend_;
  std::unique_ptr<caching_allocator> allocator_;
};

}  // namespace

void register_mem(py::module_& m) {
  py::class_<py_snapshot>(m, "Snapshot",
                          "A PyTorch CUDA memory snapshot, read without executing anything.")
      .def_readonly("name", &py_snapshot::name)
      .def_property_readonly("devices", [](const py_snapshot& s) { return devices_in(*s.value); })
      .def_property_readonly("segments",
                             [](const py_snapshot& s) { return s.value->segments.size(); })
      .def_property_readonly("entries",
                             [](const py_snapshot& s) {
                               std::vector<std::size_t> out;
                               for (const auto& t : s.value->device_traces) out.push_back(t.size());
                               return out;
                             })
      .def("__repr__", [](const py_snapshot& s) {
        std::size_t entries = 0;
        for (const auto& t : s.value->device_traces) entries += t.size();
        return "<keel.mem.Snapshot " + s.name + ": " + std::to_string(s.value->segments.size()) +
               " segments, " + std::to_string(entries) + " trace entries>";
      });

  m.def("load_path", &load_path, py::arg("path"));
  m.def("load_bytes", &load_bytes, py::arg("data"), py::arg("name") = "<bytes>");
  m.def("load_object", &load_object, py::arg("object"), py::arg("name") = "<snapshot dict>");
  m.def("synth", &synth, py::arg("kind") = "train", py::arg("seed") = 1, py::arg("steps") = 6);

  m.def(
      "replay",
      [](const py_snapshot& s, std::optional<std::string> conf, const std::string& policy,
         std::optional<int> device, std::optional<std::uint64_t> capacity, const std::string& start,
         bool continue_after_oom, const std::string& sites_by) {
        replay_request r;
        r.device = device;
        r.policy = policy;
        r.conf = std::move(conf);
        r.capacity = capacity;
        r.start = start_of(start);
        r.continue_after_oom = continue_after_oom;
        r.sites.group_by = parse_callsite_grouping(sites_by);
        nlohmann::json doc;
        {
          py::gil_scoped_release release;
          doc = to_json(replay_devices(*s.value, r), s.name, r.sites);
        }
        return to_python(doc);
      },
      py::arg("snapshot"), py::arg("conf") = py::none(), py::arg("policy") = "pytorch",
      py::arg("device") = py::none(), py::arg("capacity") = py::none(), py::arg("start") = "window",
      py::arg("continue_after_oom") = false, py::arg("sites_by") = "site");

  m.def(
      "advise",
      [](const py_snapshot& s, std::optional<std::uint64_t> capacity, std::optional<int> device,
         unsigned threads) {
        analysis_options o;
        o.capacity = capacity;
        o.device = device;
        o.threads = threads;
        nlohmann::json doc;
        {
          py::gil_scoped_release release;
          doc = to_json(analyze(*s.value, s.name, o));
        }
        return to_python(doc);
      },
      py::arg("snapshot"), py::arg("capacity") = py::none(), py::arg("device") = py::none(),
      py::arg("threads") = 0);

  m.def(
      "explain",
      [](const py_snapshot& s, std::optional<int> device, std::optional<std::uint64_t> capacity,
         const std::string& sites_by) {
        callsite_options sites;
        sites.group_by = parse_callsite_grouping(sites_by);
        nlohmann::json doc;
        {
          py::gil_scoped_release release;
          doc = to_json(explain_devices(*s.value, device, capacity, sites), s.name);
        }
        return to_python(doc);
      },
      py::arg("snapshot"), py::arg("device") = py::none(), py::arg("capacity") = py::none(),
      py::arg("sites_by") = "site");

  m.def(
      "compare",
      [](const py_snapshot& a, const py_snapshot& b, std::optional<int> device, std::size_t top) {
        compare_options o;
        o.device = device;
        o.name_a = a.name;
        o.name_b = b.name;
        nlohmann::json doc;
        {
          py::gil_scoped_release release;
          doc = to_json(compare_snapshots(*a.value, *b.value, o), top);
        }
        return to_python(doc);
      },
      py::arg("a"), py::arg("b"), py::arg("device") = py::none(), py::arg("top") = 0);

  m.def(
      "report_html",
      [](const py_snapshot& s, const std::string& path, std::optional<std::uint64_t> capacity,
         std::optional<int> device) {
        py::gil_scoped_release release;
        analysis_options o;
        o.capacity = capacity;
        o.device = device;
        write_html_report(path, *s.value, to_json(analyze(*s.value, s.name, o)));
      },
      py::arg("snapshot"), py::arg("path"), py::arg("capacity") = py::none(),
      py::arg("device") = py::none());

  py::class_<py_allocator>(
      m, "CachingAllocator",
      "keel's caching allocator (PyTorch's rules, or keel's policy) on a simulated or host "
      "device.")
      .def(py::init<const std::string&, const std::optional<std::string>&,
                    std::optional<std::uint64_t>, int>(),
           py::arg("backend") = "sim", py::arg("settings") = py::none(),
           py::arg("capacity") = py::none(), py::arg("device") = 0)
      .def("allocate", &py_allocator::allocate, py::arg("size"), py::arg("stream") = 0)
      .def("free", &py_allocator::free, py::arg("address"))
      .def("record_stream", &py_allocator::record_stream, py::arg("address"), py::arg("stream"))
      .def("empty_cache", &py_allocator::empty_cache)
      .def("set_memory_fraction", &py_allocator::set_memory_fraction, py::arg("fraction"))
      .def("record_history", &py_allocator::record_history, py::arg("enabled") = true,
           py::arg("max_entries") = std::size_t{1} << 20)
      .def("reset_peak_stats", &py_allocator::reset_peak_stats)
      .def("memory_stats", &py_allocator::memory_stats)
      .def("memory_snapshot", &py_allocator::memory_snapshot)
      .def("check_invariants", &py_allocator::check_invariants);
}

}  // namespace keel::python
