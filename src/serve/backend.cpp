#include "keel/serve/backend.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "keel/core/error.hpp"

namespace keel::serve {
namespace {

namespace fs = std::filesystem;

// The folder of the binary this code was linked into.
fs::path own_folder() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&own_folder), &info) == 0 || info.dli_fname == nullptr)
    return {};
  std::error_code ec;
  const fs::path self = fs::canonical(info.dli_fname, ec);
  return ec ? fs::path{} : self.parent_path();
}

}  // namespace

model_loader load_backend(std::string_view name) {
  const std::string file = fmt::format("libkeel_serve_{}.so", name);
  const std::string entry = fmt::format("keel_serve_backend_{}", name);
  std::vector<fs::path> folders;
  if (const char* dir = std::getenv("KEEL_SERVE_BACKEND_DIR"); dir != nullptr && *dir != '\0')
    folders.emplace_back(dir);
  if (const fs::path own = own_folder(); !own.empty()) {
    folders.push_back(own);
    folders.push_back(own.parent_path() / "lib" / "keel");
  }
  std::string tried;
  for (const fs::path& folder : folders) {
    const fs::path path = folder / file;
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) {
      tried += fmt::format("; {}: no such file", path.string());
      continue;
    }
    void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      tried += fmt::format("; {}: {}", path.string(), dlerror());
      continue;
    }
    using entry_fn = void (*)(model_loader*);
    const auto fill = reinterpret_cast<entry_fn>(dlsym(library, entry.c_str()));
    if (fill == nullptr) {
      tried += fmt::format("; {}: no {}", path.string(), entry);
      continue;
    }
    model_loader loader;
    fill(&loader);
    return loader;
  }
  throw io_error(
      fmt::format("keel serve: cannot load the {} backend{}", name, tried.empty() ? "" : tried));
}

}  // namespace keel::serve
