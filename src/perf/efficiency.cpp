#include "keel/perf/efficiency.hpp"

#include <fmt/format.h>

#include <set>

namespace keel::perf {

std::string_view name_of(op_class c) noexcept {
  switch (c) {
    case op_class::gemm: return "gemm";
    case op_class::attention: return "attention";
    case op_class::memory: return "memory";
  }
  return "memory";
}

const std::vector<efficiency_row>& efficiency_table() {
  // Each fraction is the measured rate over the database's dense peak of the same GPU and
  // type (h100-sxm: 989 TFLOP/s dense bf16/fp16 tensor; a100: 312).
  static const std::vector<efficiency_row> rows = {
      {"h100-sxm", op_class::gemm, 780.17 / 989,
       "bf16 torch.mm (4224x8192 by 8192x2048, cuBLAS/CUTLASS autotuned): 780.2 of 989 TFLOP/s",
       "Horace He, \"H100 peak matmul FLOPS\" "
       "<https://gist.github.com/Chillee/2ec89696db8b7ed1c24461159e325405>"},
      {"h100-sxm", op_class::attention, 0.75,
       "FlashAttention-3 fp16 forward: up to 740 TFLOP/s, \"75% utilization\"",
       "Shah et al., \"FlashAttention-3: Fast and Accurate Attention with Asynchrony and "
       "Low-precision\", arXiv:2407.08608 <https://arxiv.org/abs/2407.08608>"},
      {"a100-sxm4-80gb", op_class::attention, (0.50 + 0.73) / 2,
       "FlashAttention-2: \"50-73% of the theoretical maximum FLOPs/s on A100\" (midpoint)",
       "Dao, \"FlashAttention-2: Faster Attention with Better Parallelism and Work "
       "Partitioning\", arXiv:2307.08691 <https://arxiv.org/abs/2307.08691>"},
      {"a100-sxm4-40gb", op_class::attention, (0.50 + 0.73) / 2,
       "FlashAttention-2: \"50-73% of the theoretical maximum FLOPs/s on A100\" (midpoint; "
       "same chip and clocks as the 80 GB part)",
       "Dao, \"FlashAttention-2: Faster Attention with Better Parallelism and Work "
       "Partitioning\", arXiv:2307.08691 <https://arxiv.org/abs/2307.08691>"},
  };
  return rows;
}

efficiency achievable_fraction(const gpu_spec& device, op_class c) {
  efficiency e;
  e.cls = c;
  if (device.segment == "cpu") {
    e.known = true;
    e.basis = "calibrated: the device file's rates and ceilings are measured, achieved rates";
    return e;
  }
  double sum = 0;
  int count = 0;
  std::set<std::string> names, sources;
  for (const efficiency_row& row : efficiency_table()) {
    if (row.cls != c) continue;
    if (row.gpu == device.name) {
      e.fraction = row.fraction;
      e.known = true;
      e.basis = fmt::format("measured on {}: {}", row.gpu, row.measured);
      e.source = row.source;
      return e;
    }
    sum += row.fraction;
    ++count;
    names.insert(row.gpu);
    sources.insert(row.source);
  }
  if (count == 0) {
    e.basis = "unknown: no sourced measurement for this class; expected = bound";
    return e;
  }
  e.fraction = sum / count;
  e.known = true;
  std::string list, src;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  for (const std::string& s : sources) src += (src.empty() ? "" : "; ") + s;
  e.basis = fmt::format("default: no measurement for {}; mean of the measured GPUs ({})",
                        device.name, list);
  e.source = src;
  return e;
}

}  // namespace keel::perf
