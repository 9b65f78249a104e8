// Box sums and streamed lag sums; see box_sum.hpp.
#include "registration/box_sum.hpp"

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

void window_sum_pair(const float* in0, float* out0, const float* in1, float* out1, int n, int lo, int hi) {
  double a0 = 0, a1 = 0;
  for (int k = lo; k <= hi; ++k)
    if (k >= 0 && k < n) a0 += in0[k], a1 += in1[k];
  for (int i = 0; i < n; ++i) {
    out0[i] = static_cast<float>(a0);
    out1[i] = static_cast<float>(a1);
    if (i + hi + 1 < n && i + hi + 1 >= 0) a0 += in0[i + hi + 1], a1 += in1[i + hi + 1];
    if (i + lo >= 0 && i + lo < n) a0 -= in0[i + lo], a1 -= in1[i + lo];
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
      boxed_(raw_.size()),
      column_(static_cast<std::size_t>(channels) * w, 0.0),
      pending_(static_cast<std::size_t>(channels) * w) {}

float* StreamedLagSum::next_row(int c) {
  float* p = pending_.data() + static_cast<std::size_t>(c) * w_;
  std::fill(p, p + w_, 0.0f);
  return p;
}

const float* StreamedLagSum::raw(int r, int c) const {
  const int s = r % slots_;
  if (r < 0 || row_in_slot_[static_cast<std::size_t>(s)] != r) return nullptr;  // a zero row
  return raw_.data() + (static_cast<std::size_t>(s) * channels_ + c) * w_;
}

const float* StreamedLagSum::boxed(int r, int c) const {
  const int s = r % slots_;
  if (r < 0 || row_in_slot_[static_cast<std::size_t>(s)] != r) return nullptr;
  return boxed_.data() + (static_cast<std::size_t>(s) * channels_ + c) * w_;
}

void StreamedLagSum::add_row(int y) {
  if (y <= last_row_ || y >= h_) return;
  advance(y - 1);  // every row before y is known now (zero when not added)
  const int s = y % slots_;
  row_in_slot_[static_cast<std::size_t>(s)] = y;
  const std::size_t first = static_cast<std::size_t>(s) * channels_ * w_;
  std::copy(pending_.begin(), pending_.begin() + static_cast<long>(channels_) * w_,
            raw_.begin() + static_cast<long>(first));
  int c = 0;
  for (; c + 1 < channels_; c += 2) {
    const std::size_t at = first + static_cast<std::size_t>(c) * w_, next = at + w_;
    window_sum_pair(raw_.data() + at, boxed_.data() + at, raw_.data() + next, boxed_.data() + next, w_, -R_, R_);
  }
  if (c < channels_) {
    const std::size_t at = first + static_cast<std::size_t>(c) * w_;
    window_sum(raw_.data() + at, boxed_.data() + at, w_, 1, -R_, R_);
  }
  last_row_ = y;
}

void StreamedLagSum::finish() { advance(INT_MAX); }

// box_sum's sequence: add rows 0..R, then per row y: emit y, add y + R + 1,
// subtract y - R. Operation op: op <= R adds row op; after that (op - R - 1)
// = 3 y + k, k = 0 emit, 1 add, 2 subtract.
void StreamedLagSum::advance(int known) {
  const long total = R_ + 1 + 3L * h_;
  for (; op_ < total; ++op_) {
    if (op_ <= R_) {
      const int r = static_cast<int>(op_);
      if (r < h_ && r > known) return;
      add(r, 1.0);
      continue;
    }
    const long q = op_ - R_ - 1;
    const int y = static_cast<int>(q / 3);
    switch (q % 3) {
      case 0: emit(y); break;
      case 1:
        if (y + R_ + 1 < h_ && y + R_ + 1 > known) return;
        add(y + R_ + 1, 1.0);
        break;
      default: add(y - R_, -1.0); break;
    }
  }
}

void StreamedLagSum::add(int r, double sign) {
  if (r < 0 || r >= h_) return;
  for (int c = 0; c < channels_; ++c) {
    const float* b = boxed(r, c);
    if (!b) return;  // a zero row adds nothing (the sums are never -0)
    double* col = column_.data() + static_cast<std::size_t>(c) * w_;
    for (int x = 0; x < w_; ++x) col[x] += sign * b[x];
  }
}

void StreamedLagSum::emit(int y) {
  if (y < y0_ || y > y1_ || (y - y0_) % stride_ != 0 || !bands_.measured(y) || !raw(y, 0))
    return;  // a zero row adds only zeros
  // Two channels i per pass over the row: two independent chains (each sum
  // still takes its terms in x order). Four chains at once let GCC 12's SLP
  // vectoriser change the sums' last bits; two do not.
  for (int j = 0; j < channels_; ++j) {
    const double* col = column_.data() + static_cast<std::size_t>(j) * w_;
    int i = 0;
    for (; i + 1 < channels_; i += 2) {
      const float *a0 = raw(y, i), *a1 = raw(y, i + 1);
      double& acc0 = sums_[static_cast<std::size_t>(i) * 6 + static_cast<std::size_t>(j)];
      double& acc1 = sums_[static_cast<std::size_t>(i + 1) * 6 + static_cast<std::size_t>(j)];
      double s0 = acc0, s1 = acc1;
      for (int x = x0_; x <= x1_; x += stride_) {
        const float b = static_cast<float>(col[x]);
        s0 += static_cast<double>(a0[x]) * b;
        s1 += static_cast<double>(a1[x]) * b;
      }
      acc0 = s0, acc1 = s1;
    }
    if (i < channels_) {
      const float* ai = raw(y, i);
      double& acc = sums_[static_cast<std::size_t>(i) * 6 + static_cast<std::size_t>(j)];
      for (int x = x0_; x <= x1_; x += stride_) acc += static_cast<double>(ai[x]) * static_cast<float>(col[x]);
    }
  }
}

}  // namespace driftscan
