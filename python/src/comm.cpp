// keel._keel.comm: keel::comm::communicator on numpy arrays. A Communicator is made from the
// launcher's environment (communicator::from_env: keel comm launch, torchrun's env://,
// mpirun, srun) and runs every collective on C-contiguous numpy arrays of a dtype keel knows
// (float32, float64, float16, int32, int64, uint8; bfloat16 as uint16 with dtype="bf16"),
// in place where the C++ API allows, with the GIL released. Arrays that are not contiguous,
// are read-only where they are written, have the wrong dtype or size raise
// keel.InvalidArgument naming the rank; so does any call after close(). keel::comm's errors
// become keel.CommTimeoutError (a TimeoutError), keel.PeerError or keel.CommError with the
// C++ message (which names the collective, its sequence number and the rank) and the
// attributes collective, seq and rank. One thread at a time per communicator, as in C++: a
// call from a second thread while one runs raises keel.InvalidArgument instead of racing.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <optional>
#include <string>

#include "bindings.hpp"
#include "keel/comm/communicator.hpp"
#include "keel/comm/environment.hpp"
#include "keel/comm/launcher.hpp"
#include "keel/core/error.hpp"

namespace keel::python {
namespace {

namespace kc = keel::comm;

// keel::comm's error as the keel Python class, with collective/seq/rank attributes.
[[noreturn]] void raise_comm(const char* class_name, const kc::comm_error& e) {
  py::object type = py::module_::import("keel._keel").attr(class_name);
  py::object value = type(py::str(e.what()));
  value.attr("collective") = py::str(e.collective());
  value.attr("seq") = py::int_(e.seq());
  value.attr("rank") = py::int_(e.rank());
  PyErr_SetObject(type.ptr(), value.ptr());
  throw py::error_already_set();
}

// Runs f without the GIL; keel::comm errors come back as keel's Python classes (with their
// attributes), everything else through the module's translators.
template <class F>
void without_gil(F&& f) {
  std::exception_ptr err;
  {
    py::gil_scoped_release release;
    try {
      f();
    } catch (...) {
      err = std::current_exception();
    }
  }
  if (!err) return;
  try {
    std::rethrow_exception(err);
  } catch (const kc::timeout_error& e) {
    raise_comm("CommTimeoutError", e);
  } catch (const kc::peer_error& e) {
    raise_comm("PeerError", e);
  } catch (const kc::comm_error& e) {
    raise_comm("CommError", e);
  }
}

std::string dtype_name(const py::dtype& d) { return d.attr("name").cast<std::string>(); }

// A new writable array of n elements (numpy.empty: pybind11's py::array(dtype, shape) made
// read-only arrays and unbalanced the dtype's reference count with this numpy).
py::array fresh(const py::dtype& d, py::ssize_t n) {
  return py::module_::import("numpy").attr("empty")(n, d).cast<py::array>();
}

// The keel dtype of an array: its own, or `as` ("bf16" for uint16 arrays holding bfloat16).
// `where` prefixes messages ("keel.comm rank 1 of 4: allreduce: ").
kc::dtype keel_dtype(const py::array& a, const std::optional<std::string>& as,
                     const std::string& where) {
  if (as) {
    const kc::dtype t = kc::parse_dtype(*as);
    if (a.itemsize() != static_cast<py::ssize_t>(kc::dtype_size(t))) {
      throw invalid_argument(where + "dtype " + *as + " needs " +
                             std::to_string(kc::dtype_size(t)) + "-byte elements, the array has " +
                             dtype_name(a.dtype()));
    }
    return t;
  }
  const py::dtype d = a.dtype();
  if (d.is(py::dtype::of<float>())) return kc::dtype::f32;
  if (d.is(py::dtype::of<double>())) return kc::dtype::f64;
  if (d.is(py::dtype("float16"))) return kc::dtype::f16;
  if (d.is(py::dtype::of<std::int32_t>())) return kc::dtype::i32;
  if (d.is(py::dtype::of<std::int64_t>())) return kc::dtype::i64;
  if (d.is(py::dtype::of<std::uint8_t>())) return kc::dtype::u8;
  throw invalid_argument(where + "arrays of dtype " + dtype_name(d) +
                         " are not supported (float32, float64, float16, int32, int64, uint8; "
                         "bfloat16 as uint16 with dtype='bf16')");
}

kc::algorithm algo_of(const std::optional<std::string>& a) {
  return a ? kc::parse_algorithm(*a) : kc::algorithm::auto_select;
}

kc::duration timeout_of(std::optional<double> seconds) {
  if (!seconds) return kc::duration(0);
  if (!(*seconds > 0) || *seconds > 1e7) {
    throw invalid_argument("timeout " + std::to_string(*seconds) +
                           " s: expected a positive number of seconds");
  }
  return kc::duration(std::max<std::int64_t>(1, static_cast<std::int64_t>(*seconds * 1000)));
}

class py_communicator {
 public:
  explicit py_communicator(std::unique_ptr<kc::communicator> c)
      : comm_(std::move(c)), rank_(comm_->rank()), size_(comm_->size()) {}

  static std::unique_ptr<py_communicator> from_env(std::optional<double> timeout,
                                                   std::optional<std::string> algo,
                                                   std::optional<std::string> transport) {
    kc::options o;
    if (timeout) o.timeout = timeout_of(timeout);
    if (algo) o.algo = kc::parse_algorithm(*algo);
    if (transport) o.transport_kind = kc::parse_transport(*transport);
    std::unique_ptr<kc::communicator> c;
    without_gil([&] { c = kc::communicator::from_env(o); });
    return std::make_unique<py_communicator>(std::move(c));
  }

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool closed() const { return comm_ == nullptr; }
  std::uint64_t seq() { return live("seq").seq(); }
  std::string transport_to(int peer) {
    return std::string(kc::to_string(live("transport_to").transport_to(peer)));
  }
  py::dict model() {
    const kc::cost_model& m = live("model").model();
    py::dict d;
    d["alpha_shm"] = m.alpha_shm;
    d["beta_shm"] = m.beta_shm;
    d["alpha_tcp"] = m.alpha_tcp;
    d["beta_tcp"] = m.beta_tcp;
    d["gamma"] = m.gamma;
    d["measured"] = m.measured;
    return d;
  }
  py::tuple choose(const std::string& coll, std::size_t bytes, const std::string& algo) {
    const kc::choice c =
        live("choose").choose(kc::parse_collective(coll), bytes, kc::parse_algorithm(algo));
    return py::make_tuple(std::string(kc::to_string(c.algo)), c.why);
  }

  void close() {
    if (!comm_) return;
    guard g(*this, "close");
    std::unique_ptr<kc::communicator> c = std::move(comm_);
    py::gil_scoped_release release;
    c.reset();
  }

  py::array allreduce(py::array x, const std::string& op, const py::object& out,
                      std::optional<std::string> dtype, std::optional<std::string> algo,
                      std::optional<double> timeout) {
    guard g(*this, "allreduce");
    const kc::dtype t =
        keel_dtype(checked(x, "allreduce", "the input", false), dtype, where("allreduce"));
    py::array y = out.is_none() ? x : output(out, "allreduce", x.size(), x.dtype());
    const kc::reduce_op r = reduce_op_of(op, "allreduce");
    if (out.is_none()) writable(x, "allreduce", "the array (in place; pass out= otherwise)");
    run(
        [&](kc::communicator& c, kc::call_options o) {
          c.allreduce(x.data(), y.mutable_data(), static_cast<std::size_t>(x.size()), t, r, o);
        },
        algo, timeout);
    return y;
  }

  py::object reduce(py::array x, int root, const std::string& op, const py::object& out,
                    std::optional<std::string> dtype, std::optional<std::string> algo,
                    std::optional<double> timeout) {
    guard g(*this, "reduce");
    check_rank(root, "reduce", "root");
    const kc::dtype t =
        keel_dtype(checked(x, "reduce", "the input", false), dtype, where("reduce"));
    const kc::reduce_op r = reduce_op_of(op, "reduce");
    const bool is_root = rank_ == root;
    py::object result = py::none();
    void* dst = nullptr;
    if (is_root) {
      py::array y = out.is_none() ? x : output(out, "reduce", x.size(), x.dtype());
      if (out.is_none())
        writable(x, "reduce", "the array on the root (in place; pass out= otherwise)");
      dst = y.mutable_data();
      result = y;
    }
    run(
        [&](kc::communicator& c, kc::call_options o) {
          c.reduce(x.data(), dst, static_cast<std::size_t>(x.size()), t, r, root, o);
        },
        algo, timeout);
    return result;
  }

  py::array broadcast(py::array x, int root, std::optional<std::string> dtype,
                      std::optional<std::string> algo, std::optional<double> timeout) {
    guard g(*this, "broadcast");
    check_rank(root, "broadcast", "root");
    const kc::dtype t =
        keel_dtype(checked(x, "broadcast", "the array", rank_ != root), dtype, where("broadcast"));
    void* dst = rank_ == root ? const_cast<void*>(x.data()) : x.mutable_data();
    run(
        [&](kc::communicator& c, kc::call_options o) {
          c.broadcast(x.data(), dst, static_cast<std::size_t>(x.size()), t, root, o);
        },
        algo, timeout);
    return x;
  }

  py::array reduce_scatter(py::array x, const std::string& op, const py::object& out,
                           std::optional<std::string> dtype, std::optional<std::string> algo,
                           std::optional<double> timeout) {
    guard g(*this, "reduce_scatter");
    const kc::dtype t = keel_dtype(checked(x, "reduce_scatter", "the input", false), dtype,
                                   where("reduce_scatter"));
    const py::ssize_t count = divided(x, "reduce_scatter");
    const kc::reduce_op r = reduce_op_of(op, "reduce_scatter");
    py::array y =
        out.is_none() ? fresh(x.dtype(), count) : output(out, "reduce_scatter", count, x.dtype());
    run(
        [&](kc::communicator& c, kc::call_options o) {
          c.reduce_scatter(x.data(), y.mutable_data(), static_cast<std::size_t>(count), t, r, o);
        },
        algo, timeout);
    return y;
  }

  py::array allgather(py::array x, const py::object& out, std::optional<std::string> dtype,
                      std::optional<std::string> algo, std::optional<double> timeout) {
    guard g(*this, "allgather");
    const kc::dtype t =
        keel_dtype(checked(x, "allgather", "the input", false), dtype, where("allgather"));
    const py::ssize_t total = x.size() * size_;
    py::array y =
        out.is_none() ? fresh(x.dtype(), total) : output(out, "allgather", total, x.dtype());
    run(
        [&](kc::communicator& c, kc::call_options o) {
          c.allgather(x.data(), y.mutable_data(), static_cast<std::size_t>(x.size()), t, o);
        },
        algo, timeout);
    return y;
  }

  py::array alltoall(py::array x, const py::object& out, std::optional<std::string> dtype,
                     std::optional<std::string> algo, std::optional<double> timeout) {
    guard g(*this, "alltoall");
    const kc::dtype t =
        keel_dtype(checked(x, "alltoall", "the input", false), dtype, where("alltoall"));
    const py::ssize_t count = divided(x, "alltoall");
    py::array y =
        out.is_none() ? fresh(x.dtype(), x.size()) : output(out, "alltoall", x.size(), x.dtype());
    if (y.data() == x.data() && x.size() > 0) {
      throw invalid_argument(where("alltoall") +
                             "out must not be the input (alltoall is not in place)");
    }
    run(
        [&](kc::communicator& c, kc::call_options o) {
          c.alltoall(x.data(), y.mutable_data(), static_cast<std::size_t>(count), t, o);
        },
        algo, timeout);
    return y;
  }

  void send(py::array x, int peer, std::optional<std::string> dtype,
            std::optional<double> timeout) {
    guard g(*this, "send");
    check_peer(peer, "send");
    const kc::dtype t = keel_dtype(checked(x, "send", "the array", false), dtype, where("send"));
    run(
        [&](kc::communicator& c, kc::call_options o) {
          c.send(x.data(), static_cast<std::size_t>(x.size()), t, peer, o);
        },
        std::nullopt, timeout);
  }

  py::array recv(py::array out, int peer, std::optional<std::string> dtype,
                 std::optional<double> timeout) {
    guard g(*this, "recv");
    check_peer(peer, "recv");
    const kc::dtype t = keel_dtype(checked(out, "recv", "out", true), dtype, where("recv"));
    run(
        [&](kc::communicator& c, kc::call_options o) {
          c.recv(out.mutable_data(), static_cast<std::size_t>(out.size()), t, peer, o);
        },
        std::nullopt, timeout);
    return out;
  }

  void barrier(std::optional<double> timeout) {
    guard g(*this, "barrier");
    run([&](kc::communicator& c, kc::call_options o) { c.barrier(o); }, std::nullopt, timeout);
  }

  std::string repr() const {
    return "<keel.comm.Communicator rank " + std::to_string(rank_) + " of " +
           std::to_string(size_) + (comm_ ? "" : ", closed") + ">";
  }

 private:
  // One call at a time: a second thread gets an error instead of a data race.
  class guard {
   public:
    guard(py_communicator& c, const char* what) : c_(c) {
      if (c_.busy_.exchange(true)) {
        throw invalid_argument(c_.where(what) +
                               "another thread is using this communicator (one call at a time)");
      }
      c_.op_ = what;
    }
    ~guard() { c_.busy_ = false; }
    guard(const guard&) = delete;
    guard& operator=(const guard&) = delete;

   private:
    py_communicator& c_;
  };

  std::string where(const char* what) const {
    return "keel.comm rank " + std::to_string(rank_) + " of " + std::to_string(size_) + ": " +
           what + ": ";
  }

  // The reduction named `op`, or keel::invalid_argument naming the rank.
  kc::reduce_op reduce_op_of(const std::string& op, const char* what) const {
    try {
      return kc::parse_reduce_op(op);
    } catch (const invalid_argument& e) {
      throw invalid_argument(where(what) + e.what());
    }
  }

  kc::communicator& live(const char* what) {
    if (!comm_) throw invalid_argument(where(what) + "the communicator is closed");
    return *comm_;
  }

  template <class F>
  void run(F&& f, const std::optional<std::string>& algo, std::optional<double> timeout) {
    kc::call_options o;
    try {
      o.algo = algo_of(algo);
      o.timeout = timeout_of(timeout);
    } catch (const invalid_argument& e) {
      throw invalid_argument(where(op_) + e.what());
    }
    kc::communicator& c = live(op_);
    without_gil([&] { f(c, o); });
  }

  const py::array& checked(const py::array& a, const char* what, const char* name, bool write) {
    live(what);
    if (!(a.flags() & py::array::c_style)) {
      throw invalid_argument(where(what) + name + " is not C-contiguous");
    }
    if (write) writable(a, what, name);
    return a;
  }
  void writable(const py::array& a, const char* what, const char* name) {
    if (!a.writeable()) throw invalid_argument(where(what) + name + " is read-only");
  }

  py::array output(const py::object& out, const char* what, py::ssize_t size,
                   const py::dtype& dtype) {
    if (!py::isinstance<py::array>(out)) {
      throw invalid_argument(where(what) + "out must be a numpy array");
    }
    py::array y = py::reinterpret_borrow<py::array>(out);
    checked(y, what, "out", true);
    if (!y.dtype().is(dtype)) {
      throw invalid_argument(where(what) + "out has dtype " + dtype_name(y.dtype()) +
                             ", the input " + dtype_name(dtype));
    }
    if (y.size() != size) {
      throw invalid_argument(where(what) + "out has " + std::to_string(y.size()) +
                             " elements, expected " + std::to_string(size));
    }
    return y;
  }

  py::ssize_t divided(const py::array& x, const char* what) {
    if (x.size() % size_ != 0) {
      throw invalid_argument(where(what) + "the input's " + std::to_string(x.size()) +
                             " elements do not divide into " + std::to_string(size_) +
                             " equal blocks");
    }
    return x.size() / size_;
  }

  void check_rank(int r, const char* what, const char* name) {
    if (r < 0 || r >= size_) {
      throw invalid_argument(where(what) + name + " " + std::to_string(r) + " is not a rank of " +
                             std::to_string(size_));
    }
  }
  void check_peer(int peer, const char* what) {
    check_rank(peer, what, "peer");
    if (peer == rank_) throw invalid_argument(where(what) + "peer is this rank itself");
  }

  std::unique_ptr<kc::communicator> comm_;
  int rank_ = 0;
  int size_ = 1;
  const char* op_ = "call";  // the operation under the guard, for messages
  std::atomic<bool> busy_{false};
};

py::dict launch_env_dict() {
  const kc::launch_env e = kc::detect_launch_env();
  py::dict d;
  d["rank"] = e.rank;
  d["size"] = e.size;
  d["local_rank"] = e.local_rank;
  d["local_size"] = e.local_size;
  d["master_addr"] = e.master_addr;
  d["master_port"] = e.master_port;
  d["launcher"] = e.launcher;
  d["store_dir"] = e.store_dir;
  return d;
}

}  // namespace

void register_comm(py::module_& m) {
  using pc = py_communicator;
  constexpr const char* t = "timeout";
  py::class_<pc>(m, "Communicator",
                 "keel::comm::communicator: collectives among the ranks of a job, on numpy "
                 "arrays.")
      .def_static("from_env", &pc::from_env, py::arg("timeout") = py::none(),
                  py::arg("algo") = py::none(), py::arg("transport") = py::none(),
                  "Collective: the launcher's environment (keel comm launch, torchrun/env://, "
                  "mpirun, srun) and a store made for it, as communicator::from_env.")
      .def_property_readonly("rank", &pc::rank)
      .def_property_readonly("size", &pc::size)
      .def_property_readonly("closed", &pc::closed)
      .def_property_readonly("seq", &pc::seq, "Collectives issued so far.")
      .def_property_readonly("model", &pc::model, "The cost model auto uses (seconds, s/byte).")
      .def("transport_to", &pc::transport_to, py::arg("peer"), "'shm' or 'tcp'.")
      .def("choose", &pc::choose, py::arg("collective"), py::arg("nbytes"),
           py::arg("algo") = "auto", "(algorithm, why) auto (or an override) picks.")
      .def("close", &pc::close, "Closes the communicator (peers see a PeerError); idempotent.")
      .def("allreduce", &pc::allreduce, py::arg("x"), py::arg("op") = "sum",
           py::arg("out") = py::none(), py::arg("dtype") = py::none(), py::arg("algo") = py::none(),
           py::arg(t) = py::none(),
           "Reduces x over all ranks, in place (or into out); returns the result.")
      .def("reduce", &pc::reduce, py::arg("x"), py::arg("root") = 0, py::arg("op") = "sum",
           py::arg("out") = py::none(), py::arg("dtype") = py::none(), py::arg("algo") = py::none(),
           py::arg(t) = py::none(),
           "Reduces x onto root, in place there (or into out); returns it on root, None elsewhere.")
      .def("broadcast", &pc::broadcast, py::arg("x"), py::arg("root") = 0,
           py::arg("dtype") = py::none(), py::arg("algo") = py::none(), py::arg(t) = py::none(),
           "Root's x into every rank's x, in place; returns x.")
      .def("reduce_scatter", &pc::reduce_scatter, py::arg("x"), py::arg("op") = "sum",
           py::arg("out") = py::none(), py::arg("dtype") = py::none(), py::arg("algo") = py::none(),
           py::arg(t) = py::none(),
           "x holds size blocks; returns block `rank` of their reduction (out may be x's own "
           "block: in place).")
      .def("allgather", &pc::allgather, py::arg("x"), py::arg("out") = py::none(),
           py::arg("dtype") = py::none(), py::arg("algo") = py::none(), py::arg(t) = py::none(),
           "Every rank's x, concatenated in rank order (out may hold x as block `rank`: in "
           "place).")
      .def("alltoall", &pc::alltoall, py::arg("x"), py::arg("out") = py::none(),
           py::arg("dtype") = py::none(), py::arg("algo") = py::none(), py::arg(t) = py::none(),
           "Block p of x goes to rank p; block p of the result came from rank p.")
      .def("send", &pc::send, py::arg("x"), py::arg("peer"), py::arg("dtype") = py::none(),
           py::arg(t) = py::none(), "Sends x to peer (ordered with the collectives).")
      .def("recv", &pc::recv, py::arg("out"), py::arg("peer"), py::arg("dtype") = py::none(),
           py::arg(t) = py::none(), "Receives into out from peer; returns out.")
      .def("barrier", &pc::barrier, py::arg(t) = py::none())
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__",
           [](pc& self, const py::args&) {
             self.close();
             return false;
           })
      .def("__repr__", &pc::repr);
  m.def("launch_env", &launch_env_dict,
        "Who this process is by the launcher's variables (environment.hpp), without connecting.");
  m.def("parse_rank_list", &keel::comm::parse_rank_list, py::arg("text"),
        "Rank counts from '1-4' or '2,4,8', as keel comm verify -N reads them.");
}

}  // namespace keel::python
