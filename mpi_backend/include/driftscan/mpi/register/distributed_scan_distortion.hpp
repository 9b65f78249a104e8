#pragma once
// The scan-distortion correction over ranks x threads: each rank runs the
// per-frame steps (average accumulation, band registration, line jitter) on
// its own contiguous block of frames, reading only those; the averages'
// sums and every band sample are combined so that each rank fits the same
// drift path (the fit sorts its samples: identical on every rank).
#include <vector>

#include "driftscan/core/frame_source.hpp"
#include "driftscan/core/scan_timing.hpp"
#include "driftscan/mpi/runtime/command.hpp"
#include "driftscan/scan_distortion/scan_distortion.hpp"

namespace driftscan::mpi {

struct DistributedDistortion {
  ScanModel model;        // the path on every rank; every frame's jitter on rank 0 (own frames' elsewhere)
  SpecimenImage average;  // rank 0: the average in specimen coordinates under the final model
  std::vector<DriftSample> band_samples;  // the last round's, every rank
  std::vector<ScanDistortionRound> rounds;
  bool converged = false;
  double jitter_precision_px = 0.0;  // ScanDistortionResult's, over every rank's lines
  // Frames in no average: those in `leave_out` and those that could not be
  // followed (ScanDistortionSteps::followed), on every rank.
  std::vector<std::size_t> left_out, not_followed;
  // Rank 0: the final model's standard errors (lines.csv's sigma columns):
  // the path's relative to its mean over the lines, [frame][line] the jitter's.
  DriftPathUncertainty path_sigma;
  std::vector<std::vector<double>> jitter_sigma;
};

// Collective. `rigid_drift` (drift.csv convention, one per frame) must be the
// same on every rank. Errors on any rank end it on every rank with that
// rank's one-line message; cancellation likewise.
// Frames in `leave_out` (failed rigid registrations, frames the user
// excluded) are in no average nor fit. `kept_bytes`: each rank's memory for
// its frames' kept contributions (ContributionBudget; kept_contribution_bytes).
DistributedDistortion correct_scan_distortion(const FrameSource& frames, const ScanTiming& timing,
                                              const std::vector<Point>& rigid_drift,
                                              const ScanDistortionSettings& settings, RunContext& ctx, int threads,
                                              const std::vector<std::size_t>& leave_out = {},
                                              std::size_t kept_bytes = ContributionBudget::kDefaultBytes);

}  // namespace driftscan::mpi
