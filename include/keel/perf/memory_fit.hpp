// keel::perf::memory_fit — does a model fit in one device's memory, and if not, by how much.
//
// A prediction is only meaningful for a model that can run: every predictor of keel::perf
// (`perf llm`, `perf model`) fills a memory_need with the bytes one device must hold at once
// and asks check_memory_fit() before it reports a latency. The need is split by what holds
// the bytes, so the answer can say what does not fit:
//   weights      the parameters as stored on this device (after quantization and sharding)
//   kv_cache     the attention key/value cache of every sequence in the batch
//   activations  the largest set of intermediate tensors alive at once (inference: one
//                layer's working set; training: every tensor kept for the backward pass)
//   gradients    one gradient per trainable weight (training only)
//   optimizer    optimizer state, with fp32 master weights when the weights are narrower
// Under parallelism the need is per device (each GPU's shard); `devices` only labels the
// message. Capacity is gpu_spec::memory_bytes() (the vendor's "GB", which for GPU DRAM is
// GiB) times `usable_fraction`; nothing is reserved silently. Bytes are printed in SI units
// (1 GB = 1e9 bytes), as si_text() does everywhere in keel::perf.
// Pure functions of their arguments; thread-safe.
#pragma once

#include "keel/perf/gpu_database.hpp"

#include <string>

namespace keel::perf {

struct memory_need {
  double weights = 0;  // bytes
  double kv_cache = 0;
  double activations = 0;
  double gradients = 0;
  double optimizer = 0;
  double total() const noexcept { return weights + kv_cache + activations + gradients + optimizer; }
};

struct memory_fit {
  bool fits = true;
  memory_need need;      // per device
  double capacity = 0;   // bytes one device offers (memory_bytes() x usable_fraction)
  double shortfall = 0;  // need.total() - capacity when it does not fit, else 0
  double headroom = 0;   // capacity - need.total() when it fits, else 0
  int devices = 1;       // devices the model is spread over (the need is per device)
  std::string device;    // gpu_spec::name
  // One line. Fits: "fits: 14.0 GB of 85.9 GB per GPU (weights 13.5 GB, KV cache 0.5 GB)".
  // Does not fit: "does not fit: needs 93.4 GB per GPU (weights 93.4 GB, ...) but h100-sxm
  // has 85.9 GB, 7.5 GB short"; the parts are listed largest first, zero parts left out.
  std::string message;
};

// Compares `per_device` with one device's memory. Throws keel::invalid_argument for a
// negative or non-finite part, usable_fraction outside (0, 1], devices < 1, or a device
// without a memory size (memory_gb <= 0).
memory_fit check_memory_fit(const memory_need& per_device, const gpu_spec& device, int devices = 1,
                            double usable_fraction = 1.0);

}  // namespace keel::perf
