// keel._keel — the native half of the `keel` Python package: one submodule per library
// (mem, rand, kv, perf, comm), keel's error classes, and the command line.
#include <pybind11/stl.h>

#include <iostream>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "cli.hpp"
#include "keel/core/bytes.hpp"
#include "keel/core/config.hpp"

namespace keel::python {

py::object to_python(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null:
    case nlohmann::json::value_t::discarded: return py::none();
    case nlohmann::json::value_t::boolean: return py::bool_(j.get<bool>());
    case nlohmann::json::value_t::number_integer: return py::int_(j.get<std::int64_t>());
    case nlohmann::json::value_t::number_unsigned: return py::int_(j.get<std::uint64_t>());
    case nlohmann::json::value_t::number_float: return py::float_(j.get<double>());
    case nlohmann::json::value_t::string: return py::str(j.get_ref<const std::string&>());
    case nlohmann::json::value_t::binary:
      return py::bytes(reinterpret_cast<const char*>(j.get_binary().data()), j.get_binary().size());
    case nlohmann::json::value_t::array: {
      py::list out(j.size());
      for (std::size_t i = 0; i < j.size(); ++i) out[i] = to_python(j[i]);
      return out;
    }
    case nlohmann::json::value_t::object: {
      py::dict out;
      for (const auto& [key, value] : j.items()) out[py::str(key)] = to_python(value);
      return out;
    }
  }
  return py::none();
}

py::object to_python(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::array: {
      py::list out(j.size());
      for (std::size_t i = 0; i < j.size(); ++i) out[i] = to_python(j[i]);
      return out;
    }
    case nlohmann::ordered_json::value_t::object: {
      py::dict out;  // insertion-ordered, as the document
      for (const auto& [key, value] : j.items()) out[py::str(key)] = to_python(value);
      return out;
    }
    default: return to_python(nlohmann::json(j));  // a scalar: no order to keep
  }
}

}  // namespace keel::python

PYBIND11_MODULE(_keel, m) {
  namespace kp = keel::python;
  m.doc() = "The native half of the keel package: memory, random, kv, perf and comm.";
  m.attr("__version__") = KEEL_VERSION_STRING;
  kp::register_errors(m);
  auto mem = m.def_submodule(
      "mem", "keel::memory: snapshots, replay, advice, OOM explanations, the allocator");
  kp::register_mem(mem);
  auto rand = m.def_submodule("rand", "keel::random: cuRAND's host generators, bit for bit");
  kp::register_rand(rand);
  auto kv = m.def_submodule(
      "kv", "keel::kv: request traces, keel kv replay / sweep, the KV-cache block pool");
  kp::register_kv(kv);
  auto perf = m.def_submodule(
      "perf",
      "keel::perf: roofline of kernels, LLMs and ONNX graphs (keel perf op / explain / "
      "llm / model / calibrate)");
  kp::register_perf(perf);
  auto gpus = m.def_submodule("gpus",
                              "keel::perf's GPU database: keel gpus list / show / "
                              "compare / support / pick");
  kp::register_gpus(gpus);
  auto comm = m.def_submodule(
      "comm", "keel::comm: collectives among processes on numpy arrays (Communicator.from_env)");
  kp::register_comm(comm);

  m.def("parse_size", &keel::parse_size, pybind11::arg("text"),
        "Bytes in a size such as '24GiB' or '512MB' (powers of 1024).");
  m.def("format_size", &keel::format_size, pybind11::arg("bytes"),
        "'1.39 GiB', as PyTorch prints sizes.");
  m.def(
      "cli_main",
      [](const std::vector<std::string>& args) {
        // Python and C++ write to the same descriptors: flush Python's buffers first.
        pybind11::module_::import("sys").attr("stdout").attr("flush")();
        pybind11::module_::import("sys").attr("stderr").attr("flush")();
        // Commands that start ranks start `python3 -m keel` again, not the interpreter alone.
        std::vector<std::string> program{
            pybind11::module_::import("sys").attr("executable").cast<std::string>(), "-m", "keel"};
        std::vector<std::string> storage{"keel"};
        storage.insert(storage.end(), args.begin(), args.end());
        std::vector<char*> argv;
        for (std::string& a : storage) argv.push_back(a.data());
        argv.push_back(nullptr);
        int code = 0;
        {
          pybind11::gil_scoped_release release;
          code = keel::cli::run_keel(static_cast<int>(storage.size()), argv.data(),
                                     std::move(program));
          std::cout.flush();
          std::cerr.flush();
        }
        return code;
      },
      pybind11::arg("args"),
      "Runs the keel command line on args (without the program name); returns its exit code.");
}
