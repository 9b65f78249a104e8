#include "driftscan/core/kept_frames.hpp"

namespace driftscan {

KeptFrames::KeptFrames(const FrameSource& frames, std::size_t budget_bytes)
    : frames_(frames), kept_(budget_bytes, FrameCache::Eviction::none) {}

std::shared_ptr<const Frame> KeptFrames::shared_frame(std::size_t k) const {
  if (std::shared_ptr<const Frame> kept = kept_.find(k)) return kept;
  std::shared_ptr<const Frame> read = frames_.shared_frame(k);
  kept_.insert(k, read);  // the source's own frame, shared: no copy
  return read;
}

}  // namespace driftscan
