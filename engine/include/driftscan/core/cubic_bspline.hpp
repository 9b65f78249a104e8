#pragma once
// Cubic B-spline interpolation (Unser, "Splines: a perfect fit for signal and
// image processing", IEEE SPM 1999): the frame is first turned into spline
// coefficients by a recursive prefilter, after which a sample costs the same
// 4x4 taps as Keys' kernel. Its phase error on a fringe of period 7.8 px is
// ~3e-4 px against ~1e-2 px for Keys', which is why the refinement uses it:
// sub-0.05 px registration on a lattice cannot afford a 0.01 px bias.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "driftscan/core/frame.hpp"

#if defined(__SSE2__)
#include <xmmintrin.h>
#endif

namespace driftscan {

// Weights for taps at offsets -1, 0, 1, 2 from floor(x); t in [0, 1).
inline void bspline_weights(double t, double w[4]) {
  // Multiplied by 1/6, not divided: four divisions were a third of a sample's cost.
  constexpr double sixth = 1.0 / 6.0;
  const double u = 1.0 - t, t2 = t * t, t3 = t2 * t;
  w[0] = u * u * u * sixth;
  w[1] = (4.0 - 6.0 * t2 + 3.0 * t3) * sixth;
  w[2] = (1.0 + 3.0 * t + 3.0 * t2 - 3.0 * t3) * sixth;
  w[3] = t3 * sixth;
}

// Derivative of the weights with respect to t.
inline void bspline_weight_derivatives(double t, double w[4]) {
  const double u = 1.0 - t, t2 = t * t;
  w[0] = -0.5 * u * u;
  w[1] = -2.0 * t + 1.5 * t2;
  w[2] = 0.5 + t - 1.5 * t2;
  w[3] = 0.5 * t2;
}

namespace detail {
// Prefilters every column of a w x n block of floats (row r at data + r *
// stride) at once, row after row (mirror-symmetric boundaries): the recursion
// runs down the rows, so the inner loops are contiguous and vectorise,
// unlike a per-line recursion. Columns x0 .. x1 - 1 only.
inline void bspline_prefilter_block(float* data, std::size_t stride, int n, int x0, int x1) {
  const float z = static_cast<float>(std::sqrt(3.0) - 2.0), lambda = 6.0f;
  const int horizon = std::min(n, 16);
  auto row = [&](int y) { return data + static_cast<std::size_t>(y) * stride; };
  for (int y = 0; y < n; ++y) {
    float* r = row(y);
    for (int x = x0; x < x1; ++x) r[x] *= lambda;
  }
  // causal initialisation: truncated sum, exact to float precision
  constexpr int block = 64;
  float first[block];
  std::copy(row(0) + x0, row(0) + x1, first);
  float zk = z;
  for (int k = 1; k < horizon; ++k, zk *= z) {
    const float* r = row(k);
    for (int x = x0; x < x1; ++x) first[x - x0] += zk * r[x];
  }
  std::copy(first, first + (x1 - x0), row(0) + x0);
  for (int y = 1; y < n; ++y) {
    float* r = row(y);
    const float* p = row(y - 1);
    for (int x = x0; x < x1; ++x) r[x] += z * p[x];
  }
  {
    float* r = row(n - 1);
    const float* p = row(n - 2);
    const float g = z / (z * z - 1.0f);
    for (int x = x0; x < x1; ++x) r[x] = g * (r[x] + z * p[x]);
  }
  for (int y = n - 2; y >= 0; --y) {
    float* r = row(y);
    const float* q = row(y + 1);
    for (int x = x0; x < x1; ++x) r[x] = z * (q[x] - r[x]);
  }
}

inline void bspline_prefilter_columns(Frame& f) {
  const int n = f.height, w = f.width;
  if (n < 2) return;
  // Columns are independent: blocks of them go to the threads (the same
  // arithmetic per column, so the same floats for any thread count).
  constexpr int block = 64;
  const int blocks = (w + block - 1) / block;
#pragma omp parallel for schedule(static) if (static_cast <long>(w) * n >= 131072)
  for (int b = 0; b < blocks; ++b)
    bspline_prefilter_block(f.pixels.data(), static_cast<std::size_t>(w), n, b * block, std::min(w, b * block + block));
}

// Rows y0 .. y0 + rows of f into (in) or back from (out) a strip whose
// element (x, r) is buf[x * strip + r]: 4x4 blocks transposed in SSE
// registers (element by element, these copies were 2.3% of a whole
// scan-distortion run's instructions at 8 x 512²).
inline void transpose_strip(Frame& f, int y0, int rows, float* buf, int strip, bool in) {
  const int n = f.width;
  int r0 = 0;
#if defined(__SSE2__)
  const int n4 = n & ~3;
  for (; r0 + 4 <= rows; r0 += 4) {
    float* row[4] = {f.row(y0 + r0), f.row(y0 + r0 + 1), f.row(y0 + r0 + 2), f.row(y0 + r0 + 3)};
    for (int x = 0; x < n4; x += 4) {
      float* b = buf + static_cast<std::size_t>(x) * strip + r0;
      const std::ptrdiff_t s1 = strip, s2 = 2 * s1, s3 = 3 * s1;
      __m128 v0, v1, v2, v3;
      if (in) {
        v0 = _mm_loadu_ps(row[0] + x), v1 = _mm_loadu_ps(row[1] + x), v2 = _mm_loadu_ps(row[2] + x),
        v3 = _mm_loadu_ps(row[3] + x);
      } else {
        v0 = _mm_loadu_ps(b), v1 = _mm_loadu_ps(b + s1), v2 = _mm_loadu_ps(b + s2), v3 = _mm_loadu_ps(b + s3);
      }
      _MM_TRANSPOSE4_PS(v0, v1, v2, v3);
      if (in) {
        _mm_storeu_ps(b, v0), _mm_storeu_ps(b + s1, v1), _mm_storeu_ps(b + s2, v2), _mm_storeu_ps(b + s3, v3);
      } else {
        _mm_storeu_ps(row[0] + x, v0), _mm_storeu_ps(row[1] + x, v1), _mm_storeu_ps(row[2] + x, v2),
            _mm_storeu_ps(row[3] + x, v3);
      }
    }
    for (int r = r0; r < r0 + 4; ++r)
      for (int x = n4; x < n; ++x) {
        float& e = buf[static_cast<std::size_t>(x) * strip + r];
        float& g = f.row(y0 + r)[x];
        if (in) e = g;
        else g = e;
      }
  }
#endif
  for (int r = r0; r < rows; ++r) {
    float* g = f.row(y0 + r);
    for (int x = 0; x < n; ++x) {
      float& e = buf[static_cast<std::size_t>(x) * strip + r];
      if (in) e = g[x];
      else g[x] = e;
    }
  }
}

// The same recursion along every row: strips of rows are turned into a small
// column-major buffer (cache-resident), prefiltered as columns and put back.
// Each row sees exactly the column pass's arithmetic, so the coefficients
// equal those of transposing the whole frame (which cost two frame-sized
// copies and a cache miss per element) to the last bit.
inline void bspline_prefilter_rows(Frame& f) {
  const int n = f.width, h = f.height;
  if (n < 2) return;
  constexpr int strip = 32;
  const int strips = (h + strip - 1) / strip;
#pragma omp parallel if (static_cast <long>(n) * h >= 131072)
  {
    std::vector<float> buf(static_cast<std::size_t>(n) * strip);
#pragma omp for schedule(static)
    for (int s = 0; s < strips; ++s) {
      const int y0 = s * strip, rows = std::min(h, y0 + strip) - y0;
      transpose_strip(f, y0, rows, buf.data(), strip, true);
      bspline_prefilter_block(buf.data(), strip, n, 0, rows);
      transpose_strip(f, y0, rows, buf.data(), strip, false);
    }
  }
}

inline Frame transposed(const Frame& f) {
  Frame t(f.height, f.width);
  constexpr int B = 8;  // blocked for the cache
  for (int y0 = 0; y0 < f.height; y0 += B)
    for (int x0 = 0; x0 < f.width; x0 += B)
      for (int y = y0; y < std::min(f.height, y0 + B); ++y)
        for (int x = x0; x < std::min(f.width, x0 + B); ++x) t.at(y, x) = f.at(x, y);
  return t;
}
}  // namespace detail

// Samples -> cubic B-spline coefficients, in place.
inline void bspline_prefilter(Frame& f) {
  detail::bspline_prefilter_columns(f);
  detail::bspline_prefilter_rows(f);
}

// The spline at (x, y) from coefficients (edge taps clamped).
inline float sample_bspline(const Frame& coeffs, double x, double y) {
  const int ix = static_cast<int>(std::floor(x)), iy = static_cast<int>(std::floor(y));
  double wx[4], wy[4];
  bspline_weights(x - ix, wx);
  bspline_weights(y - iy, wy);
  double sum = 0.0;
  const bool interior = ix >= 1 && iy >= 1 && ix + 2 < coeffs.width && iy + 2 < coeffs.height;
  for (int j = 0; j < 4; ++j) {
    const int yy = interior ? iy - 1 + j : std::clamp(iy - 1 + j, 0, coeffs.height - 1);
    const float* row = coeffs.row(yy);
    double r = 0.0;
    if (interior) {
      const float* p = row + ix - 1;
      r = wx[0] * p[0] + wx[1] * p[1] + wx[2] * p[2] + wx[3] * p[3];
    } else {
      for (int i = 0; i < 4; ++i) r += wx[i] * row[std::clamp(ix - 1 + i, 0, coeffs.width - 1)];
    }
    sum += wy[j] * r;
  }
  return static_cast<float>(sum);
}

}  // namespace driftscan
