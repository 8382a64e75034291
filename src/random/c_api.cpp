#include "keel/random/c_api.h"

#include <memory>
#include <new>

#include "keel/random/generator.hpp"

struct keel_curandGenerator_st {
  std::unique_ptr<keel::random::generator> g;
};

namespace {

using keel::random::status;

keel_curandStatus_t to_c(status s) { return static_cast<keel_curandStatus_t>(s); }

template <class F>
keel_curandStatus_t guarded(keel_curandGenerator_t generator, F&& f) {
  if (generator == nullptr || !generator->g) return KEEL_CURAND_STATUS_NOT_INITIALIZED;
  try {
    return to_c(f(*generator->g));
  } catch (const std::bad_alloc&) {
    return KEEL_CURAND_STATUS_ALLOCATION_FAILED;
  } catch (...) {
    return KEEL_CURAND_STATUS_INTERNAL_ERROR;
  }
}

}  // namespace

extern "C" {

keel_curandStatus_t keel_curandCreateGeneratorHost(keel_curandGenerator_t* generator,
                                                   keel_curandRngType_t rng_type) {
  if (generator == nullptr) return KEEL_CURAND_STATUS_NOT_INITIALIZED;
  try {
    auto handle = std::make_unique<keel_curandGenerator_st>();
    const status s =
        keel::random::generator::create(static_cast<keel::random::rng_type>(rng_type), handle->g);
    if (s != status::success) return to_c(s);
    *generator = handle.release();
    return KEEL_CURAND_STATUS_SUCCESS;
  } catch (const std::bad_alloc&) {
    return KEEL_CURAND_STATUS_ALLOCATION_FAILED;
  } catch (...) {
    return KEEL_CURAND_STATUS_INTERNAL_ERROR;
  }
}

keel_curandStatus_t keel_curandCreateGenerator(keel_curandGenerator_t* generator,
                                               keel_curandRngType_t rng_type) {
  return keel_curandCreateGeneratorHost(generator, rng_type);
}

keel_curandStatus_t keel_curandDestroyGenerator(keel_curandGenerator_t generator) {
  if (generator == nullptr) return KEEL_CURAND_STATUS_NOT_INITIALIZED;
  delete generator;
  return KEEL_CURAND_STATUS_SUCCESS;
}

keel_curandStatus_t keel_curandGetVersion(int* version) {
  if (version == nullptr) return KEEL_CURAND_STATUS_OUT_OF_RANGE;
  *version = 10400;  // the libcurand release whose output keel reproduces
  return KEEL_CURAND_STATUS_SUCCESS;
}

keel_curandStatus_t keel_curandSetPseudoRandomGeneratorSeed(keel_curandGenerator_t g,
                                                            unsigned long long seed) {
  return guarded(g, [&](auto& x) { return x.set_seed(seed); });
}
keel_curandStatus_t keel_curandSetGeneratorOffset(keel_curandGenerator_t g,
                                                  unsigned long long offset) {
  return guarded(g, [&](auto& x) { return x.set_offset(offset); });
}
keel_curandStatus_t keel_curandSetGeneratorOrdering(keel_curandGenerator_t g,
                                                    keel_curandOrdering_t order) {
  return guarded(
      g, [&](auto& x) { return x.set_ordering(static_cast<keel::random::ordering>(order)); });
}
keel_curandStatus_t keel_curandSetQuasiRandomGeneratorDimensions(keel_curandGenerator_t g,
                                                                 unsigned int d) {
  return guarded(g, [&](auto& x) { return x.set_dimensions(d); });
}
keel_curandStatus_t keel_curandGenerate(keel_curandGenerator_t g, unsigned int* out, size_t n) {
  return guarded(g, [&](auto& x) { return x.generate(out, n); });
}
keel_curandStatus_t keel_curandGenerateUniform(keel_curandGenerator_t g, float* out, size_t n) {
  return guarded(g, [&](auto& x) { return x.generate_uniform(out, n); });
}
keel_curandStatus_t keel_curandGenerateUniformDouble(keel_curandGenerator_t g, double* out,
                                                     size_t n) {
  return guarded(g, [&](auto& x) { return x.generate_uniform_double(out, n); });
}
keel_curandStatus_t keel_curandGenerateNormal(keel_curandGenerator_t g, float* out, size_t n,
                                              float mean, float sd) {
  return guarded(g, [&](auto& x) { return x.generate_normal(out, n, mean, sd); });
}
keel_curandStatus_t keel_curandGenerateNormalDouble(keel_curandGenerator_t g, double* out, size_t n,
                                                    double mean, double sd) {
  return guarded(g, [&](auto& x) { return x.generate_normal_double(out, n, mean, sd); });
}
keel_curandStatus_t keel_curandGenerateLogNormal(keel_curandGenerator_t g, float* out, size_t n,
                                                 float mean, float sd) {
  return guarded(g, [&](auto& x) { return x.generate_log_normal(out, n, mean, sd); });
}
keel_curandStatus_t keel_curandGenerateLogNormalDouble(keel_curandGenerator_t g, double* out,
                                                       size_t n, double mean, double sd) {
  return guarded(g, [&](auto& x) { return x.generate_log_normal_double(out, n, mean, sd); });
}
keel_curandStatus_t keel_curandGeneratePoisson(keel_curandGenerator_t g, unsigned int* out,
                                               size_t n, double lambda) {
  return guarded(g, [&](auto& x) { return x.generate_poisson(out, n, lambda); });
}

}  // extern "C"
