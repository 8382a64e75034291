// json_value — keel's one JSON value tree: nlohmann::json, the well-kept tree every module's
// documents (reports, `--json` output, the GPU database, model configs) are built in, filled by
// keel's one reader (keel/core/json_reader.hpp) so that every JSON text keel reads meets the
// same grammar, limits and error format.
//
// parse_json reads one JSON text into a tree: objects keep their keys in sorted order (as
// nlohmann::json does) and a repeated key keeps its last value; integers stay exact (unsigned
// in [0, 2^64), signed in [-2^63, 0)), other numbers are finite doubles. Errors are the
// reader's keel::parse_error "source:line:column: message". The tree is built with an
// explicit stack, so depth costs no native stack beyond the reader's max_depth.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "keel/core/json_reader.hpp"

namespace keel {

using json_value = nlohmann::json;

json_value parse_json(std::string_view text, std::string_view source,
                      const json_reader_options& options = {});

}  // namespace keel
