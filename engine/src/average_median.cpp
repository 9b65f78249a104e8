// The median in bounded memory, band by band; see average_strategy.hpp.
#include <algorithm>
#include <cmath>

#include "average_strategy.hpp"

namespace driftscan {
namespace averaging {

// Rows per band so that (frames x band) fits the memory budget.
int TiledMedian::band_rows(std::size_t frames) const {
  const double budget = std::max(1.0, memory_mb_) * 1024.0 * 1024.0;
  long rows = static_cast<long>(budget / (static_cast<double>(std::max<std::size_t>(frames, 1)) * w_ * sizeof(float)));
  rows = std::clamp<long>(rows, 1, std::max(1, max_rows_));
  return static_cast<int>(std::min<long>(rows, h_));
}

// Every candidate read once per band (the used frames are not known yet).
std::size_t TiledMedian::extra_reads(std::size_t, std::size_t candidates) const {
  const int rows = band_rows(candidates);
  return static_cast<std::size_t>((h_ + rows - 1) / rows) * candidates;
}

void TiledMedian::average(FrameStream& stream, const std::vector<std::size_t>& used, MeanAccumulator&, Frame& average,
                          Frame& coverage) const {
  const int w = w_, h = h_;
  const std::size_t m = used.size();
  const int rows = band_rows(m);
  std::vector<std::size_t> slot_of(used.empty() ? 0 : used.back() + 1, 0);  // used is in frame order
  for (std::size_t j = 0; j < m; ++j) slot_of[used[j]] = j;
  std::vector<float> values;
  for (int y0 = 0; y0 < h; y0 += rows) {
    int y1 = std::min(h, y0 + rows);
    const std::size_t bpix = static_cast<std::size_t>(y1 - y0) * w;
    values.assign(bpix * m, kMissing);  // values[pixel * m + frame slot]
    stream.run(
        used, y0, y1,
        [&](std::size_t k, const float* v) {
          const std::size_t j = slot_of[k];
          for (std::size_t i = 0; i < bpix; ++i) values[i * m + j] = v[i];
        },
        [](std::size_t, const float*) {});
#pragma omp parallel for schedule(static) if (bpix * m >= 65536)
    for (std::size_t i = 0; i < bpix; ++i) {
      float* first = values.data() + i * m;
      float* last = std::partition(first, first + m, [](float v) { return std::isfinite(v); });
      const std::size_t c = static_cast<std::size_t>(last - first);
      const std::size_t out = static_cast<std::size_t>(y0) * w + i;
      if (c == 0) continue;
      std::nth_element(first, first + c / 2, last);
      double med = first[c / 2];
      if (c % 2 == 0) med = 0.5 * (med + *std::max_element(first, first + c / 2));
      average.pixels[out] = static_cast<float>(med);
      coverage.pixels[out] = static_cast<float>(c);
    }
  }
}

}  // namespace averaging
}  // namespace driftscan
