// synth — realistic allocator traces from a model of the workload, in PyTorch's snapshot format.
//
// The workload model issues the tensor allocations and frees a PyTorch program would make,
// and PyTorch's allocator policy (keel's faithful reproduction, on the sim backend) turns them
// into the segments and the trace that torch.cuda.memory._dump_snapshot() would have written:
// - train: decoder-only transformer training steps with a different sequence length each step
//   (the classic fragmentation case): parameters, Adam state created at the first step,
//   per-layer activations saved in forward and freed in backward in reverse, gradients freed
//   by zero_grad(set_to_none=True), attention scores that grow with the square of the length;
// - infer: LLM serving, one request after another, prefill then decode, the KV cache of every
//   layer grown by torch.cat each token (a new, larger tensor, then the old one freed).
// Each alloc entry carries a frame naming the tensor. Times are a synthetic 10 us clock, so
// the output depends only on the options. Thread-safe; pure.
#pragma once

#include <cstdint>
#include <string>

#include "keel/memory/snapshot.hpp"

namespace keel::memory {

enum class synth_kind { train, infer };

struct synth_options {
  synth_kind kind = synth_kind::train;
  std::uint64_t seed = 1;
  int steps = 6;  // train: optimizer steps; infer: requests
  int layers = 12;
  int hidden = 1024;
  int heads = 16;
  int batch = 8;
  int vocab = 32000;
  int min_seq = 128;  // train: sequence length range; infer: prompt length range
  int max_seq = 1024;
  int new_tokens = 64;  // infer: tokens generated per request
};

// Throws keel::invalid_argument for non-positive sizes or min_seq > max_seq.
snapshot synthesize(const synth_options& options);

}  // namespace keel::memory
