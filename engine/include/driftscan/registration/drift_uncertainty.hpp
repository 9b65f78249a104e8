#pragma once
// The standard error of every frame's drift as drift.csv writes it
// (relative to frame 0), from the Fisher information of the final
// refinement of 0 -> k (Refinement::information): the noise of frame k and
// of frame 0 both enter. Frame 0's part is common to every frame (one
// realisation of its noise shifts all of them alike); it is reported
// separately as well. Frame 0 itself is exact (0, 0) by definition.
#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "driftscan/core/cancel_token.hpp"
#include "driftscan/core/progress.hpp"
#include "driftscan/core/transform.hpp"
#include "driftscan/registration/refinement.hpp"
#include "driftscan/registration/registration_operator.hpp"

namespace driftscan {

struct DriftUncertainty {
  double sigma_dx = 0.0, sigma_dy = 0.0, cov_dxdy = 0.0;                       // px, of dx, dy as written
  double sigma_angle_deg = 0.0;                                                // rigid and affine models
  std::array<double, 6> sigma_affine{};                                        // of a, b, c, d, tx, ty (affine model)
  double common_sigma_dx = 0.0, common_sigma_dy = 0.0, common_cov_dxdy = 0.0;  // frame 0's share
  double noise_variance = 0.0;            // frame k's pixel noise variance (its units; prefiltered)
  double reference_noise_variance = 0.0;  // frame 0's, seen from this frame's pair
  bool singular = false;                  // no information (blank, constant, one edge direction): sigmas are inf

  // The frame's figure of merit: the larger of sigma_dx, sigma_dy.
  double sigma() const { return sigma_dx > sigma_dy ? sigma_dx : sigma_dy; }
};

// Non-negative integers everywhere: a counting detector's frame, whose noise
// is Poisson (variance = mean).
bool looks_like_counts(const Frame& f);

// The share of the residual's variance that is frame 0's (the reference's)
// noise: for counts from the Poisson model (reference mean against the
// gain-matched moving frame's mean); otherwise the frames' noise is taken
// equal after the gain match (1/2).
double reference_noise_share(const RefineInformation& info, bool counts);

// Frame 0's share of the noise the drift estimate carries (the signal
// gradient's terms). Not reference_noise_share: at low counts the fitted gain
// alpha is attenuated (regression on a noisy frame), and the estimate's own
// algebra cancels it (frame 0's gradient noise times the misfit (alpha - 1) s
// gives back what the residual's alpha takes), so the moving frame's noise
// counts at the true gain. Counts: that gain is the means' ratio (Poisson, no
// offset), the share mean_g / (mean_g + mean_f); otherwise 1/2 (equal noise
// at the true gain).
double common_noise_share(const RefineInformation& info, bool counts);
// alpha over the true gain (<= 1): how much the regression on a noisy
// frame attenuates the fitted gain, and with it A (hence rho, which is
// divided by it). Counts: (mean_f - beta) / mean_f; otherwise 1 (not known).
double fitted_gain_attenuation(const RefineInformation& info, bool counts);
// The share (0..share] of a frame's drift variance along one axis that is
// frame 0's noise, common to every frame: share of the part the signal's
// gradient carries (rho: RefineInformation::gradient_signal_fraction); the
// rest, frame 0's gradient noise times frame k's noise, is each frame's own.
double common_fraction(double share, double rho, double kappa);
// rho as the noise sees it: the signal gradient's power scaled by `lag`
// (RefineInformation::signal_lag_factor), the share of the prefiltered
// noise's correlation it sees.
double noise_seen_signal_fraction(double rho, double lag);
// That product's weight kappa for noise white before a Gaussian prefilter
// of `sigma` px (0: none) and central-difference gradients.
double gradient_noise_kappa(double sigma);

// The drift's covariance at the frame centre from T's.
// reference_share (of the residual's variance: noise_variance,
// reference_noise_variance) and common_share (common_noise_share; < 0: the
// reference share) may differ; gain_attenuation: fitted_gain_attenuation.
DriftUncertainty drift_uncertainty(const RefineInformation& info, const Transform& to_frame0, Point centre,
                                   double reference_share, double common_share = -1.0, double gain_attenuation = 1.0);

// One scan result's (0 -> k): `counts` looks_like_counts(frame 0), `centre`
// the frame's centre. Any thread, any time after the scan made r: the
// sequential scan calls it while frame k's pyramid is still prepared.
DriftUncertainty frame_drift_uncertainty(const RegistrationOperator& op, const Registration& r, bool counts,
                                         Point centre);

// Every frame in [begin, end) of a scan's results (0 -> k), `threads`
// OpenMP threads; advances `progress` by one per frame.
std::vector<DriftUncertainty> estimate_drift_uncertainty(const RegistrationOperator& op,
                                                         const std::vector<Registration>& registrations,
                                                         std::size_t begin, std::size_t end, int threads,
                                                         Progress* progress, const CancelToken* cancel);

struct UncertaintySummary {
  double common_sigma_dx = 0.0, common_sigma_dy = 0.0, common_cov_dxdy = 0.0;  // median over frames
  double median_sigma = 0.0, worst_sigma = 0.0;  // of DriftUncertainty::sigma() over frames 1.., finite ones
  std::size_t worst_frame = 0;
  std::vector<std::size_t> singular_frames;
};
UncertaintySummary summarize_uncertainty(const std::vector<DriftUncertainty>& frames);
// Frame 0's noise is one realisation shared by every frame, so each frame's
// variance is its own part plus the series' common part (the summary's
// median), not its own pair's view of that part: then no frame's sigma is
// below the common sigma. Frames [first_frame, ...) of a block; frame 0 and
// singular frames are left as they are. Idempotent. What drift.csv and
// report.json show; the frame weights and max_sigma use the frames' own
// estimate (the averages stay as they were).
void share_series_common(std::vector<DriftUncertainty>& block, const UncertaintySummary& series,
                         std::size_t first_frame);
// The same over a whole series (its own summary).
std::vector<DriftUncertainty> with_series_common(std::vector<DriftUncertainty> frames);
// What a summary is made of, for a block of frames whose first is frame
// `first_frame` (a rank's share): the per-frame figures it takes medians of
// (finite frames 1..), the worst and the singular frames. Blocks combine in
// frame order (the first of equal worst sigmas wins).
struct UncertaintySample {
  std::vector<double> sigma, common_sigma_dx, common_sigma_dy, common_cov_dxdy;
  double worst_sigma = 0.0;
  std::size_t worst_frame = 0;
  std::vector<std::size_t> singular_frames;
};
UncertaintySample sample_uncertainty(const std::vector<DriftUncertainty>& block, std::size_t first_frame);
// Frames (1..) whose sigma is above max_sigma (inf included); none when
// max_sigma <= 0. sigma[0] is frame `first_frame`'s (a block of a series).
std::vector<std::size_t> frames_above_sigma(const std::vector<double>& sigma, double max_sigma,
                                            std::size_t first_frame = 0);
// The warning for them (empty when none).
std::string above_sigma_warning(const std::vector<std::size_t>& frames, double max_sigma);
// Every frame's noise_variance; frame 0's is the median of what the frames
// saw of it (reference_noise_variance).
std::vector<double> frame_noise_variances(const std::vector<DriftUncertainty>& frames);
// What frame 0's noise variance is the median of: the frames' views of it
// (those not singular, > 0), of a block of frames or of all.
std::vector<double> reference_noise_views(const std::vector<DriftUncertainty>& frames);
// inverse_variance_weights (frame_weights.hpp) of a run's frames.
std::vector<double> uncertainty_weights(const std::vector<DriftUncertainty>& frames);
// report.json's "uncertainty" block.
nlohmann::json to_json(const UncertaintySummary& s);
// One warning per run naming the frames whose sigma is inf; empty when none.
std::string singular_warning(const UncertaintySummary& s);

}  // namespace driftscan
