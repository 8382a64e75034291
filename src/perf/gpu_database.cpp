#include "keel/perf/gpu_database.hpp"

#include "embedded_data.hpp"
#include "keel/core/error.hpp"
#include "keel/core/input_file.hpp"
#include "keel/core/json_value.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace keel::perf {
namespace {

using nlohmann::json;

std::string normalize(std::string_view name) {
  std::string out;
  for (char c : name) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out.push_back(c == '_' || c == ' ' ? '-' : c);
  }
  return out;
}

int parse_int(std::string_view text, std::string_view whole) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) {
    throw invalid_argument("bad version '" + std::string(whole) + "' (expected MAJOR.MINOR)");
  }
  return value;
}

std::string join_sources(const std::vector<source_ref>& sources) {
  std::string out;
  for (const source_ref& s : sources) {
    if (!out.empty()) out += "; ";
    out += s.title + " <" + s.url + ">";
  }
  return out;
}

std::string format_rate(double v) { return fmt::format("{:g}", v); }

}  // namespace

std::string version::str() const { return fmt::format("{}.{}", major, minor); }

version parse_version(std::string_view text) {
  if (text.empty()) throw invalid_argument("empty version (expected MAJOR.MINOR)");
  const auto dot = text.find('.');
  version v;
  v.major = parse_int(text.substr(0, dot), text);
  if (dot != std::string_view::npos) {
    std::string_view rest = text.substr(dot + 1);
    rest = rest.substr(0, rest.find('.'));  // patch ignored
    v.minor = parse_int(rest, text);
  }
  return v;
}

std::optional<double> gpu_spec::rate(std::string_view key) const {
  if (auto it = tflops.find(std::string(key)); it != tflops.end()) return it->second;
  if (auto it = derived.find(std::string(key)); it != derived.end()) return it->second;
  return std::nullopt;
}

double gpu_spec::bandwidth_for(double bytes) const {
  for (const memory_level& level : cache_levels) {
    if (bytes <= level.bytes) return level.bandwidth_gbs * 1e9;
  }
  return bandwidth_bytes_per_s();
}

double gpu_spec::memory_bytes() const { return memory_gb * 1024.0 * 1024.0 * 1024.0; }

std::string gpu_spec::source_text() const { return join_sources(sources); }
std::string support_answer::source_text() const { return join_sources(sources); }

peak_rate gpu_spec::peak(dtype t, bool tensor) const {
  // Candidate keys, best first; the first one the GPU has wins.
  std::vector<std::pair<std::string, std::string>> keys;  // key, note when chosen
  auto add = [&](const char* key, const char* note = "") { keys.emplace_back(key, note); };
  switch (t) {
    case dtype::f64:
      if (tensor) add("fp64_tensor");
      add("fp64");
      break;
    case dtype::f32: add("fp32"); break;
    case dtype::tf32:
      if (tensor) add("tf32_tensor");
      add("fp32", "no TF32 tensor cores: runs as fp32");
      break;
    case dtype::f16:
      if (tensor) add("fp16_tensor");
      add("fp16");
      add("fp32", cc < version{5, 3}
                      ? "no fp16 arithmetic (before compute capability 5.3): computed in fp32"
                      : "no fp16 rate published or derivable for this GPU: counted at the fp32 "
                        "rate");
      break;
    case dtype::bf16:
      if (tensor) add("bf16_tensor");
      add("bf16");
      add("fp32", cc < version{8, 0}
                      ? "no bf16 units (before compute capability 8.0): computed in fp32"
                      : "no non-tensor bf16 rate published or derivable for this GPU: counted at "
                        "the fp32 rate");
      break;
    case dtype::f8:
      if (tensor) add("fp8_tensor");
      if (tensor) add("fp16_tensor", "no fp8 tensor cores (before 8.9): runs on fp16 tensor cores");
      add("fp16", "no fp8 units: computed in fp16");
      add("fp32", "no fp8 units: computed in fp32");
      break;
    case dtype::i8:
      if (tensor) add("int8_tensor");
      add("int8");
      add("fp32", "no int8 rate: computed at the fp32 rate");
      break;
    case dtype::f4:
      if (tensor) add("fp4_tensor");
      if (tensor) add("fp8_tensor", "no fp4 tensor cores: runs as fp8");
      if (tensor) add("fp16_tensor", "no fp4/fp8 tensor cores: runs on fp16 tensor cores");
      add("fp32", "no fp4 units: computed in fp32");
      break;
    default: add("fp32", "not a type of the model: computed at the fp32 rate"); break;
  }
  for (const auto& [key, note] : keys) {
    if (auto it = tflops.find(key); it != tflops.end()) return {it->second, key, false, note};
    if (auto it = derived.find(key); it != derived.end()) return {it->second, key, true, note};
  }
  std::string tried;
  for (const auto& [key, note] : keys) tried += (tried.empty() ? "" : ", ") + key;
  throw invalid_argument(
      fmt::format("{}: the rate of {} is unknown (the database has none of {} for this GPU{})",
                  name, name_of(t), tried, tensor ? "" : "; tensor cores were excluded"));
}

const gpu_database& gpu_database::builtin() {
  static const gpu_database db = load(detail::embedded_gpus_json(), "gpus.json (built in)");
  return db;
}

gpu_database gpu_database::load(std::string_view json_text, const std::string& origin) {
  const json doc = parse_json(json_text, origin);
  gpu_database db;
  try {
    db.conventions_ = doc.value("conventions", "");
    std::map<std::string, source_ref> sources;
    for (const auto& [id, s] : doc.at("sources").items()) {
      sources[id] =
          source_ref{id, s.at("title").get<std::string>(), s.at("url").get<std::string>()};
    }
    auto resolve = [&](const json& ids, const std::string& owner) {
      std::vector<source_ref> out;
      for (const json& id : ids) {
        auto it = sources.find(id.get<std::string>());
        if (it == sources.end()) {
          throw invalid_argument(fmt::format("{}: {} cites unknown source '{}'", origin, owner,
                                             id.get<std::string>()));
        }
        out.push_back(it->second);
      }
      if (out.empty()) throw invalid_argument(fmt::format("{}: {} has no source", origin, owner));
      return out;
    };
    struct cc_rates {
      std::optional<double> fp32, fp64, fp16;
      std::vector<source_ref> sources;
    };
    std::map<version, cc_rates> cc_table;
    for (const json& row : doc.at("compute_capabilities")) {
      cc_rates r;
      if (row.contains("fp32_per_sm_clk")) r.fp32 = row["fp32_per_sm_clk"].get<double>();
      if (row.contains("fp64_per_sm_clk")) r.fp64 = row["fp64_per_sm_clk"].get<double>();
      if (row.contains("fp16_per_sm_clk")) r.fp16 = row["fp16_per_sm_clk"].get<double>();
      const std::string cc = row.at("cc").get<std::string>();
      r.sources = resolve(row.at("source"), "compute capability " + cc);
      cc_table[parse_version(cc)] = r;
    }
    std::map<int, double> pcie_gt_per_s;  // by generation
    if (doc.contains("pcie_generations")) {
      for (const json& row : doc["pcie_generations"]) {
        const int gen = row.at("gen").get<int>();
        resolve(row.at("source"), fmt::format("PCIe generation {}", gen));
        pcie_gt_per_s[gen] = row.at("gt_per_s").get<double>();
      }
    }
    auto read_rows = [&](const char* key) {
      std::vector<version_row> rows;
      for (const json& row : doc.at(key)) {
        version_row r;
        r.label = row.at("versions").get<std::string>();
        const auto dash = r.label.find('-');
        r.lo = parse_version(r.label.substr(0, dash));
        r.hi = dash == std::string::npos ? r.lo : parse_version(r.label.substr(dash + 1));
        r.min_cc = parse_version(row.at("min_cc").get<std::string>());
        r.max_cc = parse_version(row.at("max_cc").get<std::string>());
        r.sources = resolve(row.at("source"), std::string(key) + " " + r.label);
        r.note = row.value("note", "");
        rows.push_back(std::move(r));
      }
      return rows;
    };
    db.cuda_ = read_rows("cuda");
    db.cudnn_ = read_rows("cudnn");
    if (doc.contains("pytorch_wheels")) {
      for (const json& row : doc["pytorch_wheels"]) {
        wheel_row w;
        w.label = row.at("releases").get<std::string>();
        const auto dash = w.label.find('-');
        w.lo = parse_version(w.label.substr(0, dash));
        w.hi = dash == std::string::npos ? w.lo : parse_version(w.label.substr(dash + 1));
        w.wheel = row.at("wheel").get<std::string>();
        for (const json& a : row.at("archs"))
          w.archs.push_back(parse_version(a.get<std::string>()));
        if (row.contains("ptx")) {
          for (const json& a : row["ptx"]) w.ptx.push_back(parse_version(a.get<std::string>()));
        }
        w.sources = resolve(row.at("source"), "PyTorch " + w.label + " " + w.wheel);
        w.note = row.value("note", "");
        db.wheels_.push_back(std::move(w));
      }
    }
    if (doc.contains("last_driver_branch")) {
      for (const json& row : doc["last_driver_branch"]) {
        driver_row d;
        d.archs = row.at("archs").get<std::string>();
        d.min_cc = parse_version(row.at("min_cc").get<std::string>());
        d.max_cc = parse_version(row.at("max_cc").get<std::string>());
        d.branch = row.at("branch").get<int>();
        d.sources = resolve(row.at("source"), "driver branch of " + d.archs);
        db.drivers_.push_back(std::move(d));
      }
    }
    for (const json& g : doc.at("gpus")) {
      gpu_spec s;
      s.name = g.at("name").get<std::string>();
      if (s.name != normalize(s.name)) {
        throw invalid_argument(
            fmt::format("{}: GPU name '{}' is not a lowercase slug", origin, s.name));
      }
      s.display = g.at("display").get<std::string>();
      s.arch = g.at("arch").get<std::string>();
      s.segment = g.at("segment").get<std::string>();
      s.cc = parse_version(g.at("cc").get<std::string>());
      s.year = g.at("year").get<int>();
      auto opt = [&](const char* k) -> std::optional<double> {
        if (!g.contains(k) || g[k].is_null()) return std::nullopt;
        return g[k].get<double>();
      };
      if (auto v = opt("sms")) s.sms = static_cast<int>(*v);
      if (auto v = opt("boost_mhz")) s.boost_mhz = static_cast<int>(*v);
      for (const auto& [k, v] : g.at("tflops").items()) s.tflops[k] = v.get<double>();
      s.memory_gb = g.at("memory_gb").get<double>();
      s.memory_type = g.at("memory_type").get<std::string>();
      s.bandwidth_gbs = g.at("bandwidth_gbs").get<double>();
      s.l2_mb = opt("l2_mb");
      s.tdp_w = opt("tdp_w");
      s.price_usd = opt("price_usd");
      s.nvlink_gbs = opt("nvlink_gbs");
      if (s.nvlink_gbs && !(*s.nvlink_gbs > 0)) {
        throw invalid_argument(
            fmt::format("{}: GPU {} has nvlink_gbs {:g} (leave it out when the card has no NVLink)",
                        origin, s.name, *s.nvlink_gbs));
      }
      if (auto gen = opt("pcie_gen")) {
        s.pcie_gen = static_cast<int>(*gen);
        s.pcie_lanes = static_cast<int>(opt("pcie_lanes").value_or(16));
        const auto it = pcie_gt_per_s.find(*s.pcie_gen);
        if (it == pcie_gt_per_s.end()) {
          throw invalid_argument(
              fmt::format("{}: GPU {} names PCIe generation {}, which "
                          "'pcie_generations' does not list",
                          origin, s.name, *s.pcie_gen));
        }
        if (s.pcie_lanes < 1 || s.pcie_lanes > 32) {
          throw invalid_argument(
              fmt::format("{}: GPU {} has {} PCIe lanes", origin, s.name, s.pcie_lanes));
        }
        s.pcie_gbs = it->second * s.pcie_lanes / 8.0;
      }
      s.note = g.value("note", "");
      if (g.contains("ceilings_tflops")) {
        for (const auto& [k, v] : g["ceilings_tflops"].items())
          s.ceilings_tflops[k] = v.get<double>();
      }
      if (g.contains("ceilings_gbs")) {
        for (const auto& [k, v] : g["ceilings_gbs"].items()) s.ceilings_gbs[k] = v.get<double>();
      }
      s.overhead_us = g.value("overhead_us", 0.0);
      if (g.contains("cache_levels")) {
        for (const json& level : g["cache_levels"]) {
          s.cache_levels.push_back({level.at("name").get<std::string>(),
                                    level.at("bytes").get<double>(),
                                    level.at("bandwidth_gbs").get<double>()});
        }
      }
      // Rates the vendor printed in another form (a sparse or per-SM figure), converted in the
      // document itself: {"key": {"tflops": x, "how": "..."}}.
      if (g.contains("derived")) {
        for (const auto& [k, v] : g["derived"].items()) {
          if (s.tflops.contains(k)) {
            throw invalid_argument(
                fmt::format("{}: GPU {} has {} both published and derived", origin, s.name, k));
          }
          s.derived[k] = v.at("tflops").get<double>();
          s.derived_how[k] = v.at("how").get<std::string>();
        }
      }
      s.sources = resolve(g.at("source"), "GPU " + s.name);
      if (!s.tflops.contains("fp32") && !s.tflops.contains("fp16_tensor")) {
        throw invalid_argument(
            fmt::format("{}: GPU {} has neither fp32 nor fp16_tensor rate", origin, s.name));
      }
      // Derive CUDA-core rates the vendor did not print from the per-SM throughput ratios.
      if (auto it = cc_table.find(s.cc); it != cc_table.end() && s.tflops.contains("fp32")) {
        const cc_rates& r = it->second;
        const double fp32 = s.tflops["fp32"];
        auto derive = [&](const char* key, std::optional<double> per_clk) {
          if (s.tflops.contains(key) || s.derived.contains(key) || !per_clk || !r.fp32) return;
          s.derived[key] = fp32 * *per_clk / *r.fp32;
          s.derived_how[key] = fmt::format(
              "fp32 x {}/{} (results per clock per SM at compute capability {}, CUDA C++ "
              "Programming Guide)",
              format_rate(*per_clk), format_rate(*r.fp32), s.cc.str());
        };
        derive("fp64", r.fp64);
        derive("fp16", r.fp16);
      }
      if (db.find(s.name))
        throw invalid_argument(fmt::format("{}: duplicate GPU {}", origin, s.name));
      db.gpus_.push_back(std::move(s));
    }
  } catch (const json::exception& e) {
    throw invalid_argument(fmt::format("{}: schema error: {}", origin, e.what()));
  }
  return db;
}

const gpu_spec* gpu_database::find(std::string_view name) const noexcept {
  const std::string key = normalize(name);
  for (const gpu_spec& g : gpus_) {
    if (g.name == key) return &g;
  }
  return nullptr;
}

const gpu_spec& gpu_database::at(std::string_view name) const {
  if (const gpu_spec* g = find(name)) return *g;
  const std::string key = normalize(name);
  std::string close;
  for (const gpu_spec& g : gpus_) {
    // A shared prefix of 3+ characters or containment counts as close.
    const bool contains =
        g.name.find(key) != std::string::npos || key.find(g.name) != std::string::npos;
    std::size_t common = 0;
    while (common < key.size() && common < g.name.size() && key[common] == g.name[common]) ++common;
    if (contains || common >= 5) close += (close.empty() ? "" : ", ") + g.name;
  }
  throw invalid_argument(
      "unknown GPU '" + std::string(name) + "'" +
      (close.empty() ? std::string(" (see `keel gpus list`)") : " (did you mean: " + close + "?)"));
}

support_answer gpu_database::answer(const std::vector<version_row>& rows, const char* what,
                                    const gpu_spec& gpu, version v) const {
  support_answer a;
  const version_row* row = nullptr;
  for (const version_row& r : rows) {
    if (r.lo <= v && v <= r.hi) row = &r;
  }
  if (!row) {
    std::string known;
    for (const version_row& r : rows) known += (known.empty() ? "" : ", ") + r.label;
    a.state = support_state::unknown;
    a.reason = fmt::format("the table has no row for {} {} (it covers {})", what, v.str(), known);
    return a;
  }
  a.sources = row->sources;
  a.note = row->note;
  const std::string range = fmt::format("{} {} supports compute capability {} through {}", what,
                                        row->label, row->min_cc.str(), row->max_cc.str());
  a.state = support_state::unsupported;
  if (gpu.cc < row->min_cc) {
    a.reason = fmt::format("{}; {} is compute capability {} ({}), which it no longer targets",
                           range, gpu.name, gpu.cc.str(), gpu.arch);
  } else if (gpu.cc > row->max_cc) {
    a.reason = fmt::format("{}; {} is compute capability {} ({}), which is newer than that release",
                           range, gpu.name, gpu.cc.str(), gpu.arch);
  } else {
    a.state = support_state::supported;
    a.reason = fmt::format("{}; {} is compute capability {} ({})", range, gpu.name, gpu.cc.str(),
                           gpu.arch);
    if (!row->note.empty()) a.reason += " (" + row->note + ")";
  }
  return a;
}

support_answer gpu_database::cuda_support(const gpu_spec& gpu, version v) const {
  return answer(cuda_, "CUDA", gpu, v);
}
support_answer gpu_database::cudnn_support(const gpu_spec& gpu, version v) const {
  return answer(cudnn_, "cuDNN", gpu, v);
}

support_answer gpu_database::pytorch_support(const gpu_spec& gpu, version release,
                                             std::string_view wheel) const {
  support_answer a;
  const wheel_row* row = nullptr;
  std::string known;
  for (const wheel_row& w : wheels_) {
    known += fmt::format("{}{} {}", known.empty() ? "" : ", ", w.label, w.wheel);
    if (w.lo <= release && release <= w.hi && w.wheel == wheel) row = &w;
  }
  if (!row) {
    a.reason = fmt::format("the table has no row for PyTorch {} {} (it covers {})", release.str(),
                           wheel, known);
    return a;
  }
  a.sources = row->sources;
  a.note = row->note;
  std::string shipped;
  for (const version& v : row->archs)
    shipped += fmt::format("{}sm_{}{}", shipped.empty() ? "" : " ", v.major, v.minor);
  for (const version& v : row->ptx) shipped += fmt::format(" compute_{}{} (PTX)", v.major, v.minor);
  const std::string head =
      fmt::format("PyTorch {} {} wheels ship {}; {} is compute capability {} ({})", row->label,
                  row->wheel, shipped, gpu.name, gpu.cc.str(), gpu.arch);
  // The newest cubin of the GPU's major version that is not newer than it, else PTX.
  const version* cubin = nullptr;
  for (const version& v : row->archs) {
    if (v.major == gpu.cc.major && v <= gpu.cc && (!cubin || *cubin < v)) cubin = &v;
  }
  const version* ptx = nullptr;
  for (const version& v : row->ptx) {
    if (v <= gpu.cc && (!ptx || *ptx < v)) ptx = &v;
  }
  if (cubin) {
    a.state = support_state::supported;
    a.reason = fmt::format("{}, which runs the sm_{}{} code", head, cubin->major, cubin->minor);
  } else if (ptx) {
    a.state = support_state::supported;
    a.reason =
        fmt::format("{}, which compiles the compute_{}{} PTX when it loads (slow first start)",
                    head, ptx->major, ptx->minor);
  } else {
    a.state = support_state::unsupported;
    a.reason = fmt::format(
        "{}, which none of them runs (code for X.y runs on X.z with z >= y only): \"no kernel "
        "image is available\"",
        head);
  }
  if (!row->note.empty()) a.reason += " (" + row->note + ")";
  return a;
}

support_answer gpu_database::driver_support(const gpu_spec& gpu, int branch) const {
  support_answer a;
  for (const driver_row& d : drivers_) {
    if (gpu.cc < d.min_cc || gpu.cc > d.max_cc) continue;
    a.sources = d.sources;
    if (branch > d.branch) {
      a.state = support_state::unsupported;
      a.reason = fmt::format(
          "R{} is the last driver branch for {} GPUs; {} is compute capability {} ({}), so R{} "
          "does not support it",
          d.branch, d.archs, gpu.name, gpu.cc.str(), gpu.arch, branch);
    } else {
      a.reason = fmt::format(
          "R{} is the last driver branch for {} GPUs, so R{} is not past it; the table records "
          "only last branches, not the first that knows {}",
          d.branch, d.archs, branch, gpu.name);
    }
    return a;
  }
  a.reason = fmt::format(
      "the table has no last driver branch for {} (compute capability {}): "
      "NVIDIA has announced no end of support recorded here",
      gpu.arch, gpu.cc.str());
  return a;
}

gpu_spec resolve_device(std::string_view name_or_file) {
  const std::filesystem::path path{std::string(name_or_file)};
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) {
    const std::string text = read_input_file(path.string());
    const gpu_database db = gpu_database::load(text, path.string());
    if (db.gpus().size() != 1) {
      throw invalid_argument(path.string() + ": a device file holds exactly one device");
    }
    return db.gpus().front();
  }
  return gpu_database::builtin().at(name_or_file);
}

namespace {

nlohmann::json opt_json(const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

}  // namespace

nlohmann::json to_json(const std::vector<source_ref>& sources) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& s : sources) out.push_back({{"id", s.id}, {"title", s.title}, {"url", s.url}});
  return out;
}

nlohmann::json to_json(const gpu_spec& g) {
  nlohmann::json derived = nlohmann::json::object();
  for (const auto& [k, v] : g.derived) derived[k] = {{"tflops", v}, {"how", g.derived_how.at(k)}};
  return {{"name", g.name},
          {"display", g.display},
          {"arch", g.arch},
          {"cc", g.cc.str()},
          {"segment", g.segment},
          {"year", g.year},
          {"sms", opt_json(g.sms)},
          {"boost_mhz", opt_json(g.boost_mhz)},
          {"tflops", g.tflops},
          {"derived", derived},
          {"memory_gb", g.memory_gb},
          {"memory_type", g.memory_type},
          {"bandwidth_gbs", g.bandwidth_gbs},
          {"nvlink_gbs", opt_json(g.nvlink_gbs)},
          {"pcie", g.pcie_gen ? nlohmann::json(fmt::format("{}.0 x{}", *g.pcie_gen, g.pcie_lanes))
                              : nlohmann::json(nullptr)},
          {"pcie_gbs", opt_json(g.pcie_gbs)},
          {"l2_mb", opt_json(g.l2_mb)},
          {"tdp_w", opt_json(g.tdp_w)},
          {"price_usd", opt_json(g.price_usd)},
          {"note", g.note},
          {"source", g.source_text()},
          {"sources", to_json(g.sources)}};
}

gpu_list list_gpus(const gpu_database& db, std::string_view arch) {
  gpu_list out{{}, db.conventions()};
  for (const gpu_spec& g : db.gpus()) {
    if (arch.empty() || g.arch.find(arch) != std::string::npos) out.gpus.push_back(&g);
  }
  return out;
}

nlohmann::json to_json(const gpu_list& list) {
  nlohmann::json out = nlohmann::json::array();
  for (const gpu_spec* g : list.gpus) out.push_back(to_json(*g));
  return {{"gpus", out}, {"conventions", list.conventions}};
}

support_result check_support(const gpu_database& db, const support_request& r) {
  std::vector<const char*> asked;
  if (!r.cuda.empty()) asked.push_back("--cuda");
  if (!r.cudnn.empty()) asked.push_back("--cudnn");
  if (!r.pytorch.empty()) asked.push_back("--pytorch");
  if (!r.driver.empty()) asked.push_back("--driver");
  if (asked.empty()) {
    throw invalid_argument(
        "give --cuda VER, --cudnn VER, --pytorch VER --wheel cuXYZ or --driver BRANCH");
  }
  if (asked.size() > 1) throw invalid_argument(fmt::format("{} excludes {}", asked[0], asked[1]));
  if (r.pytorch.empty() != r.wheel.empty()) {
    throw invalid_argument(
        "--pytorch VER and --wheel cuXYZ go together (e.g. --pytorch 2.8 "
        "--wheel cu128)");
  }
  const gpu_spec& g = db.at(r.gpu);
  if (!r.cuda.empty()) return {&g, db.cuda_support(g, parse_version(r.cuda))};
  if (!r.cudnn.empty()) return {&g, db.cudnn_support(g, parse_version(r.cudnn))};
  if (!r.pytorch.empty()) return {&g, db.pytorch_support(g, parse_version(r.pytorch), r.wheel)};
  int branch = 0;
  std::string_view text = r.driver;
  if (!text.empty() && (text.front() == 'R' || text.front() == 'r')) text.remove_prefix(1);
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), branch);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || branch <= 0) {
    throw invalid_argument("bad driver branch '" + r.driver + "' (expected a number such as 580)");
  }
  return {&g, db.driver_support(g, branch)};
}

nlohmann::json to_json(const support_result& r) {
  const char* state = r.answer.state == support_state::supported     ? "supported"
                      : r.answer.state == support_state::unsupported ? "unsupported"
                                                                     : "unknown";
  return {{"supported", r.answer.known() ? nlohmann::json(r.answer.supported()) : nullptr},
          {"state", state},
          {"reason", r.answer.reason},
          {"source", r.answer.source_text()},
          {"gpu", r.gpu->name},
          {"compute_capability", r.gpu->cc.str()},
          {"sources", to_json(r.answer.sources)}};
}

}  // namespace keel::perf
