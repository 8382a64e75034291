// check — KEEL_DCHECK, a debug-only assertion of keel's own invariants.
//
// KEEL_DCHECK(condition, format, args...) states something keel's code itself maintains (a
// stat never goes below zero, linked blocks tile their segment), never a property of input:
// input is always validated and refused with a typed exception (keel/core/error.hpp). In
// builds without NDEBUG (the debug preset, with ASan and UBSan) a false condition prints
// "file:line: KEEL_DCHECK(condition) failed: message" to stderr and aborts. With NDEBUG (the
// release preset) neither the condition nor the message is evaluated: the macro compiles to
// nothing, so it may sit on hot paths. The message is a fmt format string with its
// arguments. Usable in noexcept functions and from any thread.
#pragma once

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace keel::detail {

[[noreturn]] inline void dcheck_failed(const char* file, int line, const char* condition,
                                       const std::string& message) noexcept {
  std::fprintf(stderr, "%s:%d: KEEL_DCHECK(%s) failed: %s\n", file, line, condition,
               message.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace keel::detail

#if defined(NDEBUG)
#define KEEL_DCHECK(condition, ...) static_cast<void>(sizeof(!(condition)))
#else
#define KEEL_DCHECK(condition, ...)                                            \
  ((condition) ? static_cast<void>(0)                                          \
               : ::keel::detail::dcheck_failed(__FILE__, __LINE__, #condition, \
                                               ::fmt::format(__VA_ARGS__)))
#endif
