#pragma once
// A register run's decisions, held as data and made once, before any frame
// is read: which executor runs it (one process, ranks × threads, or a
// followed acquisition), which phases it goes through, whether it resumes,
// and the caches it may hold. The executors carry the plan out; they do not
// decide again. The same split as the distributed DFT's plan logic
// (mpi/dft/dft_plan_logic.hpp): decisions that a unit test can check
// without running anything.
//
//   open ─▶ pairs ─▶ scan ─▶ uncertainty ─▶ [scan distortion] ─▶ average ─▶ [apply to] ─▶ write
//
// Executors: serial_register.hpp (this library: one process, OpenMP threads,
// checkpoints; no MPI), mpi/register/distributed_register.hpp (ranks × threads,
// the work-stealing scan, per-rank checkpoints, the scan-distortion phase)
// and mpi/register/follow_register.hpp (a series still being written).
#include <cstddef>
#include <string>
#include <vector>

#include "driftscan/job/job.hpp"

namespace driftscan {

enum class RegisterExecutor { serial, distributed, follow };
enum class RegisterPhase { open, pairs, scan, uncertainty, scan_distortion, average, apply_to, write };
const char* to_string(RegisterExecutor executor);
const char* to_string(RegisterPhase phase);

struct RegisterPlan {
  RegisterExecutor executor = RegisterExecutor::serial;
  std::string reason;  // why this executor, in a few words
  int ranks = 1;
  int threads = 1;                     // OpenMP threads per rank
  bool resume = false;                 // continue from the results folder's checkpoints
  bool rank_checkpoints = false;       // a multi-rank run's checkpoints are there
  double checkpoint_interval_s = 0.0;  // 0: no checkpoints
  std::size_t frame_cache_bytes = 0;   // decoded frames
  std::vector<RegisterPhase> phases;   // in order

  bool has(RegisterPhase phase) const;
};

// The plan for `job` (command register) on `ranks` ranks. Reads the results
// folder only for its checkpoint files, when the job resumes. Throws
// bad_input for what no executor runs (--apply-to with --follow).
RegisterPlan plan_register(const Job& job, int ranks);

// The registration operator's cache of prepared frames (pyramids) for
// frames of width x height: a quarter of execution.frame_cache_mb, at most
// 256 MB, or — when frame 0's reference pyramid and one moving pyramid need
// more (frames of 2048^2 and up) — that much; never more than 3/8 of
// execution.memory_budget_mb. The scan reuses only a few prepared frames at
// a time (frame 0, each worker's segment start); without frame 0 kept, every
// step and every uncertainty rebuilt its pyramid (a large frame's main cost).
std::size_t prepared_cache_bytes(const Job& job, int width, int height);

// The scan-distortion correction's kept frame contributions (each frame's
// samples from a round's average, reused by its leave-one-out template;
// ContributionBudget): a sixteenth of execution.memory_budget_mb, at most
// ContributionBudget::kDefaultBytes (512 MB). Frames beyond it are spilled
// to a temporary file (ContributionSpill) and read back, or where none can
// be written sampled again: the same values either way.
std::size_t kept_contribution_bytes(const Job& job);

// The scan-distortion correction's decoded frames kept for its whole run
// (KeptFrames: it reads every frame five times) for frames of width x
// height on `threads` threads: what execution.memory_budget_mb leaves
// beside the correction's own working set (scan_distortion_threads'
// estimate for those threads) and the reader's cache of
// execution.frame_cache_mb, which holds decoded frames of its own; at most
// the rank's `frames` frames, and 0 when that is less than half of them.
std::size_t correction_kept_frame_bytes(const Job& job, int width, int height, int threads, std::size_t frames);

// The distributed scan's threads per rank for frames of width x height, at
// most execution.threads: each worker scans from its own segment start
// (a reference pyramid of its own beside frame 0's) with its moving pyramid
// and the refinement's buffers, so a worker is added only while
// execution.memory_budget_mb holds them (estimates from measured peaks,
// registration_scan_threads in register_plan.cpp). At least 1.
int registration_scan_threads(const Job& job, int width, int height);

// The scan-distortion correction's threads for frames of width x height, at
// most execution.threads: each thread fits and resamples one frame at a time
// with grids of its own, so a thread is added only while
// execution.memory_budget_mb holds what one thread needs and the extra
// thread's grids too (estimates from measured peaks, scan_distortion_threads
// in register_plan.cpp). At least 1.
int scan_distortion_threads(const Job& job, int width, int height);

}  // namespace driftscan
