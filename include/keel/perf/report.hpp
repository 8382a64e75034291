// The performance model as commands: `keel perf op|explain|llm|model|calibrate` and keel.perf
// (Python) run these functions. Each takes its request as a plain struct holding the options
// as the CLI takes them (names, dtypes and shapes as text where the CLI takes text), checks
// it — the same ranges and, for numbers, the same messages as the CLI's options ("--batch: nan
// is not a finite number, expected a number in [1, 1000000000000]") — and returns a result;
// to_json() gives the document `--json` prints; the text the CLI prints otherwise is
// keel/perf/text_report.hpp's to_text().
// Functions that take an `svg` or `out` path write that file (keel::output_file) and throw
// keel::io_error when they cannot. Otherwise pure functions of the request; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "keel/perf/calibrate.hpp"
#include "keel/perf/gpu_database.hpp"
#include "keel/perf/llm.hpp"
#include "keel/perf/memory_fit.hpp"
#include "keel/perf/onnx_model.hpp"
#include "keel/perf/rollup.hpp"
#include "keel/perf/roofline.hpp"

namespace keel::perf {

// Shape sizes: positive, finite and at most k_max_dim (FLOP counts stay finite doubles);
// integer dimensions (convolutions, symbolic ONNX dimensions) at most k_max_int_dim.
inline constexpr double k_max_dim = 1e12;
inline constexpr std::int64_t k_max_int_dim = std::int64_t{1} << 40;

// "1.5 GFLOP", "3.2 MB": three significant digits and an SI prefix, as the reports print.
std::string si_text(double v, std::string_view unit);

// The kernels `keel perf op` and `explain` know: gemm, spmv, conv2d, attention, elementwise.
std::vector<std::string> op_kinds();

// One kernel, as `keel perf op KIND` takes it; each kind reads its own fields (ranges as the
// CLI's options; 0 in a required field means "not given").
struct op_request {
  std::string kind;              // an op_kinds() entry
  std::string dtype = "fp32";    // parse_dtype() names
  std::string gpu = "h100-sxm";  // a database name or a device file (resolve_device)
  bool tensor = true;            // false with --no-tensor: CUDA-core rates
  // gemm: M N K in (0, 1e12]; batch (also attention) in [1, 1e12]
  std::vector<double> mnk;
  double batch = 1;
  // spmv: rows, cols (default rows), nnz in [1, 1e12]; index_bytes in [1, 16]
  double rows = 0;
  std::optional<double> cols;
  double nnz = 0;
  double index_bytes = 4;
  bool x_reuse = true;  // false with --no-x-reuse
  // conv2d: input "NxCxHxW" and kernel "R" or "RxS", each dimension an integer in [1, 2^40];
  // out_channels, stride, dilation, groups in [1, 2^40]; padding in [0, 2^40]
  std::string input;
  std::int64_t out_channels = 0, stride = 1, padding = 0, groups = 1, dilation = 1;
  std::string kernel = "3";
  // attention: heads, seq required; kv_heads (default heads), kv_len (default seq), head_dim
  // in [1, 1e12]
  double heads = 0;
  std::optional<double> kv_heads;
  double seq = 0;
  std::optional<double> kv_len;
  double head_dim = 128;
  bool flash = false, causal = false;
  // elementwise: elements in [1, 1e12]; inputs, outputs, flops_per_element in [0, 1e6]
  double elements = 0, inputs = 2, outputs = 1, flops_per_element = 1;
};

// Throws keel::invalid_argument naming the first bad field (the CLI's option name) or an
// unknown kind or dtype.
void validate(const op_request& request);

struct op_result {
  std::string kind;
  std::string dtype;        // as requested
  std::string description;  // "gemm 8192x8192x8192", ...
  op_cost cost;
  gpu_spec gpu;
  peak_rate peak;
  roofline_point point;
};

// The roofline of the kernel on request.gpu. Throws keel::invalid_argument (validate, an
// unknown GPU) and keel::io_error (an unreadable device file).
op_result run_op(const op_request& request);

// op, description, dtype, gpu, peak_key, peak_tflops, peak_note, bandwidth_gbs, flops, bytes,
// intensity, ridge, bound, predicted_ms, fraction_of_peak, source.
nlohmann::json to_json(const op_result& result);

// `keel perf explain KIND`: one kernel on two GPUs, and why the times differ, in words.
struct explain_request {
  op_request op;   // op.gpu is the first GPU (for spmv, rows and nnz default to 1e6 and 1e7)
  std::string vs;  // the second
};

struct explain_result {
  op_result a, b;
  std::optional<op_result> a_no_reuse, b_no_reuse;  // spmv without x reuse, when it had reuse
  double time_ratio = 0;                            // a's predicted time over b's
  std::vector<std::string> explanation;             // paragraphs
};

explain_result run_explain(const explain_request& request);

// a, b (as to_json(op_result)), time_ratio, explanation.
nlohmann::json to_json(const explain_result& result);

// `keel perf llm`.
struct llm_request {
  std::string config;             // bundled_llm_configs() name or a config.json path
  double batch = 1, seq = 128;    // [1, 1e12]
  std::string phase = "prefill";  // prefill | decode
  std::string gpu = "h100-sxm";
  std::string dtype = "bf16";  // weights and activations
  std::string kv_dtype;        // empty: dtype
  bool flash = false;
  bool tensor = true;
  std::string quant = "none";      // none | w8a8 | w4a16 | fp8 (parse_llm_quant)
  double generate = 0;             // [0, 1e6]: decode steps after the prefill of `seq` tokens
  bool train = false;              // a training step (forward, backward, optimizer)
  std::string optimizer = "adam";  // adam | sgd | sgd-momentum
  std::int64_t tp = 1, pp = 1, dp = 1, ep = 1;  // [1, 4096] each
  std::optional<double> link_latency_us;        // [0, 1e6]: per-message latency of the GPU link
  std::string svg;  // write a roofline chart of the ops there; empty: none
};

struct llm_result {
  std::string phase, dtype;  // as requested
  gpu_spec device;
  llm_report report;
  std::string svg;  // the chart written (request.svg); empty: none
};

// Throws keel::invalid_argument (ranges, phase, dtype, config, GPU), keel::parse_error (a bad
// config.json) and keel::io_error (unreadable files, the chart).
llm_result run_llm(const llm_request& request);

// The chart run_llm writes: every op with FLOPs on the device's roofline.
std::string llm_chart(const llm_result& result);

// model, phase, batch, seq, dtype, kv_dtype, quant, gpu, gpus, params, params_active,
// params_embedding, total_flops, matmul_flops, total_bytes, predicted_ms (null when the model
// does not fit), compute_ms, comm_ms, kv_cache_bytes_per_token, kv_cache_bytes, fits,
// memory (weights, kv_cache, activations, gradients, optimizer, total, capacity, shortfall,
// message; bytes per GPU), compute_note, layers (name, count, flops, bytes, intensity, bound,
// peak_key, time_ms (null when it does not fit)), comms (name, collective, ranks, bytes, count,
// algorithm, ms), generation (null or prompt, generated, prefill_flops, decode_flops,
// prefill_bytes, decode_bytes, ttft_ms, decode_ms, decode_tokens_per_s, tokens_per_s),
// training (null or forward/backward/optimizer flops, bytes and ms, tokens), source.
nlohmann::json to_json(const llm_result& result);

// `keel perf model`.
struct model_request {
  std::string path;  // an ONNX file
  std::string gpu = "h100-sxm";
  std::vector<std::string> dims;  // "NAME=VALUE", VALUE an integer in [1, 2^40]
  bool assume_one = false;        // --assume-one: symbolic dimensions without a --dim are 1
  bool tensor = true;
  std::string svg;  // write a roofline chart of the 24 heaviest nodes; empty: none
  int depth = -1;   // --depth: the module tree down to this depth in the JSON; < 0: all of it
};

struct model_result {
  gpu_spec device;
  onnx_report report;
  bool tensor = true;  // as requested (the chart's roof)
  rollup_node tree;    // the module tree (rollup.hpp) of the nodes, whole; root: the file name
  int depth = -1;      // as requested
  memory_fit fit;      // weights + peak activations against the device's memory
};

// Throws keel::io_error (an unreadable file or chart), keel::parse_error (not an ONNX model)
// and keel::invalid_argument (a bad --dim, a symbolic dimension without a --dim and no
// --assume-one, an unknown GPU, shapes it cannot count, a depth below -1). A model that does
// not fit the device's memory is counted but gets no latency: fit.fits is false and the
// documents print fit.message instead of times (no chart is written).
model_result run_model(const model_request& request);

std::string model_chart(const model_result& result);

// model, producer, opset, gpu, macs, flops, bytes, params, param_notes, memory (fits, message,
// weights_bytes, activation_bytes, capacity_bytes, shortfall_bytes), predicted_ms ("expect
// about") and roofline_ms ("cannot be faster than"), both null when the model does not fit,
// efficiency (per class: fraction, known, basis, source), unknown_ops, tree (rollup.hpp's
// to_json, down to request.depth), nodes (name, op_type, kind, macs, flops, bytes, intensity
// (null when not finite), bound, rate, time_ms (null when it does not fit), dtype,
// output_shape), source.
nlohmann::json to_json(const model_result& result);

// `keel perf calibrate`.
struct calibrate_request {
  std::int64_t threads = 1;  // [1, 1024]
  double seconds = 0.3;      // (0, 3600] per measurement
  double dram_mib = 1024;    // [1, 1e6]: the triad working set for the DRAM figure
  std::string out;           // write the device file there; empty: none
  std::string name = "cpu-local";
};

struct calibrate_result {
  calibration value;
  std::string document;  // the device file (calibration_document)
  double dram_mib = 0;   // the DRAM triad's working set, as requested
  std::string out;       // the device file written (request.out); empty: none
};

calibrate_result run_calibrate(const calibrate_request& request);

// The device document, parsed.
nlohmann::json to_json(const calibrate_result& result);

}  // namespace keel::perf
