// libFuzzer target for the kv JSONL trace reader (keel/kv/trace.hpp) and the replay that
// follows it: bytes -> parse_trace at block sizes 4 and 512 -> replay of every policy.
//
// The reader is checked against a reference: nlohmann::json's SAX parser, which knows JSON,
// driving a plain restatement of the trace rules (trace.hpp). For every input both must agree:
// the same requests (timestamps, lengths, hashes, in the same order) or a parse_error on the
// same line (hash ids chained consistently included). Only inputs nested deeper than the
// reader's documented 64 levels are not compared.
// Anything else the reader throws, a crash, a sanitizer report, a leak or a hang is a finding.
//
// A trace that parses (at most 256 requests, 2,048 blocks) is replayed by every policy on a
// 4-block cache with the hash and the radix index (which must give the same answers), in
// instant mode and hold mode: hit rates lie in [0, 1] and never exceed the infinite cache's,
// evictions and rejections are bounded, and a request larger than the cache is refused with
// keel::invalid_argument, an answer.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "keel/core/error.hpp"
#include "keel/kv/block_hash.hpp"
#include "keel/kv/eviction_policy.hpp"
#include "keel/kv/replay.hpp"
#include "keel/kv/trace.hpp"

namespace {

using namespace keel::kv;
using json = nlohmann::json;

constexpr std::size_t k_max_requests = 256;
constexpr std::size_t k_max_blocks = 2048;
constexpr std::size_t k_max_depth = 60;  // deeper inputs: the reader's nesting limit decides

// A failed check names itself, so that a crash file reads as a finding.
#define KV_FUZZ_CHECK(condition)                                                         \
  do {                                                                                   \
    if (!(condition)) {                                                                  \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #condition); \
      std::abort();                                                                      \
    }                                                                                    \
  } while (false)

// The trace rules of one line, fed by nlohmann's SAX events. Any violation ends the line.
class reference_line final : public nlohmann::json_sax<json> {
 public:
  enum class field { none, timestamp, input_length, output_length, hash_ids, tokens, other };

  std::optional<std::uint64_t> timestamp, input_length;
  std::uint64_t output_length = 0;
  std::optional<std::vector<std::uint64_t>> ids;
  std::optional<std::vector<std::uint32_t>> tokens;
  std::size_t max_depth = 0;
  bool bad = false;

  bool null() override { return scalar(std::nullopt, false); }
  bool boolean(bool) override { return scalar(std::nullopt, false); }
  bool number_integer(number_integer_t v) override {
    // nlohmann reports negative integers, and "-0", here.
    if (v == 0) return scalar(0.0, true, 0);
    return scalar(static_cast<double>(v), true);
  }
  bool number_unsigned(number_unsigned_t v) override {
    return scalar(static_cast<double>(v), true, v);
  }
  bool number_float(number_float_t v, const string_t&) override { return scalar(v, false); }
  bool string(string_t&) override { return scalar(std::nullopt, false); }
  bool binary(binary_t&) override { return fail(); }
  bool start_object(std::size_t) override { return open(false); }
  bool key(string_t& k) override {
    if (depth_ != 1) return true;
    key_ = k == "timestamp"       ? field::timestamp
           : k == "input_length"  ? field::input_length
           : k == "output_length" ? field::output_length
           : k == "hash_ids"      ? field::hash_ids
           : k == "tokens"        ? field::tokens
                                  : field::other;
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(true); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return fail();
  }

 private:
  field key_ = field::none;
  std::size_t depth_ = 0;
  bool in_ids_ = false;  // inside the array of a top-level hash_ids or tokens

  bool fail() {
    bad = true;
    return false;
  }
  bool open(bool array) {
    max_depth = std::max(max_depth, ++depth_);
    if (depth_ == 1) return array ? fail() : true;  // a line is an object
    if (depth_ == 2) {
      if (key_ == field::hash_ids || key_ == field::tokens) {
        if (!array) return fail();
        in_ids_ = true;
        if (key_ == field::hash_ids) {
          ids.emplace();
        } else {
          tokens.emplace();
        }
        return true;
      }
      if (key_ != field::other) return fail();  // a number was wanted
      return true;
    }
    return in_ids_ ? fail() : true;  // ids are numbers, not containers
  }
  bool close() {
    if (--depth_ == 1) in_ids_ = false;
    return true;
  }
  // A scalar value; `integer` when written without fraction or exponent, `as_uint` its value
  // when that is an integer in [0, 2^64).
  bool scalar(std::optional<double> number, bool integer,
              std::optional<std::uint64_t> as_uint = std::nullopt) {
    if (depth_ == 0) return fail();
    if (in_ids_ && depth_ == 2) {
      if (!integer || !as_uint) return fail();
      if (key_ == field::hash_ids) {
        ids->push_back(*as_uint);
      } else {
        if (*as_uint > 0xffffffffULL) return fail();
        tokens->push_back(static_cast<std::uint32_t>(*as_uint));
      }
      return true;
    }
    if (depth_ != 1 || key_ == field::other) return true;
    if (key_ == field::hash_ids || key_ == field::tokens || !number) return fail();
    std::uint64_t value = 0;
    if (as_uint) {
      if (*as_uint > k_max_trace_number) return fail();
      value = *as_uint;
    } else {
      if (!(*number >= 0 && *number <= static_cast<double>(k_max_trace_number))) return fail();
      value = static_cast<std::uint64_t>(*number);
    }
    if (key_ == field::timestamp) timestamp = value;
    if (key_ == field::input_length) input_length = value;
    if (key_ == field::output_length) output_length = value;
    return true;
  }
};

struct reference_result {
  std::vector<trace_request> requests;
  std::size_t bad_line = 0;  // 0: the trace is good
  bool compared = true;      // false: nested beyond k_max_depth
};

reference_result reference_parse(std::string_view text, std::size_t block_size) {
  reference_result out;
  std::size_t line_no = 0;
  std::size_t pos = 0;
  std::unordered_map<block_hash, std::optional<block_hash>> parents;
  while (pos < text.size()) {
    const std::size_t nl = text.find('\n', pos);
    const std::string_view line =
        text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    reference_line ref;
    // nlohmann skips a leading BOM and stops at a NUL byte as at the end of its input; JSON
    // allows neither.
    bool ok = line.substr(0, 3) != "\xEF\xBB\xBF" && line.find('\0') == std::string_view::npos;
    if (ok) {
      ok = json::sax_parse(line.begin(), line.end(), &ref, json::input_format_t::json, true) &&
           !ref.bad;
    }
    if (ref.max_depth > k_max_depth) {
      out.compared = false;
      return out;
    }
    trace_request r;
    if (ok) ok = ref.timestamp.has_value();
    if (ok) {
      r.timestamp_ms = *ref.timestamp;
      r.output_length = ref.output_length;
      if (ref.ids) {
        ok = ref.input_length.has_value();
        if (ok) {
          r.input_length = *ref.input_length;
          const std::uint64_t want =
              r.input_length / block_size + (r.input_length % block_size != 0 ? 1 : 0);
          ok = ref.ids->size() == want;
          r.hashes.assign(ref.ids->begin(), ref.ids->end());
        }
      } else if (ref.tokens) {
        r.input_length = ref.input_length.value_or(ref.tokens->size());
        ok = r.input_length == ref.tokens->size();
        if (ok) r.hashes = hash_blocks(*ref.tokens, block_size);
      } else {
        ok = false;
      }
    }
    if (ok) ok = r.input_length > 0;
    // An id has one parent (or none, first in a request) throughout the trace.
    for (std::size_t j = 0; ok && j < r.hashes.size(); ++j) {
      const std::optional<block_hash> parent =
          j == 0 ? std::nullopt : std::optional<block_hash>(r.hashes[j - 1]);
      const auto [it, fresh] = parents.try_emplace(r.hashes[j], parent);
      ok = fresh || it->second == parent;
    }
    if (!ok) {
      out.bad_line = line_no;
      return out;
    }
    out.requests.push_back(std::move(r));
  }
  std::stable_sort(out.requests.begin(), out.requests.end(),
                   [](const trace_request& a, const trace_request& b) {
                     return a.timestamp_ms < b.timestamp_ms;
                   });
  return out;
}

std::optional<trace> parse_and_compare(const std::string& text, std::size_t block_size) {
  const reference_result want = reference_parse(text, block_size);
  std::istringstream in(text);
  try {
    trace t = parse_trace(in, "fuzz", block_size);
    if (want.compared) {
      KV_FUZZ_CHECK(want.bad_line == 0);
      KV_FUZZ_CHECK(t.requests.size() == want.requests.size());
      for (std::size_t i = 0; i < t.requests.size(); ++i) {
        const trace_request& a = t.requests[i];
        const trace_request& b = want.requests[i];
        KV_FUZZ_CHECK(a.timestamp_ms == b.timestamp_ms && a.input_length == b.input_length &&
                      a.output_length == b.output_length && a.hashes == b.hashes);
      }
    }
    KV_FUZZ_CHECK(t.block_size == block_size);
    return t;
  } catch (const keel::parse_error& e) {
    if (want.compared) KV_FUZZ_CHECK(want.bad_line == e.line());
    KV_FUZZ_CHECK(e.line() > 0 && e.column() > 0 && !e.message().empty());
    return std::nullopt;
  }
}

void check_result(const replay_result& r, const trace& t, double infinite) {
  KV_FUZZ_CHECK(r.requests == t.requests.size());
  KV_FUZZ_CHECK(r.hit_rate_tokens >= 0 && r.hit_rate_tokens <= 1);
  KV_FUZZ_CHECK(r.hit_rate_blocks >= 0 && r.hit_rate_blocks <= 1);
  KV_FUZZ_CHECK(r.hit_rate_tokens <= infinite + 1e-12);
  KV_FUZZ_CHECK(r.rejected <= r.requests);
}

void replay_all(const trace& t) {
  if (t.requests.size() > k_max_requests) return;
  std::size_t blocks = 0;
  for (const trace_request& r : t.requests) {
    blocks += r.input_length / t.block_size + 1;
    if (blocks > k_max_blocks) return;
  }
  const double infinite = infinite_hit_rate(t);
  KV_FUZZ_CHECK(infinite >= 0 && infinite <= 1);
  for (const std::string& policy : policy_names()) {
    for (const bool hold : {false, true}) {
      replay_options o;
      o.policy = policy;
      o.capacity_blocks = 4;
      o.hold = hold;
      std::optional<replay_result> hashed;
      try {
        hashed = replay(t, o);
      } catch (const keel::invalid_argument&) {
        KV_FUZZ_CHECK(!hold);  // a request larger than the cache: only instant mode refuses it
      }
      o.index = "radix";
      std::optional<replay_result> radix;
      try {
        radix = replay(t, o);
      } catch (const keel::invalid_argument&) {
        KV_FUZZ_CHECK(!hashed);
      }
      KV_FUZZ_CHECK(hashed.has_value() == radix.has_value());
      if (!hashed) continue;
      check_result(*hashed, t, infinite);
      KV_FUZZ_CHECK(hashed->infinite_hit_rate_tokens == infinite);
      KV_FUZZ_CHECK(hashed->hit_rate_tokens == radix->hit_rate_tokens &&
                    hashed->hit_rate_blocks == radix->hit_rate_blocks &&
                    hashed->evictions == radix->evictions && hashed->rejected == radix->rejected &&
                    hashed->peak_held_blocks == radix->peak_held_blocks);
      if (hold) KV_FUZZ_CHECK(hashed->peak_held_blocks <= 4);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::optional<trace> first;
  for (const std::size_t block_size : {std::size_t{4}, std::size_t{512}}) {
    std::optional<trace> t = parse_and_compare(text, block_size);
    if (t && !first) first = std::move(t);
  }
  if (first) replay_all(*first);
  return 0;
}
