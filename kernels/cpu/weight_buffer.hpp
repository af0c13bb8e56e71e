// Storage for large read-mostly arrays (weights, and the activations the AMX kernels load as tiles): 64-byte
// aligned, and backed by transparent huge pages when large, since decode streams every weight once per step and
// 4 KiB pages cost TLB misses and stop the hardware prefetcher at every page.
#pragma once
#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <vector>

namespace parley::cpu {

template <class T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) {}

  static constexpr size_t kHuge = size_t(2) << 20, kPage = 4096;

  // Large arrays get fresh pages of their own, 2 MiB aligned and advised before their first touch, so that the
  // kernel backs them with huge pages as they fault in. From malloc they often came from memory the heap had
  // already touched, which madvise does not convert: 40% of a 1B model's weights sat in 4 KiB pages, and decode
  // read them below the bandwidth probe's rate. Only the whole 2 MiB pages are advised: a tail in a huge page of
  // its own would be resident in full (up to 2 MiB per matrix; about 1 GB over gpt-oss-20b's 2,304 expert matrices).
  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < kHuge) {
      void* p = nullptr;
      if (posix_memalign(&p, 64, (bytes + 63) / 64 * 64) != 0) throw std::bad_alloc();
      return static_cast<T*>(p);
    }
    const size_t length = mapped_length(bytes);
    void* raw = mmap(nullptr, length + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) throw std::bad_alloc();
    const uintptr_t first = reinterpret_cast<uintptr_t>(raw), start = (first + kHuge - 1) / kHuge * kHuge;
    if (start > first) munmap(raw, start - first);  // the slack before and after the aligned mapping
    if (first + kHuge > start) munmap(reinterpret_cast<void*>(start + length), first + kHuge - start);
    madvise(reinterpret_cast<void*>(start), bytes / kHuge * kHuge, MADV_HUGEPAGE);  // ignored where THP is off
    return reinterpret_cast<T*>(start);
  }
  void deallocate(T* p, size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < kHuge)
      std::free(p);
    else
      munmap(p, mapped_length(bytes));
  }
  static size_t mapped_length(size_t bytes) { return (bytes + kPage - 1) / kPage * kPage; }
  template <class U>
  bool operator==(const HugePageAllocator<U>&) const {
    return true;
  }
};

using WeightBuffer = std::vector<float, HugePageAllocator<float>>;

}  // namespace parley::cpu
