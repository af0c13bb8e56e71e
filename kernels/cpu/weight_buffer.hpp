// Storage for large read-mostly arrays (weights): 64-byte aligned, and backed by transparent huge
// pages when large, since decode streams every weight once per step and 4 KiB pages cost TLB misses.
#pragma once
#include <sys/mman.h>

#include <cstddef>
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

  T* allocate(size_t n) {
    constexpr size_t kHuge = size_t(2) << 20;
    const size_t bytes = n * sizeof(T);
    // Huge pages for the whole 2 MiB pages only: a tail in a huge page of its own would be resident in full (up to
    // 2 MiB per matrix; about 1 GB over gpt-oss-20b's 2,304 expert matrices).
    void* p = nullptr;
    if (posix_memalign(&p, bytes >= kHuge ? kHuge : 64, (bytes + 63) / 64 * 64) != 0) throw std::bad_alloc();
    if (bytes >= kHuge) madvise(p, bytes / kHuge * kHuge, MADV_HUGEPAGE);  // advisory: ignored where THP is off
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t) { std::free(p); }
  template <class U>
  bool operator==(const HugePageAllocator<U>&) const {
    return true;
  }
};

using WeightBuffer = std::vector<float, HugePageAllocator<float>>;

}  // namespace parley::cpu
