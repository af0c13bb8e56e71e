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
    const size_t align = bytes >= kHuge ? kHuge : 64;
    void* p = std::aligned_alloc(align, (bytes + align - 1) / align * align);
    if (!p) throw std::bad_alloc();
    if (bytes >= kHuge) madvise(p, bytes, MADV_HUGEPAGE);  // advisory: ignored where THP is off
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
