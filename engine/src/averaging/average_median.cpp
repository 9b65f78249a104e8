// The median in bounded memory, band by band; see average_strategy.hpp.
#include <algorithm>
#include <cmath>
#include <limits>

#include "averaging/average_strategy.hpp"
#include "driftscan/averaging/standard_error.hpp"

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
                          Frame& coverage, Frame& sigma) const {
  const int w = w_, h = h_;
  const std::size_t m = used.size();
  const int rows = band_rows(m);
  std::vector<std::size_t> slot_of(used.empty() ? 0 : used.back() + 1, 0);  // used is in frame order
  for (std::size_t j = 0; j < m; ++j) slot_of[used[j]] = j;
  // With a team, this member's band of output rows, every used frame read
  // for it (only the source rows the band needs).
  int own_first = 0, own_last = h;
  if (const AveragingTeam* team = stream.team()) team->own_rows(h, own_first, own_last);
  // Every member makes as many passes (collectives), empty ones too.
  const int most_rows = stream.team() ? (h + stream.team()->size() - 1) / stream.team()->size() : h;
  const int passes = (most_rows + rows - 1) / rows;
  std::vector<float> values;
  for (int b = 0; b < passes; ++b) {
    const int y0 = std::min(own_last, own_first + b * rows);
    const int y1 = std::min(own_last, y0 + rows);
    const std::size_t bpix = static_cast<std::size_t>(y1 - y0) * w;
    stream.checked([&] { values.assign(bpix * m, kMissing); });  // values[pixel * m + frame slot]
    stream.run(
        y1 > y0 ? used : std::vector<std::size_t>{}, y0, y1,
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
      double s = 0.0, s2 = 0.0;  // the standard error, before nth_element reorders
      for (const float* p = first; p != last; ++p) s += *p, s2 += double(*p) * *p;
      sigma.pixels[out] = static_cast<float>(median_standard_error(s, s2, static_cast<double>(c)));
      std::nth_element(first, first + c / 2, last);
      double med = first[c / 2];
      if (c % 2 == 0) med = 0.5 * (med + *std::max_element(first, first + c / 2));
      average.pixels[out] = static_cast<float>(med);
      coverage.pixels[out] = static_cast<float>(c);
    }
  }
  if (const AveragingTeam* team = stream.team()) {  // the bands are disjoint: a sum gathers them
    const std::size_t npix = average.size();
    std::vector<double> packed(2 * npix);
    std::copy(average.pixels.begin(), average.pixels.end(), packed.begin());
    std::copy(coverage.pixels.begin(), coverage.pixels.end(), packed.begin() + static_cast<long>(npix));
    team->sum(packed);
    for (std::size_t i = 0; i < npix; ++i) {
      average.pixels[i] = static_cast<float>(packed[i]);
      coverage.pixels[i] = static_cast<float>(packed[npix + i]);
    }
    // The sigma bands in a reduction of their own (NaN outside a band: 0 there first).
    std::vector<double> band_sigma(npix, 0.0);
    for (int y = own_first; y < own_last; ++y)
      for (int x = 0; x < w; ++x) {
        const std::size_t i = static_cast<std::size_t>(y) * w + x;
        band_sigma[i] = std::isnan(sigma.pixels[i]) ? -1.0 : sigma.pixels[i];
      }
    team->sum(band_sigma);
    for (std::size_t i = 0; i < npix; ++i)
      sigma.pixels[i] = band_sigma[i] < 0 ? std::numeric_limits<float>::quiet_NaN() : static_cast<float>(band_sigma[i]);
  }
}

}  // namespace averaging
}  // namespace driftscan
