#include "driftscan/pipeline/register_plan.hpp"

#include <algorithm>
#include <filesystem>

#include "driftscan/core/error.hpp"
#include "driftscan/pipeline/rank_checkpoints.hpp"
#include "driftscan/pipeline/register_checkpoint.hpp"
#include "driftscan/scan_distortion/scan_distortion.hpp"

namespace driftscan {
namespace fs = std::filesystem;

const char* to_string(RegisterExecutor executor) {
  switch (executor) {
    case RegisterExecutor::serial: return "serial";
    case RegisterExecutor::distributed: return "distributed";
    case RegisterExecutor::follow: return "follow";
  }
  return "unknown";
}

const char* to_string(RegisterPhase phase) {
  switch (phase) {
    case RegisterPhase::open: return "open";
    case RegisterPhase::pairs: return "pairs";
    case RegisterPhase::scan: return "scan";
    case RegisterPhase::uncertainty: return "uncertainty";
    case RegisterPhase::scan_distortion: return "scan_distortion";
    case RegisterPhase::average: return "average";
    case RegisterPhase::apply_to: return "apply_to";
    case RegisterPhase::write: return "write";
  }
  return "unknown";
}

bool RegisterPlan::has(RegisterPhase phase) const {
  return std::find(phases.begin(), phases.end(), phase) != phases.end();
}

std::size_t prepared_cache_bytes(const Job& job, int width, int height) {
  const double bytes = job.execution.frame_cache_mb * 1024.0 * 1024.0 / 4.0;
  const double small = std::min(bytes, 256.0 * 1024.0 * 1024.0);
  // Frame 0's reference pyramid (4 images of 4/3 the frame) and one moving
  // pyramid (1 x 4/3): every scan step and every uncertainty reuses frame 0.
  const double pixels = static_cast<double>(std::max(0, width)) * std::max(0, height);
  const double reuse = pixels * sizeof(float) * (4.0 / 3.0) * 5.0 * 1.05;
  const double budget = job.execution.memory_budget_mb * 1024.0 * 1024.0;
  return static_cast<std::size_t>(std::min(std::max(small, reuse), 0.375 * budget));
}

std::size_t kept_contribution_bytes(const Job& job) {
  const double sixteenth = job.execution.memory_budget_mb * 1024.0 * 1024.0 / 16.0;
  return static_cast<std::size_t>(std::min(sixteenth, static_cast<double>(ContributionBudget::kDefaultBytes)));
}

namespace {
// Threads, from 1 up to `threads`, while one thread's bytes and `more` for
// each further thread stay within the job's budget.
int threads_within_budget(const Job& job, double one, double more) {
  const double budget = job.execution.memory_budget_mb * 1024.0 * 1024.0;
  int threads = 1;
  while (threads < job.execution.threads && one + threads * more <= budget) ++threads;
  return threads;
}

double grid_bytes(int width, int height) {
  return static_cast<double>(std::max(0, width)) * std::max(0, height) * sizeof(float);
}
}  // namespace

// Peak resident memory in the distributed scan (`register --scan-distortion`,
// one rank, 10 x 4096², the pairs' buffers released): the phase holds 1.15 GB
// with one worker, 1.28 GB with two. One is taken as 100 MB and 18 float
// grids of the frame's size (the frame and prepared caches, within their own
// bounds), a further worker as 4 (its moving pyramid and refinement buffers).
int registration_scan_threads(const Job& job, int width, int height) {
  const double grid = grid_bytes(width, height);
  return threads_within_budget(job, 100.0 * 1024.0 * 1024.0 + 18.0 * grid, 4.0 * grid);
}

// Peak resident memory of the scan-distortion phase, one rank, 10 x 4096²
// (the pairs' buffers released): one thread 1.52 GB, two 2.25 GB: a second
// thread holds ~11 more float grids of the frame's size (its frame, the
// template without it, its samples and the fits' buffers). One thread is
// taken as 100 MB and 24 grids, a further one as 12.
int scan_distortion_threads(const Job& job, int width, int height) {
  const double grid = grid_bytes(width, height);
  return threads_within_budget(job, 100.0 * 1024.0 * 1024.0 + 24.0 * grid, 12.0 * grid);
}

// The same estimate of the correction's working set as scan_distortion_threads:
// its measured peaks include the reader's cache of frame_cache_mb, full of
// frames that never hit on the correction's cycles over the series, and the
// kept frames share theirs with it. What the budget leaves beside that
// (10 x 4096², one thread: the budget's 2 GB less 1.64 GB, 6 of 10 frames;
// measured peaks in docs/benchmarks.md, Large frames, fourteenth pass).
// Less than half the rank's frames kept saves less than half the decoding
// while holding the memory the whole run (100 x 4096², or a long series of
// small frames, would sit at the budget for a few per cent): none then.
std::size_t correction_kept_frame_bytes(const Job& job, int width, int height, int threads, std::size_t frames) {
  const double grid = grid_bytes(width, height);
  const double working = 100.0 * 1024.0 * 1024.0 + 24.0 * grid + std::max(0, threads - 1) * 12.0 * grid;
  const double left = job.execution.memory_budget_mb * 1024.0 * 1024.0 - working;
  const double all = static_cast<double>(frames) * grid;
  if (left < 0.5 * all) return 0;
  return static_cast<std::size_t>(std::min(left, all));
}

namespace {

// A single rank resumes a multi-rank run's checkpoints through the
// distributed executor (it merges per-rank files; the serial one reads only its own).
bool has_rank_checkpoints(const Job& job) {
  if (!job.execution.resume) return false;
  const fs::path serial = fs::path(checkpoint_path(job.output)).filename();
  for (const auto& f : checkpoint_files(job.output))
    if (fs::path(f).filename() != serial) return true;
  return false;
}

void choose_executor(const Job& job, RegisterPlan& plan) {
  if (job.follow.enabled) {
    // A followed series is registered by rank 0 alone (the batch run is the
    // cluster path); the other ranks wait.
    plan.executor = RegisterExecutor::follow;
    plan.reason = "the series is followed while it is written";
  } else if (plan.ranks > 1) {
    plan.executor = RegisterExecutor::distributed;
    plan.reason = "several ranks";
  } else if (plan.rank_checkpoints) {
    plan.executor = RegisterExecutor::distributed;
    plan.reason = "resuming a multi-rank run's checkpoints";
  } else if (job.scan.correct_distortion) {
    // The scan-distortion correction is a phase of the distributed executor (one rank included).
    plan.executor = RegisterExecutor::distributed;
    plan.reason = "the scan-distortion correction";
  } else {
    plan.executor = RegisterExecutor::serial;
    plan.reason = "one rank";
  }
}

}  // namespace

RegisterPlan plan_register(const Job& job, int ranks) {
  if (job.follow.enabled && !job.apply_to.empty()) throw bad_input("--apply-to cannot be combined with --follow");
  RegisterPlan plan;
  plan.ranks = std::max(1, ranks);
  plan.threads = std::max(1, job.execution.threads);
  plan.resume = job.execution.resume;
  plan.rank_checkpoints = has_rank_checkpoints(job);
  plan.checkpoint_interval_s = job.execution.checkpoint_interval_s;
  plan.frame_cache_bytes = static_cast<std::size_t>(job.execution.frame_cache_mb * 1024.0 * 1024.0);
  choose_executor(job, plan);
  using P = RegisterPhase;
  plan.phases = {P::open, P::pairs, P::scan, P::uncertainty};
  if (job.scan.correct_distortion && plan.executor == RegisterExecutor::distributed)
    plan.phases.push_back(P::scan_distortion);
  plan.phases.push_back(P::average);
  if (!job.apply_to.empty()) plan.phases.push_back(P::apply_to);
  plan.phases.push_back(P::write);
  return plan;
}

}  // namespace driftscan
