#pragma once
// The serial reference pipeline of `driftscan-engine register`:
//   pairs   — e_k = (k-1 -> k) for every k, independent (OpenMP threads);
//   scan    — the inclusive scan of the elements with the operator, giving
//             (0 -> k, T_{0,k}); sequential here, injectable so the
//             distributed scan reuses everything else;
//   average — every usable frame warped into frame 0 and averaged;
//   write   — drift.csv, average.tif, coverage.tif, report.json in the
//             output folder, staged as one set and committed together
//             (output_set.hpp).
// The phases are separate functions so the MPI version can run each on its
// share of the frames and combine.
#include <cstddef>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "driftscan/averaging/averaging.hpp"
#include "driftscan/core/cancel_token.hpp"
#include "driftscan/core/frame_source.hpp"
#include "driftscan/core/progress.hpp"
#include "driftscan/job/output_set.hpp"
#include "driftscan/registration/drift_uncertainty.hpp"
#include "driftscan/registration/registration_failure.hpp"
#include "driftscan/registration/registration_operator.hpp"
#include "driftscan/registration/registration_settings.hpp"

namespace driftscan {

using RegistrationCombine = std::function<Registration(const Registration&, const Registration&)>;
// An inclusive scan: out[k] = x[0] (+) ... (+) x[k] for the given operator.
using RegistrationScan =
    std::function<std::vector<Registration>(const std::vector<Registration>&, const RegistrationCombine&)>;

// The reference: sequential_inclusive_scan (sequential_scan.hpp).
RegistrationScan sequential_registration_scan();

// One operator application as the report lists it.
struct OperatorApplication {
  std::uint64_t from = 0, to = 0;
  int iterations = 0;
  double seconds = 0.0;
  double cost = 0.0;
  std::uint32_t flags = 0;
};

// What report.json's "summary" says of the operator applications: their
// count and iterations, and how many took i iterations (i = 0..max). The
// distributed register keeps only this (a sum over ranks), not a record per
// application.
struct ApplicationSummary {
  std::uint64_t count = 0;
  std::uint64_t iterations_total = 0;
  std::vector<std::uint64_t> iterations_histogram;  // [i]: applications with i iterations

  void add(int iterations);
  void add(const ApplicationSummary& other);
  std::uint64_t iterations_max() const;
  static ApplicationSummary of(const std::vector<OperatorApplication>& applications);
};

// Wall (or CPU) seconds of each phase of a register run (phase_timer.hpp).
struct PhaseSeconds {
  double pairs = 0, scan = 0, average = 0, write = 0, total = 0;
  double uncertainty = 0;
  double open = 0, distortion = 0, apply_to = 0;
};

struct RegisterOutputs {
  std::string drift, average, coverage, report;
  std::string sigma;                 // the average's standard error (sigma.tif)
  std::string lines, average_rigid;  // with the scan-distortion correction only
};

struct RegisterResult {
  std::vector<Registration> elements;       // e_k, k = 0..N-1 (e_0 = identity)
  std::vector<Registration> registrations;  // (0 -> k, T_{0,k}), k = 0..N-1
  std::vector<OperatorApplication> applications;
  std::vector<DriftUncertainty> uncertainty;  // per frame, of registrations[k]'s drift
  AverageResult average;
  std::vector<std::string> warnings;
  PhaseSeconds seconds;  // wall
  PhaseSeconds cpu;      // process CPU time (all threads)
  RegisterOutputs files;
};

// Phase "pairs": elements e_k for k in [begin, end), `threads` OpenMP
// threads. Advances `progress` by one per element (offset by
// `progress_offset`, so ranks can report a share of one phase).
std::vector<Registration> compute_pair_elements(const RegistrationOperator& op, std::size_t begin, std::size_t end,
                                                int threads, Progress* progress, const CancelToken* cancel,
                                                std::size_t progress_offset = 0);

// After phase "pairs": frees the pair registrations' per-thread transform
// buffers on `threads` threads (the pool's threads keep theirs otherwise, a
// 4096² pair's ~335 MB each, beside every later phase).
void release_pair_buffers(int threads);

// Phase "scan": runs `scan` over the elements with `op` wrapped so that
// every application is recorded in `applications` (thread-safe), counted on
// `progress` and checks `cancel`.
std::vector<Registration> scan_registrations(const std::vector<Registration>& elements, const RegistrationOperator& op,
                                             const RegistrationScan& scan,
                                             std::vector<OperatorApplication>& applications, Progress* progress,
                                             const CancelToken* cancel);

// Phase "uncertainty": every frame's drift uncertainty (drift_uncertainty.hpp)
// with `threads` OpenMP threads; a warning (logged and added) for frames
// whose information is singular.
std::vector<DriftUncertainty> uncertainty_phase(const RegistrationOperator& op,
                                                const std::vector<Registration>& registrations, int threads,
                                                std::vector<std::string>& warnings, Progress* progress,
                                                const CancelToken* cancel);

// Warnings for flagged frames (one line per reason, registration_failure.hpp),
// and the frames the average must leave out (every kFrameFailed frame).
std::vector<std::string> registration_warnings(const std::vector<Registration>& registrations,
                                               std::vector<std::size_t>& excluded);

// When most frames failed (RegistrationFailures::most_failed): logs and
// keeps the failure warnings, runs `write` (drift.csv and report.json
// without an average: write_register_outputs with an empty AverageResult;
// empty on ranks that do not write) and throws
// Error(registration_failed) naming `input`. Returns otherwise.
void stop_if_registration_failed(const RegistrationFailures& failures, const std::string& input, Progress* progress,
                                 std::vector<std::string>& warnings, const std::function<void()>& write);

// Phase "average": average_series with the transforms of the scan; frames
// flagged unusable are excluded (and said so in `warnings`); with
// `uncertainty`, frames above options.max_sigma too. With a team
// (averaging_team.hpp), collective over its members, each averaging its share.
AverageResult average_registered(const FrameSource& frames, const std::vector<Registration>& registrations,
                                 const AveragingOptions& options, std::vector<std::string>& warnings,
                                 Progress* progress, const CancelToken* cancel,
                                 const std::vector<DriftUncertainty>* uncertainty = nullptr,
                                 const AveragingTeam* team = nullptr);

// average_registered from its parts, as a run whose records are spread over
// ranks combines them: every frame's `failures` and `above_sigma` (frames
// over options.max_sigma) are excluded and said in `warnings` as
// average_registered says them; `weights` (uncertainty_weights of every
// frame) are used when options.weights is inverse_variance (bad_input
// when they are not every frame's).
AverageResult average_selected(const FrameSource& frames, const std::vector<Transform>& transforms,
                               const AveragingOptions& options, const RegistrationFailures& failures,
                               const std::vector<std::size_t>& above_sigma, std::vector<double> weights,
                               std::vector<std::string>& warnings, Progress* progress, const CancelToken* cancel,
                               const AveragingTeam* team = nullptr);

// A large array of report.json written record by record rather than built
// in memory (as JSON values, tens of thousands of records take ~1 KB each).
struct ReportArray {
  std::vector<std::string> path;  // where in the report, e.g. {"scan_trace", "records"}
  std::size_t size = 0;
  std::function<nlohmann::json(std::size_t)> record;  // record i
};

// report.json's "operator_applications": one record per application, for
// the pipelines that keep them (one process); streamed (ReportArray).
ReportArray operator_applications_array(const std::vector<OperatorApplication>& applications);

// Phase "write": the four files staged in `set` (output_set.hpp; average and
// coverage named average<suffix>.tif, coverage<suffix>.tif), report.json
// last; visible once the caller commits the set. The paths returned are the
// final ones. `report_extra` is merged into the report (timings, execution
// details of the caller), then `streamed` arrays are written in at their paths.
// An empty `average` (a failed registration) stages neither TIFF (so the
// commit removes an earlier run's); report.json's "status" is then
// "registration_failed" ("done" otherwise) and its "registration" block
// counts the failed frames by reason.
RegisterOutputs write_register_outputs(OutputSet& set, const FrameSource& frames, const RegistrationSettings& settings,
                                       const AveragingOptions& averaging,
                                       const std::vector<Registration>& registrations,
                                       const ApplicationSummary& applications, const AverageResult& average,
                                       const std::vector<std::string>& warnings, const nlohmann::json& report_extra,
                                       const std::vector<ReportArray>& streamed = {},
                                       const std::string& average_suffix = "",
                                       const std::vector<DriftUncertainty>* uncertainty = nullptr);

// write_register_outputs without drift.csv (staged by the caller, e.g.
// from every rank's rows): the average and coverage (unless empty) and
// report.json, from what the report says of the registration — the number
// of frames registered, every frame's failures and (when given) the
// uncertainty summary.
// How sigma.tif of an average made with these options was obtained (the
// report's uncertainty block names it).
std::string average_sigma_method(const AveragingOptions& averaging);
RegisterOutputs write_register_report(OutputSet& set, const FrameSource& frames, const RegistrationSettings& settings,
                                      const AveragingOptions& averaging, std::size_t registered,
                                      const RegistrationFailures& failures, const UncertaintySummary* uncertainty,
                                      const ApplicationSummary& applications, const AverageResult& average,
                                      const std::vector<std::string>& warnings, const nlohmann::json& report_extra,
                                      const std::vector<ReportArray>& streamed = {},
                                      const std::string& average_suffix = "");

// drift.csv alone (atomically): frame,dx,dy [,angle_deg] [,a,b,c,d,tx,ty],
// [sigma_dx,sigma_dy,cov_dxdy [,sigma_angle_deg] [,sigma_a,...,sigma_ty],noise_var,sigma_flag]
// iterations,cost,ncc,quality,used,flags. (dx, dy) is the displacement
// T_{0,k}(c) - c at the frame centre c — for a translation, everywhere. The
// sigma columns (with `uncertainty`): standard errors of the drift as written;
// sigma_flag "singular" where they are inf; noise_var the frame's pixel noise
// variance (frame_weights.hpp).
void write_drift_csv(const std::string& path, const std::vector<Registration>& registrations, MotionModel model,
                     Point centre, const AverageResult* average,
                     const std::vector<DriftUncertainty>* uncertainty = nullptr);

// The rows of `count` frames from frame `first_frame` on, as
// write_drift_csv writes them: `block` their registrations, `uncertainty`
// theirs (null: no sigma columns), `frame0_noise` frame 0's noise_var
// (frame_noise_variances).
void write_drift_csv_rows(std::ostream& out, const Registration* block, const DriftUncertainty* uncertainty,
                          std::size_t count, std::size_t first_frame, MotionModel model, Point centre,
                          const AverageResult* average, double frame0_noise);

// drift.csv's header line and one frame's row (both ending in a newline), as
// write_drift_csv writes them; `follow` appends rows as frames arrive.
// `u` null: no sigma columns (the header then says so too).
std::string drift_csv_header(MotionModel model, bool sigmas);
std::string drift_csv_row(std::size_t k, const Registration& r, MotionModel model, Point centre, double quality,
                          bool used, const DriftUncertainty* u, double noise_var);

}  // namespace driftscan
