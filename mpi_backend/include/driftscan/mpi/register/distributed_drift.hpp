#pragma once
// The drift of a multi-rank `register` held in blocks of frames: from the
// scan to the write each rank keeps only its own frames' scan outputs and
// drift uncertainty (the block AveragingTeam::own_frames gives it), so the
// memory per rank does not grow with the series beyond the transforms the
// averaging needs whole. What the run needs of every frame is combined over
// the ranks from compact per-frame values, equal to what the serial
// functions give on the whole table: the failure classification, the
// uncertainty summary (exact medians), frame 0's noise variance, the frames
// above max_sigma, the inverse-variance weights; drift.csv is written by
// rank 0 from rows every rank formats for its own frames, gathered chunk
// by chunk.
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "driftscan/averaging/averaging.hpp"
#include "driftscan/job/output_set.hpp"
#include "driftscan/registration/drift_uncertainty.hpp"
#include "driftscan/registration/registration_failure.hpp"
#include "driftscan/registration/registration_operator.hpp"
#include "driftscan/registration/registration_settings.hpp"

namespace driftscan::mpi {

// Frames [first, last) of `frames` are this rank's.
struct FrameBlock {
  std::size_t first = 0, last = 0, frames = 0;
  std::size_t size() const { return last - first; }
};
FrameBlock own_block(MPI_Comm comm, std::size_t frames);

// Collective: of every rank's values together, the one at index size/2 in
// ascending order (the serial median's nth_element pick); none when no rank
// has a value. Exact: a radix selection on the values' bits, 8 reductions
// of 256 counts, no rank holding more than its own values.
std::optional<double> median_over_ranks(MPI_Comm comm, const std::vector<double>& mine);

// Every rank's block's transforms, in frame order, on every rank.
std::vector<Transform> gather_transforms(MPI_Comm comm, const std::vector<Registration>& block);

// classify_failures of the whole series, on every rank.
RegistrationFailures classify_failures_over_ranks(MPI_Comm comm, const std::vector<Registration>& block,
                                                  const FrameBlock& mine);

// summarize_uncertainty of the whole series, on every rank.
UncertaintySummary summarize_uncertainty_over_ranks(MPI_Comm comm, const std::vector<DriftUncertainty>& block,
                                                    const FrameBlock& mine);

// frame_noise_variances(...)[0] of the whole series (drift.csv's noise_var
// of frame 0), on every rank.
double frame0_noise_over_ranks(MPI_Comm comm, const std::vector<DriftUncertainty>& block, const FrameBlock& mine);

// frames_above_sigma of the whole series' sigmas, on every rank.
std::vector<std::size_t> frames_above_sigma_over_ranks(MPI_Comm comm, const std::vector<DriftUncertainty>& block,
                                                       const FrameBlock& mine, double max_sigma);

// uncertainty_weights of the whole series, on every rank (gathers two
// doubles a frame: only runs that ask for the weights pay for them).
std::vector<double> uncertainty_weights_over_ranks(MPI_Comm comm, const std::vector<DriftUncertainty>& block,
                                                   double frame0_noise);

// What drift.csv takes of a rank's own frames besides their transforms
// (every frame's are held whole) and the average's verdict on them: kept
// from the uncertainty phase to the write in about a quarter of the bytes
// of their Registration and DriftUncertainty records.
class DriftRows {
 public:
  DriftRows() = default;
  // `uncertainty`: the block's (sigma columns), or empty for none.
  DriftRows(const std::vector<Registration>& block, const std::vector<DriftUncertainty>& uncertainty,
            MotionModel model);
  std::size_t size() const { return facts_.size(); }
  bool sigmas() const { return sigmas_; }
  // Block frame i (frame `frame` of the series) as drift.csv writes it.
  Registration registration(std::size_t i, std::uint64_t frame, const Transform& transform) const;
  DriftUncertainty uncertainty(std::size_t i) const;

 private:
  struct Facts {
    double cost, quality, sigma_dx, sigma_dy, cov_dxdy, noise_variance;
    std::int32_t iterations;
    std::uint32_t flags;
  };
  std::vector<Facts> facts_;
  std::vector<bool> singular_;
  std::vector<double> model_sigmas_;  // per frame: sigma_angle_deg (rigid, affine), then sigma_affine (affine)
  std::size_t stride_ = 0;
  bool sigmas_ = false;
};

// Collective: drift.csv staged in `set` by rank 0 (`set` is ignored on
// the others) as write_drift_csv writes it — the header, then each rank's
// rows (write_drift_csv_rows) gathered in chunks of frames and written in
// order. Rank 0's failure (staging, writing) is returned rather than
// thrown, once every rank has passed every chunk: the caller makes it
// every rank's outcome.
std::exception_ptr stage_drift_csv(MPI_Comm comm, OutputSet* set, const DriftRows& rows,
                                   const std::vector<Transform>& transforms, const FrameBlock& mine, MotionModel model,
                                   Point centre, const AverageResult* average, double frame0_noise);

}  // namespace driftscan::mpi
