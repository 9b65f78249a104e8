#include "driftscan/job/job_series.hpp"

#include <string>
#include <utility>

#include "driftscan/core/derotated_source.hpp"
#include "driftscan/core/frame_prefix.hpp"
#include "driftscan/core/scan_rotation.hpp"
#include "driftscan/formats/series_opener.hpp"

namespace driftscan {

std::unique_ptr<FrameSource> oriented_series(const Job& job, std::unique_ptr<FrameSource> frames) {
  if (job.scan.rotation.empty()) return frames;
  const std::string where = job.input + ": ";
  if (!has_scan_rotation(job.scan.rotation)) {  // every frame at 0: served as recorded, once checked
    check_scan_rotations(job.scan.rotation, frames->frame_count(), frames->width(), frames->height(), where);
    return frames;
  }
  return std::make_unique<DerotatedSource>(std::shared_ptr<const FrameSource>(std::move(frames)), job.scan.rotation,
                                           where);
}

std::unique_ptr<FrameSource> open_job_series(const Job& job, std::size_t first_frames) {
  std::unique_ptr<FrameSource> frames =
      open_series(job.input, job.signal, static_cast<std::size_t>(job.execution.frame_cache_mb * 1024.0 * 1024.0));
  if (first_frames > 0 && first_frames < frames->frame_count())
    frames = std::make_unique<FramePrefix>(std::shared_ptr<const FrameSource>(std::move(frames)), first_frames);
  return oriented_series(job, std::move(frames));
}

}  // namespace driftscan
