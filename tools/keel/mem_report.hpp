// What the `keel mem` commands share: the --capacity option and the HTML report.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>

#include "keel/memory/snapshot.hpp"

namespace keel::cli {

// --capacity as bytes; throws invalid_argument for a malformed or zero size.
std::optional<std::uint64_t> capacity_option(const std::optional<std::string>& text);

// Analyzes the snapshot (every device, or `device`) and writes the HTML report to `path`.
void write_report(const std::string& path, const memory::snapshot& snap, const std::string& trace,
                  std::optional<int> device, std::optional<std::uint64_t> capacity);

// `keel mem advise` and `keel mem explain` (tools/keel/mem_advise.cpp).
void add_mem_advise_commands(CLI::App& mem);

}  // namespace keel::cli
