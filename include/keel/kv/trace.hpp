// Request traces for replaying a KV cache: Mooncake's JSONL format, or raw token ids.
//
// One JSON object per line (blank lines are skipped):
//   {"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47, ...]}
// timestamp is in milliseconds; hash_ids are Mooncake's remapped chained block hashes, one per
// block of block_size tokens including a partial last block, so len(hash_ids) must equal
// ceil(input_length / block_size) (Mooncake's traces use 512), and since an id stands for its
// whole prefix it has the same parent (the id before it, or none when first) on every line. Instead
// of hash_ids a line may carry "tokens": [token ids]; keel then hashes the full blocks itself
// (chained XXH3, see block_hash.hpp) and input_length defaults to the number of tokens.
// output_length defaults to 0. timestamp, input_length and output_length are non-negative numbers
// up to k_max_trace_number (2^53, exact in a double; fractions are truncated); ids are integers
// (hash ids in [0, 2^64), token ids in [0, 2^32)). Lines are strict JSON (RFC 8259: escapes
// decoded, UTF-8 checked, numbers beyond a double refused; keel/core/json_reader.hpp reads
// them); unknown keys are skipped (their values nested up to 65 levels deep), and for a
// repeated key the last value counts.
// Requests are returned in timestamp order (stable for equal timestamps).
// Loading is a pure function of the file; the result is an immutable value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "keel/kv/types.hpp"

namespace keel::kv {

// The largest timestamp or length a trace may carry.
inline constexpr std::uint64_t k_max_trace_number = std::uint64_t{1} << 53;

struct trace_request {
  std::uint64_t timestamp_ms = 0;
  std::uint64_t input_length = 0;
  std::uint64_t output_length = 0;
  std::vector<block_hash> hashes;  // chained hashes of the request's cacheable blocks
};

struct trace {
  std::string source;
  std::size_t block_size = 0;
  std::vector<trace_request> requests;
};

// load_trace reads the file through keel::open_input_file (a regular file within
// KEEL_MAX_INPUT_BYTES; no device, FIFO or directory).
// Throws keel::io_error when the file cannot be read and keel::parse_error
// ("file:line:column: message") for malformed JSON, missing or mistyped fields, hash_ids
// whose length does not match input_length and block_size, or an id under two parents.
trace load_trace(const std::string& path, std::size_t block_size);
trace parse_trace(std::istream& in, const std::string& source, std::size_t block_size);

}  // namespace keel::kv
