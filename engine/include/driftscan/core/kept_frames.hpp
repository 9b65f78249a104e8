#pragma once
// A series' frames kept decoded, up to a budget in bytes, for a reader that
// goes over the whole series in frame order again and again: the
// scan-distortion correction reads every frame five times (each round's
// average and fits, then the final average). The first frames asked for are
// kept until the budget is full and never evicted (FrameCache::Eviction::none):
// each pass then finds them all, where a least-recently-used cache smaller
// than the series finds none. The rest are read from the source each time.
// Only a cache: every frame is the source's, bit for bit. Thread-safe.
#include <cstddef>
#include <memory>
#include <string>

#include "driftscan/core/frame_cache.hpp"
#include "driftscan/core/frame_source.hpp"

namespace driftscan {

class KeptFrames : public FrameSource {
 public:
  // `frames` must outlive this.
  KeptFrames(const FrameSource& frames, std::size_t budget_bytes);
  std::size_t frame_count() const override { return frames_.frame_count(); }
  int width() const override { return frames_.width(); }
  int height() const override { return frames_.height(); }
  Frame frame(std::size_t k) const override { return *shared_frame(k); }
  std::shared_ptr<const Frame> shared_frame(std::size_t k) const override;
  double pixel_size() const override { return frames_.pixel_size(); }
  std::string pixel_unit() const override { return frames_.pixel_unit(); }
  RecordedScan recorded_scan() const override { return frames_.recorded_scan(); }
  RecordedRotations recorded_rotations() const override { return frames_.recorded_rotations(); }
  std::string describe() const override { return frames_.describe(); }

  const FrameCache& cache() const { return kept_; }

 private:
  const FrameSource& frames_;
  mutable FrameCache kept_;
};

}  // namespace driftscan
