// Trace loading. Each line is read with keel's JSON reader (keel/core/json_reader.hpp), whose
// events are taken as they come, without a tree: Mooncake traces are ~1 MB of numbers, and
// building a DOM per line took longer than replaying the trace. Any valid JSON object is
// accepted, keys it does not know skipped, and errors are reported as file:line:column.
#include "keel/kv/trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "keel/core/error.hpp"
#include "keel/core/input_file.hpp"
#include "keel/core/json_reader.hpp"
#include "keel/kv/block_hash.hpp"

namespace keel::kv {
namespace {

// The value `e` (just read) as a non-negative number up to k_max_trace_number (fractions
// truncated), for lengths and timestamps.
std::uint64_t count(const json_reader& rd, json_event e, const char* key) {
  if (e != json_event::number) rd.fail(rd.offset(), "expected a number");
  if (rd.number_type() == json_number::unsigned_integer) {
    if (rd.as_unsigned() <= k_max_trace_number) return rd.as_unsigned();
  } else if (rd.number_type() == json_number::floating) {
    const double d = rd.as_double();
    if (d >= 0 && d <= static_cast<double>(k_max_trace_number))
      return static_cast<std::uint64_t>(d);
  }
  rd.fail(rd.offset(), fmt::format("\"{}\" must be a non-negative number up to 2^53", key));
}

// The value `e` as an integer in [0, max]; `what` names it in errors.
std::uint64_t uint(const json_reader& rd, json_event e, const char* what, std::uint64_t max) {
  if (e != json_event::number) rd.fail(rd.offset(), "expected a number");
  if (rd.number_type() != json_number::unsigned_integer || rd.as_unsigned() > max)
    rd.fail(rd.offset(), fmt::format("{} must be an integer in [0, {}]", what, max));
  return rd.as_unsigned();
}

// The value `e` as an array of integers in [0, max].
template <class T>
void uint_array(json_reader& rd, json_event e, std::vector<T>& out, const char* what,
                std::uint64_t max) {
  if (e != json_event::begin_array) rd.fail(rd.offset(), "expected '['");
  out.clear();
  for (e = rd.next(); e != json_event::end_array; e = rd.next())
    out.push_back(static_cast<T>(uint(rd, e, what, max)));
}

enum class field { timestamp, input_length, output_length, hash_ids, tokens, other };

field field_of(std::string_view key) {
  if (key == "timestamp") return field::timestamp;
  if (key == "input_length") return field::input_length;
  if (key == "output_length") return field::output_length;
  if (key == "hash_ids") return field::hash_ids;
  if (key == "tokens") return field::tokens;
  return field::other;
}

// Where a hash id sits in its chain: after `parent`, or first in a request.
struct chain_link {
  block_hash parent;
  bool first;
  std::size_t line;
  std::string describe() const {
    return first ? std::string("starts a request") : fmt::format("follows {}", parent);
  }
};

}  // namespace

trace parse_trace(std::istream& in, const std::string& source, std::size_t block_size) {
  if (block_size == 0) throw keel::invalid_argument("trace: block size must be positive");
  trace t;
  t.source = source;
  t.block_size = block_size;
  std::string text;
  std::size_t line_no = 0;
  std::vector<std::uint32_t> tokens;
  std::unordered_map<block_hash, chain_link> links;  // each hash id's parent, first seen
  json_reader_options options;
  options.max_depth = 66;  // the line's object and 65 levels within it
  json_reader rd({}, source, options);
  while (std::getline(in, text)) {
    ++line_no;
    const std::size_t first = text.find_first_not_of(" \t\r\n");
    if (first == std::string::npos) continue;
    if (text[first] != '{') throw parse_error(source, line_no, first + 1, "expected '{'");
    rd.reset(text, line_no);
    rd.next();  // the object's beginning
    trace_request r;
    std::optional<std::uint64_t> timestamp, input_length;
    bool have_ids = false, have_tokens = false;
    for (json_event e = rd.next(); e != json_event::end_object; e = rd.next()) {
      const field f = field_of(rd.string());  // e is a key
      e = rd.next();
      switch (f) {
        case field::timestamp: timestamp = count(rd, e, "timestamp"); break;
        case field::input_length: input_length = count(rd, e, "input_length"); break;
        case field::output_length: r.output_length = count(rd, e, "output_length"); break;
        case field::hash_ids:
          uint_array(rd, e, r.hashes, "a hash id", ~std::uint64_t{0});
          have_ids = true;
          break;
        case field::tokens:
          uint_array(rd, e, tokens, "a token id", 0xffffffffULL);
          have_tokens = true;
          break;
        case field::other: rd.skip(); break;
      }
    }
    rd.next();  // the end of the line: refuses trailing characters
    auto fail = [&](const std::string& message) { throw parse_error(source, line_no, 1, message); };
    if (!timestamp) fail("missing \"timestamp\"");
    r.timestamp_ms = *timestamp;
    if (have_ids) {
      if (!input_length) fail("missing \"input_length\"");
      r.input_length = *input_length;
      const std::uint64_t want = r.input_length / block_size + (r.input_length % block_size != 0);
      if (r.hashes.size() != want) {
        fail(
            fmt::format("{} hash_ids for input_length {} but that is {} blocks of {} tokens "
                        "(Mooncake traces use --block-size 512)",
                        r.hashes.size(), r.input_length, want, block_size));
      }
    } else if (have_tokens) {
      r.input_length = input_length.value_or(tokens.size());
      if (r.input_length != tokens.size()) {
        fail(fmt::format("input_length {} but {} tokens", r.input_length, tokens.size()));
      }
      r.hashes = hash_blocks(tokens, block_size);
    } else {
      fail("a request needs \"hash_ids\" or \"tokens\"");
    }
    if (r.input_length == 0) fail("input_length is 0");
    // Hash ids are chained: an id stands for its whole prefix, so it has one parent (or none,
    // first in a request) throughout the trace. The two prefix indexes depend on it: the flat
    // table would find an id under another parent that the radix tree cannot.
    for (std::size_t j = 0; j < r.hashes.size(); ++j) {
      const chain_link want{j == 0 ? 0 : r.hashes[j - 1], j == 0, line_no};
      const auto [it, fresh] = links.try_emplace(r.hashes[j], want);
      const chain_link& seen = it->second;
      if (!fresh && (seen.first != want.first || (!want.first && seen.parent != want.parent))) {
        fail(
            fmt::format("hash id {} {} here but {} on line {} (hash ids are chained: an id "
                        "stands for its whole prefix)",
                        r.hashes[j], want.describe(), seen.describe(), seen.line));
      }
    }
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
  const std::unique_ptr<std::istream> in = open_input_file(path);
  return parse_trace(*in, path, block_size);
}

}  // namespace keel::kv
