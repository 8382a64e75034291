/* pluggable.h — keel's caching allocator behind a C ABI, for PyTorch's CUDAPluggableAllocator.
 *
 * libkeel_pluggable_alloc.so (built when the CUDA toolkit is present) exports these functions.
 * keel_malloc and keel_free have exactly the signatures torch.cuda.memory.CUDAPluggableAllocator
 * expects:
 *
 *   alloc = torch.cuda.memory.CUDAPluggableAllocator(
 *       "libkeel_pluggable_alloc.so", "keel_malloc", "keel_free")
 *   torch.cuda.memory.change_current_allocator(alloc)
 *
 * Each device gets one keel::memory::caching_allocator over the CUDA backend, created on first
 * use with allocator_config::from_environment() (KEEL_ALLOC_CONF, else PYTORCH_CUDA_ALLOC_CONF;
 * `policy:keel` selects keel's policy). A configuration error is logged and that device's
 * allocations fail (keel_malloc returns NULL). The allocators live until the process exits
 * and are never destroyed, so nothing touches CUDA during static destruction.
 *
 * Thread-safety: every function may be called from any thread. `stream` is a cudaStream_t
 * (keel_stream_t has the same representation; this header includes no CUDA header).
 */
#ifndef KEEL_MEMORY_PLUGGABLE_H
#define KEEL_MEMORY_PLUGGABLE_H

#include <stddef.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct CUstream_st* keel_stream_t; /* == cudaStream_t */

/* Returns at least `size` bytes of device memory on `device`, usable on `stream`, or NULL
 * when size <= 0 or the device is out of memory. On OOM the explanation (where the memory
 * is, which setting would have helped) is logged on stderr first; PyTorch then raises
 * torch.cuda.OutOfMemoryError. */
void* keel_malloc(ssize_t size, int device, keel_stream_t stream);

/* Returns memory obtained from keel_malloc to the cache; `size` and `stream` are ignored
 * (the allocator remembers both). */
void keel_free(void* ptr, ssize_t size, int device, keel_stream_t stream);

/* Marks `ptr` as used on `stream` (Tensor.record_stream): its memory is reused only after
 * the work queued on `stream` before keel_free has completed. Returns 0, or -1 when ptr is
 * not a live allocation of `device`. */
int keel_record_stream(void* ptr, int device, keel_stream_t stream);

/* Releases cached, unused memory of `device` (-1: every device) to CUDA. */
void keel_empty_cache(int device);

/* Caps `device`'s reserved memory at fraction * total memory. Returns 0, or -1 when the
 * fraction is outside [0, 1]. */
int keel_set_memory_fraction(double fraction, int device);

/* Writes `device`'s statistics as one JSON object with torch.cuda.memory_stats() keys
 * ("allocated_bytes.all.current": ..., "num_ooms": ...) into buffer[0, capacity), NUL
 * terminated when it fits. Returns the length of the whole document (without the NUL), like
 * snprintf; call with capacity 0 to size the buffer. */
size_t keel_memory_stats_json(int device, char* buffer, size_t capacity);

#ifdef __cplusplus
}
#endif

#endif /* KEEL_MEMORY_PLUGGABLE_H */
