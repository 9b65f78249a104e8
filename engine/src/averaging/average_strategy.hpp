#pragma once
// The averaging methods, one strategy each. average_series (averaging.cpp)
// selects the frames in two passes that sum the used frames into a
// MeanAccumulator on the way; a strategy then turns the used frames into the
// average and its coverage: PlainMean from those sums, ClippedMean with one
// more pass, TiledMedian band by band. Private to the engine.
#include <cstddef>
#include <vector>

#include "averaging/average_frame_stream.hpp"
#include "driftscan/averaging/averaging.hpp"
#include "driftscan/core/frame.hpp"

namespace driftscan {
namespace averaging {

// With a team, two per-pixel sums of the members' frames added up over all
// members in one reduction (nothing to do without a team).
void sum_over_team(const FrameStream& stream, std::vector<double>& a, std::vector<double>& b);
// The same for one sum (its own reduction).
void sum_over_team(const FrameStream& stream, std::vector<double>& a);

// Per-pixel sums of warped frames (NaN/Inf samples skipped), in the order
// the frames are added; squares too when a strategy needs the variance.
struct MeanAccumulator {
  MeanAccumulator(std::size_t pixels, bool with_squares, bool with_spread = false)
      : sum(pixels, 0.0), sum2(with_squares ? pixels : 0, 0.0), count(pixels, 0.0), spread(with_spread ? pixels : 0) {}

  // sign +1 adds a warped frame, -1 takes it out again.
  void add(const float* warped, double sign);
  // The mean where some frame counts, NaN elsewhere.
  std::vector<double> mean_or_nan() const;

  std::vector<double> sum, sum2, count;
  // Squares for the standard error (sigma.tif), kept and reduced apart from
  // sum2: the reductions of sum, sum2 and count stay the ones they were, and
  // so do their results to the last bit.
  std::vector<double> spread;
};

class AveragingStrategy {
 public:
  virtual ~AveragingStrategy() = default;
  // The sums of the selection passes carry squares.
  virtual bool needs_squares() const { return false; }
  // They carry MeanAccumulator::spread (the standard error from them).
  virtual bool needs_spread() const { return false; }
  // Frames the strategy reads after the two selection passes (for progress),
  // given the series length and the frames not excluded by list.
  virtual std::size_t extra_reads(std::size_t frames, std::size_t candidates) const = 0;
  // average, coverage and sigma (frame 0's size; zero, zero and NaN) from
  // the used frames, in frame order; `sums` holds their sums and may be
  // consumed. sigma: the standard error of each pixel (standard_error.hpp).
  virtual void average(FrameStream& stream, const std::vector<std::size_t>& used, MeanAccumulator& sums, Frame& average,
                       Frame& coverage, Frame& sigma) const = 0;
};

// AverageMethod::mean: the selection's sums are the result.
class PlainMean : public AveragingStrategy {
 public:
  bool needs_spread() const override { return true; }
  std::size_t extra_reads(std::size_t, std::size_t) const override { return 0; }
  void average(FrameStream& stream, const std::vector<std::size_t>& used, MeanAccumulator& sums, Frame& average,
               Frame& coverage, Frame& sigma) const override;
};

// AverageMethod::mean with per-frame weights (frame_weights.hpp): one more
// pass over the used frames summing w_k v and w_k; coverage stays the count.
class WeightedMean : public AveragingStrategy {
 public:
  explicit WeightedMean(std::vector<double> weights) : weights_(std::move(weights)) {}
  std::size_t extra_reads(std::size_t, std::size_t candidates) const override { return candidates; }
  void average(FrameStream& stream, const std::vector<std::size_t>& used, MeanAccumulator& sums, Frame& average,
               Frame& coverage, Frame& sigma) const override;

 private:
  std::vector<double> weights_;
};

// AverageMethod::clipped: one more pass over the used frames dropping the
// samples further than clip_sigma standard deviations from their mean.
class ClippedMean : public AveragingStrategy {
 public:
  explicit ClippedMean(double clip_sigma) : clip_sigma_(clip_sigma) {}
  bool needs_squares() const override { return true; }
  std::size_t extra_reads(std::size_t frames, std::size_t) const override { return frames; }
  void average(FrameStream& stream, const std::vector<std::size_t>& used, MeanAccumulator& sums, Frame& average,
               Frame& coverage, Frame& sigma) const override;

 private:
  double clip_sigma_;
};

// AverageMethod::median in bounded memory: per band of rows, every used
// frame's warped band is held and the per-pixel median taken.
class TiledMedian : public AveragingStrategy {
 public:
  TiledMedian(const AveragingOptions& options, int width, int height)
      : memory_mb_(options.median_memory_mb), max_rows_(options.median_tile), w_(width), h_(height) {}
  std::size_t extra_reads(std::size_t frames, std::size_t candidates) const override;
  void average(FrameStream& stream, const std::vector<std::size_t>& used, MeanAccumulator& sums, Frame& average,
               Frame& coverage, Frame& sigma) const override;

 private:
  int band_rows(std::size_t frames) const;

  double memory_mb_;
  int max_rows_;
  int w_, h_;
};

}  // namespace averaging
}  // namespace driftscan
