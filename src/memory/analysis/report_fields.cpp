// Reading the analysis document and the escaped text helpers of the HTML report.

#include "report_html_parts.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "keel/core/bytes.hpp"
#include "keel/core/error.hpp"
#include "keel/core/output_file.hpp"
#include "keel/core/xml_escape.hpp"
#include "keel/memory/callsites.hpp"

namespace keel::memory::report_detail {
// --- reading the analysis: absent or null is "not there"; a wrong type is an error ---

[[noreturn]] void bad_field(const std::string& path, std::string_view expected) {
  throw invalid_argument(fmt::format("analysis {}: expected {}", path, expected));
}

const json* field(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<std::string> opt_string(const json& obj, const char* key, const std::string& path) {
  const json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_string()) bad_field(path + "." + key, "a string");
  return v->get<std::string>();
}

std::optional<double> opt_number(const json& obj, const char* key, const std::string& path) {
  const json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_number()) bad_field(path + "." + key, "a number");
  return v->get<double>();
}

std::optional<std::int64_t> opt_int(const json& obj, const char* key, const std::string& path) {
  const json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (v->is_number_unsigned()) {
    const auto u = v->get<std::uint64_t>();
    return u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())
               ? std::numeric_limits<std::int64_t>::max()
               : static_cast<std::int64_t>(u);
  }
  if (v->is_number_integer()) return v->get<std::int64_t>();
  if (v->is_number_float()) {
    const double d = v->get<double>();
    if (!std::isfinite(d)) bad_field(path + "." + key, "a finite number");
    return static_cast<std::int64_t>(std::llround(d));
  }
  bad_field(path + "." + key, "an integer");
}

std::optional<std::uint64_t> opt_bytes(const json& obj, const char* key, const std::string& path) {
  const auto v = opt_int(obj, key, path);
  if (!v) return std::nullopt;
  if (*v < 0) bad_field(path + "." + key, "a byte count (>= 0)");
  return static_cast<std::uint64_t>(*v);
}

std::optional<bool> opt_bool(const json& obj, const char* key, const std::string& path) {
  const json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) bad_field(path + "." + key, "true or false");
  return v->get<bool>();
}

const json& empty_array() {
  static const json none = json::array();
  return none;
}

const json& opt_array(const json& obj, const char* key, const std::string& path) {
  const json* v = field(obj, key);
  if (!v) return empty_array();
  if (!v->is_array()) bad_field(path + "." + key, "an array");
  return *v;
}

const json* opt_object(const json& obj, const char* key, const std::string& path) {
  const json* v = field(obj, key);
  if (!v) return nullptr;
  if (!v->is_object()) bad_field(path + "." + key, "an object");
  return v;
}

std::string esc(std::string_view s) { return xml_escape(s); }

std::string size_text(std::uint64_t bytes) { return esc(format_size(bytes)); }

std::string signed_size_text(std::int64_t bytes) {
  if (bytes == 0) return "0";
  const auto mag =
      bytes < 0 ? static_cast<std::uint64_t>(-(bytes + 1)) + 1 : static_cast<std::uint64_t>(bytes);
  return (bytes < 0 ? "&minus;" : "+") + size_text(mag);
}

// Escaped, with break opportunities after ',' and '=' (settings are long words).
std::string breakable(std::string_view s) {
  std::string out;
  for (const char c : s) {
    out += esc(std::string_view(&c, 1));
    if (c == ',' || c == '=') out += "<wbr>";
  }
  return out;
}

std::string count_text(std::uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// --- the embedded data: deduplicated strings, frames and stacks; columnar traces ---

}  // namespace keel::memory::report_detail
