// keel::serve::model_instance — one loaded copy of a model, the unit the scheduler runs: it
// takes a batch of inputs (in the configuration's input order, the batch dimension first
// when max_batch_size > 0) and returns the outputs in the configuration's output order.
//
// load_torchscript is the backend for platform "pytorch_libtorch": it loads REPO/NAME/V/
// model.pt with libtorch and binds the configuration's inputs to forward()'s arguments by
// name when every input names an argument, else by the Triton convention NAME__i (the i-th
// argument), else in order; outputs likewise from a returned tensor, tuple, list or
// dict of tensors. A file that is not a TorchScript archive is keel::parse_error naming it, a
// signature or type that disagrees with the configuration keel::invalid_argument; so is a
// run whose inputs or results do not fit (a wrong dtype, a model error), with the model's
// first line of explanation. An instance is used by one thread at a time (the scheduler
// gives each its own worker); different instances run concurrently.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <vector>

#include "keel/serve/model_config.hpp"
#include "keel/serve/tensor.hpp"

namespace keel::serve {

class model_instance {
 public:
  virtual ~model_instance() = default;
  // Runs one batch using at most `threads` intra-op threads (>= 1).
  virtual std::vector<tensor> run(std::span<const tensor> inputs, int threads) = 0;
  // Bytes of the model's parameters and buffers: what the instance keeps resident.
  virtual std::uint64_t resident_bytes() const = 0;
};

std::unique_ptr<model_instance> load_torchscript(const std::filesystem::path& file,
                                                 const model_config& config);

}  // namespace keel::serve
