// keel::serve::model_config — one model's configuration, read from the `config.pbtxt` of a
// model repository in Triton Inference Server's layout (`REPO/NAME/config.pbtxt`,
// `REPO/NAME/VERSION/model.pt`).
//
// The file is protobuf text format with Triton's field names; keel reads the subset that
// matters to a CPU server of TorchScript models: name, platform (or backend), max_batch_size,
// input/output (name, data_type, dims with -1 for a variable extent), instance_group (count,
// KIND_CPU), dynamic_batching (preferred_batch_size, max_queue_delay_microseconds, priority
// levels, default_queue_policy and priority_queue_policy), ensemble_scheduling (steps with
// input_map/output_map), model_warmup and version_policy. A field outside the subset, a
// value of the wrong type and a value the server cannot honour (TYPE_STRING, KIND_GPU,
// dynamic batching without max_batch_size, a preferred batch size above max_batch_size, ...)
// are all keel::parse_error "FILE:LINE:COLUMN: field: message", so the user can fix the line.
// Dims are the per-request shape without the batch dimension when max_batch_size > 0, as in
// Triton. Plain values: copy them freely between threads.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "keel/core/dtype.hpp"

namespace keel::serve {

// The element types a TorchScript tensor can have and the protocol can carry.
inline constexpr dtype k_tensor_dtypes[] = {dtype::boolean, dtype::u8,  dtype::i8,  dtype::i16,
                                            dtype::i32,     dtype::i64, dtype::f16, dtype::bf16,
                                            dtype::f32,     dtype::f64};

struct tensor_spec {
  std::string name;
  dtype type = dtype::f32;
  std::vector<std::int64_t> dims;  // -1: any extent

  // Whether `shape` (without the batch dimension) has these dims, -1 matching any extent.
  bool accepts(std::span<const std::int64_t> shape) const noexcept;
};

struct queue_policy {
  bool delay_on_timeout = false;         // timeout_action: DELAY (else REJECT)
  std::uint64_t default_timeout_us = 0;  // 0: no timeout
  bool allow_timeout_override = false;   // a request may ask for a shorter timeout
  std::uint32_t max_queue_size = 0;      // 0: unbounded
};

struct dynamic_batching {
  std::vector<int> preferred_batch_sizes;  // ascending
  std::uint64_t max_queue_delay_us = 0;
  bool preserve_ordering = false;
  std::uint32_t priority_levels = 0;         // 0: one level
  std::uint32_t default_priority_level = 0;  // 1..priority_levels when levels > 0
  queue_policy default_policy;
  std::map<std::uint32_t, queue_policy> priority_policies;
};

struct ensemble_step {
  std::string model_name;
  std::int64_t model_version = -1;                // -1 (or unset): the latest
  std::map<std::string, std::string> input_map;   // step model's input -> ensemble tensor
  std::map<std::string, std::string> output_map;  // step model's output -> ensemble tensor
};

struct warmup_input {
  enum class source { zero, random, file };
  dtype type = dtype::f32;
  std::vector<std::int64_t> dims;
  source data = source::zero;
  std::string file;  // under the model's warmup/ folder
};

struct warmup_sample {
  std::string name;
  std::uint32_t batch_size = 1;
  std::map<std::string, warmup_input> inputs;
  std::uint32_t count = 1;  // executions
};

struct version_policy {
  enum class kind { latest, all, specific };
  kind choice = kind::latest;
  std::uint32_t latest_count = 1;
  std::vector<std::int64_t> versions;  // kind::specific
};

enum class model_platform { torchscript, ensemble };

struct model_config {
  std::string name;
  model_platform platform = model_platform::torchscript;
  int max_batch_size = 0;  // 0: the model does not batch; dims are the whole shape
  std::vector<tensor_spec> inputs;
  std::vector<tensor_spec> outputs;
  int instance_count = 1;
  bool has_dynamic_batching = false;
  dynamic_batching batching;
  std::vector<ensemble_step> ensemble;  // platform ensemble only
  std::vector<warmup_sample> warmup;
  version_policy versions;
  std::string default_model_filename = "model.pt";

  const tensor_spec* find_input(std::string_view name) const noexcept;
  const tensor_spec* find_output(std::string_view name) const noexcept;
};

// Parses and validates config.pbtxt text; `source` names it in errors.
model_config parse_model_config(std::string_view text, const std::string& source);
// Reads and parses `file` (keel::io_error when it cannot be read).
model_config read_model_config(const std::filesystem::path& file);

}  // namespace keel::serve
