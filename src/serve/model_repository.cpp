#include "keel/serve/model_repository.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <system_error>

#include "keel/core/error.hpp"

namespace keel::serve {
namespace {

namespace fs = std::filesystem;

std::optional<std::int64_t> version_of(const std::string& folder) {
  std::int64_t v = 0;
  const char* end = folder.data() + folder.size();
  const auto [p, ec] = std::from_chars(folder.data(), end, v);
  if (ec != std::errc() || p != end || v < 1 || folder[0] == '0') return std::nullopt;
  return v;
}

void choose_versions(repository_model& m) {
  const model_config& c = *m.config;
  std::vector<std::int64_t> found;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(m.dir, ec)) {
    if (!e.is_directory(ec)) continue;
    const auto v = version_of(e.path().filename().string());
    if (!v) continue;
    if (c.platform == model_platform::torchscript && !fs::is_regular_file(m.model_file(*v), ec))
      continue;
    found.push_back(*v);
  }
  std::sort(found.begin(), found.end());
  switch (c.versions.choice) {
    case version_policy::kind::all: m.versions = found; break;
    case version_policy::kind::specific:
      for (const std::int64_t v : c.versions.versions) {
        if (!std::binary_search(found.begin(), found.end(), v)) {
          m.error =
              fmt::format("{}: version {} named by version_policy is missing{}", m.dir.string(), v,
                          c.platform == model_platform::torchscript
                              ? fmt::format(" (no {}/{})", v, c.default_model_filename)
                              : "");
          return;
        }
        m.versions.push_back(v);
      }
      std::sort(m.versions.begin(), m.versions.end());
      break;
    case version_policy::kind::latest: {
      const std::size_t n = std::min<std::size_t>(found.size(), c.versions.latest_count);
      m.versions.assign(found.end() - static_cast<std::ptrdiff_t>(n), found.end());
      break;
    }
  }
  if (m.versions.empty())
    m.error = fmt::format("{}: no version folder{}", m.dir.string(),
                          c.platform == model_platform::torchscript
                              ? fmt::format(" holds {}", c.default_model_filename)
                              : "");
}

}  // namespace

fs::path repository_model::model_file(std::int64_t version) const {
  const std::string file = config ? config->default_model_filename : "model.pt";
  return dir / std::to_string(version) / file;
}

repository_model scan_model(const fs::path& dir) {
  repository_model m;
  m.name = dir.filename().string();
  m.dir = dir;
  try {
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
      throw io_error(fmt::format("{}: no such model folder", dir.string()));
    model_config c = read_model_config(dir / "config.pbtxt");
    if (c.name != m.name)
      throw invalid_argument(fmt::format("{}: name '{}' differs from its folder '{}'",
                                         (dir / "config.pbtxt").string(), c.name, m.name));
    m.config = std::move(c);
    choose_versions(m);
  } catch (const keel::error& err) {
    m.error = err.what();
  }
  if (!m.error.empty()) m.config.reset();
  return m;
}

std::vector<repository_model> scan_repository(const fs::path& root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec))
    throw io_error(fmt::format("{}: not a model repository folder", root.string()));
  std::vector<repository_model> out;
  fs::directory_iterator it(root, ec);
  if (ec) throw io_error(fmt::format("{}: {}", root.string(), ec.message()));
  for (const fs::directory_entry& e : it) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name[0] == '.' || !e.is_directory(ec)) continue;
    out.push_back(scan_model(e.path()));
  }
  std::sort(out.begin(), out.end(),
            [](const repository_model& a, const repository_model& b) { return a.name < b.name; });
  return out;
}

}  // namespace keel::serve
