// The kernels' vector level; see simd_level.hpp.
#include "driftscan/core/simd_level.hpp"

#include <atomic>

namespace driftscan {
namespace {

bool cpu_has_avx2() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
#else
  return false;
#endif
}

std::atomic<bool> forced_baseline{false};

}  // namespace

SimdLevel simd_level() {
  return cpu_has_avx2() && !forced_baseline.load(std::memory_order_relaxed) ? SimdLevel::avx2 : SimdLevel::baseline;
}

void force_simd_level(SimdLevel level) { forced_baseline.store(level == SimdLevel::baseline); }

}  // namespace driftscan
