#pragma once
// A series whose frames were scanned in several directions, served in frame
// 0's orientation: frame k is the recorded frame k turned back by its scan
// rotation (scan_rotation.hpp). Everything downstream (pairs, the scan, the
// average) then sees frames that differ only by the drift, so registration
// and its lattice-period safety work unchanged across directions.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "driftscan/core/frame_source.hpp"
#include "driftscan/core/scan_rotation.hpp"

namespace driftscan {

class DerotatedSource : public FrameSource {
 public:
  // Checks the rotations against the series (check_scan_rotations; `where`
  // prefixes the message, e.g. the input's path and ": "). A series still
  // growing (register --follow) is not held to its count of frames so far
  // (`growing`), nor to a size it does not know yet.
  DerotatedSource(std::shared_ptr<const FrameSource> recorded, std::vector<double> rotation_deg,
                  const std::string& where = "", bool growing = false);

  std::size_t frame_count() const override { return recorded_->frame_count(); }
  int width() const override { return recorded_->width(); }
  int height() const override { return recorded_->height(); }
  Frame frame(std::size_t k) const override;
  double pixel_size() const override { return recorded_->pixel_size(); }
  std::string pixel_unit() const override { return recorded_->pixel_unit(); }
  RecordedScan recorded_scan() const override { return recorded_->recorded_scan(); }
  RecordedRotations recorded_rotations() const override { return recorded_->recorded_rotations(); }
  std::string describe() const override;

  double rotation_deg(std::size_t k) const;
  const std::vector<double>& rotations_deg() const { return rotation_deg_; }
  const FrameSource& recorded() const { return *recorded_; }

  // Whether a turn off the pixel grid (scan_rotation.hpp turns_off_grid)
  // leaves corners of some frames uncovered (NaN here).
  bool leaves_corners() const { return turns_off_grid(rotation_deg_); }
  // The same frames with those corners filled with the recorded frame's mean
  // instead of NaN: what registration reads. Its filters (Gaussian, B-spline
  // prefilter, FFT) would spread a NaN over whole rows; it keeps to the
  // covered square (covered_half_side), where the fill is never sampled.
  std::unique_ptr<FrameSource> with_filled_corners() const;

 private:
  std::shared_ptr<const FrameSource> recorded_;
  std::vector<double> rotation_deg_;
  bool fill_corners_ = false;
};

// The frames as recorded: the series under a DerotatedSource, else `frames`
// itself. The scan-distortion correction reads them so: it follows each
// line along the frame's own fast axis and turns the result.
const FrameSource& recorded_frames(const FrameSource& frames);

}  // namespace driftscan
