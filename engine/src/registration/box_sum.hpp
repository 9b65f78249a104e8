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

// v (w x h) replaced by its sum over the offsets lo <= dx, dy <= hi around
// every pixel (zero outside): running sums, along rows in place, down the
// columns a row at a time (sequential memory on big frames).
void box_sum(std::vector<float>& v, int w, int h, int lo, int hi);

// sums(i, j) = sum over the grid q of u_i(q) box_sum(u_j)(q) (lo = -R, hi =
// R) for `channels` images of w x h given row by row: the grid is every
// `stride`-th pixel of [x0, x1] x [y0, y1]. Holding only 2R + 2 rows (on a
// 4096^2 frame the whole images would be 64 MB a channel). Down the columns
// first: a running sum in double over the window's 2R + 1 rows, updated as a
// row enters and one leaves (vector loops, every row); across a grid row
// only, the window along x from that row's prefix sums. The lag sums are
// those of box_sum over the whole images to float rounding (box_sum rounds
// its row sums to float; this does not round them at all).
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
  void catch_up(int r);  // step() every row after the last stepped one up to r
  // Row r enters the column window, row r - 2R - 1 leaves it; the window is
  // then centred on row r - R, which is emitted.
  void step(int r);
  void emit(int y);  // the grid's row y: its products into sums_
  const float* raw(int r, int c) const;

  int w_, h_, channels_, R_, x0_, x1_, y0_, y1_, stride_, slots_;
  RowBands bands_;
  std::vector<int> row_in_slot_;   // -1: none
  std::vector<float> raw_;         // slots x channels x w
  std::vector<double> column_;     // channels x w: each column's sum over the window's rows
  std::vector<double> prefix_;     // channels x (w + 1): the column sums' prefix sums along x (emit)
  std::vector<double> boxed_;      // channels x grid columns: the box sums at the grid row (emit)
  std::vector<double> picked_;     // grid columns: one channel's values at the grid row (emit)
  std::vector<float> pending_;     // channels x w: the row being filled
  std::array<double, 36> sums_{};  // channels x channels (row stride 6)
  int stepped_ = -1;               // the last row step() took in
  int in_window_ = 0;              // rows added and not yet left: 0 lets the columns restart at exactly 0
  int last_row_ = -1;
};

}  // namespace driftscan
