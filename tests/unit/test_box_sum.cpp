// The streamed lag sums of the refinement's noise information against the lag
// sums taken directly over whole images (issue #36: the uncertainty's values
// must not change when it stops holding frame-sized buffers, nor when its sums
// run down the columns first): equal to float rounding, in both the AVX2 and
// the baseline build of the kernels.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "../../engine/src/registration/box_sum.hpp"
#include "driftscan/core/simd_level.hpp"

namespace driftscan {
namespace {

struct Case {
  int w, h, channels, R, x0, x1, y0, y1, stride;
};

// Entry (i, j) of a channels x channels table.
std::size_t entry(int i, int j, int channels) {
  return static_cast<std::size_t>(i) * static_cast<std::size_t>(channels) + static_cast<std::size_t>(j);
}

// The bits of a double: equal sums to the last bit (and the sign of a zero).
std::uint64_t bits(double v) {
  std::uint64_t b = 0;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

// Channels of w x h with rows [first, last] filled (some pixels zero, some
// -0.0f), the others zero, as the noise terms' rows are.
std::vector<std::vector<float>> channels_of(const Case& c, int first, int last, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> value(0.0f, 3.0f);
  std::uniform_int_distribution<int> kind(0, 9);
  std::vector<std::vector<float>> u(static_cast<std::size_t>(c.channels),
                                    std::vector<float>(static_cast<std::size_t>(c.w) * c.h, 0.0f));
  for (auto& ch : u)
    for (int y = first; y <= last; ++y)
      for (int x = 1; x < c.w - 1; ++x) {
        const int k = kind(rng);
        ch[static_cast<std::size_t>(y) * c.w + x] = k == 0 ? 0.0f : k == 1 ? -0.0f : value(rng);
      }
  return u;
}

// The lag sums directly: sum over the grid q of u_i(q) sum_|d|<=R u_j(q + d),
// in double; `scale` gets the same sums of |terms| (the rounding's yardstick).
std::vector<double> reference_sums(const Case& c, const std::vector<std::vector<float>>& u,
                                   std::vector<double>* scale = nullptr) {
  std::vector<double> out(static_cast<std::size_t>(c.channels * c.channels), 0.0);
  if (scale) scale->assign(out.size(), 0.0);
  for (int i = 0; i < c.channels; ++i)
    for (int j = 0; j < c.channels; ++j) {
      double acc = 0, mag = 0;
      for (int y = c.y0; y <= c.y1; y += c.stride)
        for (int x = c.x0; x <= c.x1; x += c.stride) {
          const double a = u[static_cast<std::size_t>(i)][static_cast<std::size_t>(y) * c.w + x];
          double box = 0, box_abs = 0;
          for (int dy = -c.R; dy <= c.R; ++dy)
            for (int dx = -c.R; dx <= c.R; ++dx) {
              if (y + dy < 0 || y + dy >= c.h || x + dx < 0 || x + dx >= c.w) continue;
              const double b = u[static_cast<std::size_t>(j)][static_cast<std::size_t>(y + dy) * c.w + x + dx];
              box += b, box_abs += std::abs(b);
            }
          acc += a * box, mag += std::abs(a) * box_abs;
        }
      out[entry(i, j, c.channels)] = acc;
      if (scale) (*scale)[entry(i, j, c.channels)] = mag;
    }
  return out;
}

std::vector<double> streamed_sums(const Case& c, const std::vector<std::vector<float>>& u, int first, int last,
                                  int skip_every) {
  StreamedLagSum lags(c.w, c.h, c.channels, c.R, c.x0, c.x1, c.y0, c.y1, c.stride);
  for (int y = first; y <= last; ++y) {
    if (skip_every > 0 && y % skip_every == 0) {
      bool zero = true;  // only rows that are zero may be left out
      for (const auto& ch : u)
        for (int x = 0; x < c.w; ++x) zero = zero && ch[static_cast<std::size_t>(y) * c.w + x] == 0.0f;
      if (zero) continue;
    }
    for (int ch = 0; ch < c.channels; ++ch)
      std::memcpy(lags.next_row(ch), u[static_cast<std::size_t>(ch)].data() + static_cast<std::size_t>(y) * c.w,
                  sizeof(float) * static_cast<std::size_t>(c.w));
    lags.add_row(y);
  }
  lags.finish();
  std::vector<double> out(static_cast<std::size_t>(c.channels * c.channels));
  for (int i = 0; i < c.channels; ++i)
    for (int j = 0; j < c.channels; ++j) out[entry(i, j, c.channels)] = lags.sum(i, j);
  return out;
}

TEST(StreamedLagSum, EqualsTheDirectLagSumsToFloatRounding) {
  const Case cases[] = {
      {64, 48, 2, 4, 1, 62, 1, 46, 1},     // translation, stride 1
      {97, 71, 3, 6, 2, 90, 3, 65, 2},     // rigid, odd sizes, stride 2
      {130, 90, 6, 12, 5, 120, 7, 80, 5},  // affine, the widest lag window
      {40, 30, 2, 2, 0, 39, 0, 29, 3},     // the ROI at the image's edges
  };
  for (SimdLevel level : {SimdLevel::avx2, SimdLevel::baseline}) {
    force_simd_level(level);
    unsigned seed = 1;
    for (const Case& c : cases) {
      // The set's rows: all of them, or a band inside (rows outside are zero).
      for (auto [first, last] : {std::pair<int, int>{0, c.h - 1}, std::pair<int, int>{c.h / 5, c.h - c.h / 4}}) {
        const auto u = channels_of(c, first, last, seed++);
        std::vector<double> scale;
        const std::vector<double> want = reference_sums(c, u, &scale);
        for (int skip : {0, 7}) {
          const std::vector<double> got = streamed_sums(c, u, 0, c.h - 1, skip);
          for (std::size_t k = 0; k < want.size(); ++k)
            EXPECT_NEAR(want[k], got[k], 1e-12 * scale[k])
                << "case " << c.w << "x" << c.h << " R " << c.R << " stride " << c.stride << " rows " << first << "-"
                << last << " entry " << k << (level == SimdLevel::avx2 ? " (avx2)" : " (baseline)");
        }
        // Rows outside the band never given at all: the same sums to the last bit.
        const std::vector<double> all = streamed_sums(c, u, 0, c.h - 1, 0);
        const std::vector<double> got = streamed_sums(c, u, first, last, 0);
        for (std::size_t k = 0; k < want.size(); ++k) EXPECT_EQ(bits(all[k]), bits(got[k])) << "band only, entry " << k;
      }
    }
  }
  force_simd_level(SimdLevel::avx2);
}

TEST(StreamedLagSum, BaselineAndAvx2KernelsAgree) {
  const Case c{97, 71, 3, 6, 2, 90, 3, 65, 2};
  const auto u = channels_of(c, 0, c.h - 1, 11);
  std::vector<double> scale;
  reference_sums(c, u, &scale);
  force_simd_level(SimdLevel::baseline);
  const std::vector<double> base = streamed_sums(c, u, 0, c.h - 1, 0);
  force_simd_level(SimdLevel::avx2);
  const std::vector<double> fast = streamed_sums(c, u, 0, c.h - 1, 0);
  for (std::size_t k = 0; k < base.size(); ++k) EXPECT_NEAR(base[k], fast[k], 1e-13 * scale[k]) << "entry " << k;
}

TEST(StreamedLagSum, LagSumOfAnImpulseCountsTheWindow) {
  // u_0 = 1 at one pixel, u_1 = 1 on a 3x3 block around it: sum u_0 box(u_1)
  // counts the block's pixels within R of the impulse (all 9 for R >= 1).
  const int w = 20, h = 16;
  StreamedLagSum lags(w, h, 2, 1, 0, w - 1, 0, h - 1, 1);
  for (int y = 6; y <= 8; ++y) {
    float* a = lags.next_row(0);
    float* b = lags.next_row(1);
    if (y == 7) a[10] = 1.0f;
    for (int x = 9; x <= 11; ++x) b[x] = 1.0f;
    lags.add_row(y);
  }
  lags.finish();
  EXPECT_EQ(lags.sum(0, 1), 9.0);
  EXPECT_EQ(lags.sum(1, 0), 9.0);  // the block's window reaches the impulse from each of its 9 pixels
  EXPECT_EQ(lags.sum(0, 0), 1.0);
}

}  // namespace
}  // namespace driftscan
