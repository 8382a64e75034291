/* keel's drop-in C ABI for cuRAND's host API: every curand.h function keel implements, with a
 * keel_ prefix and the same arguments, enumerations and status codes. Generators are the
 * CPU generators of keel::random::generator (curandCreateGenerator and
 * curandCreateGeneratorHost both create one; the output pointer is host memory). One
 * generator must not be used by two threads at once; distinct generators are independent.
 * No function throws; failures are statuses. */
#ifndef KEEL_RANDOM_C_API_H
#define KEEL_RANDOM_C_API_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* cuRAND's names, prefixed: the ABI is the point. */
/* NOLINTBEGIN(readability-identifier-naming) */

typedef enum keel_curandStatus {
  KEEL_CURAND_STATUS_SUCCESS = 0,
  KEEL_CURAND_STATUS_VERSION_MISMATCH = 100,
  KEEL_CURAND_STATUS_NOT_INITIALIZED = 101,
  KEEL_CURAND_STATUS_ALLOCATION_FAILED = 102,
  KEEL_CURAND_STATUS_TYPE_ERROR = 103,
  KEEL_CURAND_STATUS_OUT_OF_RANGE = 104,
  KEEL_CURAND_STATUS_LENGTH_NOT_MULTIPLE = 105,
  KEEL_CURAND_STATUS_DOUBLE_PRECISION_REQUIRED = 106,
  KEEL_CURAND_STATUS_LAUNCH_FAILURE = 201,
  KEEL_CURAND_STATUS_PREEXISTING_FAILURE = 202,
  KEEL_CURAND_STATUS_INITIALIZATION_FAILED = 203,
  KEEL_CURAND_STATUS_ARCH_MISMATCH = 204,
  KEEL_CURAND_STATUS_INTERNAL_ERROR = 999
} keel_curandStatus_t;

typedef enum keel_curandRngType {
  KEEL_CURAND_RNG_PSEUDO_DEFAULT = 100,
  KEEL_CURAND_RNG_PSEUDO_XORWOW = 101,
  KEEL_CURAND_RNG_PSEUDO_MRG32K3A = 121,
  KEEL_CURAND_RNG_PSEUDO_MTGP32 = 141,
  KEEL_CURAND_RNG_PSEUDO_MT19937 = 142,
  KEEL_CURAND_RNG_PSEUDO_PHILOX4_32_10 = 161,
  KEEL_CURAND_RNG_QUASI_DEFAULT = 200,
  KEEL_CURAND_RNG_QUASI_SOBOL32 = 201,
  KEEL_CURAND_RNG_QUASI_SCRAMBLED_SOBOL32 = 202,
  KEEL_CURAND_RNG_QUASI_SOBOL64 = 203,
  KEEL_CURAND_RNG_QUASI_SCRAMBLED_SOBOL64 = 204
} keel_curandRngType_t;

typedef enum keel_curandOrdering {
  KEEL_CURAND_ORDERING_PSEUDO_BEST = 100,
  KEEL_CURAND_ORDERING_PSEUDO_DEFAULT = 101,
  KEEL_CURAND_ORDERING_PSEUDO_SEEDED = 102,
  KEEL_CURAND_ORDERING_PSEUDO_LEGACY = 103,
  KEEL_CURAND_ORDERING_PSEUDO_DYNAMIC = 104,
  KEEL_CURAND_ORDERING_QUASI_DEFAULT = 201
} keel_curandOrdering_t;

typedef struct keel_curandGenerator_st* keel_curandGenerator_t;

keel_curandStatus_t keel_curandCreateGenerator(keel_curandGenerator_t* generator,
                                               keel_curandRngType_t rng_type);
keel_curandStatus_t keel_curandCreateGeneratorHost(keel_curandGenerator_t* generator,
                                                   keel_curandRngType_t rng_type);
keel_curandStatus_t keel_curandDestroyGenerator(keel_curandGenerator_t generator);
keel_curandStatus_t keel_curandGetVersion(int* version);
keel_curandStatus_t keel_curandSetPseudoRandomGeneratorSeed(keel_curandGenerator_t generator,
                                                            unsigned long long seed);
keel_curandStatus_t keel_curandSetGeneratorOffset(keel_curandGenerator_t generator,
                                                  unsigned long long offset);
keel_curandStatus_t keel_curandSetGeneratorOrdering(keel_curandGenerator_t generator,
                                                    keel_curandOrdering_t order);
keel_curandStatus_t keel_curandSetQuasiRandomGeneratorDimensions(keel_curandGenerator_t generator,
                                                                 unsigned int num_dimensions);
keel_curandStatus_t keel_curandGenerate(keel_curandGenerator_t generator, unsigned int* output_ptr,
                                        size_t num);
keel_curandStatus_t keel_curandGenerateUniform(keel_curandGenerator_t generator, float* output_ptr,
                                               size_t num);
keel_curandStatus_t keel_curandGenerateUniformDouble(keel_curandGenerator_t generator,
                                                     double* output_ptr, size_t num);
keel_curandStatus_t keel_curandGenerateNormal(keel_curandGenerator_t generator, float* output_ptr,
                                              size_t n, float mean, float stddev);
keel_curandStatus_t keel_curandGenerateNormalDouble(keel_curandGenerator_t generator,
                                                    double* output_ptr, size_t n, double mean,
                                                    double stddev);
keel_curandStatus_t keel_curandGenerateLogNormal(keel_curandGenerator_t generator,
                                                 float* output_ptr, size_t n, float mean,
                                                 float stddev);
keel_curandStatus_t keel_curandGenerateLogNormalDouble(keel_curandGenerator_t generator,
                                                       double* output_ptr, size_t n, double mean,
                                                       double stddev);
keel_curandStatus_t keel_curandGeneratePoisson(keel_curandGenerator_t generator,
                                               unsigned int* output_ptr, size_t n, double lambda);

/* NOLINTEND(readability-identifier-naming) */

#ifdef __cplusplus
}
#endif

#endif /* KEEL_RANDOM_C_API_H */
