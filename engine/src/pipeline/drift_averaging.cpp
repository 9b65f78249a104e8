#include "driftscan/pipeline/drift_averaging.hpp"

#include <algorithm>

#include "driftscan/core/error.hpp"
#include "driftscan/registration/drift_table.hpp"
#include "driftscan/registration/drift_uncertainty.hpp"
#include "driftscan/registration/frame_weights.hpp"
#include "driftscan/registration/registration_failure.hpp"

namespace driftscan {

DriftAveraging plan_drift_averaging(const Job& job, const FrameSource& frames) {
  const std::string& table = job.averaging.drift;
  const Point centre{(frames.width() - 1) / 2.0, (frames.height() - 1) / 2.0};
  DriftTable drift = read_drift_table(table, centre);
  if (drift.to_frame0.size() != frames.frame_count())
    throw bad_input(table + ": " + std::to_string(drift.to_frame0.size()) + " frames, but " + job.input + " has " +
                    std::to_string(frames.frame_count()));
  DriftAveraging out;
  out.to_frame0 = std::move(drift.to_frame0);
  out.options = job.averaging;
  AveragingOptions& options = out.options;
  options.exclude_frames.insert(options.exclude_frames.end(), drift.flagged.begin(), drift.flagged.end());
  if (!drift.flagged.empty())  // one line, however many frames
    out.warnings.push_back(std::to_string(drift.flagged.size()) + " frame(s) flagged in " + table +
                           ": left out of the average (frames " + compact_frame_list(drift.flagged) + ")");
  if (options.max_sigma > 0 || options.weights == FrameWeighting::inverse_variance) {
    const DriftRecords records = read_drift_records(table);
    if (!records.has_sigma || (options.weights == FrameWeighting::inverse_variance && !records.has_noise_var))
      throw bad_input(table +
                      ": no sigma_dx,sigma_dy,noise_var columns (a table from before the "
                      "uncertainty estimate): max_sigma and inverse-variance weights need them");
    std::vector<double> sigma, noise;
    for (const DriftRecord& r : records.frames) {
      sigma.push_back(std::max(r.sigma_dx, r.sigma_dy));
      noise.push_back(r.noise_var);
    }
    if (options.weights == FrameWeighting::inverse_variance)
      options.frame_weights = inverse_variance_weights(sigma, noise);
    const std::vector<std::size_t> above = frames_above_sigma(sigma, options.max_sigma);
    options.exclude_frames.insert(options.exclude_frames.end(), above.begin(), above.end());
    if (std::string w = above_sigma_warning(above, options.max_sigma); !w.empty()) out.warnings.push_back(w);
  }
  return out;
}

}  // namespace driftscan
