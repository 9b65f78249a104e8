// Box sums and streamed lag sums; see box_sum.hpp.
#include "registration/box_sum.hpp"

#include "driftscan/core/simd_level.hpp"

#include <algorithm>
#include <climits>

namespace driftscan {

void window_sum(const float* in, float* out, int n, std::ptrdiff_t step, int lo, int hi) {
  double acc = 0;
  for (int k = lo; k <= hi; ++k)
    if (k >= 0 && k < n) acc += in[k * step];
  for (int i = 0; i < n; ++i) {
    out[i * step] = static_cast<float>(acc);
    if (i + hi + 1 < n && i + hi + 1 >= 0) acc += in[(i + hi + 1) * step];
    if (i + lo >= 0 && i + lo < n) acc -= in[(i + lo) * step];
  }
}

void box_sum(std::vector<float>& v, int w, int h, int lo, int hi) {
  const auto W = static_cast<std::ptrdiff_t>(w);
  std::vector<float> line(static_cast<std::size_t>(w));
  for (int y = 0; y < h; ++y) {
    window_sum(v.data() + y * W, line.data(), w, 1, lo, hi);
    std::copy(line.begin(), line.end(), v.begin() + y * W);
  }
  std::vector<float> out(v.size());
  std::vector<double> acc(static_cast<std::size_t>(w), 0.0);
  auto add_row = [&](int y, double sign) {
    if (y < 0 || y >= h) return;
    const float* r = v.data() + y * W;
    for (int x = 0; x < w; ++x) acc[static_cast<std::size_t>(x)] += sign * r[x];
  };
  for (int k = lo; k <= hi; ++k) add_row(k, 1.0);
  for (int y = 0; y < h; ++y) {
    float* o = out.data() + y * W;
    for (int x = 0; x < w; ++x) o[x] = static_cast<float>(acc[static_cast<std::size_t>(x)]);
    add_row(y + hi + 1, 1.0);
    add_row(y + lo, -1.0);
  }
  v.swap(out);
}

StreamedLagSum::StreamedLagSum(int w, int h, int channels, int R, int x0, int x1, int y0, int y1, int stride)
    : w_(w),
      h_(h),
      channels_(channels),
      R_(R),
      x0_(x0),
      x1_(x1),
      y0_(y0),
      y1_(y1),
      stride_(std::max(1, stride)),
      slots_(2 * R + 2),
      row_in_slot_(static_cast<std::size_t>(slots_), -1),
      raw_(static_cast<std::size_t>(slots_) * channels * w),
      column_(static_cast<std::size_t>(channels) * w, 0.0),
      prefix_(static_cast<std::size_t>(channels) * (static_cast<std::size_t>(w) + 1), 0.0),
      boxed_(static_cast<std::size_t>(channels) * (x1 >= x0 ? (x1 - x0) / std::max(1, stride) + 1 : 0)),
      picked_(boxed_.size() / static_cast<std::size_t>(std::max(1, channels))),
      pending_(static_cast<std::size_t>(channels) * w) {}

namespace {

// col += sign * row over n columns.
DRIFTSCAN_KERNEL void column_update(double* col, const float* row, int n, double sign) {
#pragma omp simd
  for (int x = 0; x < n; ++x) col[x] += sign * static_cast<double>(row[x]);
}
DRIFTSCAN_AVX2_TARGET void column_update_avx2(double* col, const float* row, int n, double sign) {
  column_update(col, row, n, sign);
}
void column_update_baseline(double* col, const float* row, int n, double sign) { column_update(col, row, n, sign); }

// sum a[g] b[g] over n.
DRIFTSCAN_KERNEL double dot(const double* a, const double* b, int n) {
  double acc = 0;
#pragma omp simd reduction(+ : acc)
  for (int g = 0; g < n; ++g) acc += a[g] * b[g];
  return acc;
}
DRIFTSCAN_AVX2_TARGET double dot_avx2(const double* a, const double* b, int n) { return dot(a, b, n); }
double dot_baseline(const double* a, const double* b, int n) { return dot(a, b, n); }

}  // namespace

float* StreamedLagSum::next_row(int c) {
  float* p = pending_.data() + static_cast<std::size_t>(c) * w_;
  std::fill(p, p + w_, 0.0f);
  return p;
}

const float* StreamedLagSum::raw(int r, int c) const {
  if (r < 0) return nullptr;
  const int s = r % slots_;
  if (row_in_slot_[static_cast<std::size_t>(s)] != r) return nullptr;  // a zero row
  return raw_.data() + (static_cast<std::size_t>(s) * channels_ + c) * w_;
}

void StreamedLagSum::add_row(int y) {
  if (y <= last_row_ || y >= h_) return;
  catch_up(y - 1);  // every row before y has entered (zero when not added); y's slot is free
  const int s = y % slots_;
  row_in_slot_[static_cast<std::size_t>(s)] = y;
  const std::size_t first = static_cast<std::size_t>(s) * channels_ * w_;
  std::copy(pending_.begin(), pending_.begin() + static_cast<long>(channels_) * w_,
            raw_.begin() + static_cast<long>(first));
  last_row_ = y;
  catch_up(y);
}

void StreamedLagSum::finish() { catch_up(h_ - 1 + R_); }

void StreamedLagSum::catch_up(int r) {
  for (int k = stepped_ + 1; k <= r; ++k) step(k);
  stepped_ = std::max(stepped_, r);
}

void StreamedLagSum::step(int r) {
  const bool avx2 = simd_level() == SimdLevel::avx2;
  auto update = [&](int row, double sign) {
    for (int c = 0; c < channels_; ++c) {
      const float* b = raw(row, c);
      if (!b) return;  // a zero row changes nothing
      double* col = column_.data() + static_cast<std::size_t>(c) * w_;
      (avx2 ? column_update_avx2 : column_update_baseline)(col, b, w_, sign);
    }
    in_window_ += sign > 0 ? 1 : -1;
  };
  if (raw(r - 2 * R_ - 1, 0)) {
    update(r - 2 * R_ - 1, -1.0);
    // No row left in the window: its sums are 0 exactly (no rounding carried on).
    if (in_window_ == 0) std::fill(column_.begin(), column_.end(), 0.0);
  }
  if (r < h_ && raw(r, 0)) update(r, 1.0);
  emit(r - R_);
}

void StreamedLagSum::emit(int y) {
  if (y < y0_ || y > y1_ || (y - y0_) % stride_ != 0 || !bands_.measured(y) || !raw(y, 0))
    return;  // a zero row adds only zeros
  const int n = static_cast<int>(picked_.size());
  const bool avx2 = simd_level() == SimdLevel::avx2;
  // Each channel's box sums at the grid's columns: the window along x from
  // the column sums' prefix sums (clipped at the row's ends). The prefix sums
  // of two channels at a time: each is a chain of dependent adds, two run
  // side by side (the same sums, in the same order).
  const auto pw = static_cast<std::size_t>(w_) + 1;
  int j = 0;
  for (; j + 1 < channels_; j += 2) {
    const double* c0 = column_.data() + static_cast<std::size_t>(j) * w_;
    const double* c1 = c0 + w_;
    double* p0 = prefix_.data() + static_cast<std::size_t>(j) * pw;
    double* p1 = p0 + pw;
    double a0 = 0, a1 = 0;
    p0[0] = p1[0] = 0;
    for (int x = 0; x < w_; ++x) {
      p0[x + 1] = a0 += c0[x];
      p1[x + 1] = a1 += c1[x];
    }
  }
  for (; j < channels_; ++j) {
    const double* col = column_.data() + static_cast<std::size_t>(j) * w_;
    double* p = prefix_.data() + static_cast<std::size_t>(j) * pw;
    double acc = 0;
    p[0] = 0;
    for (int x = 0; x < w_; ++x) p[x + 1] = acc += col[x];
  }
  for (j = 0; j < channels_; ++j) {
    double* out = boxed_.data() + static_cast<std::size_t>(j) * n;
    const double* p = prefix_.data() + static_cast<std::size_t>(j) * pw;
    int g = 0;
    for (; g < n && x0_ + g * stride_ - R_ < 0; ++g)
      out[g] = p[std::min(w_, x0_ + g * stride_ + R_ + 1)];  // clipped on the left (and maybe the right)
    for (; g < n && x0_ + g * stride_ + R_ + 1 <= w_; ++g) {
      const int x = x0_ + g * stride_;
      out[g] = p[x + R_ + 1] - p[x - R_];
    }
    for (; g < n; ++g) out[g] = p[w_] - p[x0_ + g * stride_ - R_];  // clipped on the right
  }
  for (int i = 0; i < channels_; ++i) {
    const float* a = raw(y, i);
    for (int g = 0; g < n; ++g) picked_[static_cast<std::size_t>(g)] = a[x0_ + g * stride_];
    for (int j = 0; j < channels_; ++j)
      sums_[static_cast<std::size_t>(i) * 6 + static_cast<std::size_t>(j)] +=
          (avx2 ? dot_avx2 : dot_baseline)(picked_.data(), boxed_.data() + static_cast<std::size_t>(j) * n, n);
  }
}

}  // namespace driftscan
