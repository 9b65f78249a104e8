#pragma once
// The information pass's per-pixel terms of one row for a translation
// (refinement.cpp: LevelSolver::noise_rows): every input a contiguous float
// row, the sums in float per row (vector lanes) and in double over rows.
// Compiled for AVX2 + FMA beside the baseline build (simd_level.hpp).

#include <cstddef>

namespace driftscan {

// Pixels 0..n-1 of a row of the overlap; the row's neighbours above and
// below and the pixels at -1 and n are read (the overlap keeps a pixel
// inside the frame's border, so they exist).
struct InformationRow {
  int n = 0;
  const float* w = nullptr;       // the overlap's weights (0: not used)
  const float* g = nullptr;       // the moving frame sampled at S
  const float* g_up = nullptr;    // ... on the row above
  const float* g_down = nullptr;  // ... on the row below
  const float* in = nullptr;      // 1 where g was sampled (-1..n), else 0
  const float* in_up = nullptr;
  const float* in_down = nullptr;
  const float* f = nullptr;         // the reference
  const float* fx = nullptr;        // its gradient's x
  const float* fy = nullptr;        // and y (J_f)
  const float* exact_gx = nullptr;  // the moving frame's spline gradient (null: no A_exact)
  const float* exact_gy = nullptr;
  float alpha = 1, beta = 0;   // the pass's fit (the residual)
  float gain = 1, offset = 0;  // M's residual
};

// Per row: in float (a row's few hundred terms), added to doubles by the caller.
struct InformationRowSums {
  float residual_ss = 0;  // sum w (alpha g + beta - f)^2
  float power[2] = {};    // sum w J_f,i^2
  float lag0[2] = {};     // sum u_i^2
  float A[4] = {};        // sum w J_f,i J_g,j (i * 2 + j; alpha not applied), J_g by central differences
  float A_exact[4] = {};  // ... J_g the spline's exact gradient
};

// Where the row's terms go: u_i = w J_f,i (gain g + offset - f); the lag
// factor's window rows jf_i = w J_f,i, jg_i = w J_g,i (all n values written;
// jf only on measured rows).
struct InformationRowOut {
  float* u[2] = {};
  float* jf[2] = {};
  float* jg[2] = {};
};

// A measured row A is taken on: every sum and output.
void information_row_full(const InformationRow& r, const InformationRowOut& out, InformationRowSums& sums);
// A band's margin row A is taken on: u and jg alone.
void information_row_margin(const InformationRow& r, const InformationRowOut& out);
// A row A skips: u, and when measured residual_ss and lag0.
void information_row_u(const InformationRow& r, const InformationRowOut& out, bool measured, InformationRowSums& sums);

// The moving frame's sums of the gain fit f ~ alpha g + beta over a row
// (the reference's sums are the overlap's, known): sum w g, sum w g^2, sum w f g.
struct GainFitRowSums {
  float sg = 0, sgg = 0, sfg = 0;
};
void gain_fit_row(int n, const float* w, const float* g, const float* f, GainFitRowSums& sums);

// The moving frame's cubic spline along a row at one fractional offset (a
// translation): four coefficient rows from the first tap's column, the
// weights down (wy) and across (wx), and for the gradient their derivatives
// (dy, dx). The refinement's sampling expressions (refinement.cpp:
// sample_span, spline_gradient_span) by the vector kernels; the AVX2 build
// contracts them to FMA, so their last bits may differ from the refinement's.
struct SplineRow {
  const float* rows[4] = {};
  float wy[4] = {}, wx[4] = {}, dy[4] = {}, dx[4] = {};
};
// out[0..n): the spline's values; col: n + 3 floats of scratch.
void sample_spline_row(const SplineRow& s, int n, float* col, float* out);
// gx, gy [0..n): its gradient; col: 2 (n + 3) floats of scratch.
void spline_gradient_row(const SplineRow& s, int n, float* col, float* gx, float* gy);

// Sums over a row of the lag factor's subgrid: sum f s and sum f g (in float;
// the terms where f is 0 add nothing).
void lag_factor_row(int n, const float* f, const float* s, const float* g, float& fs, float& fg);

// The lag factor's smoothing along x at every s-th column of a row of
// `width`: out[X] = sum_t a[t + r] in[X s + t] over the t (-r..r, in order)
// with X s + t inside the row, X = 0..m-1. The taps read the row's s phases
// (zero-padded at both ends), so only the kept columns are smoothed and the
// edge columns take the same vector path. phases: scratch of
// smooth_columns_strided_scratch(m, r, s) floats, offsets: of 2 r + 1 ints.
std::size_t smooth_columns_strided_scratch(int m, int r, int s);
void smooth_columns_strided(const float* in, int width, int m, const float* a, int r, int s, float* phases,
                            int* offsets, float* out);

}  // namespace driftscan
