// The averaging's warp kernel; see cubic_warp.hpp.
#include "driftscan/averaging/cubic_warp.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "driftscan/core/interpolation.hpp"

namespace driftscan {
namespace {

constexpr float kMissing = std::numeric_limits<float>::quiet_NaN();
constexpr double kSlack = 1e-6;  // keeps exact integer shifts inside despite rounding

// Where a source coordinate q lands: the first tap (floor(q) - 1, unclamped)
// and the 4 weights, q clamped to [0, n - 1] as sample_cubic expects.
struct Taps {
  int first;
  float w[4];
};

Taps taps_for(double q, int n) {
  q = std::clamp(q, 0.0, n - 1.0);
  const int i = static_cast<int>(q);  // q >= 0: truncation is floor
  double w[4];
  keys_weights(q - i, w);
  return {i - 1,
          {static_cast<float>(w[0]), static_cast<float>(w[1]), static_cast<float>(w[2]), static_cast<float>(w[3])}};
}

// The same with the weights in float (Keys' a = -0.5): the affine path
// computes them for every sample.
Taps taps_fast(double q, int n) {
  q = std::clamp(q, 0.0, n - 1.0);
  const int i = static_cast<int>(q);
  const float t = static_cast<float>(q - i), t2 = t * t, t3 = t2 * t;
  return {i - 1,
          {-0.5f * (t3 - 2 * t2 + t), 1.5f * t3 - 2.5f * t2 + 1, -1.5f * t3 + 2 * t2 + 0.5f * t, 0.5f * (t3 - t2)}};
}

bool outside(double q, int n) { return q < -kSlack || q > n - 1 + kSlack; }

}  // namespace

CubicWarp::CubicWarp(int width, int height) : w_(width), h_(height) {}

CubicWarp::Scratch CubicWarp::scratch() const {
  Scratch s;
  const auto w = static_cast<std::size_t>(w_);
  s.vertical.resize(w);
  s.col_tap.resize(4 * w);
  s.col_w.resize(4 * w);
  s.col_in.resize(w);
  return s;
}

void CubicWarp::source_rows(const Transform& to_reference, int y0, int y1, int& first, int& last) const {
  const Transform inv = to_reference.inverse();
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (double x : {0.0, w_ - 1.0})
    for (double y : {static_cast<double>(y0), y1 - 1.0}) {
      const double q = inv.apply(x, y).y;
      lo = std::min(lo, q), hi = std::max(hi, q);
    }
  // One row of margin each side for rounding.
  first = std::clamp(static_cast<int>(std::floor(std::clamp(lo, 0.0, h_ - 1.0))) - 2, 0, h_ - 1);
  last = std::clamp(static_cast<int>(std::floor(std::clamp(hi, 0.0, h_ - 1.0))) + 3, 0, h_ - 1) + 1;
}

void CubicWarp::warp(const float* src, int src_y0, int src_rows, const Transform& to_reference, int y0, int y1,
                     float* out, Scratch& s) const {
  const Transform inv = to_reference.inverse();
  // Axis-aligned maps: x' depends on x alone and y' on y alone.
  if (inv.b == 0.0 && inv.c == 0.0) warp_separable(src, src_y0, src_rows, inv, y0, y1, out, s);
  else warp_affine(src, src_y0, src_rows, inv, y0, y1, out);
}

void CubicWarp::warp_separable(const float* src, int src_y0, int src_rows, const Transform& inv, int y0, int y1,
                               float* out, Scratch& s) const {
  const int w = w_;
  // Per output column: inside or not, 4 clamped taps, 4 weights.
  for (int x = 0; x < w; ++x) {
    const double qx = inv.a * x + inv.tx;
    const auto xi = static_cast<std::size_t>(x);
    s.col_in[xi] = !outside(qx, w);
    const Taps t = taps_for(qx, w);
    for (int i = 0; i < 4; ++i) {
      s.col_tap[4 * xi + i] = std::clamp(t.first + i, 0, w - 1);
      s.col_w[4 * xi + i] = t.w[i];
    }
  }
  // A translation: the interior columns (taps unclamped, x' - x constant)
  // share the weights of the first one: one vectorised loop for them.
  int run_begin = 0, run_end = 0, offset = 0;
  if (inv.a == 1.0) {
    auto interior = [&](int x) {  // inside, and no tap clamped
      const auto xi = static_cast<std::size_t>(x);
      return s.col_in[xi] && s.col_tap[4 * xi + 3] - s.col_tap[4 * xi] == 3;
    };
    while (run_begin < w && !interior(run_begin)) ++run_begin;
    run_end = run_begin;
    if (run_begin < w) offset = s.col_tap[4 * static_cast<std::size_t>(run_begin)] - run_begin;
    while (run_end < w && interior(run_end) && s.col_tap[4 * static_cast<std::size_t>(run_end)] - run_end == offset)
      ++run_end;
  }
  const float* wr = s.col_w.data() + 4 * static_cast<std::size_t>(run_begin);
  const float c0 = run_end > run_begin ? wr[0] : 0.f, c1 = run_end > run_begin ? wr[1] : 0.f,
              c2 = run_end > run_begin ? wr[2] : 0.f, c3 = run_end > run_begin ? wr[3] : 0.f;

  float* v = s.vertical.data();
  for (int y = y0; y < y1; ++y) {
    float* o = out + static_cast<std::size_t>(y - y0) * w;
    const double qy = inv.d * y + inv.ty;
    if (outside(qy, h_)) {
      std::fill(o, o + w, kMissing);
      continue;
    }
    const Taps ty = taps_for(qy, h_);
    const float* r[4];
    for (int j = 0; j < 4; ++j) {
      const int row = std::clamp(std::clamp(ty.first + j, 0, h_ - 1) - src_y0, 0, src_rows - 1);
      r[j] = src + static_cast<std::size_t>(row) * w;
    }
    const float* r0 = r[0];
    const float* r1 = r[1];
    const float* r2 = r[2];
    const float* r3 = r[3];
    const float v0 = ty.w[0], v1 = ty.w[1], v2 = ty.w[2], v3 = ty.w[3];
    for (int x = 0; x < w; ++x) v[x] = v0 * r0[x] + v1 * r1[x] + v2 * r2[x] + v3 * r3[x];
    const float* vv = v + run_begin + offset;
    float* oo = o + run_begin;
    for (int i = 0; i < run_end - run_begin; ++i) oo[i] = c0 * vv[i] + c1 * vv[i + 1] + c2 * vv[i + 2] + c3 * vv[i + 3];
    auto by_table = [&](int from, int to) {
      for (int x = from; x < to; ++x) {
        const auto xi = static_cast<std::size_t>(x);
        if (!s.col_in[xi]) {
          o[x] = kMissing;
          continue;
        }
        const int* tp = s.col_tap.data() + 4 * xi;
        const float* cw = s.col_w.data() + 4 * xi;
        o[x] = cw[0] * v[tp[0]] + cw[1] * v[tp[1]] + cw[2] * v[tp[2]] + cw[3] * v[tp[3]];
      }
    };
    by_table(0, run_begin);
    by_table(run_end, w);
  }
}

void CubicWarp::warp_affine(const float* src, int src_y0, int src_rows, const Transform& inv, int y0, int y1,
                            float* out) const {
  const int w = w_, h = h_;
  for (int y = y0; y < y1; ++y) {
    float* o = out + static_cast<std::size_t>(y - y0) * w;
    for (int x = 0; x < w; ++x) {
      const double qx = inv.a * x + inv.b * y + inv.tx, qy = inv.c * x + inv.d * y + inv.ty;
      if (outside(qx, w) || outside(qy, h)) {
        o[x] = kMissing;
        continue;
      }
      const Taps tx = taps_fast(qx, w), ty = taps_fast(qy, h);
      float sum = 0.f;
      if (tx.first >= 0 && tx.first + 3 < w) {
        for (int j = 0; j < 4; ++j) {
          const int row = std::clamp(std::clamp(ty.first + j, 0, h - 1) - src_y0, 0, src_rows - 1);
          const float* p = src + static_cast<std::size_t>(row) * w + tx.first;
          sum += ty.w[j] * (tx.w[0] * p[0] + tx.w[1] * p[1] + tx.w[2] * p[2] + tx.w[3] * p[3]);
        }
      } else {
        for (int j = 0; j < 4; ++j) {
          const int row = std::clamp(std::clamp(ty.first + j, 0, h - 1) - src_y0, 0, src_rows - 1);
          const float* p = src + static_cast<std::size_t>(row) * w;
          float r = 0.f;
          for (int i = 0; i < 4; ++i) r += tx.w[i] * p[std::clamp(tx.first + i, 0, w - 1)];
          sum += ty.w[j] * r;
        }
      }
      o[x] = sum;
    }
  }
}

}  // namespace driftscan
