// The CUDA backend: runtime API for segments and events, driver VMM API for page mappings.
// The driver functions are fetched through cudaGetDriverEntryPointByVersion (as PyTorch does),
// so that nothing links libcuda: a binary with this backend loads on a machine without the
// driver and reports "no device" instead of failing in the dynamic loader.
#include "keel/memory/cuda_backend.hpp"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <unordered_map>
#include <vector>

#include "keel/core/error.hpp"
#include "keel/core/log.hpp"

namespace keel::memory {
namespace {

// The ABI version of the driver entry points requested (every VMM call exists since 10.2).
constexpr unsigned k_driver_abi = 12000;

std::string runtime_error_text(cudaError_t error) {
  return fmt::format("{} ({})", cudaGetErrorName(error), cudaGetErrorString(error));
}

void check(cudaError_t error, std::string_view what) {
  if (error != cudaSuccess) {
    cudaGetLastError();  // do not leave a non-sticky error for the caller's next check
    throw backend_error(
        fmt::format("cuda backend: {} failed: {}", what, runtime_error_text(error)));
  }
}

void log_error(std::string_view what) {
  ::keel::log(::keel::log_level::error, "memory", "cuda backend: {}", what);
}

// The driver calls the backend makes, resolved at run time.
struct driver_api {
  decltype(&::cuGetErrorName) get_error_name = nullptr;
  decltype(&::cuDeviceGet) device_get = nullptr;
  decltype(&::cuDeviceGetAttribute) device_get_attribute = nullptr;
  decltype(&::cuMemGetAllocationGranularity) mem_get_allocation_granularity = nullptr;
  decltype(&::cuMemAddressReserve) mem_address_reserve = nullptr;
  decltype(&::cuMemAddressFree) mem_address_free = nullptr;
  decltype(&::cuMemCreate) mem_create = nullptr;
  decltype(&::cuMemRelease) mem_release = nullptr;
  decltype(&::cuMemMap) mem_map = nullptr;
  decltype(&::cuMemUnmap) mem_unmap = nullptr;
  decltype(&::cuMemSetAccess) mem_set_access = nullptr;

  template <class F>
  static void load(F& function, const char* symbol) {
    void* pointer = nullptr;
    cudaDriverEntryPointQueryResult status{};
    const cudaError_t error = cudaGetDriverEntryPointByVersion(symbol, &pointer, k_driver_abi,
                                                               cudaEnableDefault, &status);
    if (error != cudaSuccess || status != cudaDriverEntryPointSuccess || pointer == nullptr) {
      cudaGetLastError();
      throw backend_error(fmt::format("cuda backend: the driver has no {} (status {}, {})", symbol,
                                      static_cast<int>(status), runtime_error_text(error)));
    }
    function = reinterpret_cast<F>(pointer);
  }

  driver_api() {
    load(get_error_name, "cuGetErrorName");
    load(device_get, "cuDeviceGet");
    load(device_get_attribute, "cuDeviceGetAttribute");
    load(mem_get_allocation_granularity, "cuMemGetAllocationGranularity");
    load(mem_address_reserve, "cuMemAddressReserve");
    load(mem_address_free, "cuMemAddressFree");
    load(mem_create, "cuMemCreate");
    load(mem_release, "cuMemRelease");
    load(mem_map, "cuMemMap");
    load(mem_unmap, "cuMemUnmap");
    load(mem_set_access, "cuMemSetAccess");
  }

  std::string describe(CUresult result) const {
    const char* name = nullptr;
    if (get_error_name(result, &name) != CUDA_SUCCESS || name == nullptr) name = "unknown CUresult";
    return fmt::format("{} ({})", name, static_cast<int>(result));
  }
  void check(CUresult result, std::string_view what) const {
    if (result != CUDA_SUCCESS) {
      throw backend_error(fmt::format("cuda backend: {} failed: {}", what, describe(result)));
    }
  }
};

// Makes a device current for a scope and restores the previous one (PyTorch's CUDAGuard).
class device_guard {
 public:
  explicit device_guard(int device) {
    check(cudaGetDevice(&previous_), "cudaGetDevice");
    if (previous_ != device) check(cudaSetDevice(device), "cudaSetDevice");
    changed_ = previous_ != device;
  }
  ~device_guard() {
    if (changed_ && cudaSetDevice(previous_) != cudaSuccess) {
      cudaGetLastError();
      log_error("restoring the current device failed");
    }
  }
  device_guard(const device_guard&) = delete;
  device_guard& operator=(const device_guard&) = delete;

 private:
  int previous_ = 0;
  bool changed_ = false;
};

void* as_pointer(std::uint64_t address) { return reinterpret_cast<void*>(address); }

}  // namespace

class cuda_backend::impl {
 public:
  explicit impl(int device) : device_(device) {
    std::string reason;
    const int count = cuda_backend::device_count(&reason);
    if (device < 0 || device >= count) {
      throw backend_error(fmt::format("cuda backend: no CUDA device {} ({} device{}{}{})", device,
                                      count, count == 1 ? "" : "s", reason.empty() ? "" : "; ",
                                      reason));
    }
    device_guard guard(device_);
    std::size_t free = 0;
    check(cudaMemGetInfo(&free, &capacity_), "cudaMemGetInfo");

    driver_ = std::make_unique<driver_api>();
    CUdevice handle = 0;
    driver_->check(driver_->device_get(&handle, device_), "cuDeviceGet");
    int vmm = 0;
    driver_->check(driver_->device_get_attribute(
                       &vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, handle),
                   "cuDeviceGetAttribute(VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)");
    prop_.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop_.requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
    prop_.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop_.location.id = device_;
    access_.location = prop_.location;
    access_.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    if (vmm != 0) {
      driver_->check(
          driver_->mem_get_allocation_granularity(&page_, &prop_, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
          "cuMemGetAllocationGranularity");
      virtual_memory_ = true;
    } else {
      KEEL_LOG_WARN("memory", "CUDA device {} does not support virtual memory management", device_);
    }
  }

  ~impl() {
    // Errors are ignored here: at process exit the runtime may already be shutting down.
    if (cudaSetDevice(device_) != cudaSuccess) {
      cudaGetLastError();
      return;
    }
    for (const auto& [address, bytes] : segments_) cudaFree(as_pointer(address));
    for (auto& [address, r] : ranges_) {
      unmap(address, r, 0, r.handles.size());
      driver_->mem_address_free(address, r.size);
    }
    for (cudaEvent_t event : events_) cudaEventDestroy(event);
    cudaGetLastError();
  }

  std::optional<std::uint64_t> allocate_segment(std::size_t bytes) {
    device_guard guard(device_);
    void* pointer = nullptr;
    const cudaError_t error = cudaMalloc(&pointer, bytes);
    if (error == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      return std::nullopt;
    }
    check(error, fmt::format("cudaMalloc({})", bytes));
    const auto address = reinterpret_cast<std::uint64_t>(pointer);
    segments_.emplace(address, bytes);
    used_ += bytes;
    return address;
  }

  void free_segment(std::uint64_t address, std::size_t bytes) noexcept {
    const auto it = segments_.find(address);
    if (it == segments_.end()) {
      log_error(fmt::format("free of {:#x}, which is not a segment: ignored", address));
      return;
    }
    const int previous = current_device();
    const cudaError_t error =
        set_device(device_) ? cudaFree(as_pointer(address)) : cudaErrorInvalidDevice;
    if (error != cudaSuccess) {
      cudaGetLastError();
      log_error(fmt::format("cudaFree({:#x}) failed: {}", address, runtime_error_text(error)));
    }
    set_device(previous);
    segments_.erase(it);
    used_ -= bytes;
  }

  std::optional<std::uint64_t> reserve_range(std::size_t bytes) {
    device_guard guard(device_);
    require_virtual_memory();
    CUdeviceptr address = 0;
    const CUresult result = driver_->mem_address_reserve(&address, bytes, 0, 0, 0);
    if (result == CUDA_ERROR_OUT_OF_MEMORY) return std::nullopt;
    driver_->check(result, fmt::format("cuMemAddressReserve({})", bytes));
    range r;
    r.size = bytes;
    r.handles.assign(bytes / page_, 0);
    r.mapped.assign(bytes / page_, false);
    ranges_.emplace(address, std::move(r));
    return address;
  }

  void release_range(std::uint64_t address, std::size_t bytes) noexcept {
    const auto it = ranges_.find(address);
    if (it == ranges_.end()) {
      log_error(fmt::format("release of {:#x}, which is not a reserved range: ignored", address));
      return;
    }
    const int previous = current_device();
    if (set_device(device_)) {
      unmap(address, it->second, 0, it->second.handles.size());
      const CUresult result = driver_->mem_address_free(address, bytes);
      if (result != CUDA_SUCCESS) {
        log_error(
            fmt::format("cuMemAddressFree({:#x}) failed: {}", address, driver_->describe(result)));
      }
    }
    set_device(previous);
    ranges_.erase(it);
  }

  bool map_pages(std::uint64_t address, std::size_t offset, std::size_t bytes) {
    device_guard guard(device_);
    require_virtual_memory();
    const auto it = ranges_.find(address);
    if (it == ranges_.end() || offset + bytes > it->second.size) {
      throw invalid_argument(
          fmt::format("cuda backend: map of [{}, {}) outside a reserved range at {:#x}", offset,
                      offset + bytes, address));
    }
    range& r = it->second;
    const std::size_t first = offset / page_;
    const std::size_t last = (offset + bytes) / page_;
    for (std::size_t p = first; p < last; ++p) {
      if (r.mapped[p]) {
        throw invalid_argument(
            fmt::format("cuda backend: page {} of {:#x} is mapped twice", p, address));
      }
    }
    // One physical allocation per page, so that any page can later be unmapped on its own.
    for (std::size_t p = first; p < last; ++p) {
      CUmemGenericAllocationHandle handle = 0;
      CUresult result = driver_->mem_create(&handle, page_, &prop_, 0);
      if (result == CUDA_SUCCESS) {
        result = driver_->mem_map(address + p * page_, page_, 0, handle, 0);
        if (result != CUDA_SUCCESS) driver_->mem_release(handle);
      }
      if (result != CUDA_SUCCESS) {
        unmap(address, r, first, p);  // leave no partial state
        cudaGetLastError();
        if (result == CUDA_ERROR_OUT_OF_MEMORY) return false;
        driver_->check(result, fmt::format("mapping page {} of {:#x}", p, address));
      }
      r.handles[p] = handle;
      r.mapped[p] = true;
      used_ += page_;
    }
    const CUresult result = driver_->mem_set_access(address + offset, bytes, &access_, 1);
    if (result != CUDA_SUCCESS) {
      unmap(address, r, first, last);
      if (result == CUDA_ERROR_OUT_OF_MEMORY) return false;
      driver_->check(result, "cuMemSetAccess");
    }
    return true;
  }

  void unmap_pages(std::uint64_t address, std::size_t offset, std::size_t bytes) noexcept {
    const auto it = ranges_.find(address);
    if (it == ranges_.end()) {
      log_error(fmt::format("unmap in {:#x}, which is not a reserved range: ignored", address));
      return;
    }
    const int previous = current_device();
    if (set_device(device_)) {
      const std::size_t pages = it->second.handles.size();
      unmap(address, it->second, std::min(offset / page_, pages),
            std::min((offset + bytes) / page_, pages));
    }
    set_device(previous);
  }

  event_id record_event(stream_id stream) {
    device_guard guard(device_);
    cudaEvent_t event = nullptr;
    if (free_events_.empty()) {
      check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreateWithFlags");
      events_.push_back(event);
    } else {
      event = free_events_.back();
      free_events_.pop_back();
    }
    const cudaError_t error = cudaEventRecord(event, reinterpret_cast<cudaStream_t>(stream));
    if (error != cudaSuccess) {
      free_events_.push_back(event);
      check(error, fmt::format("cudaEventRecord on stream {:#x}", stream));
    }
    return reinterpret_cast<event_id>(event);
  }

  bool query_event(event_id event) {
    device_guard guard(device_);
    const cudaError_t error = cudaEventQuery(reinterpret_cast<cudaEvent_t>(event));
    if (error == cudaErrorNotReady) {
      cudaGetLastError();
      return false;
    }
    check(error, "cudaEventQuery");
    return true;
  }

  void synchronize_event(event_id event) {
    device_guard guard(device_);
    check(cudaEventSynchronize(reinterpret_cast<cudaEvent_t>(event)), "cudaEventSynchronize");
  }

  void destroy_event(event_id event) noexcept {
    // Back to the pool; a pooled event is re-recorded before it is queried again.
    free_events_.push_back(reinterpret_cast<cudaEvent_t>(event));
  }

  int device_ = 0;
  std::size_t capacity_ = 0;
  std::size_t page_ = 2u << 20;
  std::size_t used_ = 0;
  bool virtual_memory_ = false;

 private:
  struct range {
    std::size_t size = 0;
    std::vector<CUmemGenericAllocationHandle> handles;
    std::vector<bool> mapped;
  };

  static int current_device() noexcept {
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess) cudaGetLastError();
    return device;
  }
  static bool set_device(int device) noexcept {
    if (cudaSetDevice(device) == cudaSuccess) return true;
    cudaGetLastError();
    log_error(fmt::format("cudaSetDevice({}) failed", device));
    return false;
  }

  void require_virtual_memory() const {
    if (!virtual_memory_) {
      throw invalid_argument(
          fmt::format("cuda backend: device {} has no virtual memory management", device_));
    }
  }

  // Unmaps and releases the mapped pages in [first, last) of a range. Never throws.
  void unmap(std::uint64_t address, range& r, std::size_t first, std::size_t last) noexcept {
    for (std::size_t p = first; p < last; ++p) {
      if (!r.mapped[p]) continue;
      CUresult result = driver_->mem_unmap(address + p * page_, page_);
      if (result == CUDA_SUCCESS) result = driver_->mem_release(r.handles[p]);
      if (result != CUDA_SUCCESS) {
        log_error(fmt::format("unmapping page {} of {:#x} failed: {}", p, address,
                              driver_->describe(result)));
      }
      r.mapped[p] = false;
      r.handles[p] = 0;
      used_ -= page_;
    }
  }

  std::unique_ptr<driver_api> driver_;
  CUmemAllocationProp prop_{};
  CUmemAccessDesc access_{};
  std::unordered_map<std::uint64_t, std::size_t> segments_;
  std::unordered_map<std::uint64_t, range> ranges_;
  std::vector<cudaEvent_t> events_;       // every event created, for the destructor
  std::vector<cudaEvent_t> free_events_;  // the pool
};

cuda_backend::cuda_backend(int device) : impl_(std::make_unique<impl>(device)) {}
cuda_backend::~cuda_backend() = default;

int cuda_backend::device() const noexcept { return impl_->device_; }

void cuda_backend::fill(std::uint64_t address, unsigned char value, std::size_t bytes) {
  device_guard guard(impl_->device_);
  check(cudaMemset(as_pointer(address), value, bytes),
        fmt::format("cudaMemset({:#x}, {})", address, bytes));
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

void cuda_backend::copy_to_host(void* destination, std::uint64_t source, std::size_t bytes) {
  device_guard guard(impl_->device_);
  check(cudaMemcpy(destination, as_pointer(source), bytes, cudaMemcpyDeviceToHost),
        fmt::format("cudaMemcpy from {:#x} ({} bytes)", source, bytes));
}

int cuda_backend::device_count(std::string* reason) noexcept {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    cudaGetLastError();
    if (reason != nullptr) *reason = runtime_error_text(error);
    return 0;
  }
  return count;
}

std::optional<std::uint64_t> cuda_backend::do_allocate_segment(std::size_t bytes) {
  return impl_->allocate_segment(bytes);
}
void cuda_backend::do_free_segment(std::uint64_t address, std::size_t bytes) noexcept {
  impl_->free_segment(address, bytes);
}
bool cuda_backend::do_supports_virtual_memory() const noexcept { return impl_->virtual_memory_; }
std::size_t cuda_backend::do_page_granularity() const noexcept { return impl_->page_; }
std::optional<std::uint64_t> cuda_backend::do_reserve_range(std::size_t bytes) {
  return impl_->reserve_range(bytes);
}
void cuda_backend::do_release_range(std::uint64_t address, std::size_t bytes) noexcept {
  impl_->release_range(address, bytes);
}
bool cuda_backend::do_map_pages(std::uint64_t range, std::size_t offset, std::size_t bytes) {
  return impl_->map_pages(range, offset, bytes);
}
void cuda_backend::do_unmap_pages(std::uint64_t range, std::size_t offset,
                                  std::size_t bytes) noexcept {
  impl_->unmap_pages(range, offset, bytes);
}
std::size_t cuda_backend::do_capacity() const noexcept { return impl_->capacity_; }
std::size_t cuda_backend::do_used_bytes() const noexcept { return impl_->used_; }
event_id cuda_backend::do_record_event(stream_id stream) { return impl_->record_event(stream); }
bool cuda_backend::do_query_event(event_id event) { return impl_->query_event(event); }
void cuda_backend::do_synchronize_event(event_id event) { impl_->synchronize_event(event); }
void cuda_backend::do_destroy_event(event_id event) noexcept { impl_->destroy_event(event); }

}  // namespace keel::memory
