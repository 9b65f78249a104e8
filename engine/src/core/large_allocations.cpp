#include "driftscan/core/large_allocations.hpp"

#include <cstdlib>  // defines __GLIBC__ on glibc

#if defined(__GLIBC__) && defined(__linux__)
#include <malloc.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <string>
#define DRIFTSCAN_HEAP_PAGES 1
#endif

namespace driftscan {

#if defined(DRIFTSCAN_HEAP_PAGES)
namespace {
constexpr std::uintptr_t kHugePage = std::uintptr_t{2} << 20;
// The range reserved for huge pages: below the free top the heap keeps
// (M_TRIM_THRESHOLD, reuse_large_allocations), or a free would trim it at once.
constexpr std::size_t kReservedBytes = std::size_t{1984} << 20;

// The heap's range as transparent huge pages where the system gives them on
// request (transparent_hugepage/enabled = madvise): a phase after
// release_free_memory() faults its blocks in again 2 MB at a time instead of
// 4 kB (page faults were ~15% of a 2048^2 --scan-distortion run's CPU). Only
// advice: where the system says no, nothing changes. The range is read from
// /proc/self/maps.
void advise_huge_pages_on_heap() {
#if defined(MADV_HUGEPAGE)
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("[heap]") == std::string::npos) continue;
    const std::uintptr_t lo = std::stoull(line, nullptr, 16),
                         hi = std::stoull(line.substr(line.find('-') + 1), nullptr, 16);
    const std::uintptr_t a = (lo + kHugePage - 1) & ~(kHugePage - 1), b = hi & ~(kHugePage - 1);
    if (b > a) madvise(reinterpret_cast<void*>(a), b - a, MADV_HUGEPAGE);  // NOLINT(performance-no-int-to-ptr)
  }
#endif
}

// The heap grown to ~2 GB of free top (address space only: a block taken
// and given back touches no page; below M_TRIM_THRESHOLD it stays), then
// advised: the phases' blocks fault in as huge pages from the start. A trim
// (release_free_memory) shrinks the heap and a range regrown later would not
// carry the advice: it is reserved and advised again there.
void reserve_advised_heap() {
  // Under a limit on address space or data (a batch system's), at most a
  // quarter of it: the reserve is addresses the run may not otherwise use.
  std::size_t bytes = kReservedBytes;
  for (const int resource : {RLIMIT_AS, RLIMIT_DATA}) {
    rlimit limit{};
    if (getrlimit(resource, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
      bytes = std::min<std::size_t>(bytes, limit.rlim_cur / 4);
  }
  void* reserve = std::malloc(bytes);
  asm volatile("" : : "r"(reserve) : "memory");  // a malloc whose block is unused may be optimised away
  std::free(reserve);
  advise_huge_pages_on_heap();
}
}  // namespace
#endif

void reuse_large_allocations() {
#if defined(__GLIBC__)
  // Every block from the heap (the mmap threshold cannot be raised past
  // 32 MB, a 4096^2 frame is 64 MB); up to 2 GB of the heap's free top is
  // kept rather than returned (release_free_memory() returns it between
  // phases). A thread's arena that cannot hold a block still maps it (glibc
  // falls back to mmap, then to the main heap).
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, 2047 << 20);  // an int: just under 2 GiB
#endif
#if defined(DRIFTSCAN_HEAP_PAGES)
  reserve_advised_heap();
#endif
}

void release_free_memory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
#if defined(DRIFTSCAN_HEAP_PAGES)
  reserve_advised_heap();  // the trim shrank the heap: its range again, advised
#endif
}

}  // namespace driftscan
