#include "keel/kv/trace.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <limits>

#include "keel/core/error.hpp"
#include "keel/kv/block_hash.hpp"

namespace keel::kv {
namespace {

using nlohmann::json;

std::uint64_t get_uint(const json& obj, const char* key, const std::string& source,
                       std::size_t line, bool required, std::uint64_t fallback = 0) {
  const auto it = obj.find(key);
  if (it == obj.end()) {
    if (required) throw parse_error(source, line, 1, fmt::format("missing \"{}\"", key));
    return fallback;
  }
  if (it->is_number_unsigned()) return it->get<std::uint64_t>();
  if (it->is_number_integer() && it->get<std::int64_t>() >= 0) {
    return static_cast<std::uint64_t>(it->get<std::int64_t>());
  }
  if (it->is_number_float()) {
    const double v = it->get<double>();
    if (v >= 0 && v < 1.8e19) return static_cast<std::uint64_t>(v);
  }
  throw parse_error(source, line, 1,
                    fmt::format("\"{}\" must be a non-negative number, got {}", key, it->dump()));
}

}  // namespace

trace parse_trace(std::istream& in, const std::string& source, std::size_t block_size) {
  if (block_size == 0) throw keel::invalid_argument("trace: block size must be positive");
  trace t;
  t.source = source;
  t.block_size = block_size;
  std::string text;
  std::size_t line_no = 0;
  std::vector<std::uint32_t> tokens;
  while (std::getline(in, text)) {
    ++line_no;
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    json obj;
    try {
      obj = json::parse(text);
    } catch (const json::parse_error& e) {
      // nlohmann reports a 1-based byte position within the line.
      throw parse_error(source, line_no, e.byte == 0 ? 1 : e.byte, "malformed JSON");
    }
    if (!obj.is_object()) throw parse_error(source, line_no, 1, "expected a JSON object");
    trace_request r;
    r.timestamp_ms = get_uint(obj, "timestamp", source, line_no, true);
    r.output_length = get_uint(obj, "output_length", source, line_no, false, 0);
    if (const auto ids = obj.find("hash_ids"); ids != obj.end()) {
      r.input_length = get_uint(obj, "input_length", source, line_no, true);
      if (!ids->is_array()) throw parse_error(source, line_no, 1, "\"hash_ids\" must be an array");
      r.hashes.reserve(ids->size());
      for (const json& id : *ids) {
        if (!id.is_number_integer() || (id.is_number_integer() && !id.is_number_unsigned() &&
                                        id.get<std::int64_t>() < 0)) {
          throw parse_error(source, line_no, 1,
                            fmt::format("hash id {} is not a non-negative integer", id.dump()));
        }
        r.hashes.push_back(id.get<std::uint64_t>());
      }
      const std::size_t want = (r.input_length + block_size - 1) / block_size;
      if (r.hashes.size() != want) {
        throw parse_error(source, line_no, 1,
                          fmt::format("{} hash_ids for input_length {} but {} blocks of {} "
                                      "tokens (Mooncake traces use --block-size 512)",
                                      r.hashes.size(), r.input_length, want, block_size));
      }
    } else if (const auto tok = obj.find("tokens"); tok != obj.end()) {
      if (!tok->is_array()) throw parse_error(source, line_no, 1, "\"tokens\" must be an array");
      tokens.clear();
      tokens.reserve(tok->size());
      for (const json& v : *tok) {
        if (!v.is_number_unsigned() || v.get<std::uint64_t>() > 0xffffffffULL) {
          throw parse_error(source, line_no, 1,
                            fmt::format("token {} is not a 32-bit unsigned id", v.dump()));
        }
        tokens.push_back(static_cast<std::uint32_t>(v.get<std::uint64_t>()));
      }
      r.input_length = get_uint(obj, "input_length", source, line_no, false, tokens.size());
      if (r.input_length != tokens.size()) {
        throw parse_error(source, line_no, 1,
                          fmt::format("input_length {} but {} tokens", r.input_length,
                                      tokens.size()));
      }
      r.hashes = hash_blocks(tokens, block_size);
    } else {
      throw parse_error(source, line_no, 1, "a request needs \"hash_ids\" or \"tokens\"");
    }
    if (r.input_length == 0) throw parse_error(source, line_no, 1, "input_length is 0");
    t.requests.push_back(std::move(r));
  }
  if (in.bad()) throw keel::io_error(fmt::format("{}: read error", source));
  std::stable_sort(t.requests.begin(), t.requests.end(),
                   [](const trace_request& a, const trace_request& b) {
                     return a.timestamp_ms < b.timestamp_ms;
                   });
  return t;
}

trace load_trace(const std::string& path, std::size_t block_size) {
  std::ifstream in(path);
  if (!in) throw keel::io_error(fmt::format("{}: cannot open for reading", path));
  return parse_trace(in, path, block_size);
}

}  // namespace keel::kv
