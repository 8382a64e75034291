// memory_store, file_store and the polling default of store::wait.
#include "keel/comm/store.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "keel/comm/error.hpp"
#include "keel/core/error.hpp"
#include "store_protocol.hpp"

namespace keel::comm {
namespace {

using clock = std::chrono::steady_clock;

// The value add() stores: the counter in `current` (nullptr: none yet) plus delta.
std::int64_t next_counter(const std::string& key, const std::string* current, std::int64_t delta) {
  std::int64_t value = 0;
  if (current) {
    const auto parsed = detail::parse_counter(*current);
    if (!parsed) {
      throw keel::invalid_argument(fmt::format(
          "store: ADD '{}': its value ({} bytes) is not a counter", key, current->size()));
    }
    value = *parsed;
  }
  const auto sum = detail::add_counter(value, delta);
  if (!sum) {
    throw keel::invalid_argument(
        fmt::format("store: ADD '{}': {} + {} overflows a 64-bit counter", key, value, delta));
  }
  return *sum;
}

[[noreturn]] void throw_store_timeout(const std::vector<std::string>& keys, duration timeout) {
  std::string names;
  for (const auto& k : keys) names += (names.empty() ? "" : ", ") + k;
  throw timeout_error(
      fmt::format("store: key(s) {} did not appear within {} ms", names, timeout.count()), "store",
      0, -1);
}

}  // namespace

void store::wait(const std::vector<std::string>& keys, duration timeout) {
  const auto deadline = clock::now() + timeout;
  auto pause = std::chrono::microseconds(100);
  while (!check(keys)) {
    if (clock::now() >= deadline) throw_store_timeout(keys, timeout);
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(20000));
  }
}

// ---- memory_store ----

void memory_store::set(const std::string& key, const bytes& value) {
  detail::check_store_limits("SET", key.size(), value.size());
  {
    std::lock_guard lock(mutex_);
    data_[key] = value;
  }
  changed_.notify_all();
}

bytes memory_store::get(const std::string& key, duration timeout) {
  detail::check_store_limits("GET", key.size(), 0);
  std::unique_lock lock(mutex_);
  if (!changed_.wait_for(lock, timeout, [&] { return data_.count(key) != 0; })) {
    throw_store_timeout({key}, timeout);
  }
  return data_[key];
}

std::int64_t memory_store::add(const std::string& key, std::int64_t delta) {
  detail::check_store_limits("ADD", key.size(), 8);
  std::int64_t value = 0;
  {
    std::lock_guard lock(mutex_);
    auto it = data_.find(key);
    if (it != data_.end()) {
      const std::string current(it->second.begin(), it->second.end());
      value = next_counter(key, &current, delta);
    } else {
      value = next_counter(key, nullptr, delta);
    }
    const std::string text = std::to_string(value);
    data_[key] = bytes(text.begin(), text.end());
  }
  changed_.notify_all();
  return value;
}

bool memory_store::check(const std::vector<std::string>& keys) {
  std::lock_guard lock(mutex_);
  return std::all_of(keys.begin(), keys.end(), [&](const auto& k) { return data_.count(k) != 0; });
}

void memory_store::wait(const std::vector<std::string>& keys, duration timeout) {
  std::unique_lock lock(mutex_);
  if (!changed_.wait_for(lock, timeout, [&] {
        return std::all_of(keys.begin(), keys.end(),
                           [&](const auto& k) { return data_.count(k) != 0; });
      })) {
    throw_store_timeout(keys, timeout);
  }
}

// ---- file_store ----

file_store::file_store(std::string directory) : directory_(std::move(directory)) {
  std::error_code ec;
  std::filesystem::create_directories(directory_, ec);
  if (ec || !std::filesystem::is_directory(directory_)) {
    throw keel::io_error(fmt::format("{}: cannot create store directory: {}", directory_,
                                     ec ? ec.message() : "not a directory"));
  }
}

std::string file_store::path_of(const std::string& key) const {
  // Keys may contain '/'; encode every byte outside [A-Za-z0-9._-] as %XX.
  std::string name;
  for (unsigned char c : key) {
    if (std::isalnum(c) || c == '.' || c == '_' || c == '-') {
      name += static_cast<char>(c);
    } else {
      name += fmt::format("%{:02X}", c);
    }
  }
  return directory_ + "/" + name;
}

void file_store::set(const std::string& key, const bytes& value) {
  detail::check_store_limits("SET", key.size(), value.size());
  const std::string path = path_of(key);
  const std::string tmp = fmt::format("{}.tmp.{}.{}", path, ::getpid(),
                                      std::hash<std::thread::id>{}(std::this_thread::get_id()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(value.data()),
              static_cast<std::streamsize>(value.size()));
    if (!out) throw keel::io_error(fmt::format("{}: cannot write store key", tmp));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    throw keel::io_error(
        fmt::format("{}: cannot publish store key: {}", path, std::strerror(errno)));
  }
}

bytes file_store::get(const std::string& key, duration timeout) {
  wait({key}, timeout);
  std::ifstream in(path_of(key), std::ios::binary);
  return bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::int64_t file_store::add(const std::string& key, std::int64_t delta) {
  detail::check_store_limits("ADD", key.size(), 8);
  const std::string lock_path = directory_ + "/.lock";
  const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw keel::io_error(fmt::format("{}: {}", lock_path, std::strerror(errno)));
  while (::flock(fd, LOCK_EX) != 0 && errno == EINTR) {
  }
  std::int64_t value = 0;
  try {
    if (check({key})) {
      std::ifstream in(path_of(key), std::ios::binary);
      std::string current;
      char buffer[4096];
      // A counter is short; more than a few KiB cannot be one (and is not read whole).
      while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
        current.append(buffer, static_cast<std::size_t>(in.gcount()));
        if (current.size() > 64) break;
      }
      value = next_counter(key, &current, delta);
    } else {
      value = next_counter(key, nullptr, delta);
    }
    const std::string text = std::to_string(value);
    set(key, bytes(text.begin(), text.end()));
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);  // releases the lock
  return value;
}

bool file_store::check(const std::vector<std::string>& keys) {
  return std::all_of(keys.begin(), keys.end(),
                     [&](const auto& k) { return ::access(path_of(k).c_str(), F_OK) == 0; });
}

}  // namespace keel::comm
