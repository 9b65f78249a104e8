#include "driftscan/core/large_allocations.hpp"

#include <cstdlib>  // defines __GLIBC__ on glibc

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace driftscan {

void reuse_large_allocations() {
#if defined(__GLIBC__)
  // Every block from the heap (the mmap threshold cannot be raised past
  // 32 MB, a 4096^2 frame is 64 MB); up to 1 GiB of the heap's free top is
  // kept rather than returned. A thread's arena that cannot hold a block
  // still maps it (glibc falls back to mmap, then to the main heap).
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

void release_free_memory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace driftscan
