#include "keel/random/curand_reference.hpp"

#include "keel/core/error.hpp"
#include "tables/curand_library.hpp"

namespace keel::random {

// The subset of curand.h used here, declared by signature (cuRAND's enums are ints and its
// generator handle is an opaque pointer), so that no CUDA header is needed.
struct curand_reference::api {
  using gen = void*;
  int (*create_host)(gen*, int);
  int (*destroy)(gen);
  int (*set_seed)(gen, unsigned long long);
  int (*set_offset)(gen, unsigned long long);
  int (*set_ordering)(gen, int);
  int (*set_dimensions)(gen, unsigned int);
  int (*generate)(gen, unsigned int*, std::size_t);
  int (*uniform)(gen, float*, std::size_t);
  int (*uniform_double)(gen, double*, std::size_t);
  int (*normal)(gen, float*, std::size_t, float, float);
  int (*normal_double)(gen, double*, std::size_t, double, double);
  int (*log_normal)(gen, float*, std::size_t, float, float);
  int (*log_normal_double)(gen, double*, std::size_t, double, double);
  int (*poisson)(gen, unsigned int*, std::size_t, double);
  int (*get_version)(int*);
  int (*direction_vectors32)(unsigned (**)[32], int);
  int (*scramble_constants32)(unsigned**);
};

namespace {

// Generators exist only once get() has loaded the API, so this is set before any use.
const curand_reference::api* g_api = nullptr;

template <class F>
bool bind(const detail::curand_library& lib, const char* name, F& fn) {
  fn = lib.symbol<F>(name);
  return fn != nullptr;
}

curand_reference::api* load_api(const detail::curand_library& lib) {
  static curand_reference::api a;
  bool ok = bind(lib, "curandCreateGeneratorHost", a.create_host) &&
            bind(lib, "curandDestroyGenerator", a.destroy) &&
            bind(lib, "curandSetPseudoRandomGeneratorSeed", a.set_seed) &&
            bind(lib, "curandSetGeneratorOffset", a.set_offset) &&
            bind(lib, "curandSetGeneratorOrdering", a.set_ordering) &&
            bind(lib, "curandSetQuasiRandomGeneratorDimensions", a.set_dimensions) &&
            bind(lib, "curandGenerate", a.generate) &&
            bind(lib, "curandGenerateUniform", a.uniform) &&
            bind(lib, "curandGenerateUniformDouble", a.uniform_double) &&
            bind(lib, "curandGenerateNormal", a.normal) &&
            bind(lib, "curandGenerateNormalDouble", a.normal_double) &&
            bind(lib, "curandGenerateLogNormal", a.log_normal) &&
            bind(lib, "curandGenerateLogNormalDouble", a.log_normal_double) &&
            bind(lib, "curandGeneratePoisson", a.poisson) &&
            bind(lib, "curandGetVersion", a.get_version) &&
            bind(lib, "curandGetDirectionVectors32", a.direction_vectors32) &&
            bind(lib, "curandGetScrambleConstants32", a.scramble_constants32);
  return ok ? &a : nullptr;
}

}  // namespace

curand_reference::curand_reference() {
  const auto& lib = detail::curand_library::get();
  description_ = lib.description();
  if (!lib.found()) return;
  if (const api* a = load_api(lib)) {
    api_ = a;
    g_api = a;
    a->get_version(&version_);
  } else {
    description_ += ": not every cuRAND host function was found";
  }
}

const curand_reference& curand_reference::get() {
  static const curand_reference instance;
  return instance;
}

status curand_reference::create_host_generator(rng_type type,
                                               std::unique_ptr<curand_generator>& out) const {
  if (!api_) throw backend_error("keel::random: " + description_);
  void* handle = nullptr;
  const int st = api_->create_host(&handle, static_cast<int>(type));
  if (st == 0) out.reset(new curand_generator(handle));
  return static_cast<status>(st);
}

namespace {
status st(int s) { return static_cast<status>(s); }
}  // namespace

status curand_reference::sobol32_direction_vectors(bool scrambled,
                                                   const std::uint32_t*& vectors) const {
  if (!api_) throw backend_error("keel::random: " + description_);
  unsigned(*v)[32] = nullptr;
  // CURAND_DIRECTION_VECTORS_32_JOEKUO6 = 101, CURAND_SCRAMBLED_DIRECTION_VECTORS_32_JOEKUO6 = 102.
  const int s = api_->direction_vectors32(&v, scrambled ? 102 : 101);
  vectors = v ? &v[0][0] : nullptr;
  return st(s);
}

status curand_reference::sobol32_scramble_constants(const std::uint32_t*& constants) const {
  if (!api_) throw backend_error("keel::random: " + description_);
  unsigned* c = nullptr;
  const int s = api_->scramble_constants32(&c);
  constants = c;
  return st(s);
}

curand_generator::~curand_generator() { g_api->destroy(handle_); }
status curand_generator::set_seed(std::uint64_t seed) { return st(g_api->set_seed(handle_, seed)); }
status curand_generator::set_offset(std::uint64_t offset) {
  return st(g_api->set_offset(handle_, offset));
}
status curand_generator::set_ordering(ordering order) {
  return st(g_api->set_ordering(handle_, static_cast<int>(order)));
}
status curand_generator::set_dimensions(std::uint32_t d) {
  return st(g_api->set_dimensions(handle_, d));
}
status curand_generator::generate(std::uint32_t* out, std::size_t n) {
  return st(g_api->generate(handle_, out, n));
}
status curand_generator::generate_uniform(float* out, std::size_t n) {
  return st(g_api->uniform(handle_, out, n));
}
status curand_generator::generate_uniform_double(double* out, std::size_t n) {
  return st(g_api->uniform_double(handle_, out, n));
}
status curand_generator::generate_normal(float* out, std::size_t n, float mean, float sd) {
  return st(g_api->normal(handle_, out, n, mean, sd));
}
status curand_generator::generate_normal_double(double* out, std::size_t n, double mean,
                                                double sd) {
  return st(g_api->normal_double(handle_, out, n, mean, sd));
}
status curand_generator::generate_log_normal(float* out, std::size_t n, float mean, float sd) {
  return st(g_api->log_normal(handle_, out, n, mean, sd));
}
status curand_generator::generate_log_normal_double(double* out, std::size_t n, double mean,
                                                    double sd) {
  return st(g_api->log_normal_double(handle_, out, n, mean, sd));
}
status curand_generator::generate_poisson(std::uint32_t* out, std::size_t n, double lambda) {
  return st(g_api->poisson(handle_, out, n, lambda));
}

}  // namespace keel::random
