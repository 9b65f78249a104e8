// The register plan's decisions (register_plan.hpp), checked without running
// anything: which executor, which phases in which order, what a resume finds
// in the results folder; and the serial executor against the plan: an
// interrupted run resumed from its checkpoint gives the same drift as one
// run straight through.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "driftscan/core/error.hpp"
#include "driftscan/job/output_set.hpp"
#include "driftscan/pipeline/register_checkpoint.hpp"
#include "driftscan/pipeline/register_plan.hpp"
#include "driftscan/pipeline/serial_register.hpp"
#include "driftscan/synthetic/synthetic_series.hpp"
#include "scratch_folder.hpp"

using namespace driftscan;
namespace fs = std::filesystem;

namespace {

struct TempDir : driftscan::test::TestScratchFolder {
  TempDir() : TestScratchFolder("driftscan_plan_", true) {}
};

Job register_job(const std::string& out) {
  Job job;
  job.command = "register";
  job.input = "series.tif";
  job.output = out;
  job.execution.threads = 2;
  return job;
}

std::vector<RegisterPhase> phases(std::initializer_list<RegisterPhase> p) { return p; }

}  // namespace

TEST(RegisterPlan, OneRankRunsSerially) {
  TempDir dir;
  const RegisterPlan plan = plan_register(register_job(dir.path.string()), 1);
  EXPECT_EQ(plan.executor, RegisterExecutor::serial);
  EXPECT_EQ(plan.threads, 2);
  using P = RegisterPhase;
  EXPECT_EQ(plan.phases, phases({P::open, P::pairs, P::scan, P::uncertainty, P::average, P::write}));
  EXPECT_FALSE(plan.has(P::scan_distortion));
}

TEST(RegisterPlan, SeveralRanksOrTheScanDistortionRunDistributed) {
  TempDir dir;
  Job job = register_job(dir.path.string());
  EXPECT_EQ(plan_register(job, 4).executor, RegisterExecutor::distributed);
  job.scan.correct_distortion = true;
  const RegisterPlan plan = plan_register(job, 1);
  EXPECT_EQ(plan.executor, RegisterExecutor::distributed);
  using P = RegisterPhase;
  EXPECT_EQ(plan.phases,
            phases({P::open, P::pairs, P::scan, P::uncertainty, P::scan_distortion, P::average, P::write}));
}

TEST(RegisterPlan, FollowAndApplyToAreDecidedOnce) {
  TempDir dir;
  Job job = register_job(dir.path.string());
  job.apply_to = "all";
  EXPECT_TRUE(plan_register(job, 1).has(RegisterPhase::apply_to));
  job.follow.enabled = true;
  try {
    plan_register(job, 2);
    FAIL() << "--apply-to with --follow was planned";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::bad_input);
  }
  job.apply_to.clear();
  EXPECT_EQ(plan_register(job, 2).executor, RegisterExecutor::follow);
}

TEST(RegisterPlan, AOneRankResumeOfAMultiRankRunIsDistributed) {
  TempDir dir;
  Job job = register_job(dir.path.string());
  job.execution.resume = true;
  EXPECT_EQ(plan_register(job, 1).executor, RegisterExecutor::serial);
  std::ofstream(dir.path / "checkpoint.dsck") << "x";
  EXPECT_EQ(plan_register(job, 1).executor, RegisterExecutor::serial);  // the serial one's own file
  std::ofstream(dir.path / "checkpoint.rank-1.dsck") << "x";
  const RegisterPlan plan = plan_register(job, 1);
  EXPECT_TRUE(plan.rank_checkpoints);
  EXPECT_EQ(plan.executor, RegisterExecutor::distributed);
  job.execution.resume = false;  // without --resume the files are an earlier run's, to be removed
  EXPECT_EQ(plan_register(job, 1).executor, RegisterExecutor::serial);
}

TEST(RegisterPlan, SerialExecutorResumesToTheSameDrift) {
  SynthOptions o;
  o.frames = 24;
  o.width = o.height = 96;
  o.seed = 7;
  SyntheticSeries frames(o);
  TempDir dir;
  const fs::path straight = dir.path / "straight", resumed = dir.path / "resumed";
  auto progress = make_silent_progress();
  CancelToken cancel;
  Job job = register_job(straight.string());
  job.input = "synthetic";
  job.execution.checkpoint_interval_s = 1e9;  // saved only when the scan completes
  RegisterResult a;
  {
    OutputSet set(job.output, "register");
    a = register_serial(job, plan_register(job, 1), frames, *progress, cancel, set);
    set.commit();
  }
  EXPECT_TRUE(fs::exists(checkpoint_path(job.output)));  // the caller removes it once committed
  // The checkpoint of the finished scan resumes without pairs and scan.
  fs::create_directories(resumed);
  fs::copy_file(checkpoint_path(job.output), checkpoint_path(resumed.string()));
  job.output = resumed.string();
  job.execution.resume = true;
  OutputSet set(job.output, "register");
  const RegisterResult b = register_serial(job, plan_register(job, 1), frames, *progress, cancel, set);
  set.commit();
  EXPECT_TRUE(b.applications.empty());  // no operator application: the scan was not run again
  ASSERT_EQ(a.registrations.size(), b.registrations.size());
  for (std::size_t k = 0; k < a.registrations.size(); ++k) {
    EXPECT_EQ(a.registrations[k].transform.tx, b.registrations[k].transform.tx) << k;
    EXPECT_EQ(a.registrations[k].transform.ty, b.registrations[k].transform.ty) << k;
  }
}

// With two threads the serial executor computes each frame's uncertainty
// beside the scan's next step (one thread: after its own step): the same
// calls on the same registrations, so drift and sigma are bit for bit those
// of one thread.
TEST(RegisterPlan, SerialExecutorGivesTheSameSigmaOnOneAndTwoThreads) {
  SynthOptions o;
  o.frames = 12;
  o.width = o.height = 128;
  o.dose = 8;
  o.seed = 5;
  SyntheticSeries frames(o);
  TempDir dir;
  auto progress = make_silent_progress();
  CancelToken cancel;
  std::vector<RegisterResult> runs;
  for (const int threads : {1, 2}) {
    Job job = register_job((dir.path / ("t" + std::to_string(threads))).string());
    job.input = "synthetic";
    job.execution.threads = threads;
    OutputSet set(job.output, "register");
    runs.push_back(register_serial(job, plan_register(job, 1), frames, *progress, cancel, set));
    set.commit();
  }
  const RegisterResult &one = runs[0], &two = runs[1];
  ASSERT_EQ(one.uncertainty.size(), o.frames);
  ASSERT_EQ(two.uncertainty.size(), o.frames);
  for (std::size_t k = 0; k < o.frames; ++k) {
    EXPECT_EQ(one.registrations[k].transform.tx, two.registrations[k].transform.tx) << k;
    EXPECT_EQ(one.registrations[k].transform.ty, two.registrations[k].transform.ty) << k;
    EXPECT_EQ(one.uncertainty[k].sigma_dx, two.uncertainty[k].sigma_dx) << k;
    EXPECT_EQ(one.uncertainty[k].sigma_dy, two.uncertainty[k].sigma_dy) << k;
    EXPECT_EQ(one.uncertainty[k].cov_dxdy, two.uncertainty[k].cov_dxdy) << k;
  }
  EXPECT_GT(two.uncertainty[o.frames - 1].sigma_dx, 0.0);  // the last frame's, after the scan's last step
}

// The scan-distortion correction's threads: as many as asked where the
// budget holds their grids; at 4096² the default 2 GB holds one thread's.
TEST(RegisterPlan, ScanDistortionThreadsFitTheBudget) {
  Job job = register_job("out");  // 2 threads, 2048 MB
  EXPECT_EQ(scan_distortion_threads(job, 2048, 2048), 2);
  EXPECT_EQ(scan_distortion_threads(job, 4096, 4096), 1);
  EXPECT_EQ(registration_scan_threads(job, 4096, 4096), 2);  // 100 MB + 22 grids within 2 GB
  job.execution.memory_budget_mb = 4096;
  EXPECT_EQ(scan_distortion_threads(job, 4096, 4096), 2);
  job.execution.threads = 8;
  EXPECT_EQ(scan_distortion_threads(job, 4096, 4096), 4);  // 100 MB + (24 + 12 (t - 1)) grids of 64 MB within 4 GB
  EXPECT_EQ(registration_scan_threads(job, 4096, 4096), 8);
  EXPECT_EQ(scan_distortion_threads(job, 256, 256), 8);
  job.execution.threads = 1;
  job.execution.memory_budget_mb = 64;
  EXPECT_EQ(scan_distortion_threads(job, 4096, 4096), 1);  // never fewer than one
}

// The prepared-frame cache: unchanged on small frames; on large ones big
// enough for frame 0's reference pyramid and one moving pyramid (else every
// scan step rebuilds frame 0's), but never past 3/8 of the memory budget.
TEST(RegisterPlan, PreparedCacheHoldsFrameZeroWithinTheBudget) {
  Job job = register_job("out");
  const std::size_t mb = std::size_t(1) << 20;
  EXPECT_EQ(prepared_cache_bytes(job, 256, 256), 64 * mb);  // a quarter of the 256 MB frame cache
  const double px = 4096.0 * 4096.0, reference = px * 4 * (4.0 / 3.0) * 4, moving = px * 4 * (4.0 / 3.0);
  EXPECT_GE(static_cast<double>(prepared_cache_bytes(job, 4096, 4096)), reference + moving);
  EXPECT_LE(prepared_cache_bytes(job, 4096, 4096), static_cast<std::size_t>(0.375 * 2048) * mb);
  job.execution.memory_budget_mb = 512;
  EXPECT_EQ(prepared_cache_bytes(job, 4096, 4096), 192 * mb);
  job.execution.memory_budget_mb = 64;  // the budget bounds the small-frame cache too
  EXPECT_EQ(prepared_cache_bytes(job, 256, 256), 24 * mb);
}

TEST(RegisterPlan, KeptContributionsComeOutOfTheBudget) {
  Job job = register_job("out");
  const std::size_t mb = std::size_t(1) << 20;
  EXPECT_EQ(kept_contribution_bytes(job), 128 * mb);  // default 2048 MB: a sixteenth
  job.execution.memory_budget_mb = 1024;
  EXPECT_EQ(kept_contribution_bytes(job), 64 * mb);
  job.execution.memory_budget_mb = 16384;  // never more than the 512 MB that pays (later frames are sampled again)
  EXPECT_EQ(kept_contribution_bytes(job), 512 * mb);
}

// The correction's kept frames: what the budget leaves beside the working
// set scan_distortion_threads estimates (100 MB and 24 frame-sized grids,
// 12 more a further thread).
TEST(RegisterPlan, KeptFramesTakeWhatTheBudgetLeavesBesideTheCorrection) {
  Job job = register_job("out");
  const std::size_t mb = std::size_t(1) << 20;
  EXPECT_EQ(correction_kept_frame_bytes(job, 4096, 4096, 1, 10), 412 * mb);  // 2048 - 100 - 24 x 64: 6 of 64 MB
  EXPECT_EQ(correction_kept_frame_bytes(job, 4096, 4096, 2, 10), 0u);        // a second thread's grids take it all
  EXPECT_EQ(correction_kept_frame_bytes(job, 1024, 1024, 2, 600), (2048 - 100 - 36 * 4) * mb);  // 451 of 600
  EXPECT_EQ(correction_kept_frame_bytes(job, 1024, 1024, 2, 20), 80 * mb);  // the rank's 20 frames of 4 MB, no more
  // Less than half the rank's frames kept: none (100 x 4096², or 8,000 of 1024²).
  EXPECT_EQ(correction_kept_frame_bytes(job, 4096, 4096, 1, 100), 0u);
  EXPECT_EQ(correction_kept_frame_bytes(job, 1024, 1024, 2, 8000), 0u);
  job.execution.memory_budget_mb = 1024;
  EXPECT_EQ(correction_kept_frame_bytes(job, 4096, 4096, 1, 10), 0u);
}
