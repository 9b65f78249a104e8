#pragma once
// Which vector instructions the per-pixel kernels use (the information
// pass's rows and lag sums in registration/, the scan-distortion fits and
// sampling): AVX2 + FMA where the CPU has them, chosen per call, else the
// baseline (SSE2) build of the same loops. The engine is not compiled for
// AVX2 as a whole: it must run on any x86-64.

namespace driftscan {

enum class SimdLevel { baseline, avx2 };

// The level the kernels use now: AVX2 when the CPU supports AVX2 and FMA,
// unless force_simd_level chose the baseline.
SimdLevel simd_level();

// Tests: run the baseline kernels on an AVX2 machine (or back to avx2, which
// still needs the CPU's support).
void force_simd_level(SimdLevel level);

}  // namespace driftscan

// A kernel compiled for AVX2 + FMA beside its baseline build: the same
// always-inline body (DRIFTSCAN_KERNEL) called from a function of each target,
// so the compiler vectorises it for each; callers pick one by simd_level().
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define DRIFTSCAN_AVX2_TARGET __attribute__((target("avx2,fma")))
#else
#define DRIFTSCAN_AVX2_TARGET
#endif
#if defined(__GNUC__) || defined(__clang__)
#define DRIFTSCAN_KERNEL __attribute__((always_inline)) inline
#else
#define DRIFTSCAN_KERNEL inline
#endif
