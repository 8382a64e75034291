// huge_page_allocator — a std allocator that backs large arrays with transparent huge pages.
//
// Parsing a snapshot fills arrays of tens of megabytes once; with 4 KiB pages every page is a
// separate fault, and in a virtual machine each fault costs microseconds, which made page
// faults the largest cost of `keel mem replay`. Arrays of at least k_threshold bytes are
// mapped directly (2 MiB aligned) and advised MADV_HUGEPAGE, so the kernel backs them with
// 2 MiB pages where transparent huge pages are enabled ("always" or "madvise"); smaller ones
// come from operator new. Stateless; every instance compares equal; thread-safe.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <new>

namespace keel::memory::detail {

template <class T>
struct huge_page_allocator {
  using value_type = T;
  static constexpr std::size_t k_threshold = std::size_t{4} << 20;
  static constexpr std::size_t k_huge_page = std::size_t{2} << 20;

  huge_page_allocator() noexcept = default;
  template <class U>
  huge_page_allocator(const huge_page_allocator<U>&) noexcept {
  }  // NOLINT(google-explicit-constructor)

  T* allocate(std::size_t n) {
    if (n > static_cast<std::size_t>(-1) / sizeof(T)) throw std::bad_array_new_length();
    const std::size_t bytes = n * sizeof(T);
    if (bytes < k_threshold)
      return static_cast<T*>(::operator new (bytes, std::align_val_t{alignof(T)}));
    const std::size_t length = mapped_length(bytes);
    void* p = ::mmap(nullptr, length + k_huge_page, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    // Trim to a 2 MiB aligned range so the whole array can sit in huge pages.
    const auto start = reinterpret_cast<std::uintptr_t>(p);
    const std::uintptr_t aligned = (start + k_huge_page - 1) & ~(k_huge_page - 1);
    if (aligned > start) ::munmap(p, aligned - start);
    const std::uintptr_t end = start + length + k_huge_page;
    if (end > aligned + length)
      ::munmap(reinterpret_cast<void*>(aligned + length), end - (aligned + length));
    ::madvise(reinterpret_cast<void*>(aligned), length,
              MADV_HUGEPAGE);  // advisory: failure is harmless
    return reinterpret_cast<T*>(aligned);
  }

  void deallocate(T* p, std::size_t n) noexcept {
    const std::size_t bytes = n * sizeof(T);
    if (bytes < k_threshold) {
      ::operator delete (p, std::align_val_t{alignof(T)});
      return;
    }
    ::munmap(p, mapped_length(bytes));
  }

  template <class U>
  bool operator==(const huge_page_allocator<U>&) const noexcept {
    return true;
  }

 private:
  static std::size_t mapped_length(std::size_t bytes) noexcept {
    return (bytes + k_huge_page - 1) & ~(k_huge_page - 1);
  }
};

}  // namespace keel::memory::detail
