#include "driftscan/pipeline/scan_distortion_decision.hpp"

#include <memory>

#include "driftscan/core/error.hpp"
#include "driftscan/core/scan_timing.hpp"
#include "driftscan/pipeline/indexed_series.hpp"
#include "driftscan/scan_distortion/scan_distortion.hpp"

namespace driftscan {

Job with_scan_distortion_decided(const Job& job, std::string& said) {
  said.clear();
  if (job.command != "register" || job.follow.enabled || job.scan.correct_distortion || !job.scan.auto_distortion)
    return job;
  const std::unique_ptr<FrameSource> frames = open_indexed_series(job);
  if (!frames) return job;
  const RecordedScan recorded = frames->recorded_scan();
  if (!job.scan.corrects_distortion(recorded, frames->frame_count())) return job;
  Job out = job;
  out.scan.correct_distortion = true;
  const int w = frames->width(), h = frames->height();
  try {
    // What an asked-for run would refuse (bands that do not fit a frame, an
    // impossible recorded timing) keeps the rigid result here, with a warning.
    const ScanTiming timing(out.scan.timing(recorded, w, h, nullptr), w, h);
    const ScanDistortionSteps check(timing, out.scan.distortion(), frames->frame_count());
  } catch (const Error& e) {
    said = std::string("the scan distortion is not corrected although the file records its scan clock: ") + e.what();
    return job;
  }
  said = "the file records its scan clock (" + recorded.source +
         "): the scan distortion is corrected (scan.auto_distortion; --auto-scan-distortion off for the rigid "
         "result alone)";
  return out;
}

}  // namespace driftscan
