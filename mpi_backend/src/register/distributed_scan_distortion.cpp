#include "driftscan/mpi/register/distributed_scan_distortion.hpp"
#include "driftscan/core/omp_threads.hpp"

#include <mpi.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "driftscan/core/error.hpp"
#include "driftscan/core/large_allocations.hpp"
#include "driftscan/mpi/runtime/allgather_records.hpp"
#include "driftscan/mpi/runtime/collectives.hpp"
#include "driftscan/mpi/runtime/command_report.hpp"
#include "driftscan/mpi/runtime/job_input.hpp"
#include "driftscan/scan_distortion/fast_axis_binning.hpp"

namespace driftscan::mpi {
namespace {

// Runs this rank's part, then agrees with the others: a failure or a cancel
// on any rank ends every rank (nobody is left waiting in the next collective).
template <class Body>
void together(RunContext& ctx, Body&& body) {
  try {
    body();
  } catch (const Error& e) {
    agree_on_outcome(ctx, &e);
    throw;
  } catch (const std::exception& e) {
    const Error wrapped(ErrorKind::failure, e.what());
    agree_on_outcome(ctx, &wrapped);
    throw wrapped;
  }
  agree_on_outcome(ctx, nullptr);
}

// The average of every rank's frames under `model`: the grid covering all
// frames, each rank's sums added up (on every rank, or on rank 0 only).
SpecimenImage combined_average(const FrameSource& frames, const ScanTiming& timing, const ScanModel& model,
                               std::size_t lo, std::size_t hi, RunContext& ctx, bool everywhere,
                               std::size_t& progress_done, const std::vector<char>& left_out,
                               AverageNoise* noise = nullptr, std::vector<FrameContribution>* kept = nullptr,
                               double from_sample = 0.0, std::size_t kept_bytes = 0) {
  SpecimenExtent extent;
  together(ctx, [&] {
    for (std::size_t k = lo; k < hi; ++k)
      if (!left_out[k]) extent.merge(frame_extent(FrameScanMap(timing, model, k), timing));
  });
  double bounds[4] = {-extent.xmin, extent.xmax, -extent.ymin, extent.ymax};
  MPI_Allreduce(MPI_IN_PLACE, bounds, 4, MPI_DOUBLE, MPI_MAX, ctx.comm);
  extent = {-bounds[0], bounds[1], -bounds[2], bounds[3]};
  SpecimenGrid grid;
  // Sums and coverage of the even frames, then (with `noise`) of the odd
  // ones: by the frame's own index, so the halves are the same for any ranks.
  const std::size_t halves = noise ? 2 : 1;
  // The final average (no noise, nothing kept) carries its standard error:
  // squares summed apart, in a reduction of their own (the sums' stays as it was).
  const bool final_average = !noise && !kept;
  // Each grid is reduced where it was summed (no packed copy of them all:
  // on 4096^2 frames every grid of doubles is ~140 MB).
  std::vector<double> sum[2], coverage[2], squares;
  double counted[2] = {0.0, 0.0};  // the frames counted in each half
  together(ctx, [&] {
    grid = SpecimenGrid::covering(extent, timing);
    const std::size_t size = static_cast<std::size_t>(grid.width) * static_cast<std::size_t>(grid.height);
    squares.assign(final_average ? size : 0, 0.0);
    for (std::size_t h = 0; h < halves; ++h) sum[h].assign(size, 0.0), coverage[h].assign(size, 0.0);
    ContributionBudget budget(kept, kept_bytes);
    for (std::size_t k = lo; k < hi; ++k) {
      ctx.cancel.throw_if_cancelled();
      if (left_out[k]) {
        budget.keep(FrameContribution{});
        ctx.progress.advance(++progress_done);
        continue;
      }
      counted[k % 2] += 1.0;
      const std::size_t half = k % halves;
      FrameContribution c =
          sample_in_specimen_coordinates(*frames.shared_frame(k), FrameScanMap(timing, model, k), grid, from_sample);
      add_contribution(c, grid, sum[half], coverage[half]);
      if (final_average) add_contribution_squares(c, grid, squares);
      budget.keep(std::move(c));
      ctx.progress.advance(++progress_done);
    }
  });
  auto reduce = [&](double* data, std::size_t count) {
    const int n = static_cast<int>(count);
    if (everywhere) MPI_Allreduce(MPI_IN_PLACE, data, n, MPI_DOUBLE, MPI_SUM, ctx.comm);
    else if (ctx.rank == 0) MPI_Reduce(MPI_IN_PLACE, data, n, MPI_DOUBLE, MPI_SUM, 0, ctx.comm);
    else MPI_Reduce(data, nullptr, n, MPI_DOUBLE, MPI_SUM, 0, ctx.comm);
  };
  for (std::size_t h = 0; h < halves; ++h) {
    reduce(sum[h].data(), sum[h].size());
    reduce(coverage[h].data(), coverage[h].size());
  }
  reduce(counted, 2);
  if (final_average) reduce(squares.data(), squares.size());
  if (!everywhere && ctx.rank != 0) return {};
  if (final_average) {
    SpecimenImage out = finish_specimen_average(grid, sum[0], coverage[0]);
    out.sigma = specimen_sigma(grid, sum[0], squares, coverage[0]);
    return out;
  }
  if (!noise) return finish_specimen_average(grid, sum[0], coverage[0]);
  return finish_split_average(grid, sum, coverage, static_cast<std::size_t>(counted[0]),
                              static_cast<std::size_t>(counted[1]), *noise);
}

// Each frame's row of `width` numbers (rows[k], frames lo .. hi - 1 this
// rank's; ranks hold consecutive blocks) to rank 0, in frame order: there
// rows has every frame's (a row missing on its rank comes as zeros).
void gather_frame_rows(RunContext& ctx, std::vector<std::vector<double>>& rows, std::size_t lo, std::size_t hi,
                       std::size_t width) {
  const std::size_t ranks = static_cast<std::size_t>(ctx.size);
  std::vector<double> flat;
  flat.reserve((hi - lo) * width);
  for (std::size_t k = lo; k < hi; ++k) {
    const std::size_t have = k < rows.size() ? std::min(rows[k].size(), width) : 0;
    if (have > 0) flat.insert(flat.end(), rows[k].begin(), rows[k].begin() + static_cast<long>(have));
    flat.resize(flat.size() + width - have, 0.0);
  }
  std::vector<int> counts(ranks), displs(ranks, 0);
  const int my_count = static_cast<int>(flat.size());
  MPI_Gather(&my_count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, ctx.comm);
  std::vector<double> all;
  if (ctx.rank == 0) {
    long total = 0;
    for (std::size_t r = 0; r < ranks; ++r) displs[r] = static_cast<int>(total), total += counts[r];
    all.resize(static_cast<std::size_t>(total));
  }
  MPI_Gatherv(flat.data(), my_count, MPI_DOUBLE, all.data(), counts.data(), displs.data(), MPI_DOUBLE, 0, ctx.comm);
  if (ctx.rank != 0 || width == 0) return;
  const std::size_t n = all.size() / width;
  rows.resize(std::max(rows.size(), n));
  for (std::size_t k = 0; k < n; ++k)
    rows[k].assign(all.begin() + static_cast<long>(k * width), all.begin() + static_cast<long>((k + 1) * width));
}
// This rank's frames [lo, hi) fitted against the round's template, a batch
// at a time, one frame a thread (fit_frames; one thread fits one frame at a
// time: a second held frame would only take memory): their band samples,
// the summed fit variances (precision: sum, count) and each frame's line
// offsets (`lines`, from lo), for their jitter.
void fit_own_frames(const FrameSource& frames, ScanDistortionSteps& steps, const ScanModel& model, std::size_t lo,
                    std::size_t hi, int threads, RunContext& ctx, std::size_t& done, std::vector<DriftSample>& samples,
                    double precision[2], std::vector<ScanDistortionSteps::FrameFit>& lines) {
  const std::size_t batch = threads > 1 ? 2 * static_cast<std::size_t>(threads) : 1;
  for (std::size_t k0 = lo; k0 < hi; k0 += batch) {
    ctx.cancel.throw_if_cancelled();
    std::vector<std::shared_ptr<const Frame>> held;
    for (std::size_t k = k0; k < std::min(hi, k0 + batch); ++k)
      held.push_back(steps.left_out(k) ? nullptr : frames.shared_frame(k));
    std::vector<ScanDistortionSteps::FrameFit> fits = steps.fit_frames(held, k0, model);
    for (std::size_t i = 0; i < fits.size(); ++i) {
      steps.leave_out_unless_followed(k0 + i, fits[i]);
      samples.insert(samples.end(), fits[i].bands.begin(), fits[i].bands.end());
      precision[0] += fits[i].precision_sum, precision[1] += fits[i].precision_count;
      fits[i].bands.clear(), fits[i].bands.shrink_to_fit();
      lines[k0 + i - lo] = std::move(fits[i]);
      ctx.progress.advance(++done);
    }
  }
}
}  // namespace

// Every frame's jitter variance pooled over the series
// (ScanDistortionSteps::pooled_jitter_variances) from the frames' spreads,
// each rank's frames' own summed over the ranks (the others' are 0 here).
std::vector<double> pooled_jitter_variances(const ScanDistortionSteps& steps,
                                            const std::vector<ScanDistortionSteps::FrameFit>& lines, std::size_t lo,
                                            std::size_t hi, const DriftPath& previous, const DriftPath& path,
                                            std::size_t n, RunContext& ctx) {
  std::vector<double> spread(3 * n, 0.0);
  together(ctx, [&] {
    for (std::size_t k = lo; k < hi; ++k) {
      const ScanDistortionSteps::JitterSpread f = steps.jitter_spread(lines[k - lo], k, previous, path);
      spread[3 * k] = f.spread, spread[3 * k + 1] = f.noise, spread[3 * k + 2] = f.count;
    }
  });
  MPI_Allreduce(MPI_IN_PLACE, spread.data(), static_cast<int>(spread.size()), MPI_DOUBLE, MPI_SUM, ctx.comm);
  std::vector<ScanDistortionSteps::JitterSpread> spreads(n);
  for (std::size_t k = 0; k < n; ++k) spreads[k] = {spread[3 * k], spread[3 * k + 1], spread[3 * k + 2]};
  std::vector<double> tau2;
  together(ctx, [&] { tau2 = steps.pooled_jitter_variances(spreads); });
  return tau2;
}

namespace {
// What one round needs besides its frames, scan and steps.
struct RoundContext {
  const ScanDistortionSettings& settings;
  RunContext& ctx;
  std::size_t n, lo, hi;
  int threads;
  std::size_t kept_bytes;
  std::size_t& done;
};

// One round of `frames` (scanned with `timing`) against their average under
// out.model, with `steps`: the model, the jitter's sigma and precision and
// the band samples in `out` are the round's.
ScanDistortionRound run_round(const FrameSource& frames, const ScanTiming& timing, ScanDistortionSteps& steps,
                              DistributedDistortion& out, const RoundContext& rc) {
  RunContext& ctx = rc.ctx;
  const std::size_t n = rc.n, lo = rc.lo, hi = rc.hi;
  const auto started = std::chrono::steady_clock::now();
  AverageNoise noise;
  std::vector<FrameContribution> own;  // this rank's frames', for their leave-one-out templates
  SpecimenImage average =
      combined_average(frames, timing, out.model, lo, hi, ctx, true, rc.done, steps.left_out_frames(), &noise, &own,
                       steps.template_from_sample(), rc.kept_bytes);
  together(ctx, [&] { steps.set_template(std::move(average), out.model.path, std::move(noise), std::move(own), lo); });
  // The averaging's grids are freed, the fits' templates are smaller
  // blocks: what the grids held goes back rather than stay beside them.
  release_free_memory();
  std::vector<DriftSample> samples;
  double precision[2] = {0.0, 0.0};
  std::vector<ScanDistortionSteps::FrameFit> lines(hi - lo);  // this rank's frames' line offsets, for their jitter
  together(ctx, [&] {
    fit_own_frames(frames, steps, out.model, lo, hi, rc.threads, ctx, rc.done, samples, precision, lines);
  });
  steps.drop_template();
  release_free_memory();  // the next average's grids do not fit the templates' blocks
  // Every rank learns which frames the others left out (the flags of one
  // rank's frames are its own).
  std::vector<unsigned char> flags(steps.left_out_frames().begin(), steps.left_out_frames().end());
  MPI_Allreduce(MPI_IN_PLACE, flags.data(), static_cast<int>(n), MPI_UNSIGNED_CHAR, MPI_MAX, ctx.comm);
  for (std::size_t k = 0; k < n; ++k)
    if (flags[k] && !steps.left_out(k)) steps.leave_out(k);
  samples = allgather_records(ctx.comm, samples);
  const DriftPath previous = out.model.path;
  together(ctx, [&] { out.model.path = steps.fit_path(samples); });
  std::vector<double> tau2;
  if (rc.settings.estimate_jitter)
    tau2 = pooled_jitter_variances(steps, lines, lo, hi, previous, out.model.path, n, ctx);
  together(ctx, [&] {
    if (rc.settings.estimate_jitter) {
      // Every rank has every sample: the same path sigma on each.
      const DriftPathUncertainty path_sigma = steps.path_uncertainty_if_any(samples);
      for (std::size_t k = lo; k < hi; ++k)
        out.model.jitter[k] =
            steps.finish_jitter(lines[k - lo], k, previous, out.model.path, &out.jitter_sigma[k], &path_sigma, tau2[k]);
    }
    if (steps.halves_steps()) out.model.path = steps.halfway(out.model.path, previous);  // as estimate_scan_distortion
  });
  // The shared line field from every rank's frames; this rank's frames' own.
  steps.finish_fields(lines, lo, out.model, [&](std::vector<double>& pool) {
    MPI_Allreduce(MPI_IN_PLACE, pool.data(), static_cast<int>(pool.size()), MPI_DOUBLE, MPI_SUM, ctx.comm);
  });
  MPI_Allreduce(MPI_IN_PLACE, precision, 2, MPI_DOUBLE, MPI_SUM, ctx.comm);
  out.jitter_precision_px = precision[1] > 0 ? std::sqrt(precision[0] / precision[1]) : 0.0;
  ScanDistortionRound r;
  r.path_change = steps.path_change(out.model.path, previous);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  out.band_samples = std::move(samples);
  return r;
}
}  // namespace

DistributedDistortion correct_scan_distortion(const FrameSource& frames, const ScanTiming& timing,
                                              const std::vector<Point>& rigid_drift,
                                              const ScanDistortionSettings& settings, RunContext& ctx, int threads,
                                              const std::vector<std::size_t>& leave_out, std::size_t kept_bytes) {
  const std::size_t n = frames.frame_count();
  const std::size_t ranks = static_cast<std::size_t>(ctx.size), rank = static_cast<std::size_t>(ctx.rank);
  const std::size_t lo = n * rank / ranks, hi = n * (rank + 1) / ranks;
  const OmpThreadCount guard(threads);

  DistributedDistortion out;
  std::optional<ScanDistortionSteps> steps;
  together(ctx, [&] {
    if (frames.width() != timing.width() || frames.height() != timing.height())
      throw bad_input("scan distortion: the scan timing is for " + std::to_string(timing.width()) + "x" +
                      std::to_string(timing.height()) + " frames, the series has " + std::to_string(frames.width()) +
                      "x" + std::to_string(frames.height()));
    steps.emplace(timing, settings, n);
    for (const std::size_t k : leave_out)
      if (k < n) steps->leave_out(k);
    out.model = steps->initial_model(rigid_drift);
  });
  // Only this rank's frames' jitter is kept (the others' is not needed here).
  for (std::size_t k = 0; k < n; ++k)
    if (k < lo || k >= hi) out.model.jitter[k].clear(), out.model.jitter[k].shrink_to_fit();
  out.jitter_sigma.assign(n, {});  // this rank's frames' rows, once estimated

  const std::size_t mine = hi - lo;
  const int rounds = settings.rounds_for(timing);
  ctx.progress.phase("distortion", mine * (2 * static_cast<std::size_t>(rounds) + 1));
  std::size_t done = 0;
  const RoundContext rc{settings, ctx, n, lo, hi, threads, kept_bytes, done};
  int round = 0;
  if (FastAxisBinning::applies(timing, settings)) {
    // The first round on the frames binned along the fast axis
    // (fast_axis_binning.hpp): the same steps on half the pixels.
    std::optional<FastAxisBinning> binning;
    std::optional<ScanDistortionSteps> binned_steps;
    together(ctx, [&] {
      binning.emplace(timing);
      binned_steps.emplace(binning->timing(), binning->settings(settings), n);
      for (std::size_t k = 0; k < n; ++k)
        if (steps->left_out(k)) binned_steps->leave_out(k);
      out.model = binning->binned(out.model);
    });
    const FastAxisBinnedFrames binned_frames(frames);
    const DriftPath start = binning->unbinned(out.model).path;
    ScanDistortionRound r = run_round(binned_frames, binning->timing(), *binned_steps, out, rc);
    out.model = binning->unbinned(out.model);
    for (std::size_t k = 0; k < n; ++k)
      if (binned_steps->left_out(k)) steps->leave_out(k);
    r.path_change = steps->path_change(out.model.path, start);  // in full-resolution pixels
    out.rounds.push_back(r);
    ++round;
  }
  // A binned round's grids and steps (out of scope now) are blocks of half
  // a frame's width: they go back rather than stay resident beside the
  // full-resolution rounds' (+65-170 MB of peak at 10 x 4096^2 otherwise).
  release_free_memory();
  for (; round < rounds; ++round) {
    const ScanDistortionRound r = run_round(frames, timing, *steps, out, rc);
    out.rounds.push_back(r);
    if (round >= 1 && r.path_change < settings.tolerance) {
      out.converged = true;
      break;
    }
  }
  out.average = combined_average(frames, timing, out.model, lo, hi, ctx, false, done, steps->left_out_frames());
  std::vector<char> given(n, 0);
  for (const std::size_t k : leave_out)
    if (k < n) given[k] = 1;
  for (std::size_t k = 0; k < n; ++k)
    if (steps->left_out(k)) {
      out.left_out.push_back(k);
      if (!given[k]) out.not_followed.push_back(k);
    }

  // Every frame's jitter and line field to rank 0.
  gather_frame_rows(ctx, out.model.jitter, lo, hi, static_cast<std::size_t>(timing.lines()));
  if (settings.estimate_jitter)
    gather_frame_rows(ctx, out.jitter_sigma, lo, hi, static_cast<std::size_t>(timing.lines()));
  if (ctx.rank == 0) {
    try {
      out.path_sigma = steps->path_uncertainty(out.band_samples);
    } catch (const Error&) {
      out.path_sigma = {};  // the path was fitted through these samples: not expected; no sigma then
    }
  }
  if (!steps->field_basis().empty())
    gather_frame_rows(ctx, out.model.field, lo, hi, static_cast<std::size_t>(steps->field_basis().knots()));
  return out;
}

}  // namespace driftscan::mpi
