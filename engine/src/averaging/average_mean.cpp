// The per-pixel sums every averaging method starts from, and the plain mean
// made of them; see average_strategy.hpp.
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "averaging/average_strategy.hpp"
#include "driftscan/averaging/standard_error.hpp"

namespace driftscan {
namespace averaging {

void MeanAccumulator::add(const float* v, double sign) {
  const std::size_t npix = count.size();
  const bool squares = !sum2.empty(), spreads = !spread.empty();
#pragma omp parallel for schedule(static) if (npix >= 65536)
  for (std::size_t i = 0; i < npix; ++i) {
    if (!std::isfinite(v[i])) continue;
    sum[i] += sign * v[i];
    if (squares) sum2[i] += sign * double(v[i]) * v[i];
    if (spreads) spread[i] += sign * double(v[i]) * v[i];
    count[i] += sign;
  }
}

std::vector<double> MeanAccumulator::mean_or_nan() const {
  const std::size_t npix = count.size();
  std::vector<double> mean(npix, std::numeric_limits<double>::quiet_NaN());
  for (std::size_t i = 0; i < npix; ++i)
    if (count[i] > 0.5) mean[i] = sum[i] / count[i];
  return mean;
}

void sum_over_team(const FrameStream& stream, std::vector<double>& a, std::vector<double>& b) {
  const AveragingTeam* team = stream.summing_team();
  if (!team) return;
  std::vector<double> packed(a);
  packed.insert(packed.end(), b.begin(), b.end());
  team->sum(packed);
  std::copy(packed.begin(), packed.begin() + static_cast<long>(a.size()), a.begin());
  std::copy(packed.begin() + static_cast<long>(a.size()), packed.end(), b.begin());
}

void sum_over_team(const FrameStream& stream, std::vector<double>& a) {
  if (const AveragingTeam* team = stream.summing_team()) team->sum(a);
}

void PlainMean::average(FrameStream&, const std::vector<std::size_t>&, MeanAccumulator& sums, Frame& average,
                        Frame& coverage, Frame& sigma) const {
  const std::vector<double>&sum = sums.sum, &count = sums.count;
  for (std::size_t i = 0; i < count.size(); ++i) {
    if (count[i] > 0.5) {
      average.pixels[i] = static_cast<float>(sum[i] / count[i]);
      coverage.pixels[i] = static_cast<float>(std::round(count[i]));
      sigma.pixels[i] = static_cast<float>(mean_standard_error(sum[i], sums.spread[i], std::round(count[i])));
    }
  }
}

void WeightedMean::average(FrameStream& stream, const std::vector<std::size_t>& used, MeanAccumulator& sums,
                           Frame& average, Frame& coverage, Frame& sigma) const {
  const std::size_t npix = sums.count.size();
  std::vector<double> wsum(npix, 0.0), wcount(npix, 0.0);
  // The standard error's sums (w v, w v^2, w, w^2). Every member reads every
  // used frame here and the sums above come out size() times the series'
  // (the average, a ratio, does not mind); these take its own frames only.
  std::vector<double> esum(npix, 0.0), esum2(npix, 0.0), ecount(npix, 0.0), ecount2(npix, 0.0);
  std::vector<char> mine(used.empty() ? 0 : used.back() + 1, 0);
  for (std::size_t k : stream.own(used)) mine[k] = 1;
  stream.run(
      used, 0, average.height, [](std::size_t, const float*) {},
      [&](std::size_t k, const float* v) {
        const double wk = k < weights_.size() ? weights_[k] : 1.0;
        if (!(wk > 0)) return;
        for (std::size_t i = 0; i < npix; ++i) {
          if (!std::isfinite(v[i])) continue;
          wsum[i] += wk * v[i];
          wcount[i] += wk;
        }
        if (!mine[k]) return;
        for (std::size_t i = 0; i < npix; ++i) {
          if (!std::isfinite(v[i])) continue;
          esum[i] += wk * v[i];
          esum2[i] += wk * v[i] * double(v[i]);
          ecount[i] += wk;
          ecount2[i] += wk * wk;
        }
      });
  sum_over_team(stream, wsum, wcount);  // each member weighed its own frames
  sum_over_team(stream, esum, esum2);
  sum_over_team(stream, ecount, ecount2);
  for (std::size_t i = 0; i < npix; ++i) {
    if (sums.count[i] > 0.5 && wcount[i] > 0) {
      average.pixels[i] = static_cast<float>(wsum[i] / wcount[i]);
      coverage.pixels[i] = static_cast<float>(std::round(sums.count[i]));
      if (sums.count[i] > 1.5)
        sigma.pixels[i] = static_cast<float>(weighted_standard_error(ecount[i], ecount2[i], esum[i], esum2[i]));
    }
  }
}

}  // namespace averaging
}  // namespace driftscan
