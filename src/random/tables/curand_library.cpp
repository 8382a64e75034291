#include "tables/curand_library.hpp"

#include <dlfcn.h>

#include <cstdlib>

namespace keel::random::detail {

curand_library::curand_library() {
  std::string candidates[4];
  int count = 0;
  if (const char* env = std::getenv("KEEL_CURAND_LIBRARY")) candidates[count++] = env;
  candidates[count++] = "libcurand.so.10";
  candidates[count++] = "libcurand.so";
#ifdef KEEL_CURAND_DIR
  candidates[count++] = std::string(KEEL_CURAND_DIR) + "/libcurand.so";
#endif
  description_ = "libcurand not found (set KEEL_CURAND_LIBRARY or LD_LIBRARY_PATH)";
  for (int i = 0; i < count; ++i) {
    void* lib = dlopen(candidates[i].c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) continue;
    if (dlsym(lib, "curandGetVersion") && dlsym(lib, "curandCreateGeneratorHost")) {
      handle_ = lib;
      description_ = candidates[i];
      return;
    }
    dlclose(lib);
  }
}

const curand_library& curand_library::get() {
  static const curand_library instance;
  return instance;
}

void* curand_library::raw_symbol(const char* name) const noexcept {
  return handle_ ? dlsym(handle_, name) : nullptr;
}

}  // namespace keel::random::detail
