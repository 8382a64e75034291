#include "keel/perf/gpu_compare.hpp"

namespace keel::perf {

gpu_comparison compare_gpus(const gpu_spec& a, const gpu_spec& b) {
  gpu_comparison out{&a, &b, {}};
  auto row = [&](const std::string& key, std::optional<double> va, std::optional<double> vb) {
    if (!va && !vb) return;
    out.rows.push_back(
        {key, va, vb, va && vb && *va > 0 ? std::optional<double>(*vb / *va) : std::nullopt});
  };
  for (const char* k : {"fp64", "fp64_tensor", "fp32", "fp16", "tf32_tensor", "fp16_tensor",
                        "bf16_tensor", "fp8_tensor", "int8_tensor", "fp4_tensor"}) {
    row(k, a.rate(k), b.rate(k));
  }
  row("memory_gb", a.memory_gb, b.memory_gb);
  row("bandwidth_gbs", a.bandwidth_gbs, b.bandwidth_gbs);
  row("nvlink_gbs", a.nvlink_gbs, b.nvlink_gbs);
  row("pcie_gbs", a.pcie_gbs, b.pcie_gbs);
  row("l2_mb", a.l2_mb, b.l2_mb);
  row("tdp_w", a.tdp_w, b.tdp_w);
  row("price_usd", a.price_usd, b.price_usd);
  const double ridge_a = a.peak(dtype::f32).tflops * 1e12 / a.bandwidth_bytes_per_s();
  const double ridge_b = b.peak(dtype::f32).tflops * 1e12 / b.bandwidth_bytes_per_s();
  row("fp32_ridge_flops_per_byte", ridge_a, ridge_b);
  return out;
}

nlohmann::json to_json(const gpu_comparison& c) {
  auto opt = [](const std::optional<double>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  };
  nlohmann::json rows = nlohmann::json::array();
  for (const gpu_compare_row& r : c.rows) {
    rows.push_back(
        {{"metric", r.metric}, {"a", opt(r.a)}, {"b", opt(r.b)}, {"ratio", opt(r.ratio)}});
  }
  return {{"a", to_json(*c.a)}, {"b", to_json(*c.b)}, {"rows", rows}};
}

}  // namespace keel::perf
