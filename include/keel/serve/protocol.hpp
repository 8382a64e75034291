// keel::serve protocol — the messages of the KServe v2 inference protocol as Triton
// Inference Server writes and reads them over HTTP/REST, without the transport: infer
// requests and responses (JSON tensors and Triton's binary-tensor extension), model and
// server metadata, the model configuration, statistics (Triton's statistics extension), the
// repository index and Prometheus metrics with Triton's metric names.
//
// Binary extension: the body is a JSON header of `header_length` bytes (the HTTP header
// Inference-Header-Content-Length) followed by the raw bytes of every tensor whose
// parameters carry "binary_data_size", in the order the header lists them. Without it the
// whole body is JSON. JSON tensor data may be flat or nested row-major arrays; FP16 and BF16
// are written as numbers (rounded to nearest even when read), BOOL as true/false. JSON has no
// NaN or infinity: they are written as null and null reads back as NaN (binary data keeps
// them). BYTES is not supported (keel's models take numeric tensors).
//
// Decoding is of untrusted input: every error is keel::invalid_argument (the protocol's 400)
// with one line naming what is wrong (the input, its shape or datatype, the offset) and
// never reads past the body; the JSON goes through keel's one reader (core/json_value.hpp).
// Pure functions: thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "keel/serve/model_config.hpp"
#include "keel/serve/scheduler.hpp"
#include "keel/serve/server.hpp"
#include "keel/serve/tensor.hpp"

namespace keel::serve {

// The HTTP header of the binary extension: the length of the JSON that starts the body.
inline constexpr const char* k_header_length_field = "Inference-Header-Content-Length";
// That header's value as a byte count; keel::invalid_argument naming the text otherwise.
std::size_t parse_header_length(std::string_view text);

struct named_tensor {
  std::string name;
  tensor value;
};

struct requested_output {
  std::string name;
  bool binary = false;
};

// An infer request read for one model: inputs in the configuration's input order.
struct decoded_request {
  std::string id;                         // echoed in the response
  infer_request request;                  // priority and timeout from the request's parameters
  std::vector<requested_output> outputs;  // empty: all, as binary_data_output says
  bool binary_data_output = false;
};

struct encoded_body {
  std::string body;
  std::optional<std::size_t> header_length;  // set when binary tensors follow the JSON
};

// Server side. Reads POST /v2/models/NAME/infer's body for `config`: every configured input
// exactly once (by name), datatypes and shapes as the configuration declares (the batch
// dimension within max_batch_size), data of exactly the shape's size; parameters "priority"
// and "timeout" (microseconds) go to the infer_request.
decoded_request decode_infer_request(std::string_view body,
                                     std::optional<std::size_t> header_length,
                                     const model_config& config);
// The response to a decoded request: the requested outputs (all when none was named), each
// binary when it asked for binary_data or the request set binary_data_output.
encoded_body encode_infer_response(const model_config& config, std::int64_t version,
                                   const decoded_request& request,
                                   const std::vector<tensor>& outputs);
// {"error": message}.
std::string error_json(std::string_view message);

// Client side (keel serve bench): a request with every input binary or JSON (binary also asks
// for binary outputs), and a response's outputs (an {"error"} body: invalid_argument with the
// server's message).
encoded_body encode_infer_request(const std::vector<named_tensor>& inputs, bool binary,
                                  std::string_view id = {});
std::vector<named_tensor> decode_infer_response(std::string_view body,
                                                std::optional<std::size_t> header_length);

// GET /v2: name, version, extensions.
nlohmann::json server_metadata_json();
// GET /v2/models/NAME[/versions/V]: name, versions, platform, inputs and outputs with the
// batch dimension shown as -1 when max_batch_size > 0.
nlohmann::json model_metadata_json(const model_config& config,
                                   const std::vector<std::int64_t>& versions);
// GET /v2/models/NAME/config: the configuration in Triton's JSON form.
nlohmann::json model_config_json(const model_config& config);
// GET /v2/models[/NAME]/stats: {"model_stats": [...]} in Triton's statistics format; reports
// without a version (0) are left out. keel measures no input or output copies: compute_input
// and compute_output count the successful requests with 0 ns.
nlohmann::json statistics_json(const std::vector<model_report>& models);
// POST /v2/repository/index: [{"name", "version", "state", "reason"}...]; as in Triton,
// "version" is left out when unknown (0) and "reason" when empty.
nlohmann::json repository_index_json(const std::vector<model_report>& models);
// The Prometheus text exposition (format 0.0.4) on the metrics port: Triton's nv_inference_*
// counters per model and version (label values escaped), keel_model_* load/eviction counters
// and the budgets; # HELP and # TYPE once per metric.
std::string prometheus_metrics(const std::vector<model_report>& models, int threads,
                               std::uint64_t memory_budget, std::uint64_t resident_bytes);
// One Prometheus summary: its HELP and TYPE lines and a NAME{quantile="Q"} V line per quantile
// (`values` empty: none yet).
std::string prometheus_summary(std::string_view name, std::string_view help,
                               std::span<const double> quantiles, std::span<const double> values);

}  // namespace keel::serve
