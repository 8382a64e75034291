// Levelled logging to stderr, controlled by the KEEL_LOG environment variable.
//
// KEEL_LOG is one of trace, debug, info, warn (the default), error, off; an unknown value
// is reported once on stderr and the default is used. Lines look like
// "[keel info comm] chose ring for allreduce of 64 MiB: ...". Logging is thread-safe: each
// line is written whole. The level is read once, on first use; set_log_level overrides it,
// and set_log_sink redirects lines (tests use it). Formatting happens only when the level is
// enabled, so a disabled KEEL_LOG_* costs one comparison.
#pragma once

#include <fmt/format.h>

#include <functional>
#include <string>
#include <string_view>
#include <utility>

namespace keel {

enum class log_level { trace = 0, debug, info, warn, error, off };

// Parses a level name (case-insensitive). Throws keel::invalid_argument listing the names.
log_level parse_log_level(std::string_view name);
std::string_view to_string(log_level level) noexcept;

log_level current_log_level() noexcept;
void set_log_level(log_level level) noexcept;
inline bool log_enabled(log_level level) noexcept {
  return level != log_level::off && level >= current_log_level();
}

using log_sink = std::function<void(log_level, std::string_view module, std::string_view message)>;
// Replaces the stderr writer; an empty sink restores it.
void set_log_sink(log_sink sink);

void log_write(log_level level, std::string_view module, std::string_view message);

template <class... Args>
void log(log_level level, std::string_view module, fmt::format_string<Args...> format,
         Args&&... args) {
  if (log_enabled(level))
    log_write(level, module, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace keel

#define KEEL_LOG_DEBUG(module, ...) ::keel::log(::keel::log_level::debug, module, __VA_ARGS__)
#define KEEL_LOG_INFO(module, ...) ::keel::log(::keel::log_level::info, module, __VA_ARGS__)
#define KEEL_LOG_WARN(module, ...) ::keel::log(::keel::log_level::warn, module, __VA_ARGS__)
