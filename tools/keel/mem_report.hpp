// What the `keel mem` commands share: the --capacity option and the HTML report.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

#include "keel/memory/snapshot.hpp"

namespace keel::cli {

// --device of every `keel mem` command: a CUDA device index.
inline constexpr int k_max_device = 65535;

// --capacity as bytes; throws invalid_argument for a malformed or zero size (the default is
// the option's absence, never 0).
std::optional<std::uint64_t> capacity_option(const std::optional<std::string>& text);

// Analyzes the snapshot (every device, or `device`) and writes the HTML report to `path`
// (keel::memory::write_html_report: nothing is written when the analysis is malformed).
void write_report(const std::string& path, const memory::snapshot& snap, const std::string& trace,
                  std::optional<int> device, std::optional<std::uint64_t> capacity);

// `keel mem advise` and `keel mem explain` (tools/keel/mem_advise.cpp).
void add_mem_advise_commands(CLI::App& mem);

}  // namespace keel::cli
