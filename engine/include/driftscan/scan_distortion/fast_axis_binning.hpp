#pragma once
// Scan-distortion's first round on frames binned 2x along the fast axis.
//
// The first round starts from the rigid result and moves the path by about
// half a pixel; its template and fits need not be at full resolution to get
// there. Binning along the fast axis only keeps every scan line (and so each
// line's jitter and the line times the path is fitted at) and halves the
// pixels every step of the round touches. The binned scan has the same
// clock (line and frame times), twice the dwell per binned sample; binned
// pixel x shows full pixel 2x + 1/2, so a displacement along the fast axis
// is half as many binned pixels and the gauge (frame 0's mean position 0)
// carries over unchanged. The round's path and jitter, scaled back, are the
// next full-resolution round's start.
//
// Only for frames scanned in one direction along rows (normal, serpentine)
// without a line field: a turned frame's fast axis is not x, and a line
// field's knots sit at samples of the full line.
#include <cstddef>
#include <memory>

#include "driftscan/core/frame.hpp"
#include "driftscan/core/frame_source.hpp"
#include "driftscan/core/scan_timing.hpp"
#include "driftscan/scan_distortion/scan_distortion.hpp"

namespace driftscan {

class FastAxisBinning {
 public:
  // Whether a series of this timing gets its first round binned under these
  // settings (ScanDistortionSettings::binned_first_round_from).
  static bool applies(const ScanTiming& timing, const ScanDistortionSettings& settings);
  explicit FastAxisBinning(const ScanTiming& full);

  // The binned frames' scan: half the samples per line, twice the dwell, the
  // same line and frame times.
  const ScanTiming& timing() const { return binned_; }
  // The settings for the binned round: the bounds along the fast axis
  // (jitter prior and bound) in binned pixels; the band offset bound kept
  // (the rigid start is already in the lattice's basin along both axes).
  ScanDistortionSettings settings(const ScanDistortionSettings& full) const;
  // A full-resolution model in binned pixels, and back.
  ScanModel binned(const ScanModel& full) const;
  ScanModel unbinned(const ScanModel& binned) const;
  // A frame binned: each binned pixel the mean of two neighbours along the
  // row (an odd width's last column is left out).
  static Frame binned(const Frame& frame);

 private:
  ScanTiming binned_;
};

// A series read binned along the fast axis (FastAxisBinning::binned).
class FastAxisBinnedFrames : public FrameSource {
 public:
  explicit FastAxisBinnedFrames(const FrameSource& full) : full_(full) {}
  std::size_t frame_count() const override { return full_.frame_count(); }
  int width() const override { return full_.width() / 2; }
  int height() const override { return full_.height(); }
  Frame frame(std::size_t k) const override { return FastAxisBinning::binned(*full_.shared_frame(k)); }

 private:
  const FrameSource& full_;
};

}  // namespace driftscan
