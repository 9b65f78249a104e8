#pragma once
// Averaging again with the drift table of an earlier run (`average --drift`,
// and the Python package's average()): the transforms the table gives, and
// the job's averaging options completed from it — frames the registration
// flagged left out, frames above averaging.max_sigma left out, the
// inverse-variance weights from the table's sigma and noise columns. One
// place for these rules, whichever executor then averages.
#include <string>
#include <vector>

#include "driftscan/averaging/averaging.hpp"
#include "driftscan/core/frame_source.hpp"
#include "driftscan/core/transform.hpp"
#include "driftscan/job/job.hpp"

namespace driftscan {

struct DriftAveraging {
  std::vector<Transform> to_frame0;   // T_{0,k} from the table
  AveragingOptions options;           // the job's, completed from the table
  std::vector<std::string> warnings;  // one line each, to say to the user
};

// `job.averaging.drift` read against `frames`. Throws bad_input naming the
// table when it does not fit the series (frame count) or lacks the columns
// max_sigma or inverse-variance weights need.
DriftAveraging plan_drift_averaging(const Job& job, const FrameSource& frames);

}  // namespace driftscan
