// keel._keel.rand: cuRAND's host generators on numpy arrays. A Generator keeps its position
// across calls exactly as a cuRAND generator does; each call fills a new array or `out` (a
// writable, C-contiguous array of the right dtype) with the GIL released.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>

#include "bindings.hpp"
#include "keel/core/error.hpp"
#include "keel/random/generator_config.hpp"
#include "keel/random/verify.hpp"

namespace keel::python {
namespace {

namespace kr = keel::random;

std::string name_of(const py::dtype& d) { return d.attr("name").cast<std::string>(); }

template <class T>
py::array_t<T> output(std::optional<std::int64_t> n, const py::object& out, const char* what) {
  if (out.is_none()) {
    if (!n) throw invalid_argument(std::string(what) + ": give n or out");
    if (*n < 0)
      throw invalid_argument(std::string(what) + ": n " + std::to_string(*n) + " is negative");
    return py::array_t<T>(static_cast<py::ssize_t>(*n));
  }
  if (!py::isinstance<py::array>(out))
    throw invalid_argument(std::string(what) + ": out must be a numpy array");
  py::array a = py::reinterpret_borrow<py::array>(out);
  if (!a.dtype().is(py::dtype::of<T>())) {
    throw invalid_argument(std::string(what) + ": out has dtype " + name_of(a.dtype()) +
                           ", expected " + name_of(py::dtype::of<T>()));
  }
  if (!a.writeable()) throw invalid_argument(std::string(what) + ": out is read-only");
  if (!(a.flags() & py::array::c_style))
    throw invalid_argument(std::string(what) + ": out is not C-contiguous");
  if (n && *n != a.size()) {
    throw invalid_argument(std::string(what) + ": n " + std::to_string(*n) +
                           " differs from out's size " + std::to_string(a.size()));
  }
  return py::reinterpret_borrow<py::array_t<T>>(out);
}

bool is_double(const py::object& dtype) {
  const py::dtype d = py::dtype::from_args(dtype);
  if (d.is(py::dtype::of<double>())) return true;
  if (d.is(py::dtype::of<float>())) return false;
  throw invalid_argument("dtype must be float32 or float64, not " + name_of(d));
}

class py_generator {
 public:
  py_generator(const std::string& type, std::optional<std::uint64_t> seed, std::uint64_t offset,
               const std::string& ordering, std::uint32_t dimensions, unsigned threads)
      : g_(kr::make_generator({kr::parse_rng_type(type), seed, offset, kr::parse_ordering(ordering),
                               dimensions, threads})),
        name_(type) {}

  py::array raw(std::optional<std::int64_t> n, const py::object& out) {
    auto a = output<std::uint32_t>(n, out, "raw");
    run(kr::distribution::raw, a.mutable_data(), static_cast<std::size_t>(a.size()), {});
    return a;
  }
  py::array uniform(std::optional<std::int64_t> n, const py::object& dtype, const py::object& out) {
    return real(kr::distribution::uniform, kr::distribution::uniform_double, n, dtype, out, {},
                "uniform");
  }
  py::array normal(std::optional<std::int64_t> n, double mean, double stddev,
                   const py::object& dtype, const py::object& out) {
    return real(kr::distribution::normal, kr::distribution::normal_double, n, dtype, out,
                {mean, stddev, 1.0}, "normal");
  }
  py::array log_normal(std::optional<std::int64_t> n, double mean, double stddev,
                       const py::object& dtype, const py::object& out) {
    return real(kr::distribution::log_normal, kr::distribution::log_normal_double, n, dtype, out,
                {mean, stddev, 1.0}, "log_normal");
  }
  py::array poisson(std::optional<std::int64_t> n, double lam, const py::object& out) {
    auto a = output<std::uint32_t>(n, out, "poisson");
    run(kr::distribution::poisson, a.mutable_data(), static_cast<std::size_t>(a.size()),
        {0.0, 1.0, lam});
    return a;
  }
  const std::string& name() const { return name_; }

 private:
  py::array real(kr::distribution single, kr::distribution twice, std::optional<std::int64_t> n,
                 const py::object& dtype, const py::object& out, kr::dist_params p,
                 const char* what) {
    const bool as_double =
        out.is_none() ? is_double(dtype)
                      : py::reinterpret_borrow<py::array>(out).dtype().is(py::dtype::of<double>());
    if (as_double) {
      auto a = output<double>(n, out, what);
      run(twice, a.mutable_data(), static_cast<std::size_t>(a.size()), p);
      return a;
    }
    auto a = output<float>(n, out, what);
    run(single, a.mutable_data(), static_cast<std::size_t>(a.size()), p);
    return a;
  }
  void run(kr::distribution d, void* data, std::size_t n, kr::dist_params p) {
    kr::status s;
    {
      py::gil_scoped_release release;
      s = kr::generate(g_, d, data, n, p);
    }
    kr::check_status(s, "generate");
  }

  kr::generator g_;
  std::string name_;
};

}  // namespace

void register_rand(py::module_& m) {
  py::class_<py_generator>(m, "Generator", "A cuRAND host generator, bit for bit.")
      .def(py::init<const std::string&, std::optional<std::uint64_t>, std::uint64_t,
                    const std::string&, std::uint32_t, unsigned>(),
           py::arg("type") = "philox4_32_10", py::arg("seed") = py::none(), py::arg("offset") = 0,
           py::arg("ordering") = "default", py::arg("dimensions") = 1, py::arg("threads") = 0)
      .def("raw", &py_generator::raw, py::arg("n") = py::none(), py::arg("out") = py::none(),
           "n uint32 words (curandGenerate), or fill out.")
      .def("uniform", &py_generator::uniform, py::arg("n") = py::none(),
           py::arg("dtype") = "float32", py::arg("out") = py::none(),
           "n values in (0, 1] (curandGenerateUniform[Double]): float32 or float64.")
      .def("normal", &py_generator::normal, py::arg("n") = py::none(), py::arg("mean") = 0.0,
           py::arg("stddev") = 1.0, py::arg("dtype") = "float32", py::arg("out") = py::none(),
           "n normal values (curandGenerateNormal[Double]); n even for most generators, as in "
           "cuRAND.")
      .def("log_normal", &py_generator::log_normal, py::arg("n") = py::none(),
           py::arg("mean") = 0.0, py::arg("stddev") = 1.0, py::arg("dtype") = "float32",
           py::arg("out") = py::none(), "n log-normal values (curandGenerateLogNormal[Double]).")
      .def("poisson", &py_generator::poisson, py::arg("n") = py::none(), py::arg("lam") = 1.0,
           py::arg("out") = py::none(),
           "n uint32 Poisson values of mean lam (curandGeneratePoisson).")
      .def_property_readonly("type", &py_generator::name);
  m.def("simd_level", &kr::simd_level, "The SIMD level of the fast paths: avx512, avx2 or scalar.");
}

}  // namespace keel::python
