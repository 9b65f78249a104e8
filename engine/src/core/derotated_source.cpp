#include "driftscan/core/derotated_source.hpp"

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

Frame DerotatedSource::frame(std::size_t k) const { return derotate(recorded_->frame(k), rotation_deg(k)); }

double DerotatedSource::rotation_deg(std::size_t k) const { return scan_rotation_of(rotation_deg_, k); }

std::string DerotatedSource::describe() const {
  return recorded_->describe() + ", scan rotation " + scan_rotation_text(rotation_deg_) + " deg";
}

const FrameSource& recorded_frames(const FrameSource& frames) {
  const auto* turned = dynamic_cast<const DerotatedSource*>(&frames);
  return turned ? turned->recorded() : frames;
}

}  // namespace driftscan
