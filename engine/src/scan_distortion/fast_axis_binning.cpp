#include "driftscan/scan_distortion/fast_axis_binning.hpp"

#include <cstddef>

#include "driftscan/core/scan_rotation.hpp"

namespace driftscan {
namespace {
ScanTiming binned_timing(const ScanTiming& full) {
  ScanTimingSettings s = full.settings();
  s.dwell *= 2.0;
  // The clock is the full scan's: its line and frame times given outright.
  s.line_time = full.line_time(), s.line_flyback = 0.0, s.line_flyback_fraction = 0.0;
  s.frame_time = full.frame_time(), s.frame_flyback = 0.0, s.frame_flyback_fraction = 0.0;
  return ScanTiming(s, full.width() / 2, full.height());
}

// The model in pixels `factor` times as wide: the path's x and every line's
// jitter (both along the fast axis) scale, y does not.
ScanModel scaled_along_x(const ScanModel& model, double factor) {
  ScanModel m = model;
  m.path = model.path.scaled({factor, 1.0});
  for (auto& line : m.jitter)
    for (double& j : line) j *= factor;
  return m;
}
}  // namespace

bool FastAxisBinning::applies(const ScanTiming& timing, const ScanDistortionSettings& settings) {
  return settings.binned_first_round_from > 0 && timing.samples_per_line() >= settings.binned_first_round_from &&
         timing.direction() != ScanDirection::rotated90 && !has_scan_rotation(timing.settings().rotation_deg) &&
         settings.line_field_knots == 0 && settings.rounds_for(timing) >= 2;
}

FastAxisBinning::FastAxisBinning(const ScanTiming& full) : binned_(binned_timing(full)) {}

ScanDistortionSettings FastAxisBinning::settings(const ScanDistortionSettings& full) const {
  ScanDistortionSettings s = full;
  s.jitter_prior *= 0.5, s.max_jitter *= 0.5;
  return s;
}

ScanModel FastAxisBinning::binned(const ScanModel& full) const { return scaled_along_x(full, 0.5); }

ScanModel FastAxisBinning::unbinned(const ScanModel& binned) const { return scaled_along_x(binned, 2.0); }

Frame FastAxisBinning::binned(const Frame& frame) {
  Frame out(frame.width / 2, frame.height);
  for (int y = 0; y < frame.height; ++y) {
    const float* in = frame.row(y);
    float* o = out.row(y);
    for (std::size_t x = 0; x < static_cast<std::size_t>(out.width); ++x) o[x] = 0.5f * (in[2 * x] + in[2 * x + 1]);
  }
  return out;
}

}  // namespace driftscan
