#pragma once
// Where algorithms get frames from. Registration, averaging and the scan
// never see files: a TiffSeries, an in-memory vector or a synthetic generator
// all serve frames through this interface. frame() must be thread-safe:
// any worker may ask for any frame (on a cluster a rank reads the few frames
// beyond its segment on demand).
#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "driftscan/core/frame.hpp"
#include "driftscan/core/scan_timing.hpp"

namespace driftscan {

class FrameSource {
 public:
  virtual ~FrameSource() = default;
  virtual std::size_t frame_count() const = 0;
  virtual int width() const = 0;
  virtual int height() const = 0;
  virtual Frame frame(std::size_t k) const = 0;
  // Frame k to read, shared instead of copied: a source that keeps decoded
  // frames hands out the one it keeps (a 4096^2 frame is 64 MB to copy and
  // to fault in). By default a copy of frame(k).
  virtual std::shared_ptr<const Frame> shared_frame(std::size_t k) const {
    return std::make_shared<const Frame>(frame(k));
  }
  // Rows [y0, y1) of frame k (width x (y1 - y0)): what a distributed median
  // reads for its band of the average. By default the whole frame is decoded
  // and the rows copied; sources that can decode less override it.
  virtual Frame frame_rows(std::size_t k, int y0, int y1) const {
    Frame f = frame(k);
    if (y0 < 0 || y1 > f.height || y0 >= y1 || f.width <= 0) return f;  // the caller checks the size
    Frame band(f.width, y1 - y0);
    std::copy(f.row(y0), f.row(y0) + band.size(), band.pixels.begin());
    return band;
  }
  // Physical pixel size (0 when unknown) and its unit, e.g. "nm".
  virtual double pixel_size() const { return 0.0; }
  virtual std::string pixel_unit() const { return ""; }
  // The scan timing the file records (dwell, fly-back), if any.
  virtual RecordedScan recorded_scan() const { return {}; }
  // The scan rotations the file records, if any (may read every frame's
  // metadata: asked once per run, not per frame).
  virtual RecordedRotations recorded_rotations() const { return {}; }
  // A one-line human description ("series.tif: 200 x 512x512 uint16").
  virtual std::string describe() const { return ""; }
};

// Frames held in memory: for tests and small synthetic series.
class FrameVector : public FrameSource {
 public:
  FrameVector() = default;
  explicit FrameVector(std::vector<Frame> frames) : frames_(std::move(frames)) {}
  std::size_t frame_count() const override { return frames_.size(); }
  int width() const override { return frames_.empty() ? 0 : frames_.front().width; }
  int height() const override { return frames_.empty() ? 0 : frames_.front().height; }
  Frame frame(std::size_t k) const override { return frames_.at(k); }
  void push_back(Frame f) { frames_.push_back(std::move(f)); }
  const std::vector<Frame>& frames() const { return frames_; }

 private:
  std::vector<Frame> frames_;
};

}  // namespace driftscan
