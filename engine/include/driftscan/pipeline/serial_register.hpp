#pragma once
// The serial executor of a register plan (register_plan.hpp): one process,
// OpenMP threads, no MPI — what `driftscan-engine register` runs on one rank
// and what an in-process caller (a test, the Python package) calls. The
// phases of register_pipeline.hpp, with checkpoints and resume
// (register_checkpoint.hpp): a checkpoint of a finished scan holds the drift
// itself, so a run interrupted later resumes without the pairs and the scan.
// Multi-rank runs checkpoint per rank (rank_checkpoints.hpp).
#include "driftscan/core/cancel_token.hpp"
#include "driftscan/core/frame_source.hpp"
#include "driftscan/core/progress.hpp"
#include "driftscan/job/job.hpp"
#include "driftscan/job/output_set.hpp"
#include "driftscan/pipeline/register_pipeline.hpp"
#include "driftscan/pipeline/register_plan.hpp"

namespace driftscan {

// Runs `plan` (executor serial) of `job` over `frames`. The outputs are
// staged in `set`; the caller commits it, then removes the checkpoints.
// Throws bad_input for a one-frame series, Error(registration_failed) when
// most frames failed (drift.csv and report.json staged), Error(cancelled)
// with what is done checkpointed.
// `scan`: a scan to use instead of the checkpointed sequential one (a test's).
RegisterResult register_serial(const Job& job, const RegisterPlan& plan, const FrameSource& frames, Progress& progress,
                               const CancelToken& cancel, OutputSet& set, const RegistrationScan& scan = {});

// The whole pipeline in this process, from settings rather than a job
// (tests, benchmarks, in-process callers): register_serial without
// checkpoints, its outputs committed to `out_dir`. Throws bad_input for a
// one-frame series, an unusable frame 0, bad settings; cancellation throws
// Error(cancelled) and leaves no output file that looks complete.
RegisterResult register_series(const FrameSource& frames, const RegistrationSettings& settings,
                               const AveragingOptions& averaging, const std::string& out_dir, Progress& progress,
                               const CancelToken& cancel, int threads, const RegistrationScan& scan = {});

}  // namespace driftscan
