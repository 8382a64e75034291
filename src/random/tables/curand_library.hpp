// Internal: libcurand, found and opened at run time (dlopen), never linked. keel::random's
// production code reads only NVIDIA data from it (the scrambled Sobol' tables, like the
// MTGP32 and erfcinv tables it reads from the toolkit's headers); keel::random_verify binds
// the host generator API on the same handle to judge keel against it.
//
// The library is looked up in $KEEL_CURAND_LIBRARY, then as libcurand.so.10 / libcurand.so on
// the loader's path, then in the CUDA toolkit's library directory found at configure time (if
// any); the first that exports cuRAND's entry points is kept open for the process. get() is
// thread-safe; symbol() is a plain dlsym.
#pragma once

#include <string>

namespace keel::random::detail {

class curand_library {
 public:
  static const curand_library& get();

  bool found() const noexcept { return handle_ != nullptr; }
  // Where libcurand was found, or why it was not.
  const std::string& description() const noexcept { return description_; }
  // The function `name` as type F (a function pointer), or null (also when not found).
  template <class F>
  F symbol(const char* name) const noexcept {
    return reinterpret_cast<F>(raw_symbol(name));
  }

 private:
  curand_library();
  void* raw_symbol(const char* name) const noexcept;
  void* handle_ = nullptr;
  std::string description_;
};

}  // namespace keel::random::detail
