#pragma once
// The first n frames of another source, as a source of their own. A follow
// stopped mid-file has taken fewer frames than the file shows by then: its
// finish averages and reports exactly the frames it registered.
#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <utility>

#include "driftscan/core/error.hpp"
#include "driftscan/core/frame_source.hpp"

namespace driftscan {

class FramePrefix : public FrameSource {
 public:
  // `frames` must outlive the prefix; n is capped at its frame count.
  FramePrefix(const FrameSource& frames, std::size_t n) : frames_(frames), n_(std::min(n, frames.frame_count())) {}
  // The prefix owns `frames` (a series opened for these frames only).
  FramePrefix(std::shared_ptr<const FrameSource> frames, std::size_t n)
      : owned_(std::move(frames)), frames_(*owned_), n_(std::min(n, frames_.frame_count())) {}
  std::size_t frame_count() const override { return n_; }
  int width() const override { return frames_.width(); }
  int height() const override { return frames_.height(); }
  Frame frame(std::size_t k) const override {
    check(k);
    return frames_.frame(k);
  }
  std::shared_ptr<const Frame> shared_frame(std::size_t k) const override {
    check(k);
    return frames_.shared_frame(k);
  }
  Frame frame_rows(std::size_t k, int y0, int y1) const override {
    check(k);
    return frames_.frame_rows(k, y0, y1);
  }
  double pixel_size() const override { return frames_.pixel_size(); }
  std::string pixel_unit() const override { return frames_.pixel_unit(); }
  RecordedScan recorded_scan() const override { return frames_.recorded_scan(); }
  RecordedRotations recorded_rotations() const override { return frames_.recorded_rotations(); }
  std::string describe() const override { return frames_.describe(); }

 private:
  void check(std::size_t k) const {
    if (k >= n_)
      throw failure("internal: frame " + std::to_string(k) + " asked of the first " + std::to_string(n_) + " frames");
  }
  std::shared_ptr<const FrameSource> owned_;  // null when the caller owns the frames
  const FrameSource& frames_;
  const std::size_t n_;
};

}  // namespace driftscan
