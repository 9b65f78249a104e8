#include "driftscan/mpi/jobs/job_runner.hpp"
#include "driftscan/core/omp_threads.hpp"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <optional>
#include <thread>

#include <fstream>

#include "driftscan/core/atomic_file.hpp"
#include "driftscan/core/error.hpp"
#include "driftscan/core/peak_memory.hpp"
#include "driftscan/formats/tiff/tiff_series.hpp"
#include "driftscan/formats/tiff/tiff_writer.hpp"
#include "driftscan/mpi/dft/stack_spectrum.hpp"
#include "driftscan/mpi/jobs/preflight.hpp"
#include "driftscan/mpi/register/distributed_average.hpp"
#include "driftscan/mpi/register/distributed_register.hpp"
#include "driftscan/mpi/register/follow_register.hpp"
#include "driftscan/mpi/register/signal_averages.hpp"
#include "driftscan/mpi/runtime/collectives.hpp"
#include "driftscan/mpi/runtime/command_report.hpp"
#include "driftscan/mpi/runtime/idle_wait.hpp"
#include "driftscan/mpi/runtime/job_input.hpp"
#include "driftscan/mpi/scan/global_scan.hpp"
#include "driftscan/pipeline/drift_averaging.hpp"
#include "driftscan/pipeline/rank_checkpoints.hpp"
#include "driftscan/pipeline/recorded_rotation.hpp"
#include "driftscan/pipeline/register_checkpoint.hpp"
#include "driftscan/pipeline/register_plan.hpp"
#include "driftscan/pipeline/scan_distortion_decision.hpp"
#include "driftscan/pipeline/serial_register.hpp"
#include "driftscan/registration/drift_table.hpp"
#include "driftscan/registration/drift_uncertainty.hpp"
#include "driftscan/registration/registration_failure.hpp"
#include "driftscan/spectra/power_spectrum.hpp"
#include "driftscan/synthetic/synthetic_series.hpp"

namespace driftscan::mpi {
namespace fs = std::filesystem;

namespace {

void make_output_folder(const std::string& folder) {
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec || !fs::is_directory(folder))
    throw failure(folder + ": cannot create the results folder (" + ec.message() + ")");
}

// Rank 0 does the work, the others wait; then every rank leaves with the
// same outcome (rank 0's error, or a cancel, is thrown on every rank), so
// nobody goes on to a collective that a stopped rank never joins.
template <class F>
void on_root(RunContext& ctx, F&& work) {
  std::optional<Error> error;
  if (ctx.rank == 0) {
    try {
      work();
    } catch (const Error& e) {
      error = e;
    } catch (const std::bad_alloc&) {
      error = Error(ErrorKind::failure, "out of memory");
    } catch (const std::exception& e) {
      error = Error(ErrorKind::failure, e.what());
    }
  }
  if (ctx.size > 1) {
    // Asleep and cancel-aware first: a cancelled rank leaves within the
    // cancel deadline even while rank 0 is still busy.
    cancellable_barrier(ctx);
    agree_on_outcome(ctx, error ? &*error : nullptr);
  } else if (error) {
    throw *error;
  }
}

// Peak resident memory of every rank, said once by rank 0 (what the scale
// benchmark reads, and what a user sizing frame_cache_mb wants to know).
// Said after the `result` event: `result` means the outputs are committed,
// and it goes out before this last collective so that a rank lost here is
// known to have been lost after the commit (the launcher then warns, exit 0).
void report_peak_memory(RunContext& ctx) {
  double mb = static_cast<double>(peak_resident_bytes()) / (1024.0 * 1024.0);
  std::vector<double> all(static_cast<std::size_t>(ctx.size));
  MPI_Gather(&mb, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, 0, ctx.comm);
  if (ctx.rank != 0) return;
  std::string line = "peak resident memory per rank (MB):";
  char buf[48];
  for (int r = 0; r < ctx.size; ++r) {
    std::snprintf(buf, sizeof buf, " %d:%.1f", r, all[static_cast<std::size_t>(r)]);
    line += buf;
  }
  ctx.progress.log(LogLevel::info, line);
}

int run_synth(const Job& job, RunContext& ctx) {
  std::string series = synth_series_path(job.output);
  nlohmann::json files;
  on_root(ctx, [&] {
    std::string folder = fs::path(series).parent_path().string();
    if (!folder.empty()) make_output_folder(folder);
    SynthOutputs out = write_synthetic_series(synth_options(job), series, &ctx.progress, &ctx.cancel);
    auto abs = [](const std::string& p) { return fs::absolute(p).lexically_normal().string(); };
    files = {{"series", abs(out.series)}, {"truth", abs(out.truth)}, {"reference", abs(out.reference)}};
    if (!out.lines_truth.empty()) files["lines_truth"] = abs(out.lines_truth);
    if (!out.hysteresis_truth.empty()) files["hysteresis_truth"] = abs(out.hysteresis_truth);
  });
  if (ctx.rank == 0) ctx.progress.result(files);
  report_peak_memory(ctx);
  return 0;
}

// A followed series with the scan-distortion correction: the follow
// registers rigidly as the frames come (its running average and drift.csv
// are what a live user watches); once it ends, the frames it took are
// registered again as one batch run with the correction, on every rank,
// and those results replace the follow's as one set. The correction needs
// the whole series (one drift path in time, a template from every
// direction), so it cannot run frame by frame. Too few frames (fewer than 2,
// or than the rotations given) or a follow stopped by a cancel keep the
// follow's rigid results, and the run says so.
template <class Announce>
void correct_followed_distortion(const Job& job, RunContext& ctx, std::size_t taken, bool cancelled,
                                 Announce&& announce) {
  const std::size_t needed = std::max<std::size_t>(2, job.scan.rotation.size());
  if (cancelled || taken < needed) {
    if (ctx.rank == 0)
      ctx.progress.log(LogLevel::warning, "scan distortion: not corrected (" +
                                              (cancelled ? std::string("the follow was cancelled")
                                                         : std::to_string(taken) + " frames taken, " +
                                                               std::to_string(needed) + " needed") +
                                              "); the follow's rigid results in " + job.output + " stand");
    return;
  }
  if (ctx.rank == 0)
    ctx.progress.log(LogLevel::info, "scan distortion: the " + std::to_string(taken) +
                                         " frames taken are registered again with the correction (as a batch "
                                         "register of them would be)");
  Job batch = job;
  batch.follow.enabled = false;
  batch.execution.resume = false;
  // The follow's checkpoint.dsck is what a later --follow --resume of the
  // grown series extends: the batch writes none of its own and leaves it.
  batch.execution.checkpoint_interval_s = 0;
  std::optional<OutputSet> set;
  open_output_set(batch, ctx, {job.input}, set);
  try {
    const DistributedRegisterResult r = register_distributed(batch, ctx, set ? &*set : nullptr, taken);
    if (ctx.rank == 0) announce(r.result, r.frames, &r.uncertainty);
    commit_outputs(ctx, set);
  } catch (const Error& e) {
    throw Error(e.kind(), std::string(e.what()) + "; the follow's rigid results in " + job.output + " stand");
  }
}

// Registration: the plan (register_plan.hpp) says which executor runs it —
// serial (one process, checkpointed), distributed (ranks × threads, the
// work-stealing scan, the scan-distortion phase) or follow.
int run_register(const Job& job, RunContext& ctx) {
  nlohmann::json files;
  // `logged`: the first warnings were said already (a follow says each as it happens).
  // `summary`: the uncertainty of every frame (null: none was estimated).
  auto announce = [&](const RegisterResult& r, std::size_t frames, const UncertaintySummary* summary,
                      std::size_t logged = 0) {
    for (std::size_t i = logged; i < r.warnings.size(); ++i) ctx.progress.log(LogLevel::warning, r.warnings[i]);
    auto abs = [](const std::string& p) { return fs::absolute(p).lexically_normal().string(); };
    files = {{"drift", abs(r.files.drift)},
             {"average", abs(r.files.average)},
             {"coverage", abs(r.files.coverage)},
             {"report", abs(r.files.report)}};
    if (!r.files.lines.empty()) files["lines"] = abs(r.files.lines);
    if (!r.files.average_rigid.empty()) files["average_rigid"] = abs(r.files.average_rigid);
    if (!r.files.sigma.empty()) files["sigma"] = abs(r.files.sigma);
    char line[200];
    std::snprintf(line, sizeof line,
                  "registered %zu frames in %.2f s: %.1f frames/s (pairs %.2f s, scan %.2f s, average %.2f s)", frames,
                  r.seconds.total, frames / std::max(1e-9, r.seconds.total), r.seconds.pairs, r.seconds.scan,
                  r.seconds.average);
    std::string final_line = line;
    if (summary) {
      const UncertaintySummary& u = *summary;
      std::snprintf(line, sizeof line, "; drift sigma median %.3g px, worst %.3g px (frame %zu)", u.median_sigma,
                    u.worst_sigma, u.worst_frame);
      final_line += line;
    }
    ctx.progress.log(LogLevel::info, final_line);
  };
  const RegisterPlan plan = plan_register(job, ctx.size);
  if (plan.executor == RegisterExecutor::follow) {
    unsigned long long taken[2] = {0, 0};  // frames taken; 1 if the follow was stopped by a cancel
    on_root(ctx, [&] {
      FollowResult f = follow_register(job, ctx.progress, ctx.cancel);
      ctx.progress.log(LogLevel::info,
                       "follow ended (" + f.stopped_by + ") after " + std::to_string(f.frames) + " frames" +
                           (f.resumed ? " (" + std::to_string(f.resumed) + " from the checkpoint)" : ""));
      const std::optional<UncertaintySummary> u =
          f.result.uncertainty.empty() ? std::nullopt : std::optional(summarize_uncertainty(f.result.uncertainty));
      announce(f.result, f.frames, u ? &*u : nullptr, f.logged_warnings);
      taken[0] = f.frames, taken[1] = f.stopped_by == "cancel";
    });
    if (job.scan.correct_distortion) {
      MPI_Bcast(taken, 2, MPI_UNSIGNED_LONG_LONG, 0, ctx.comm);
      correct_followed_distortion(job, ctx, static_cast<std::size_t>(taken[0]), taken[1] != 0, announce);
    }
    if (ctx.rank == 0) ctx.progress.result(files);
    report_peak_memory(ctx);
    return 0;
  }
  // --apply-to: the other signals are checked before any work (every rank: same error everywhere).
  const std::vector<std::string> apply_to = apply_to_signals(job);
  std::optional<OutputSet> set;
  open_output_set(job, ctx, {job.input}, set);
  try {
    if (plan.executor == RegisterExecutor::distributed) {
      const DistributedRegisterResult r = register_distributed(job, ctx, set ? &*set : nullptr);
      if (ctx.rank == 0) announce(r.result, r.frames, &r.uncertainty);
    } else {
      auto frames = open_job_input(job);
      RegisterResult r = register_serial(job, plan, *frames, ctx.progress, ctx.cancel, *set);
      const std::optional<UncertaintySummary> u =
          r.uncertainty.empty() ? std::nullopt : std::optional(summarize_uncertainty(r.uncertainty));
      announce(r, frames->frame_count(), u ? &*u : nullptr);
    }
    if (!apply_to.empty())
      on_root(ctx, [&] { files.update(average_signals(job, apply_to, ctx.progress, ctx.cancel, *set)); });
    commit_outputs(ctx, set);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::registration_failed) {
      // drift.csv and report.json (status registration_failed, no average)
      // are the run's answer: committed as a set like any other.
      commit_outputs(ctx, set);
      if (ctx.rank == 0) remove_checkpoints(job.output);  // a resume would fail the same way
      throw;
    }
    if (!set) throw;
    const Error explained = set->explain(e);
    if (e.kind() != ErrorKind::failure || job.execution.checkpoint_interval_s <= 0 ||
        checkpoint_files(job.output).empty())
      throw explained;
    throw Error(explained.kind(), std::string(explained.what()) + "; its checkpoints are kept: --resume continues");
  }
  if (ctx.rank == 0) remove_checkpoints(job.output);  // the outputs are complete: nothing left to resume
  if (ctx.rank == 0) ctx.progress.result(files);
  report_peak_memory(ctx);
  return 0;
}

// Averaging again with the drift of an earlier run (other method, rejection
// threshold, excluded frames) without registering again. Every rank averages
// its share (distributed_average.hpp); rank 0 writes average.tif,
// coverage.tif, quality.csv and report.json, committed as one set.
void average_and_write(const Job& job, RunContext& ctx, std::optional<OutputSet>& set, nlohmann::json& files);

int run_average(const Job& job, RunContext& ctx) {
  nlohmann::json files;
  std::optional<OutputSet> set;
  open_output_set(job, ctx, {job.input, job.averaging.drift}, set);
  try {
    average_and_write(job, ctx, set, files);
    commit_outputs(ctx, set);
  } catch (const Error& e) {
    if (set) throw set->explain(e);
    throw;
  }
  if (ctx.rank == 0) ctx.progress.result(files);
  report_peak_memory(ctx);
  return 0;
}

// run_average's work: every rank averages its share, rank 0 stages the files.
void average_and_write(const Job& job, RunContext& ctx, std::optional<OutputSet>& set, nlohmann::json& files) {
  auto frames = open_job_input(job);
  const DriftAveraging plan = plan_drift_averaging(job, *frames);
  for (const std::string& w : plan.warnings) ctx.progress.log(LogLevel::warning, w);
  const AveragingOptions& options = plan.options;
  const OmpThreadCount guard(job.execution.threads);
  const auto t0 = std::chrono::steady_clock::now();
  const std::clock_t c0 = std::clock();
  const AverageResult avg = average_distributed(ctx.comm, *frames, plan.to_frame0, options, &ctx.progress, &ctx.cancel);
  if (ctx.rank == 0) {
    // The CPU time too: on a machine other jobs load, the wall time says
    // little about how the work divides over ranks.
    char line[200];
    std::snprintf(line, sizeof line, "averaged %zu frames in %.2f s (rank 0: %.2f s CPU) on %d rank(s) x %d thread(s)",
                  frames->frame_count(), std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                  static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC, ctx.size,
                  std::max(1, job.execution.threads));
    ctx.progress.log(LogLevel::info, line);
  }
  on_root(ctx, [&] {
    for (const auto& w : avg.warnings) ctx.progress.log(LogLevel::warning, w);
    ctx.cancel.throw_if_cancelled();
    ctx.progress.phase("write", 4);
    TiffWriteOptions tw;
    tw.pixel_size = frames->pixel_size();
    tw.unit = frames->pixel_unit();
    set->write("average.tif", [&](const std::string& path) { write_tiff(path, avg.average, tw); });
    set->write("coverage.tif", [&](const std::string& path) { write_tiff(path, avg.coverage, tw); });
    set->write("sigma.tif", [&](const std::string& path) { write_tiff(path, avg.sigma, tw); });
    set->write("quality.csv", [&](const std::string& path) {
      AtomicFile file(path, "quality table");
      std::ostream& q = file.stream();
      q << "frame,quality,used\n";
      for (std::size_t k = 0; k < avg.quality.size(); ++k)
        q << k << ',' << avg.quality[k] << ',' << (k < avg.used.size() && avg.used[k] ? 1 : 0) << '\n';
      file.commit();
    });
    auto abs = [&](const char* name) { return fs::absolute(set->final_path(name)).lexically_normal().string(); };
    files = {{"average", abs("average.tif")},
             {"coverage", abs("coverage.tif")},
             {"sigma", abs("sigma.tif")},
             {"quality", abs("quality.csv")}};
    nlohmann::json listed = files;
    listed["report"] = abs(kOutputRecord);
    set->write(kOutputRecord,
               [&](const std::string& path) { write_command_report(path, job, *frames, listed, avg.warnings); });
    files["report"] = listed["report"];
    ctx.progress.advance(4);
  });
}

// The 3-D spectrum of the stack (raw, or registered with averaging.drift)
// with the distributed DFT, each rank reading its own slab of frames; then,
// on rank 0, the 2-D power spectra of the stack's average and of frame
// spectrum.frame (ln(1 + power), centred).
void spectrum_and_write(const Job& job, RunContext& ctx, const FrameSource& source, const StackSpectrumOptions& options,
                        std::optional<OutputSet>& set, nlohmann::json& files);

int run_spectrum(const Job& job, RunContext& ctx) {
  // Every rank opens the input and reads the drift table, so bad input stops
  // them all with the same one-line error before any collective.
  auto frames = open_job_input(job);
  const std::size_t count = frames->frame_count();
  const auto k = static_cast<std::size_t>(job.spectrum.frame);
  if (k >= count)
    throw bad_input(job.input + ": spectrum.frame " + std::to_string(k) + " is beyond the last frame (" +
                    std::to_string(count - 1) + ")");
  StackSpectrumOptions options;
  if (!job.averaging.drift.empty()) {
    const Point centre{(frames->width() - 1) / 2.0, (frames->height() - 1) / 2.0};
    DriftTable drift = read_drift_table(job.averaging.drift, centre);
    if (drift.to_frame0.size() != count)
      throw bad_input(job.averaging.drift + ": " + std::to_string(drift.to_frame0.size()) + " frames, but " +
                      job.input + " has " + std::to_string(count));
    // A flagged frame stays in the stack (the time axis needs every frame),
    // warped with whatever drift the table gives it.
    if (ctx.rank == 0 && !drift.flagged.empty())
      ctx.progress.log(LogLevel::warning, std::to_string(drift.flagged.size()) + " frame(s) flagged in " +
                                              job.averaging.drift + ": their drift may be wrong (frames " +
                                              compact_frame_list(drift.flagged) + ")");
    options.to_frame0 = std::move(drift.to_frame0);
  }
  options.interpolation = job.averaging.interpolation;
  options.max_frames = job.spectrum.max_frames;
  options.threads = std::max(1, job.execution.threads);
  std::optional<OutputSet> set;
  open_output_set(job, ctx, {job.input, job.averaging.drift}, set);
  nlohmann::json files;
  try {
    if (set) options.volume_path = set->stage("spectrum3d.tif");  // rank 0 writes the volume
    spectrum_and_write(job, ctx, *frames, options, set, files);
    commit_outputs(ctx, set);
  } catch (const Error& e) {
    if (set) throw set->explain(e);
    throw;
  }
  if (ctx.rank == 0) ctx.progress.result(files);
  report_peak_memory(ctx);
  return 0;
}

// run_spectrum's work: the 3-D spectrum over all ranks, then the 2-D spectra
// and the report staged on rank 0.
void spectrum_and_write(const Job& job, RunContext& ctx, const FrameSource& source, const StackSpectrumOptions& options,
                        std::optional<OutputSet>& set, nlohmann::json& files) {
  const FrameSource* const frames = &source;
  const std::size_t count = frames->frame_count();
  const auto k = static_cast<std::size_t>(job.spectrum.frame);
  StackSpectrumResult r = compute_stack_spectrum(*frames, options, ctx);
  on_root(ctx, [&] {
    char line[300];
    std::snprintf(line, sizeof line,
                  "3-D spectrum of the %s stack: %zu planes (%zu frame%s each) x %zu x %zu, %s: read %.2f s, "
                  "transform %.2f s, write %.2f s",
                  options.to_frame0.empty() ? "raw" : "registered", r.size[0], r.bin, r.bin == 1 ? "" : "s", r.size[1],
                  r.size[2], r.decomposition.c_str(), r.read_s, r.transform_s, r.write_s);
    ctx.progress.log(LogLevel::info, line);
    if (r.frames_used < count)
      ctx.progress.log(LogLevel::warning, "the last " + std::to_string(count - r.frames_used) +
                                              " frames fill no whole bin and are left out of the 3-D spectrum");
    const PowerSpectrum ps(frames->width(), frames->height());
    set->write("spectrum_average.tif", [&](const std::string& path) { write_tiff(path, ps.log_power(r.average)); });
    const Frame f = frames->frame(k);
    ctx.cancel.throw_if_cancelled();
    set->write("spectrum.tif", [&](const std::string& path) { write_tiff(path, ps.log_power(f)); });
    const SpectrumPeak pa = ps.strongest_peak(r.average), pf = ps.strongest_peak(f);
    std::snprintf(line, sizeof line,
                  "strongest lattice peak: average period %.3f px, sharpness %.1f; frame %zu period %.3f px, "
                  "sharpness %.1f",
                  pa.period, pa.sharpness, k, pf.period, pf.sharpness);
    ctx.progress.log(LogLevel::info, line);
    auto abs = [&](const char* name) { return fs::absolute(set->final_path(name)).lexically_normal().string(); };
    files = {{"spectrum", abs("spectrum.tif")},
             {"spectrum_average", abs("spectrum_average.tif")},
             {"spectrum3d", abs("spectrum3d.tif")}};
    nlohmann::json listed = files;
    listed["report"] = abs(kOutputRecord);
    set->write(kOutputRecord, [&](const std::string& path) { write_command_report(path, job, *frames, listed, {}); });
    files["report"] = listed["report"];
  });
}

}  // namespace

bool job_command_available(const std::string&) { return true; }

int run_job(const Job& given, RunContext& ctx) {
  std::string rotations_said, said;
  const Job job = with_scan_distortion_decided(with_recorded_rotations(given, rotations_said), said);
  preflight(job, ctx);  // before OpenMP sees the thread count, before any frame is read
  const OmpThreadCount threads_for_the_run(job.execution.threads);
  nlohmann::json details{{"ranks", ctx.size},
                         {"threads", job.execution.threads},
                         {"host", host_name()},
                         {"input", job.input},
                         {"output", job.output}};
  if (ctx.rank == 0) ctx.progress.start(job.command, details);
  if (ctx.rank == 0 && !rotations_said.empty()) ctx.progress.log(LogLevel::info, rotations_said);
  if (ctx.rank == 0 && !said.empty())
    ctx.progress.log(job.scan.correct_distortion ? LogLevel::info : LogLevel::warning, said);
  if (job.command == "synth") return run_synth(job, ctx);
  if (job.command == "register") return run_register(job, ctx);
  if (job.command == "average" && !job.averaging.lines.empty()) return run_average_with_lines(job, ctx);
  if (job.command == "average") return run_average(job, ctx);
  if (job.command == "spectrum") return run_spectrum(job, ctx);
  throw bad_input("job: unknown command '" + job.command + "'");
}

}  // namespace driftscan::mpi
