// keel's C++ error classes as Python exceptions under keel.Error, each also deriving from the
// standard Python class a caller would catch: ParseError and InvalidArgument are ValueErrors,
// IOError an OSError, OutOfMemoryError a MemoryError, comm's TimeoutError a TimeoutError.
#include <Python.h>

#include <exception>

#include "bindings.hpp"
#include "keel/comm/error.hpp"
#include "keel/core/error.hpp"

namespace keel::python {
namespace {

PyObject* make(py::module_& m, const char* name, std::initializer_list<PyObject*> bases,
               const char* doc) {
  PyObject* tuple = PyTuple_New(static_cast<Py_ssize_t>(bases.size()));
  Py_ssize_t i = 0;
  for (PyObject* b : bases) {
    Py_INCREF(b);
    PyTuple_SET_ITEM(tuple, i++, b);
  }
  const std::string qualified = std::string("keel.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, tuple, nullptr);
  Py_DECREF(tuple);
  if (type == nullptr) throw py::error_already_set();
  m.attr(name) = py::handle(type);
  return type;
}

}  // namespace

void register_errors(py::module_& m) {
  static PyObject* error = make(m, "Error", {PyExc_Exception}, "Base of every keel error.");
  static PyObject* invalid =
      make(m, "InvalidArgument", {error, PyExc_ValueError}, "A bad argument or option.");
  static PyObject* parse =
      make(m, "ParseError", {error, PyExc_ValueError}, "A malformed input file.");
  static PyObject* io =
      make(m, "IOError", {error, PyExc_OSError}, "A file that cannot be read or written.");
  static PyObject* backend =
      make(m, "BackendError", {error, PyExc_RuntimeError}, "A device or library failed.");
  static PyObject* oom =
      make(m, "OutOfMemoryError", {error, PyExc_MemoryError}, "Out of (device) memory.");
  static PyObject* comm = make(m, "CommError", {error, PyExc_RuntimeError}, "A collective failed.");
  static PyObject* timeout =
      make(m, "CommTimeoutError", {comm, PyExc_TimeoutError}, "A collective timed out.");
  static PyObject* peer = make(m, "PeerError", {comm}, "A peer died or broke the protocol.");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const keel::comm::timeout_error& e) {
      PyErr_SetString(timeout, e.what());
    } catch (const keel::comm::peer_error& e) {
      PyErr_SetString(peer, e.what());
    } catch (const keel::comm::comm_error& e) {
      PyErr_SetString(comm, e.what());
    } catch (const keel::parse_error& e) {
      PyErr_SetString(parse, e.what());
    } catch (const keel::invalid_argument& e) {
      PyErr_SetString(invalid, e.what());
    } catch (const keel::io_error& e) {
      PyErr_SetString(io, e.what());
    } catch (const keel::backend_error& e) {
      PyErr_SetString(backend, e.what());
    } catch (const keel::out_of_memory& e) {
      PyErr_SetString(oom, e.what());
    }
  });
}

}  // namespace keel::python
