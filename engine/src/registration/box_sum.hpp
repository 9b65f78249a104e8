#pragma once
// Box sums by running sums, and the lag sums of the refinement's noise
// information (refinement.cpp: noise_information) built from them a row at a
// time: sum_q u_i(q) box(u_j)(q) is sum_q sum_|d|<=R u_i(q) u_j(q + d) in
// O(pixels) instead of O(pixels x lags).
#include <array>
#include <cstddef>
#include <vector>

#include "row_bands.hpp"  // beside this header (tests include it by path)

namespace driftscan {

// out[i] = sum of in[i + d], lo <= d <= hi, over the n samples `step`
// apart (zero outside): a running sum, O(n) whatever the window.
void window_sum(const float* in, float* out, int n, std::ptrdiff_t step, int lo, int hi);

// window_sum of two rows at once (step 1): the same sums, two independent
// running sums in one loop instead of one latency-bound chain at a time.
void window_sum_pair(const float* in0, float* out0, const float* in1, float* out1, int n, int lo, int hi);

// v (w x h) replaced by its sum over the offsets lo <= dx, dy <= hi around
// every pixel (zero outside): running sums, along rows in place, down the
// columns a row at a time (sequential memory on big frames).
void box_sum(std::vector<float>& v, int w, int h, int lo, int hi);

// sums(i, j) = sum over the grid q of u_i(q) box_sum(u_j)(q) (lo = -R, hi =
// R) for `channels` images of w x h given row by row: the grid is every
// `stride`-th pixel of [x0, x1] x [y0, y1]. Bit for bit what box_sum over the
// whole images followed by those sums gives (the same operations in the same
// order; all-zero rows, which add nothing, are skipped), holding only 2R + 2
// rows: on a 4096^2 frame the whole images would be 64 MB a channel.
class StreamedLagSum {
 public:
  StreamedLagSum(int w, int h, int channels, int R, int x0, int x1, int y0, int y1, int stride);
  // The grid's rows restricted to `bands`' measured rows (default: every row).
  void measure_rows(const RowBands& bands) { bands_ = bands; }

  // Channel c's row for add_row (zeroed); rows come in increasing order,
  // rows never added are zero.
  float* next_row(int c);
  void add_row(int y);
  // Call once after the last row; then sum() holds.
  void finish();
  double sum(int i, int j) const { return sums_[static_cast<std::size_t>(i) * 6 + static_cast<std::size_t>(j)]; }

 private:
  // Runs the box sum's operations in order while the rows they read are known (<= known).
  void advance(int known);
  void add(int r, double sign);  // row r's window sums into the column sums
  void emit(int y);              // the grid's row y: its products into sums_
  const float* raw(int r, int c) const;
  const float* boxed(int r, int c) const;

  int w_, h_, channels_, R_, x0_, x1_, y0_, y1_, stride_, slots_;
  RowBands bands_;
  std::vector<int> row_in_slot_;    // -1: none
  std::vector<float> raw_, boxed_;  // slots x channels x w
  std::vector<double> column_;      // channels x w: the running sums down the columns
  std::vector<float> pending_;      // channels x w: the row being filled
  std::array<double, 36> sums_{};   // channels x channels (row stride 6)
  long op_ = 0;                     // the next operation of the sequence (advance)
  int last_row_ = -1;
};

}  // namespace driftscan
