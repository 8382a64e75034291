// The pieces the keel extension's source files share: JSON documents as Python objects, and
// the registration function of each submodule.
#pragma once

#include <pybind11/pybind11.h>
#include <nlohmann/json.hpp>

namespace keel::python {

namespace py = pybind11;

// A JSON document as the plain Python value json.loads would give (dict, list, str, int,
// float, bool, None); integers keep all 64 bits.
py::object to_python(const nlohmann::json& j);
// The same for an ordered document (keys in the order the library wrote them: keel kv's).
py::object to_python(const nlohmann::ordered_json& j);

void register_errors(py::module_& m);
void register_mem(py::module_& m);
void register_rand(py::module_& m);
void register_kv(py::module_& m);
void register_perf(py::module_& m);
void register_gpus(py::module_& m);
void register_comm(py::module_& m);

}  // namespace keel::python
