#include "keel/core/log.hpp"
#include "keel/core/enum_names.hpp"

#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "keel/core/error.hpp"

namespace keel {
namespace {

constexpr int k_unset = -1;
std::atomic<int> g_level{k_unset};
std::mutex g_mutex;
log_sink g_sink;  // guarded by g_mutex

int level_from_environment() {
  const char* env = std::getenv("KEEL_LOG");
  if (env == nullptr || *env == '\0') return static_cast<int>(log_level::warn);
  try {
    return static_cast<int>(parse_log_level(env));
  } catch (const invalid_argument& e) {
    std::fprintf(stderr, "[keel warn core] KEEL_LOG ignored: %s\n", e.what());
    return static_cast<int>(log_level::warn);
  }
}

}  // namespace

namespace {
constexpr enum_entry<log_level> k_log_level_entries[] = {
    {log_level::trace, "trace"},  {log_level::debug, "debug"}, {log_level::info, "info"},
    {log_level::warn, "warn"},    {log_level::error, "error"}, {log_level::off, "off"},
    {log_level::warn, "warning"},
};
constexpr enum_names<log_level> k_log_level_names{"log level", k_log_level_entries,
                                                  name_case::ignore, "off"};
}  // namespace

std::string_view to_string(log_level level) noexcept { return k_log_level_names.name(level); }

log_level parse_log_level(std::string_view name) { return k_log_level_names.parse(name); }

log_level current_log_level() noexcept {
  int level = g_level.load(std::memory_order_relaxed);
  if (level == k_unset) {
    int fresh = level_from_environment();
    g_level.compare_exchange_strong(level, fresh);
    level = g_level.load(std::memory_order_relaxed);
  }
  return static_cast<log_level>(level);
}

void set_log_level(log_level level) noexcept {
  g_level.store(static_cast<int>(level), std::memory_order_relaxed);
}

void set_log_sink(log_sink sink) {
  std::lock_guard lock(g_mutex);
  g_sink = std::move(sink);
}

void log_write(log_level level, std::string_view module, std::string_view message) {
  std::lock_guard lock(g_mutex);
  if (g_sink) {
    g_sink(level, module, message);
    return;
  }
  const std::string line = fmt::format("[keel {} {}] {}\n", to_string(level), module, message);
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace keel
