#include "driftscan/core/derotated_source.hpp"

#include <cmath>
#include <limits>
#include <utility>

#include "driftscan/core/scan_rotation.hpp"

namespace driftscan {

DerotatedSource::DerotatedSource(std::shared_ptr<const FrameSource> recorded, std::vector<double> rotation_deg,
                                 const std::string& where, bool growing)
    : recorded_(std::move(recorded)), rotation_deg_(std::move(rotation_deg)) {
  check_scan_rotations(rotation_deg_, growing ? std::numeric_limits<std::size_t>::max() : recorded_->frame_count(),
                       recorded_->width(), recorded_->height(), where);
}

Frame DerotatedSource::frame(std::size_t k) const {
  Frame recorded = recorded_->frame(k);
  if (!fill_corners_) return derotate(recorded, rotation_deg(k));
  double sum = 0.0;
  std::size_t n = 0;
  for (float v : recorded.pixels)
    if (std::isfinite(v)) sum += v, ++n;
  return derotate(recorded, rotation_deg(k), n ? static_cast<float>(sum / static_cast<double>(n)) : 0.0f);
}

std::unique_ptr<FrameSource> DerotatedSource::with_filled_corners() const {
  auto filled = std::make_unique<DerotatedSource>(*this);
  filled->fill_corners_ = true;
  return filled;
}

double DerotatedSource::rotation_deg(std::size_t k) const { return scan_rotation_of(rotation_deg_, k); }

std::string DerotatedSource::describe() const {
  return recorded_->describe() + ", scan rotation " + scan_rotation_text(rotation_deg_) + " deg";
}

const FrameSource& recorded_frames(const FrameSource& frames) {
  const auto* turned = dynamic_cast<const DerotatedSource*>(&frames);
  return turned ? turned->recorded() : frames;
}

}  // namespace driftscan
