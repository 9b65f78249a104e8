#pragma once
// The 4x4 taps of a cubic B-spline (cubic_bspline.hpp) in float, for the
// loops that sample float coefficients millions of times a run (the scan
// distortion's averages and fits): the weights as polynomials in the
// fraction, the four rows combined first and then across, as 4-wide SSE2
// arithmetic where the compiler targets it (every x86-64), plain loops
// elsewhere. Agrees with sample_bspline() to float rounding (~1e-7 relative).
#include <cstddef>

#include "driftscan/core/cubic_bspline.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

namespace driftscan {

// p is the top-left tap (pixel (ix - 1, iy - 1) of coefficients whose rows are
// `stride` floats apart), fx and fy the position's fractions in [0, 1).
inline float bspline_taps_value(const float* p, std::size_t stride, float fx, float fy);
// The value and its derivatives along x and y.
inline void bspline_taps_gradient(const float* p, std::size_t stride, float fx, float fy, float& v, float& gx,
                                  float& gy);

#if defined(__SSE2__)
namespace detail {
// Weights at taps -1, 0, 1, 2 as c0 + t (c1 + t (c2 + t c3)), one lane a tap.
inline __m128 bspline_weights4(float t) {
  const __m128 tv = _mm_set1_ps(t);
  const __m128 c3 = _mm_setr_ps(-1.0f / 6, 0.5f, -0.5f, 1.0f / 6), c2 = _mm_setr_ps(0.5f, -1.0f, 0.5f, 0.0f),
               c1 = _mm_setr_ps(-0.5f, 0.0f, 0.5f, 0.0f), c0 = _mm_setr_ps(1.0f / 6, 2.0f / 3, 1.0f / 6, 0.0f);
  return _mm_add_ps(c0, _mm_mul_ps(tv, _mm_add_ps(c1, _mm_mul_ps(tv, _mm_add_ps(c2, _mm_mul_ps(tv, c3))))));
}
// Their derivatives, c1 + t (2 c2 + t 3 c3).
inline __m128 bspline_weight_derivatives4(float t) {
  const __m128 tv = _mm_set1_ps(t);
  const __m128 c2 = _mm_setr_ps(-0.5f, 1.5f, -1.5f, 0.5f), c1 = _mm_setr_ps(1.0f, -2.0f, 1.0f, 0.0f),
               c0 = _mm_setr_ps(-0.5f, 0.0f, 0.5f, 0.0f);
  return _mm_add_ps(c0, _mm_mul_ps(tv, _mm_add_ps(c1, _mm_mul_ps(tv, c2))));
}
template <int lane>
inline __m128 broadcast(__m128 v) {
  return _mm_shuffle_ps(v, v, _MM_SHUFFLE(lane, lane, lane, lane));
}
// Rows combined with weights w (one lane a row): one 4-vector across.
inline __m128 combine_rows(__m128 r0, __m128 r1, __m128 r2, __m128 r3, __m128 w) {
  return _mm_add_ps(_mm_add_ps(_mm_mul_ps(broadcast<0>(w), r0), _mm_mul_ps(broadcast<1>(w), r1)),
                    _mm_add_ps(_mm_mul_ps(broadcast<2>(w), r2), _mm_mul_ps(broadcast<3>(w), r3)));
}
inline float horizontal_sum(__m128 v) {
  const __m128 pairs = _mm_add_ps(v, _mm_movehl_ps(v, v));
  return _mm_cvtss_f32(_mm_add_ss(pairs, _mm_shuffle_ps(pairs, pairs, 1)));
}
}  // namespace detail

inline float bspline_taps_value(const float* p, std::size_t stride, float fx, float fy) {
  const __m128 c = detail::combine_rows(_mm_loadu_ps(p), _mm_loadu_ps(p + stride), _mm_loadu_ps(p + 2 * stride),
                                        _mm_loadu_ps(p + 3 * stride), detail::bspline_weights4(fy));
  return detail::horizontal_sum(_mm_mul_ps(c, detail::bspline_weights4(fx)));
}

inline void bspline_taps_gradient(const float* p, std::size_t stride, float fx, float fy, float& v, float& gx,
                                  float& gy) {
  const __m128 r0 = _mm_loadu_ps(p), r1 = _mm_loadu_ps(p + stride), r2 = _mm_loadu_ps(p + 2 * stride),
               r3 = _mm_loadu_ps(p + 3 * stride);
  const __m128 c = detail::combine_rows(r0, r1, r2, r3, detail::bspline_weights4(fy));
  const __m128 d = detail::combine_rows(r0, r1, r2, r3, detail::bspline_weight_derivatives4(fy));
  const __m128 wx = detail::bspline_weights4(fx);
  v = detail::horizontal_sum(_mm_mul_ps(c, wx));
  gx = detail::horizontal_sum(_mm_mul_ps(c, detail::bspline_weight_derivatives4(fx)));
  gy = detail::horizontal_sum(_mm_mul_ps(d, wx));
}

// AVX2 + FMA builds of the two, for loops compiled for that target (callers
// choose by the CPU at run time; the engine as a whole runs on any x86-64).
// The same polynomials with the multiply-adds fused, and the value rows and
// derivative rows combined in the two halves of one 8-wide register (each row
// loaded once, duplicated): within float rounding of the SSE2 build (~1e-7
// relative), not equal to it to the last bit.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define DRIFTSCAN_FMA_TAPS 1
namespace detail {
// Weights at taps -1, 0, 1, 2 in the low half, their derivatives in the high
// half: the derivative's coefficients are the weights' (3 c3, 2 c2, c1).
__attribute__((target("avx2,fma"))) inline __m256 bspline_weights8_fma(float t) {
  const __m256 tv = _mm256_set1_ps(t);
  const __m256 c3 = _mm256_setr_ps(-1.0f / 6, 0.5f, -0.5f, 1.0f / 6, 0.0f, 0.0f, 0.0f, 0.0f),
               c2 = _mm256_setr_ps(0.5f, -1.0f, 0.5f, 0.0f, -0.5f, 1.5f, -1.5f, 0.5f),
               c1 = _mm256_setr_ps(-0.5f, 0.0f, 0.5f, 0.0f, 1.0f, -2.0f, 1.0f, 0.0f),
               c0 = _mm256_setr_ps(1.0f / 6, 2.0f / 3, 1.0f / 6, 0.0f, -0.5f, 0.0f, 0.5f, 0.0f);
  return _mm256_fmadd_ps(tv, _mm256_fmadd_ps(tv, _mm256_fmadd_ps(tv, c3, c2), c1), c0);
}
__attribute__((target("avx2,fma"))) inline __m128 bspline_weights4_fma(float t) {
  const __m128 tv = _mm_set1_ps(t);
  const __m128 c3 = _mm_setr_ps(-1.0f / 6, 0.5f, -0.5f, 1.0f / 6), c2 = _mm_setr_ps(0.5f, -1.0f, 0.5f, 0.0f),
               c1 = _mm_setr_ps(-0.5f, 0.0f, 0.5f, 0.0f), c0 = _mm_setr_ps(1.0f / 6, 2.0f / 3, 1.0f / 6, 0.0f);
  return _mm_fmadd_ps(tv, _mm_fmadd_ps(tv, _mm_fmadd_ps(tv, c3, c2), c1), c0);
}
}  // namespace detail

__attribute__((target("avx2,fma"))) inline float bspline_taps_value_fma(const float* p, std::size_t stride, float fx,
                                                                        float fy) {
  const __m128 w = detail::bspline_weights4_fma(fy);
  const __m128 a = _mm_fmadd_ps(_mm_permute_ps(w, 0x55), _mm_loadu_ps(p + stride),
                                _mm_mul_ps(_mm_permute_ps(w, 0x00), _mm_loadu_ps(p)));
  const __m128 b = _mm_fmadd_ps(_mm_permute_ps(w, 0xff), _mm_loadu_ps(p + 3 * stride),
                                _mm_mul_ps(_mm_permute_ps(w, 0xaa), _mm_loadu_ps(p + 2 * stride)));
  return detail::horizontal_sum(_mm_mul_ps(_mm_add_ps(a, b), detail::bspline_weights4_fma(fx)));
}

__attribute__((target("avx2,fma"))) inline void bspline_taps_gradient_fma(const float* p, std::size_t stride, float fx,
                                                                          float fy, float& v, float& gx, float& gy) {
  // [c | d]: the rows combined with the weights (c) and their derivatives (d) in y.
  const __m256 wy = detail::bspline_weights8_fma(fy);
  const __m256 a = _mm256_fmadd_ps(
      _mm256_permute_ps(wy, 0x55), _mm256_broadcast_ps(reinterpret_cast<const __m128*>(p + stride)),
      _mm256_mul_ps(_mm256_permute_ps(wy, 0x00), _mm256_broadcast_ps(reinterpret_cast<const __m128*>(p))));
  const __m256 b = _mm256_fmadd_ps(
      _mm256_permute_ps(wy, 0xff), _mm256_broadcast_ps(reinterpret_cast<const __m128*>(p + 3 * stride)),
      _mm256_mul_ps(_mm256_permute_ps(wy, 0xaa), _mm256_broadcast_ps(reinterpret_cast<const __m128*>(p + 2 * stride))));
  const __m256 cd = _mm256_add_ps(a, b);
  const __m256 wx = detail::bspline_weights8_fma(fx);  // [wx | dx]
  // [c wx | d wx] and [c dx | d dx], pairwise summed: [c wx, c dx] and [d wx, d dx] in halves, then across.
  const __m256 p0 = _mm256_mul_ps(cd, _mm256_permute2f128_ps(wx, wx, 0x00));
  const __m256 p1 = _mm256_mul_ps(cd, _mm256_permute2f128_ps(wx, wx, 0x11));
  const __m256 h = _mm256_hadd_ps(p0, p1);  // [cw01 cw23 cd01 cd23 | dw01 dw23 dd01 dd23]
  const __m128 s = _mm_hadd_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));  // [c.wx c.dx d.wx d.dx]
  v = _mm_cvtss_f32(s);
  gx = _mm_cvtss_f32(_mm_movehdup_ps(s));
  gy = _mm_cvtss_f32(_mm_movehl_ps(s, s));
}
#endif

#else  // no SSE2: the same arithmetic in plain loops

namespace detail {
// The reference weights (cubic_bspline.hpp), in float.
inline void bspline_weights4(float t, float w[4]) {
  double d[4];
  bspline_weights(t, d);
  for (int i = 0; i < 4; ++i) w[i] = static_cast<float>(d[i]);
}
inline void bspline_weight_derivatives4(float t, float w[4]) {
  double d[4];
  bspline_weight_derivatives(t, d);
  for (int i = 0; i < 4; ++i) w[i] = static_cast<float>(d[i]);
}
}  // namespace detail

inline float bspline_taps_value(const float* p, std::size_t stride, float fx, float fy) {
  float wx[4], wy[4], v = 0.0f;
  detail::bspline_weights4(fx, wx);
  detail::bspline_weights4(fy, wy);
  for (int j = 0; j < 4; ++j)
    for (int i = 0; i < 4; ++i) v += wy[j] * wx[i] * p[j * stride + i];
  return v;
}

inline void bspline_taps_gradient(const float* p, std::size_t stride, float fx, float fy, float& v, float& gx,
                                  float& gy) {
  float wx[4], wy[4], dx[4], dy[4];
  detail::bspline_weights4(fx, wx);
  detail::bspline_weights4(fy, wy);
  detail::bspline_weight_derivatives4(fx, dx);
  detail::bspline_weight_derivatives4(fy, dy);
  v = gx = gy = 0.0f;
  for (int j = 0; j < 4; ++j)
    for (int i = 0; i < 4; ++i) {
      const float c = p[j * stride + i];
      v += wy[j] * wx[i] * c, gx += wy[j] * dx[i] * c, gy += dy[j] * wx[i] * c;
    }
}
#endif

}  // namespace driftscan
