// The cubic B-spline prefilter along rows (cubic_bspline.hpp), which moves
// strips of rows through a column-major buffer, against the column pass of
// the transposed frame: every coefficient equal to the last bit, for widths
// and strip heights that are and are not multiples of the 4x4 blocks.
#include <gtest/gtest.h>

#include <random>

#include "driftscan/core/cubic_bspline.hpp"

using namespace driftscan;

namespace {
Frame transposed(const Frame& f) {
  Frame t(f.height, f.width);
  for (int y = 0; y < f.height; ++y)
    for (int x = 0; x < f.width; ++x) t.at(y, x) = f.at(x, y);
  return t;
}
}  // namespace

TEST(CubicBsplinePrefilter, RowsEqualTheColumnsOfTheTransposedFrameToTheLastBit) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-50.0f, 150.0f);
  for (const auto& [w, h] : {std::pair{37, 29}, std::pair{64, 70}, std::pair{5, 3}, std::pair{130, 33}}) {
    Frame f(w, h);
    for (float& v : f.pixels) v = u(rng);
    Frame columns = transposed(f);
    detail::bspline_prefilter_columns(columns);
    detail::bspline_prefilter_rows(f);
    const Frame expected = transposed(columns);
    int differing = 0;
    for (std::size_t i = 0; i < f.pixels.size(); ++i) differing += f.pixels[i] != expected.pixels[i];
    EXPECT_EQ(differing, 0) << w << "x" << h;
  }
}
