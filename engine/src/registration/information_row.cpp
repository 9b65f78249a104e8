// The information pass's row kernels; see information_row.hpp.
#include "registration/information_row.hpp"

#include "driftscan/core/simd_level.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>

// The 8-float vectors pass between always-inline functions of this file
// only: GCC's note that their ABI differs without AVX concerns no call here.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace driftscan {
namespace {

// Eight floats (GCC/Clang vector extension): one AVX register, two SSE ones
// in the baseline build. The kernels below are written once for V = v8 (the
// row's blocks of eight) and V = float (its last few pixels).
typedef float v8 __attribute__((vector_size(32)));

template <class V>
DRIFTSCAN_KERNEL V load(const float* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class V>
DRIFTSCAN_KERNEL void store(float* p, const V& v) {
  std::memcpy(p, &v, sizeof v);
}
DRIFTSCAN_KERNEL float total(float v) { return v; }
DRIFTSCAN_KERNEL float total(const v8& v) {
  float s = 0;
  for (int k = 0; k < 8; ++k) s += v[k];
  return s;
}

// d(g o S)/dq along one axis by the differences the reference's gradients
// use: central where both neighbours were sampled, one-sided where one was,
// 0 where none (lo_in, hi_in: 1 sampled, 0 not).
template <class V>
DRIFTSCAN_KERNEL V difference(const V& at, const V& lo, const V& hi, const V& lo_in, const V& hi_in) {
  return (hi_in * (hi - at) + lo_in * (at - lo)) * (1.0f - 0.5f * lo_in * hi_in);
}

// The sums of one row, per lane.
template <class V>
struct Lanes {
  V rss{}, p0{}, p1{}, l0{}, l1{}, a00{}, a01{}, a10{}, a11{}, e00{}, e01{}, e10{}, e11{};
};

template <class V, bool Exact>
DRIFTSCAN_KERNEL void full_at(const InformationRow& r, const InformationRowOut& o, int i, Lanes<V>& s) {
  const V w = load<V>(r.w + i), g = load<V>(r.g + i), f = load<V>(r.f + i), fx = load<V>(r.fx + i),
          fy = load<V>(r.fy + i);
  const V res = r.alpha * g + r.beta - f;
  s.rss += w * res * res;
  const V rn = r.gain * g + r.offset - f;
  const V wx = w * fx, wy = w * fy;
  const V v0 = wx * rn, v1 = wy * rn;
  store(o.u[0] + i, v0), store(o.u[1] + i, v1);
  s.p0 += wx * fx, s.p1 += wy * fy;
  s.l0 += v0 * v0, s.l1 += v1 * v1;
  const V gx = difference(g, load<V>(r.g + i - 1), load<V>(r.g + i + 1), load<V>(r.in + i - 1), load<V>(r.in + i + 1));
  const V gy = difference(g, load<V>(r.g_up + i), load<V>(r.g_down + i), load<V>(r.in_up + i), load<V>(r.in_down + i));
  s.a00 += wx * gx, s.a01 += wx * gy, s.a10 += wy * gx, s.a11 += wy * gy;
  if (Exact) {
    const V ex = load<V>(r.exact_gx + i), ey = load<V>(r.exact_gy + i);
    s.e00 += wx * ex, s.e01 += wx * ey, s.e10 += wy * ex, s.e11 += wy * ey;
  }
  store(o.jf[0] + i, wx), store(o.jf[1] + i, wy), store(o.jg[0] + i, w * gx), store(o.jg[1] + i, w * gy);
}

template <class V>
DRIFTSCAN_KERNEL void add_lanes(const Lanes<V>& l, InformationRowSums& s) {
  s.residual_ss += total(l.rss), s.power[0] += total(l.p0), s.power[1] += total(l.p1);
  s.lag0[0] += total(l.l0), s.lag0[1] += total(l.l1);
  s.A[0] += total(l.a00), s.A[1] += total(l.a01), s.A[2] += total(l.a10), s.A[3] += total(l.a11);
  s.A_exact[0] += total(l.e00), s.A_exact[1] += total(l.e01), s.A_exact[2] += total(l.e10),
      s.A_exact[3] += total(l.e11);
}

template <bool Exact>
DRIFTSCAN_KERNEL void full(const InformationRow& r, const InformationRowOut& o, InformationRowSums& s) {
  Lanes<v8> block;
  int i = 0;
  for (; i + 8 <= r.n; i += 8) full_at<v8, Exact>(r, o, i, block);
  Lanes<float> tail;
  for (; i < r.n; ++i) full_at<float, Exact>(r, o, i, tail);
  s = InformationRowSums{};
  add_lanes(block, s);
  add_lanes(tail, s);
}

template <class V>
DRIFTSCAN_KERNEL void margin_at(const InformationRow& r, const InformationRowOut& o, int i) {
  const V w = load<V>(r.w + i), g = load<V>(r.g + i);
  const V rn = r.gain * g + r.offset - load<V>(r.f + i);
  store(o.u[0] + i, w * load<V>(r.fx + i) * rn), store(o.u[1] + i, w * load<V>(r.fy + i) * rn);
  store(o.jg[0] + i,
        w * difference(g, load<V>(r.g + i - 1), load<V>(r.g + i + 1), load<V>(r.in + i - 1), load<V>(r.in + i + 1)));
  store(o.jg[1] + i,
        w * difference(g, load<V>(r.g_up + i), load<V>(r.g_down + i), load<V>(r.in_up + i), load<V>(r.in_down + i)));
}

DRIFTSCAN_KERNEL void margin(const InformationRow& r, const InformationRowOut& o) {
  int i = 0;
  for (; i + 8 <= r.n; i += 8) margin_at<v8>(r, o, i);
  for (; i < r.n; ++i) margin_at<float>(r, o, i);
}

template <class V, bool Measured>
DRIFTSCAN_KERNEL void u_at(const InformationRow& r, const InformationRowOut& o, int i, Lanes<V>& s) {
  const V w = load<V>(r.w + i), g = load<V>(r.g + i), f = load<V>(r.f + i);
  if (Measured) {
    const V res = r.alpha * g + r.beta - f;
    s.rss += w * res * res;
  }
  const V rn = r.gain * g + r.offset - f;
  const V v0 = w * load<V>(r.fx + i) * rn, v1 = w * load<V>(r.fy + i) * rn;
  store(o.u[0] + i, v0), store(o.u[1] + i, v1);
  if (Measured) s.l0 += v0 * v0, s.l1 += v1 * v1;
}

template <bool Measured>
DRIFTSCAN_KERNEL void u_only(const InformationRow& r, const InformationRowOut& o, InformationRowSums& s) {
  Lanes<v8> block;
  int i = 0;
  for (; i + 8 <= r.n; i += 8) u_at<v8, Measured>(r, o, i, block);
  Lanes<float> tail;
  for (; i < r.n; ++i) u_at<float, Measured>(r, o, i, tail);
  s = InformationRowSums{};
  add_lanes(block, s);
  add_lanes(tail, s);
}

template <class V>
DRIFTSCAN_KERNEL void fit_at(const float* w, const float* g, const float* f, int i, V& sg, V& sgg, V& sfg) {
  const V wg = load<V>(w + i) * load<V>(g + i);
  sg += wg, sgg += wg * load<V>(g + i), sfg += wg * load<V>(f + i);
}

DRIFTSCAN_KERNEL void fit(int n, const float* w, const float* g, const float* f, GainFitRowSums& s) {
  v8 bg{}, bgg{}, bfg{};
  int i = 0;
  for (; i + 8 <= n; i += 8) fit_at(w, g, f, i, bg, bgg, bfg);
  float tg = 0, tgg = 0, tfg = 0;
  for (; i < n; ++i) fit_at(w, g, f, i, tg, tgg, tfg);
  s.sg = total(bg) + tg, s.sgg = total(bgg) + tgg, s.sfg = total(bfg) + tfg;
}

DRIFTSCAN_AVX2_TARGET void fit_avx2(int n, const float* w, const float* g, const float* f, GainFitRowSums& s) {
  fit(n, w, g, f, s);
}
void fit_baseline(int n, const float* w, const float* g, const float* f, GainFitRowSums& s) { fit(n, w, g, f, s); }

DRIFTSCAN_KERNEL void sample(const SplineRow& s, int n, float* col, float* out) {
  const float *r0 = s.rows[0], *r1 = s.rows[1], *r2 = s.rows[2], *r3 = s.rows[3];
  const float w0 = s.wy[0], w1 = s.wy[1], w2 = s.wy[2], w3 = s.wy[3];
#pragma omp simd
  for (int i = 0; i < n + 3; ++i) col[i] = w0 * r0[i] + w1 * r1[i] + w2 * r2[i] + w3 * r3[i];
  const float v0 = s.wx[0], v1 = s.wx[1], v2 = s.wx[2], v3 = s.wx[3];
#pragma omp simd
  for (int i = 0; i < n; ++i) out[i] = v0 * col[i] + v1 * col[i + 1] + v2 * col[i + 2] + v3 * col[i + 3];
}
DRIFTSCAN_AVX2_TARGET void sample_avx2(const SplineRow& s, int n, float* col, float* out) { sample(s, n, col, out); }
void sample_baseline(const SplineRow& s, int n, float* col, float* out) { sample(s, n, col, out); }

DRIFTSCAN_KERNEL void gradient(const SplineRow& s, int n, float* c, float* gx, float* gy) {
  const float *r0 = s.rows[0], *r1 = s.rows[1], *r2 = s.rows[2], *r3 = s.rows[3];
  // The weights in locals: the stores below could alias s for the compiler.
  const float w0 = s.wy[0], w1 = s.wy[1], w2 = s.wy[2], w3 = s.wy[3];
  const float d0 = s.dy[0], d1 = s.dy[1], d2 = s.dy[2], d3 = s.dy[3];
  float* cd = c + n + 3;
#pragma omp simd
  for (int i = 0; i < n + 3; ++i) {
    c[i] = w0 * r0[i] + w1 * r1[i] + w2 * r2[i] + w3 * r3[i];
    cd[i] = d0 * r0[i] + d1 * r1[i] + d2 * r2[i] + d3 * r3[i];
  }
  const float e0 = s.dx[0], e1 = s.dx[1], e2 = s.dx[2], e3 = s.dx[3];
  const float v0 = s.wx[0], v1 = s.wx[1], v2 = s.wx[2], v3 = s.wx[3];
#pragma omp simd
  for (int i = 0; i < n; ++i) {
    gx[i] = e0 * c[i] + e1 * c[i + 1] + e2 * c[i + 2] + e3 * c[i + 3];
    gy[i] = v0 * cd[i] + v1 * cd[i + 1] + v2 * cd[i + 2] + v3 * cd[i + 3];
  }
}
DRIFTSCAN_AVX2_TARGET void gradient_avx2(const SplineRow& s, int n, float* c, float* gx, float* gy) {
  gradient(s, n, c, gx, gy);
}
void gradient_baseline(const SplineRow& s, int n, float* c, float* gx, float* gy) { gradient(s, n, c, gx, gy); }

template <class V>
DRIFTSCAN_KERNEL void lag_at(const float* f, const float* s, const float* g, int i, V& fs, V& fg) {
  const V fv = load<V>(f + i);
  fs += fv * load<V>(s + i), fg += fv * load<V>(g + i);
}
DRIFTSCAN_KERNEL void lag_row(int n, const float* f, const float* s, const float* g, float& fs, float& fg) {
  v8 bs{}, bg{};
  int i = 0;
  for (; i + 8 <= n; i += 8) lag_at(f, s, g, i, bs, bg);
  float ts = 0, tg = 0;
  for (; i < n; ++i) lag_at(f, s, g, i, ts, tg);
  fs = total(bs) + ts, fg = total(bg) + tg;
}
DRIFTSCAN_AVX2_TARGET void lag_row_avx2(int n, const float* f, const float* s, const float* g, float& fs, float& fg) {
  lag_row(n, f, s, g, fs, fg);
}
void lag_row_baseline(int n, const float* f, const float* s, const float* g, float& fs, float& fg) {
  lag_row(n, f, s, g, fs, fg);
}

// The same sums at every s-th column only: the row split into its s phases
// (phase p holds in[-r + p + j s]), so that each output column's tap u reads
// phase u mod s at j = X + u / s and eight output columns stay contiguous.
// Each column's taps are added in t order, as one column at a time would,
// eight columns to a register across the taps.
template <class V>
DRIFTSCAN_KERNEL void strided_at(const float* ph, const float* a, const int* off, int taps, int X, float* out) {
  V acc{};
  for (int u = 0; u < taps; ++u) acc += a[u] * load<V>(ph + off[u] + X);
  store(out + X, acc);
}
template <class V>
DRIFTSCAN_KERNEL void pair_at(const float* even, const float* odd, const float* a, int taps, int X, float* out) {
  V acc{};
  int u = 0;
  for (; u + 1 < taps; u += 2) {
    acc += a[u] * load<V>(even + u / 2 + X);
    acc += a[u + 1] * load<V>(odd + u / 2 + X);
  }
  if (u < taps) acc += a[u] * load<V>(even + u / 2 + X);
  store(out + X, acc);
}
DRIFTSCAN_KERNEL void smooth_strided(const float* in, int width, int m, const float* a, int r, int s, float* ph,
                                     int* off, float* out) {
  const int taps = 2 * r + 1, len = (m + 7) / 8 * 8 + 2 * r / s + 1;
  for (int p = 0; p < s; ++p) {
    // Phase p, j-th value: in[-r + p + j s], 0 off the row (a clipped
    // window's missing taps: adding a·0 leaves every sum as it was).
    float* q = ph + static_cast<std::ptrdiff_t>(p) * len;
    const int lo = std::min(len, r - p <= 0 ? 0 : (r - p + s - 1) / s);
    const int hi = std::max(lo, std::min(len, width - 1 + r - p < 0 ? 0 : (width - 1 + r - p) / s + 1));
    const float* from = in - r + p;
    int j = 0;
    for (; j < lo; ++j) q[j] = 0.0f;
    if (s == 2) {
      for (; j < hi; ++j)
        q[j] = from[2 * static_cast<std::ptrdiff_t>(j)];  // the usual stride, vectorised by the compiler
    } else {
      for (; j < hi; ++j) q[j] = from[static_cast<std::ptrdiff_t>(j) * s];
    }
    for (; j < len; ++j) q[j] = 0.0f;
  }
  int X = 0;
  float last[8];
  if (s == 2) {  // the taps alternate between the two phases: no offsets table
    for (; X + 8 <= m; X += 8) pair_at<v8>(ph, ph + len, a, taps, X, out);
    if (X < m) pair_at<v8>(ph + X, ph + len + X, a, taps, 0, last);
  } else {
    for (int u = 0; u < taps; ++u) off[u] = (u % s) * len + u / s;
    for (; X + 8 <= m; X += 8) strided_at<v8>(ph, a, off, taps, X, out);
    if (X < m) strided_at<v8>(ph + X, a, off, taps, 0, last);
  }
  // The last block's columns past m read the zero padding; only m are kept.
  for (int k = 0; X + k < m; ++k) out[X + k] = last[k];
}
DRIFTSCAN_AVX2_TARGET void smooth_strided_avx2(const float* in, int width, int m, const float* a, int r, int s,
                                               float* ph, int* off, float* out) {
  smooth_strided(in, width, m, a, r, s, ph, off, out);
}
void smooth_strided_baseline(const float* in, int width, int m, const float* a, int r, int s, float* ph, int* off,
                             float* out) {
  smooth_strided(in, width, m, a, r, s, ph, off, out);
}

DRIFTSCAN_AVX2_TARGET void full_avx2(const InformationRow& r, const InformationRowOut& o, InformationRowSums& s) {
  if (r.exact_gx) full<true>(r, o, s);
  else full<false>(r, o, s);
}
void full_baseline(const InformationRow& r, const InformationRowOut& o, InformationRowSums& s) {
  if (r.exact_gx) full<true>(r, o, s);
  else full<false>(r, o, s);
}
DRIFTSCAN_AVX2_TARGET void margin_avx2(const InformationRow& r, const InformationRowOut& o) { margin(r, o); }
void margin_baseline(const InformationRow& r, const InformationRowOut& o) { margin(r, o); }
DRIFTSCAN_AVX2_TARGET void u_avx2(const InformationRow& r, const InformationRowOut& o, bool measured,
                                  InformationRowSums& s) {
  if (measured) u_only<true>(r, o, s);
  else u_only<false>(r, o, s);
}
void u_baseline(const InformationRow& r, const InformationRowOut& o, bool measured, InformationRowSums& s) {
  if (measured) u_only<true>(r, o, s);
  else u_only<false>(r, o, s);
}

}  // namespace

void information_row_full(const InformationRow& r, const InformationRowOut& out, InformationRowSums& sums) {
  (simd_level() == SimdLevel::avx2 ? full_avx2 : full_baseline)(r, out, sums);
}

void information_row_margin(const InformationRow& r, const InformationRowOut& out) {
  (simd_level() == SimdLevel::avx2 ? margin_avx2 : margin_baseline)(r, out);
}

void information_row_u(const InformationRow& r, const InformationRowOut& out, bool measured, InformationRowSums& sums) {
  (simd_level() == SimdLevel::avx2 ? u_avx2 : u_baseline)(r, out, measured, sums);
}

void gain_fit_row(int n, const float* w, const float* g, const float* f, GainFitRowSums& sums) {
  (simd_level() == SimdLevel::avx2 ? fit_avx2 : fit_baseline)(n, w, g, f, sums);
}

void sample_spline_row(const SplineRow& s, int n, float* col, float* out) {
  (simd_level() == SimdLevel::avx2 ? sample_avx2 : sample_baseline)(s, n, col, out);
}

void spline_gradient_row(const SplineRow& s, int n, float* col, float* gx, float* gy) {
  (simd_level() == SimdLevel::avx2 ? gradient_avx2 : gradient_baseline)(s, n, col, gx, gy);
}

void lag_factor_row(int n, const float* f, const float* s, const float* g, float& fs, float& fg) {
  (simd_level() == SimdLevel::avx2 ? lag_row_avx2 : lag_row_baseline)(n, f, s, g, fs, fg);
}

std::size_t smooth_columns_strided_scratch(int m, int r, int s) {
  return static_cast<std::size_t>(s) * static_cast<std::size_t>((m + 7) / 8 * 8 + 2 * r / s + 1);
}

void smooth_columns_strided(const float* in, int width, int m, const float* a, int r, int s, float* phases,
                            int* offsets, float* out) {
  (simd_level() == SimdLevel::avx2 ? smooth_strided_avx2 : smooth_strided_baseline)(in, width, m, a, r, s, phases,
                                                                                    offsets, out);
}

}  // namespace driftscan
