// Presentation of `keel mem` results: text, JSON and the self-contained HTML report.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "keel/memory/replay.hpp"
#include "keel/memory/snapshot.hpp"
#include "keel/memory/trace_model.hpp"

namespace keel::cli {

// --device if given (checked against the snapshot), else the device with most trace entries.
int pick_device(const memory::snapshot& s, std::optional<int> requested, const std::string& path);

nlohmann::json replay_to_json(const memory::replay_result& r, const memory::trace_model& model);
void print_replay_text(std::ostream& out, const std::string& trace, const memory::trace_model& model,
                       const memory::replay_result& r);

// One page, no network: allocated vs reserved over time for each result, and the segment map
// at the reserved peak of the first result that kept one.
void write_html_report(const std::string& path, const std::string& trace,
                       const memory::trace_model& model,
                       const std::vector<memory::replay_result>& results);

// `keel mem advise` and `keel mem explain` (tools/keel/mem_advise.cpp).
void add_mem_advise_commands(CLI::App& mem);

}  // namespace keel::cli
