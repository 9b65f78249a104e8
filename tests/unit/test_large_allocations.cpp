// The heap policy of driftscan-engine (core/large_allocations): freed
// frame-sized blocks go back to the system on release_free_memory(), and the
// heap stays advised for transparent huge pages across that release (the
// next phase then faults its blocks in 2 MB at a time). Each test runs in a
// process of its own (gtest_discover_tests), as the policy is process-wide.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "driftscan/core/large_allocations.hpp"

namespace {

constexpr std::size_t kBlock = std::size_t{256} << 20;

double resident_mb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return -1.0;
}

// The VmFlags of the mapping holding `address` ("" when none is found).
std::string mapping_flags(const void* address) {
  const auto at = reinterpret_cast<std::uintptr_t>(address);
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    const std::size_t dash = line.find('-');
    if (dash != std::string::npos && dash > 0 && line.find(' ') > dash &&
        line.find_first_not_of("0123456789abcdef") == dash) {
      const std::uintptr_t lo = std::stoull(line, nullptr, 16), hi = std::stoull(line.substr(dash + 1), nullptr, 16);
      inside = lo <= at && at < hi;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line.substr(8);
    }
  }
  return "";
}

TEST(LargeAllocations, ReleaseReturnsAFreedBlocksPages) {
#if !defined(__GLIBC__) || !defined(__linux__)
  GTEST_SKIP() << "the heap policy is glibc/Linux only";
#endif
  driftscan::reuse_large_allocations();
  const double before = resident_mb();
  {
    std::vector<char> block(kBlock, 1);  // touched: resident
    std::vector<char> after(4096, 1);    // a block above it, so its pages are not only the heap's top
    EXPECT_GT(resident_mb(), before + 200.0);
  }
  // Kept by the heap for the next block of that size (not returned on free)...
  EXPECT_GT(resident_mb(), before + 200.0);
  // ...until released between phases.
  driftscan::release_free_memory();
  EXPECT_LT(resident_mb(), before + 50.0);
}

TEST(LargeAllocations, HeapStaysAdvisedForHugePagesAfterARelease) {
#if !defined(__GLIBC__) || !defined(__linux__)
  GTEST_SKIP() << "the heap policy is glibc/Linux only";
#endif
  if (!std::filesystem::exists("/sys/kernel/mm/transparent_hugepage/enabled"))
    GTEST_SKIP() << "no transparent huge pages in this kernel";
  driftscan::reuse_large_allocations();
  {
    // Its middle (the advice starts at the heap's first 2 MB boundary).
    std::vector<char> block(kBlock, 1);
    const std::string flags = mapping_flags(block.data() + kBlock / 2);
    ASSERT_NE(flags, "");
    EXPECT_NE(flags.find(" hg"), std::string::npos) << flags;
  }
  driftscan::release_free_memory();  // the heap shrinks; what grows again must be advised again
  std::vector<char> again(2 * kBlock, 1);
  const std::string flags = mapping_flags(again.data() + again.size() / 2);
  EXPECT_NE(flags.find(" hg"), std::string::npos) << flags;
}

}  // namespace
