// keel._keel.perf and keel._keel.gpus: the documents of keel perf op / explain / llm / model /
// calibrate and keel gpus list / show / compare / support / pick, from the same library calls
// the CLI makes (keel/perf/report.hpp, gpu_database.hpp, gpu_pick.hpp, gpu_compare.hpp).
// An op's shape comes as keyword arguments named as the CLI's options (--kv-heads: kv_heads);
// an argument the op does not take, or of the wrong type, is a TypeError; values are checked
// by the library with the CLI's messages. Work runs with the GIL released.
#include <pybind11/stl.h>

#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bindings.hpp"
#include "keel/core/error.hpp"
#include "keel/perf/gpu_compare.hpp"
#include "keel/perf/gpu_database.hpp"
#include "keel/perf/gpu_pick.hpp"
#include "keel/perf/llm.hpp"
#include "keel/perf/report.hpp"

namespace keel::python {
namespace {

namespace kp = keel::perf;

std::string type_name(const py::handle& v) {
  return py::str(v.get_type().attr("__name__")).cast<std::string>();
}

// Reads an op's keyword arguments into an op_request, field by field, with strict types.
class options_reader {
 public:
  options_reader(const std::string& what, const py::dict& options) : what_(what) {
    for (const auto& [key, value] : options) {
      if (!py::isinstance<py::str>(key)) throw py::type_error(what_ + ": keywords must be strings");
      left_[key.cast<std::string>()] = py::reinterpret_borrow<py::object>(value);
    }
  }

  void number(const char* key, double& out) {
    if (auto v = take(key)) out = to_double(*v, key);
  }
  void number(const char* key, std::optional<double>& out) {
    if (auto v = take(key)) {
      if (!v->is_none()) out = to_double(*v, key);
    }
  }
  void integer(const char* key, std::int64_t& out) {
    if (auto v = take(key)) out = to_int(*v, key);
  }
  void flag(const char* key, bool& out) {
    if (auto v = take(key)) {
      if (!py::isinstance<py::bool_>(*v)) {
        throw py::type_error(
            fmt::format("{}: {} must be a bool, not {}", what_, key, type_name(*v)));
      }
      out = v->cast<bool>();
    }
  }
  void text(const char* key, std::string& out) {
    if (auto v = take(key)) {
      if (!py::isinstance<py::str>(*v)) {
        throw py::type_error(
            fmt::format("{}: {} must be a str, not {}", what_, key, type_name(*v)));
      }
      out = v->cast<std::string>();
    }
  }
  // "NxCxHxW" as a str, an int, or a tuple/list of ints.
  void dims(const char* key, std::string& out) {
    auto v = take(key);
    if (!v) return;
    if (py::isinstance<py::str>(*v)) {
      out = v->cast<std::string>();
    } else if (py::isinstance<py::tuple>(*v) || py::isinstance<py::list>(*v)) {
      std::string joined;
      for (const py::handle& d : *v) {
        joined += (joined.empty() ? "" : "x") + std::to_string(to_int(d, key));
      }
      out = joined;
    } else if (is_int(*v)) {
      out = std::to_string(to_int(*v, key));
    } else {
      throw py::type_error(
          fmt::format("{}: {} must be a str such as '1x3x224x224' or a tuple of "
                      "ints, not {}",
                      what_, key, type_name(*v)));
    }
  }
  // Raises TypeError for a keyword nobody read.
  void finish() const {
    if (!left_.empty()) {
      throw py::type_error(
          fmt::format("{}: unexpected keyword argument '{}'", what_, left_.begin()->first));
    }
  }

  static bool is_int(const py::handle& v) {
    return !py::isinstance<py::bool_>(v) && PyIndex_Check(v.ptr()) != 0;
  }

  double to_double(const py::handle& v, const char* key) const {
    if (py::isinstance<py::bool_>(v) ||
        !(is_int(v) || PyFloat_Check(v.ptr()) || PyObject_HasAttrString(v.ptr(), "__float__"))) {
      throw py::type_error(
          fmt::format("{}: {} must be a number, not {}", what_, key, type_name(v)));
    }
    if (is_int(v) && !PyFloat_Check(v.ptr())) {
      const py::int_ i = py::reinterpret_steal<py::int_>(PyNumber_Index(v.ptr()));
      if (!i) throw py::error_already_set();
      const double d = PyLong_AsDouble(i.ptr());
      if (d == -1.0 && PyErr_Occurred()) {  // beyond a double: as large as one gets
        PyErr_Clear();
        return Py_SIZE(i.ptr()) < 0 ? -std::numeric_limits<double>::infinity()
                                    : std::numeric_limits<double>::infinity();
      }
      return d;
    }
    const double d = PyFloat_AsDouble(v.ptr());
    if (d == -1.0 && PyErr_Occurred()) throw py::error_already_set();
    return d;
  }

  std::int64_t to_int(const py::handle& v, const char* key) const {
    if (!is_int(v)) {
      throw py::type_error(
          fmt::format("{}: {} must be an integer, not {}", what_, key, type_name(v)));
    }
    const py::int_ i = py::reinterpret_steal<py::int_>(PyNumber_Index(v.ptr()));
    if (!i) throw py::error_already_set();
    int overflow = 0;
    const long long x = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
    if (overflow != 0) {  // out of every range the library takes
      return overflow > 0 ? std::numeric_limits<std::int64_t>::max()
                          : std::numeric_limits<std::int64_t>::min();
    }
    if (x == -1 && PyErr_Occurred()) throw py::error_already_set();
    return x;
  }

 private:
  std::optional<py::object> take(const char* key) {
    const auto it = left_.find(key);
    if (it == left_.end()) return std::nullopt;
    py::object v = it->second;
    left_.erase(it);
    return v;
  }

  std::string what_;
  std::map<std::string, py::object> left_;
};

// The op request of `keel perf op KIND` / `explain KIND` from Python arguments.
kp::op_request op_request_of(const std::string& kind, const py::sequence& mnk,
                             const py::dict& options, const char* command) {
  kp::op_request r;
  r.kind = kind;
  const std::string what = fmt::format("perf.{}('{}')", command, kind);
  options_reader in(what, options);
  in.text("dtype", r.dtype);
  in.text("gpu", r.gpu);
  bool no_tensor = false;
  in.flag("no_tensor", no_tensor);
  r.tensor = !no_tensor;
  if (kind != "gemm" && py::len(mnk) != 0) {
    throw py::type_error(what + ": positional sizes are gemm's M N K only");
  }
  if (kind == "gemm") {
    for (const py::handle& v : mnk) r.mnk.push_back(in.to_double(v, "mnk"));
    in.number("batch", r.batch);
  } else if (kind == "spmv") {
    in.number("rows", r.rows);
    in.number("cols", r.cols);
    in.number("nnz", r.nnz);
    in.number("index_bytes", r.index_bytes);
    bool no_x_reuse = false;
    in.flag("no_x_reuse", no_x_reuse);
    r.x_reuse = !no_x_reuse;
  } else if (kind == "conv2d") {
    in.dims("input", r.input);
    in.integer("out_channels", r.out_channels);
    in.dims("kernel", r.kernel);
    in.integer("stride", r.stride);
    in.integer("padding", r.padding);
    in.integer("dilation", r.dilation);
    in.integer("groups", r.groups);
  } else if (kind == "attention") {
    in.number("batch", r.batch);
    in.number("heads", r.heads);
    in.number("kv_heads", r.kv_heads);
    in.number("seq", r.seq);
    in.number("kv_len", r.kv_len);
    in.number("head_dim", r.head_dim);
    in.flag("flash", r.flash);
    in.flag("causal", r.causal);
  } else if (kind == "elementwise") {
    in.number("elements", r.elements);
    in.number("inputs", r.inputs);
    in.number("outputs", r.outputs);
    in.number("flops_per_element", r.flops_per_element);
  }
  in.finish();
  return r;
}

template <class F>
py::object document(F&& f) {
  nlohmann::json doc;
  {
    py::gil_scoped_release release;
    doc = f();
  }
  return to_python(doc);
}

}  // namespace

void register_perf(py::module_& m) {
  m.def("op_kinds", &kp::op_kinds, "The kernels op() and explain() know.");
  m.def("llm_configs", &kp::bundled_llm_configs, "The bundled LLM configs llm() takes by name.");
  m.def(
      "op",
      [](const std::string& kind, const py::sequence& mnk, const py::dict& options) {
        const kp::op_request r = op_request_of(kind, mnk, options, "op");
        return document([&] { return kp::to_json(kp::run_op(r)); });
      },
      py::arg("kind"), py::arg("mnk"), py::arg("options"),
      "keel perf op KIND --json: the roofline of one kernel. options: the CLI's options as "
      "keywords (dtype, gpu, no_tensor, batch, rows, ...).");
  m.def(
      "explain",
      [](const std::string& kind, const py::sequence& mnk, const std::string& vs,
         const py::dict& options) {
        kp::explain_request r;
        r.op = op_request_of(kind, mnk, options, "explain");
        r.vs = vs;
        return document([&] { return kp::to_json(kp::run_explain(r)); });
      },
      py::arg("kind"), py::arg("mnk"), py::arg("vs"), py::arg("options"),
      "keel perf explain KIND --json: one kernel on options['gpu'] and on vs, and why.");
  m.def(
      "llm",
      [](const std::string& config, double batch, double seq, const std::string& phase,
         const std::string& gpu, const std::string& dtype, std::optional<std::string> kv_dtype,
         bool flash, bool no_tensor, std::optional<std::string> svg, const std::string& quant,
         double generate, bool train, const std::string& optimizer, std::int64_t tp,
         std::int64_t pp, std::int64_t dp, std::int64_t ep, std::optional<double> link_latency_us) {
        kp::llm_request r;
        r.config = config;
        r.batch = batch;
        r.seq = seq;
        r.phase = phase;
        r.gpu = gpu;
        r.dtype = dtype;
        r.kv_dtype = kv_dtype.value_or("");
        r.flash = flash;
        r.tensor = !no_tensor;
        r.svg = svg.value_or("");
        r.quant = quant;
        r.generate = generate;
        r.train = train;
        r.optimizer = optimizer;
        r.tp = tp, r.pp = pp, r.dp = dp, r.ep = ep;
        r.link_latency_us = link_latency_us;
        return document([&] { return kp::to_json(kp::run_llm(r)); });
      },
      py::arg("config"), py::arg("batch") = 1.0, py::arg("seq") = 128.0,
      py::arg("phase") = "prefill", py::arg("gpu") = "h100-sxm", py::arg("dtype") = "bf16",
      py::arg("kv_dtype") = py::none(), py::arg("flash") = false, py::arg("no_tensor") = false,
      py::arg("svg") = py::none(), py::arg("quant") = "none", py::arg("generate") = 0.0,
      py::arg("train") = false, py::arg("optimizer") = "adam", py::arg("tp") = 1, py::arg("pp") = 1,
      py::arg("dp") = 1, py::arg("ep") = 1, py::arg("link_latency_us") = py::none(),
      "keel perf llm --json: per-op FLOPs, bytes, bound and time of a decoder LLM.");
  m.def(
      "model",
      [](const std::string& path, const std::string& gpu, const std::vector<std::string>& dims,
         bool no_tensor, std::optional<std::string> svg, bool assume_one,
         std::optional<int> depth) {
        kp::model_request r;
        r.path = path;
        r.gpu = gpu;
        r.dims = dims;
        r.assume_one = assume_one;
        r.tensor = !no_tensor;
        r.svg = svg.value_or("");
        r.depth = depth.value_or(-1);
        return document([&] { return kp::to_json(kp::run_model(r)); });
      },
      py::arg("path"), py::arg("gpu") = "h100-sxm", py::arg("dims") = std::vector<std::string>{},
      py::arg("no_tensor") = false, py::arg("svg") = py::none(), py::arg("assume_one") = false,
      py::arg("depth") = py::none(),
      "keel perf model --json: per-node FLOPs, MACs, bytes and time of an ONNX graph; dims are "
      "'NAME=VALUE' strings; assume_one is --assume-one; depth is --depth (none: the whole "
      "module tree).");
  m.def(
      "calibrate",
      [](std::int64_t threads, double seconds, double dram_mib, std::optional<std::string> out,
         const std::string& name) {
        kp::calibrate_request r;
        r.threads = threads;
        r.seconds = seconds;
        r.dram_mib = dram_mib;
        r.out = out.value_or("");
        r.name = name;
        return document([&] { return kp::to_json(kp::run_calibrate(r)); });
      },
      py::arg("threads") = 1, py::arg("seconds") = 0.3, py::arg("dram_mib") = 1024.0,
      py::arg("out") = py::none(), py::arg("name") = "cpu-local",
      "keel perf calibrate --json: this CPU as a roofline device (a device document).");
}

void register_gpus(py::module_& m) {
  m.def(
      "names",
      [] {
        std::vector<std::string> out;
        for (const kp::gpu_spec& g : kp::gpu_database::builtin().gpus()) out.push_back(g.name);
        return out;
      },
      "The names of the GPUs in the database.");
  m.def(
      "list",
      [](const std::string& arch) {
        return to_python(kp::to_json(kp::list_gpus(kp::gpu_database::builtin(), arch)));
      },
      py::arg("arch") = "", "keel gpus list --json: every GPU (or those of one architecture).");
  m.def(
      "show",
      [](const std::string& name) {
        return to_python(kp::to_json(kp::gpu_database::builtin().at(name)));
      },
      py::arg("name"), "keel gpus show NAME --json: all numbers of one GPU with their sources.");
  m.def(
      "compare",
      [](const std::string& a, const std::string& b) {
        return to_python(kp::to_json(kp::compare_gpus(kp::gpu_database::builtin().at(a),
                                                      kp::gpu_database::builtin().at(b))));
      },
      py::arg("a"), py::arg("b"), "keel gpus compare A B --json: side by side, ratios B/A.");
  m.def(
      "support",
      [](const std::string& name, std::optional<std::string> cuda, std::optional<std::string> cudnn,
         std::optional<std::string> pytorch, std::optional<std::string> wheel,
         std::optional<std::string> driver) {
        kp::support_request r;
        r.gpu = name;
        r.cuda = cuda.value_or("");
        r.cudnn = cudnn.value_or("");
        r.pytorch = pytorch.value_or("");
        r.wheel = wheel.value_or("");
        r.driver = driver.value_or("");
        return to_python(kp::to_json(kp::check_support(kp::gpu_database::builtin(), r)));
      },
      py::arg("name"), py::arg("cuda") = py::none(), py::arg("cudnn") = py::none(),
      py::arg("pytorch") = py::none(), py::arg("wheel") = py::none(),
      py::arg("driver") = py::none(),
      "keel gpus support NAME --cuda VER | --cudnn VER | --pytorch VER --wheel cuXYZ | "
      "--driver BRANCH --json.");
  m.def(
      "pick",
      [](std::optional<double> budget, const std::vector<std::string>& need, std::int64_t top,
         std::optional<std::string> prices, const std::string& by) {
        kp::pick_request r;
        r.budget_usd = budget;
        r.needs = need;
        r.top = top;
        r.prices = prices.value_or("");
        r.by = by;
        const kp::pick_result result = kp::pick_gpus(kp::gpu_database::builtin(), r);
        return to_python(kp::to_json(result, static_cast<std::size_t>(r.top)));
      },
      py::arg("budget") = py::none(), py::arg("need") = std::vector<std::string>{},
      py::arg("top") = 5, py::arg("prices") = py::none(), py::arg("by") = "rate",
      "keel gpus pick --json: the GPUs that fit a budget and needs, ranked.");
}

}  // namespace keel::python
