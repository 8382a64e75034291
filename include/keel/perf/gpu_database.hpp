// keel::perf::gpu_database — NVIDIA GPUs with their published rates and where each number
// comes from, plus the CUDA and cuDNN version tables by compute capability.
//
// The data is a JSON document compiled into the library (src/perf/data/gpus.json), so the
// installed CLI needs no files at run time; gpu_database::load() reads another document of the
// same schema. Every GPU and every table row carries source ids that resolve to a document
// title and URL. A rate the vendor did not publish may be derived from the CUDA Programming
// Guide's per-SM throughput table; such values are listed in gpu_spec::derived with how they
// were obtained. Nothing is guessed: an unknown number is std::nullopt.
// A gpu_database is immutable after construction and safe to share between threads;
// builtin() returns a process-wide instance built on first use.
#pragma once

#include "keel/perf/dtype.hpp"

#include <nlohmann/json.hpp>

#include <compare>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace keel::perf {

// "major.minor", compared numerically (12.0 > 9.0). Used for compute capabilities and for
// CUDA/cuDNN versions ("12.4", "9.10").
struct version {
  int major = 0;
  int minor = 0;
  auto operator<=>(const version&) const = default;
  std::string str() const;
};
// Parses "12", "12.4" or "12.4.1" (patch ignored). Throws keel::invalid_argument.
version parse_version(std::string_view text);

struct source_ref {
  std::string id;
  std::string title;
  std::string url;
};

// One dense peak rate chosen for a dtype, with the database key it came from.
struct peak_rate {
  double tflops = 0;     // TFLOP/s (TOP/s for int8)
  std::string key;       // "fp16_tensor", "fp32", ...
  bool derived = false;  // from the CUDA guide's per-SM table, not the vendor sheet
  std::string note;      // why this key (e.g. "no bf16 units before CC 8.0: runs as fp32")
};

// A cache level below DRAM with its measured bandwidth (CPU devices from `keel perf
// calibrate`); an op whose bytes fit in `bytes` streams at `bandwidth_gbs` (the cache-aware
// roofline of Ilic, Pratas and Sousa, IEEE CAL 2014).
struct memory_level {
  std::string name;  // "L2", "L3"
  double bytes = 0;  // capacity
  double bandwidth_gbs = 0;
};

struct gpu_spec {
  std::string name;     // slug: "h100-sxm"
  std::string display;  // "H100 SXM5 80GB"
  std::string arch;     // "Hopper"
  std::string segment;  // "consumer", "datacenter", "laptop"
  version cc;           // compute capability
  int year = 0;
  std::optional<int> sms;
  std::optional<int> boost_mhz;
  std::map<std::string, double> tflops;   // published dense rates by key (fp32, fp16_tensor, ...)
  std::map<std::string, double> derived;  // rates derived from the CUDA guide (not in tflops)
  std::map<std::string, std::string> derived_how;
  double memory_gb = 0;  // vendor "GB", which for GPU DRAM is GiB
  std::string memory_type;
  double bandwidth_gbs = 0;  // GB/s (10^9 bytes per second)
  std::optional<double> l2_mb;
  std::optional<double> tdp_w;
  std::optional<double> price_usd;
  // Interconnect, as the datasheets print it. nvlink_gbs: total NVLink bandwidth of this GPU in
  // GB/s, both directions over all links (900 for an H100 SXM), nullopt when the card has no
  // NVLink. pcie_gbs: the host link's bandwidth per direction in GB/s, lanes x GT/s / 8 (32 for
  // PCIe 4.0 x16), nullopt when the document does not give the link.
  std::optional<double> nvlink_gbs;
  std::optional<int> pcie_gen;
  int pcie_lanes = 16;
  std::optional<double> pcie_gbs;
  std::vector<memory_level> cache_levels;  // smallest first; empty for the GPUs
  // Measured ceilings of a framework's kernels on this device, by kernel class ("gemm",
  // "attention_matmul", "conv_kxk", "conv_1x1", "conv_depthwise", "pool"): in TFLOP/s for the
  // classes whose time follows their arithmetic, in GB/s for those whose time follows the
  // bytes they move (depthwise convolutions, pooling), and the fixed cost of dispatching one
  // op. Absent for the GPUs (the roofline then uses the peaks);
  // bench/perf/calibrate_torch.py adds them to a `keel perf calibrate` device file.
  std::map<std::string, double> ceilings_tflops;
  std::map<std::string, double> ceilings_gbs;
  double overhead_us = 0;
  std::vector<source_ref> sources;
  std::string note;

  // Published rate, else derived rate, else nullopt.
  std::optional<double> rate(std::string_view key) const;
  // The rate a kernel of this dtype reaches at best: tensor cores when `tensor` and the
  // GPU has them for this dtype, else the CUDA-core rate, else the fp32 rate (the type
  // is then computed in fp32, which the note says). Throws keel::invalid_argument when the
  // GPU has no usable rate at all (no fp32 figure).
  peak_rate peak(dtype t, bool tensor = true) const;
  double memory_bytes() const;
  double bandwidth_bytes_per_s() const { return bandwidth_gbs * 1e9; }
  // Bytes/s for an op moving `bytes`: the smallest cache level that holds them, else DRAM.
  double bandwidth_for(double bytes) const;
  // "Title <url>; Title <url>".
  std::string source_text() const;
};

// supported / unsupported: the table has a row for the release and the GPU's compute
// capability is inside / outside its range. unknown: the table has no row for the release,
// so keel has no answer from data (never "no").
enum class support_state { supported, unsupported, unknown };

struct support_answer {
  support_state state = support_state::unknown;
  bool supported() const noexcept { return state == support_state::supported; }
  bool known() const noexcept { return state != support_state::unknown; }
  std::string reason;               // one sentence with the numbers
  std::vector<source_ref> sources;  // the table row's documents
  std::string note;                 // the row's caveat, if any
  std::string source_text() const;
};

class gpu_database {
 public:
  // The compiled-in database.
  static const gpu_database& builtin();
  // Parses a JSON document of the same schema. Throws keel::parse_error (with `origin` as
  // the source name) on malformed JSON and keel::invalid_argument on a schema violation,
  // such as a GPU without a source or a source id that does not resolve.
  static gpu_database load(std::string_view json_text, const std::string& origin);

  const std::vector<gpu_spec>& gpus() const noexcept { return gpus_; }
  // nullptr when absent. Names are matched case-insensitively; '_' and ' ' count as '-'.
  const gpu_spec* find(std::string_view name) const noexcept;
  // Throws keel::invalid_argument naming close matches when absent.
  const gpu_spec& at(std::string_view name) const;

  // Whether the CUDA toolkit / cuDNN release `v` supports the GPU's compute capability.
  // A version the tables do not cover is answered as support_state::unknown, with the reason
  // "the table has no row for cuDNN 8.6 (it covers ...)".
  support_answer cuda_support(const gpu_spec& gpu, version v) const;
  support_answer cudnn_support(const gpu_spec& gpu, version v) const;
  // Whether PyTorch `release`'s wheel for `wheel` ("cu128") has code the GPU runs: a shipped
  // cubin for X.y runs on compute capability X.z with z >= y, shipped PTX for v is compiled
  // at load time on any compute capability >= v (CUDA C++ Programming Guide, "Binary
  // Compatibility"). A release and wheel the table has no row for is unknown.
  support_answer pytorch_support(const gpu_spec& gpu, version release,
                                 std::string_view wheel) const;
  // Whether NVIDIA driver branch `branch` (580) still supports the GPU: unsupported after the
  // last branch announced for its architecture; otherwise unknown, since the table records
  // only last branches (not the first branch that knows a GPU).
  support_answer driver_support(const gpu_spec& gpu, int branch) const;

  const std::string& conventions() const noexcept { return conventions_; }

 private:
  struct version_row {
    version lo, hi;  // inclusive range of releases
    std::string label;
    version min_cc, max_cc;
    std::vector<source_ref> sources;
    std::string note;
  };
  struct wheel_row {
    version lo, hi;  // inclusive range of releases
    std::string label, wheel;
    std::vector<version> archs, ptx;
    std::vector<source_ref> sources;
    std::string note;
  };
  struct driver_row {
    version min_cc, max_cc;
    std::string archs;
    int branch = 0;
    std::vector<source_ref> sources;
  };
  support_answer answer(const std::vector<version_row>& rows, const char* what, const gpu_spec& gpu,
                        version v) const;

  std::vector<gpu_spec> gpus_;
  std::vector<version_row> cuda_;
  std::vector<version_row> cudnn_;
  std::vector<wheel_row> wheels_;
  std::vector<driver_row> drivers_;
  std::string conventions_;
};

// The device a prediction runs on: a database name ("h100-sxm"), or, when `name_or_file`
// names an existing file, the single device of a JSON document in the database schema (what
// `keel perf calibrate --out FILE` writes for this machine's CPU). Throws
// keel::invalid_argument for an unknown name, keel::io_error for an unreadable file.
gpu_spec resolve_device(std::string_view name_or_file);

// ---- the documents of `keel gpus list|show|support` (and keel.gpus) ----------------------

// name, display, arch, cc, segment, year, sms, boost_mhz, tflops, derived ({key: {tflops,
// how}}), memory_gb, memory_type, bandwidth_gbs, nvlink_gbs, pcie ("4.0 x16"), pcie_gbs, l2_mb,
// tdp_w, price_usd (null when not published or not present), note, source, sources ([{id, title,
// url}]).
nlohmann::json to_json(const gpu_spec& gpu);
nlohmann::json to_json(const std::vector<source_ref>& sources);

// The GPUs of a database whose architecture contains `arch` (all when it is empty), in
// database order, with the database's conventions.
struct gpu_list {
  std::vector<const gpu_spec*> gpus;  // point into the database
  std::string conventions;
};
gpu_list list_gpus(const gpu_database& db, std::string_view arch = {});
// gpus (each as to_json(gpu_spec)), conventions.
nlohmann::json to_json(const gpu_list& list);

// Does a CUDA toolkit (cuda), a cuDNN release (cudnn), a PyTorch wheel (pytorch and wheel) or
// an NVIDIA driver branch (driver) support the GPU? Exactly one of the four is asked.
struct support_request {
  std::string gpu;
  std::string cuda;     // "12.4"; empty: not asked
  std::string cudnn;    // "9.1"; empty: not asked
  std::string pytorch;  // "2.8"; empty: not asked
  std::string wheel;    // "cu128": the wheel's CUDA variant, given with pytorch only
  std::string driver;   // "580": a driver branch; empty: not asked
};
struct support_result {
  const gpu_spec* gpu = nullptr;  // points into the database
  support_answer answer;
};
// Throws keel::invalid_argument when none or two are asked ("--cuda excludes --cudnn"), for
// --pytorch without --wheel (or the reverse), an unknown GPU or a malformed version.
support_result check_support(const gpu_database& db, const support_request& request);
// supported (true, false, or null when unknown), state ("supported", "unsupported",
// "unknown"), reason, source, gpu, compute_capability, sources.
nlohmann::json to_json(const support_result& result);

}  // namespace keel::perf
