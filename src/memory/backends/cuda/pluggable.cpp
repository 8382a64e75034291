// libkeel_pluggable_alloc.so: one caching_allocator per CUDA device behind the C ABI of
// include/keel/memory/pluggable.h, for PyTorch's CUDAPluggableAllocator.
#include <fmt/format.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>

#include "keel/core/error.hpp"
#include "keel/core/log.hpp"
#include "keel/memory/caching_allocator.hpp"
#include "keel/memory/cuda_backend.hpp"

#pragma GCC visibility push(default)
#include "keel/memory/pluggable.h"
#pragma GCC visibility pop

namespace {

using keel::memory::caching_allocator;
using keel::memory::cuda_backend;

constexpr int k_max_devices = 64;

struct device_state {
  std::once_flag once;
  std::atomic<caching_allocator*> allocator{nullptr};  // null until created, or when that failed
  std::string error;
};

// Never destroyed: at process exit the CUDA runtime may be gone before static destructors run,
// and PyTorch may still free tensors from its own destructors.
std::array<device_state, k_max_devices>& devices() {
  static auto* states = new std::array<device_state, k_max_devices>;
  return *states;
}

void log_error(const std::string& message) {
  ::keel::log(::keel::log_level::error, "memory", "{}", message);
}

// KEEL_PLUGGABLE_OOM=throw makes keel_malloc throw keel::out_of_memory (a std::bad_alloc)
// instead of returning NULL; PyTorch turns it into a RuntimeError carrying keel's explanation.
bool throw_on_oom() {
  static const bool value = [] {
    const char* v = std::getenv("KEEL_PLUGGABLE_OOM");
    return v != nullptr && std::strcmp(v, "throw") == 0;
  }();
  return value;
}

caching_allocator* allocator_for(int device) {
  if (device < 0 || device >= k_max_devices) {
    log_error(
        fmt::format("keel_pluggable_alloc: device {} is outside [0, {})", device, k_max_devices));
    return nullptr;
  }
  device_state& state = devices()[static_cast<std::size_t>(device)];
  std::call_once(state.once, [&] {
    try {
      auto backend = std::make_unique<cuda_backend>(device);
      auto* allocator = new caching_allocator(
          *backend, keel::memory::allocator_config::from_environment(), device);
      (void)backend.release();  // owned by nobody: lives as long as the allocator, i.e. forever
      KEEL_LOG_INFO("memory", "keel_pluggable_alloc: device {} uses policy {} ({})", device,
                    keel::memory::to_string(allocator->config().policy),
                    allocator->config().to_string());
      state.allocator.store(allocator, std::memory_order_release);
    } catch (const std::exception& e) {
      state.error = e.what();
    }
  });
  caching_allocator* allocator = state.allocator.load(std::memory_order_acquire);
  if (allocator == nullptr) {
    log_error(
        fmt::format("keel_pluggable_alloc: no allocator for device {}: {}", device, state.error));
  }
  return allocator;
}

}  // namespace

extern "C" {

void* keel_malloc(ssize_t size, int device, keel_stream_t stream) {
  if (size <= 0) return nullptr;
  caching_allocator* allocator = allocator_for(device);
  if (allocator == nullptr) return nullptr;
  try {
    return reinterpret_cast<void*>(allocator->allocate(static_cast<std::size_t>(size),
                                                       reinterpret_cast<std::uintptr_t>(stream)));
  } catch (const keel::out_of_memory& e) {
    if (throw_on_oom()) throw;
    log_error(e.what());
  } catch (const std::exception& e) {
    log_error(fmt::format("keel_malloc({}, device {}): {}", size, device, e.what()));
  }
  return nullptr;
}

void keel_free(void* ptr, ssize_t /*size*/, int device, keel_stream_t /*stream*/) {
  if (ptr == nullptr) return;
  if (caching_allocator* allocator = allocator_for(device)) {
    allocator->deallocate(reinterpret_cast<std::uintptr_t>(ptr));
  }
}

int keel_record_stream(void* ptr, int device, keel_stream_t stream) {
  caching_allocator* allocator = allocator_for(device);
  if (allocator == nullptr) return -1;
  try {
    allocator->record_stream(reinterpret_cast<std::uintptr_t>(ptr),
                             reinterpret_cast<std::uintptr_t>(stream));
    return 0;
  } catch (const std::exception& e) {
    log_error(fmt::format("keel_record_stream: {}", e.what()));
    return -1;
  }
}

void keel_empty_cache(int device) {
  const auto empty = [](device_state& state) {
    // Only allocators that exist: empty_cache does not create one.
    caching_allocator* allocator = state.allocator.load(std::memory_order_acquire);
    if (allocator == nullptr) return;
    try {
      allocator->empty_cache();
    } catch (const std::exception& e) {
      log_error(fmt::format("keel_empty_cache: {}", e.what()));
    }
  };
  if (device >= 0 && device < k_max_devices) {
    empty(devices()[static_cast<std::size_t>(device)]);
  } else if (device == -1) {
    for (device_state& state : devices()) empty(state);
  }
}

int keel_set_memory_fraction(double fraction, int device) {
  caching_allocator* allocator = allocator_for(device);
  if (allocator == nullptr) return -1;
  try {
    allocator->set_memory_fraction(fraction);
    return 0;
  } catch (const std::exception& e) {
    log_error(fmt::format("keel_set_memory_fraction: {}", e.what()));
    return -1;
  }
}

size_t keel_memory_stats_json(int device, char* buffer, size_t capacity) {
  std::string json = "{";
  if (caching_allocator* allocator = allocator_for(device)) {
    const char* separator = "";
    for (const auto& [name, value] : allocator->stats().flatten()) {
      json += fmt::format("{}\"{}\": {}", separator, name, value);
      separator = ", ";
    }
  }
  json += "}";
  if (capacity > 0 && buffer != nullptr) {
    const std::size_t n = std::min(json.size(), capacity - 1);
    std::memcpy(buffer, json.data(), n);
    buffer[n] = '\0';
  }
  return json.size();
}

}  // extern "C"
