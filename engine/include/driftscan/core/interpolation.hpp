#pragma once
// Sampling a frame between pixels. Cubic is Keys' convolution kernel
// (a = -0.5, Catmull-Rom): interpolating (no prefilter pass over the frame),
// C1, exact for quadratics, 4x4 taps — used by the warp of the averaging
// (Interpolation::cubic). The refinement does not use it: it samples cubic
// B-splines (cubic_bspline.hpp), because Keys' kernel biases lattice shifts
// by ~0.01 px. Bilinear is for display (the app's aligned-frame comparison).
#include <cmath>

#include "driftscan/core/frame.hpp"

namespace driftscan {

inline void keys_weights(double t, double w[4]) {
  // weights for taps at offsets -1, 0, 1, 2 from floor(x); t in [0, 1)
  const double a = -0.5;
  double t2 = t * t, t3 = t2 * t;
  w[0] = a * (t3 - 2 * t2 + t);
  w[1] = (a + 2) * t3 - (a + 3) * t2 + 1;
  w[2] = -(a + 2) * t3 + (2 * a + 3) * t2 - a * t;
  w[3] = -a * (t3 - t2);
}

// True when (x, y) lies inside the frame's pixel-centre grid [0, w-1] x [0, h-1].
inline bool inside(const Frame& f, double x, double y) {
  return x >= 0.0 && y >= 0.0 && x <= f.width - 1.0 && y <= f.height - 1.0;
}

// Cubic sample with edge clamping; callers check inside() when out-of-frame matters.
inline float sample_cubic(const Frame& f, double x, double y) {
  int ix = static_cast<int>(std::floor(x)), iy = static_cast<int>(std::floor(y));
  double wx[4], wy[4];
  keys_weights(x - ix, wx);
  keys_weights(y - iy, wy);
  double sum = 0.0;
  for (int j = 0; j < 4; ++j) {
    int yy = iy - 1 + j;
    yy = yy < 0 ? 0 : (yy >= f.height ? f.height - 1 : yy);
    const float* row = f.row(yy);
    double r = 0.0;
    for (int i = 0; i < 4; ++i) {
      int xx = ix - 1 + i;
      xx = xx < 0 ? 0 : (xx >= f.width ? f.width - 1 : xx);
      r += wx[i] * row[xx];
    }
    sum += wy[j] * r;
  }
  return static_cast<float>(sum);
}

inline float sample_bilinear(const Frame& f, double x, double y) {
  int ix = static_cast<int>(std::floor(x)), iy = static_cast<int>(std::floor(y));
  double tx = x - ix, ty = y - iy;
  auto px = [&](int xx, int yy) {
    xx = xx < 0 ? 0 : (xx >= f.width ? f.width - 1 : xx);
    yy = yy < 0 ? 0 : (yy >= f.height ? f.height - 1 : yy);
    return static_cast<double>(f.at(xx, yy));
  };
  return static_cast<float>((1 - ty) * ((1 - tx) * px(ix, iy) + tx * px(ix + 1, iy)) +
                            ty * ((1 - tx) * px(ix, iy + 1) + tx * px(ix + 1, iy + 1)));
}

}  // namespace driftscan
