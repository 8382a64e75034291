// The parts of the HTML report (report_html.cpp writes the page): reading the analysis
// document (report_fields.cpp: absent or null is "not there", a wrong type is an
// invalid_argument naming the field's path), escaped text helpers, the columnar data the
// script draws from (report_data.cpp) and the static HTML sections of one device
// (report_sections.cpp). Pure functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include "keel/memory/report_html.hpp"
#include "keel/memory/snapshot.hpp"

namespace keel::memory::report_detail {

using nlohmann::json;

// --- reading the analysis ---

[[noreturn]] void bad_field(const std::string& path, std::string_view expected);
const json* field(const json& obj, const char* key);
std::optional<std::string> opt_string(const json& obj, const char* key, const std::string& path);
std::optional<double> opt_number(const json& obj, const char* key, const std::string& path);
std::optional<std::int64_t> opt_int(const json& obj, const char* key, const std::string& path);
std::optional<std::uint64_t> opt_bytes(const json& obj, const char* key, const std::string& path);
std::optional<bool> opt_bool(const json& obj, const char* key, const std::string& path);
const json& empty_array();
const json& opt_array(const json& obj, const char* key, const std::string& path);
const json* opt_object(const json& obj, const char* key, const std::string& path);

// --- escaped text ---

std::string esc(std::string_view s);
std::string size_text(std::uint64_t bytes);
std::string signed_size_text(std::int64_t bytes);
// Escaped, with break opportunities after ',' and '=' (settings are long words).
std::string breakable(std::string_view s);
std::string count_text(std::uint64_t n);

// --- one device of the page ---

struct device_info {
  int device = 0;
  std::size_t entries = 0;
  std::size_t segments = 0;
  std::uint64_t reserved = 0;  // sum of segment sizes in the final state
  std::uint64_t active = 0;    // requested bytes of live blocks in the final state
  std::size_t ooms = 0;
  std::optional<std::int64_t> t_first, t_last;
  const json* analysis = nullptr;
  std::string path;  // of its analysis object
};

// The page's embedded data: deduplicated strings, frames and stacks, columnar traces and
// segments, and what the script needs of each device's analysis.
json embedded_data(const snapshot& snap, const std::map<int, device_info>& devices,
                   const std::string& name, const report_options& options);

// The page's JSON, safe inside <script>.
std::string script_safe(const std::string& text);

// The static sections of one device (shown first when `active`).
void write_device(std::ostream& out, const device_info& d, bool active);

}  // namespace keel::memory::report_detail
