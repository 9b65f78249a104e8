#include "driftscan/job/job_series.hpp"

#include <string>
#include <utility>

#include "driftscan/core/derotated_source.hpp"
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

std::unique_ptr<FrameSource> open_job_series(const Job& job) {
  return oriented_series(job, open_series(job.input, job.signal,
                                          static_cast<std::size_t>(job.execution.frame_cache_mb * 1024.0 * 1024.0)));
}

}  // namespace driftscan
