// keel::serve::scan_repository — the models of a repository folder in Triton's layout:
// REPO/NAME/config.pbtxt and REPO/NAME/VERSION/model.pt (VERSION a positive integer; the file
// name is the configuration's default_model_filename).
//
// Every folder under REPO is a model (names starting with "." are skipped). A model whose
// configuration does not parse, whose `name` differs from its folder, or that has no version
// the version policy serves gets its error (one line, naming the file) and the others are
// unaffected: the server loads what it can and reports the rest. The versions served follow
// version_policy: the latest N (default 1), all, or the specific ones (each must exist). A
// torchscript version needs its model file; an ensemble's version folder may be empty.
// Reads the file system only; thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "keel/serve/model_config.hpp"

namespace keel::serve {

struct repository_model {
  std::string name;  // the folder's name
  std::filesystem::path dir;
  std::optional<model_config> config;  // empty when `error` is set
  std::vector<std::int64_t> versions;  // served, ascending
  std::string error;                   // why the model cannot be loaded, else empty

  // REPO/NAME/VERSION/<default_model_filename>.
  std::filesystem::path model_file(std::int64_t version) const;
};

// The model in folder `dir` (named after it); its error says what is wrong, a missing
// folder included.
repository_model scan_model(const std::filesystem::path& dir);
// The models under `root`, by name; keel::io_error when `root` is not a readable folder.
std::vector<repository_model> scan_repository(const std::filesystem::path& root);

}  // namespace keel::serve
