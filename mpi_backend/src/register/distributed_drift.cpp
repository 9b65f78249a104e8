// The drift of a multi-rank register in blocks; see distributed_drift.hpp.
#include "driftscan/mpi/register/distributed_drift.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>

#include "driftscan/core/atomic_file.hpp"
#include "driftscan/core/error.hpp"
#include "driftscan/mpi/runtime/allgather_records.hpp"
#include "driftscan/mpi/scan/global_scan.hpp"
#include "driftscan/pipeline/register_pipeline.hpp"
#include "driftscan/registration/frame_weights.hpp"

namespace driftscan::mpi {
namespace {

// Unsigned keys in the order of the doubles (negative ones reversed).
std::uint64_t key_of(double v) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  return bits >> 63 ? ~bits : bits | (std::uint64_t(1) << 63);
}
double value_of(std::uint64_t key) {
  const std::uint64_t bits = key >> 63 ? key & ~(std::uint64_t(1) << 63) : ~key;
  double v = 0;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

// This block's lists appended to every rank's, in rank (= frame) order.
std::vector<std::size_t> gather_frames(MPI_Comm comm, const std::vector<std::size_t>& mine) {
  return allgather_records(comm, mine);
}

// Every rank's rows of frames [c0, c1), formatted by their owner, to rank 0.
// A rank whose rows cannot be formatted sends none and notes why in
// `problem` (the first reason), so that every rank still makes the same
// collectives.
void gather_rows(MPI_Comm comm, std::ostream* out, std::size_t c0, std::size_t c1, const DriftRows& rows,
                 const std::vector<Transform>& transforms, const FrameBlock& mine, MotionModel model, Point centre,
                 const AverageResult* average, double frame0_noise, std::string& problem) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  std::string text;
  const std::size_t a = std::max(c0, mine.first), b = std::min(c1, mine.last);
  if (a < b && problem.empty()) try {
      // The chunk's records as the serial writer has them.
      std::vector<Registration> regs;
      std::vector<DriftUncertainty> u;
      regs.reserve(b - a);
      for (std::size_t k = a; k < b; ++k) {
        regs.push_back(rows.registration(k - mine.first, k, transforms[k]));
        if (rows.sigmas()) u.push_back(rows.uncertainty(k - mine.first));
      }
      std::ostringstream lines;
      write_drift_csv_rows(lines, regs.data(), rows.sigmas() ? u.data() : nullptr, b - a, a, model, centre, average,
                           frame0_noise);
      text = lines.str();
    } catch (const std::exception& e) {
      problem = std::string("drift.csv: ") + e.what();
      text.clear();
    }
  int bytes = static_cast<int>(text.size());
  std::vector<int> counts(rank == 0 ? static_cast<std::size_t>(size) : 0), displs(counts.size(), 0);
  MPI_Gather(&bytes, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm);
  std::string all;
  if (rank == 0) {
    long long total = 0;
    for (int r = 0; r < size; ++r) {
      displs[static_cast<std::size_t>(r)] = static_cast<int>(total);
      total += counts[static_cast<std::size_t>(r)];
    }
    all.resize(static_cast<std::size_t>(total));
  }
  MPI_Gatherv(text.data(), bytes, MPI_CHAR, all.data(), counts.data(), displs.data(), MPI_CHAR, 0, comm);
  if (out) out->write(all.data(), static_cast<std::streamsize>(all.size()));
}

}  // namespace

FrameBlock own_block(MPI_Comm comm, std::size_t frames) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const auto r = static_cast<std::size_t>(rank), s = static_cast<std::size_t>(size);
  return {frames * r / s, frames * (r + 1) / s, frames};
}

std::optional<double> median_over_ranks(MPI_Comm comm, const std::vector<double>& mine) {
  unsigned long long local = mine.size(), total = 0;
  MPI_Allreduce(&local, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, comm);
  if (total == 0) return std::nullopt;
  // The rank (0-based) of the wanted value among those left; the key's
  // bytes fixed so far, from the top.
  unsigned long long wanted = total / 2;
  std::uint64_t prefix = 0;
  std::array<unsigned long long, 256> counts{}, sums{};
  for (int shift = 56; shift >= 0; shift -= 8) {
    counts.fill(0);
    const std::uint64_t fixed = shift == 56 ? 0 : ~std::uint64_t(0) << (shift + 8);
    for (double v : mine) {
      const std::uint64_t k = key_of(v);
      if ((k & fixed) == prefix) ++counts[(k >> shift) & 0xff];
    }
    MPI_Allreduce(counts.data(), sums.data(), 256, MPI_UNSIGNED_LONG_LONG, MPI_SUM, comm);
    std::size_t byte = 0;
    while (wanted >= sums[byte]) wanted -= sums[byte++];
    prefix |= static_cast<std::uint64_t>(byte) << shift;
  }
  return value_of(prefix);
}

std::vector<Transform> gather_transforms(MPI_Comm comm, const std::vector<Registration>& block) {
  std::vector<Transform> mine;
  mine.reserve(block.size());
  for (const Registration& r : block) mine.push_back(r.transform);
  return allgather_records(comm, mine);
}

RegistrationFailures classify_failures_over_ranks(MPI_Comm comm, const std::vector<Registration>& block,
                                                  const FrameBlock& mine) {
  RegistrationFailures f = classify_failures(block, mine.first, mine.frames);
  for (auto* list : {&f.unusable, &f.no_overlap, &f.no_peak, &f.no_match, &f.not_converged})
    *list = gather_frames(comm, *list);
  return f;
}

UncertaintySummary summarize_uncertainty_over_ranks(MPI_Comm comm, const std::vector<DriftUncertainty>& block,
                                                    const FrameBlock& mine) {
  UncertaintySample v = sample_uncertainty(block, mine.first);
  UncertaintySummary s;
  s.median_sigma = median_over_ranks(comm, v.sigma).value_or(0.0);
  s.common_sigma_dx = median_over_ranks(comm, v.common_sigma_dx).value_or(0.0);
  s.common_sigma_dy = median_over_ranks(comm, v.common_sigma_dy).value_or(0.0);
  s.common_cov_dxdy = median_over_ranks(comm, v.common_cov_dxdy).value_or(0.0);
  // The first of the largest (blocks in frame order), as the serial loop finds it.
  struct Worst {
    double sigma;
    std::uint64_t frame;
  };
  for (const Worst& w : allgather_records(comm, std::vector<Worst>{{v.worst_sigma, v.worst_frame}}))
    if (w.sigma > s.worst_sigma) {
      s.worst_sigma = w.sigma;
      s.worst_frame = w.frame;
    }
  s.singular_frames = gather_frames(comm, v.singular_frames);
  return s;
}

double frame0_noise_over_ranks(MPI_Comm comm, const std::vector<DriftUncertainty>& block, const FrameBlock& mine) {
  if (const std::optional<double> m = median_over_ranks(comm, reference_noise_views(block))) return *m;
  // No view of it: frame 0's own figure, from its owner (the only non-zero term).
  double own = mine.first == 0 && !block.empty() ? block[0].noise_variance : 0.0, all = 0.0;
  MPI_Allreduce(&own, &all, 1, MPI_DOUBLE, MPI_SUM, comm);
  return all;
}

std::vector<std::size_t> frames_above_sigma_over_ranks(MPI_Comm comm, const std::vector<DriftUncertainty>& block,
                                                       const FrameBlock& mine, double max_sigma) {
  std::vector<double> sigma;
  sigma.reserve(block.size());
  for (const DriftUncertainty& u : block) sigma.push_back(u.sigma());
  return gather_frames(comm, frames_above_sigma(sigma, max_sigma, mine.first));
}

std::vector<double> uncertainty_weights_over_ranks(MPI_Comm comm, const std::vector<DriftUncertainty>& block,
                                                   double frame0_noise) {
  struct SigmaNoise {
    double sigma, noise;
  };
  std::vector<SigmaNoise> local;
  local.reserve(block.size());
  for (const DriftUncertainty& u : block)
    local.push_back({u.singular ? std::numeric_limits<double>::infinity() : u.sigma(), u.noise_variance});
  const std::vector<SigmaNoise> all = allgather_records(comm, local);
  local = std::vector<SigmaNoise>();  // freed (`= {}` would keep the capacity)
  std::vector<double> sigma(all.size()), noise(all.size());
  for (std::size_t k = 0; k < all.size(); ++k) sigma[k] = all[k].sigma, noise[k] = all[k].noise;
  if (!noise.empty()) noise[0] = frame0_noise;
  return inverse_variance_weights(sigma, noise);
}

DriftRows::DriftRows(const std::vector<Registration>& block, const std::vector<DriftUncertainty>& uncertainty,
                     MotionModel model)
    : stride_(model == MotionModel::affine  ? 7
              : model == MotionModel::rigid ? 1
                                            : 0),
      sigmas_(uncertainty.size() == block.size()) {
  facts_.reserve(block.size());
  if (sigmas_) {
    singular_.reserve(block.size());
    model_sigmas_.reserve(block.size() * stride_);
  }
  for (std::size_t i = 0; i < block.size(); ++i) {
    const Registration& r = block[i];
    Facts f{r.cost, r.quality, 0.0, 0.0, 0.0, 0.0, r.iterations, r.flags};
    if (sigmas_) {
      const DriftUncertainty& u = uncertainty[i];
      f.sigma_dx = u.sigma_dx, f.sigma_dy = u.sigma_dy, f.cov_dxdy = u.cov_dxdy, f.noise_variance = u.noise_variance;
      singular_.push_back(u.singular);
      if (stride_ > 0) model_sigmas_.push_back(u.sigma_angle_deg);
      if (stride_ > 1) model_sigmas_.insert(model_sigmas_.end(), u.sigma_affine.begin(), u.sigma_affine.end());
    }
    facts_.push_back(f);
  }
}

Registration DriftRows::registration(std::size_t i, std::uint64_t frame, const Transform& transform) const {
  const Facts& f = facts_[i];
  Registration r;
  r.from = 0;
  r.to = frame;
  r.transform = transform;
  r.iterations = f.iterations;
  r.flags = f.flags;
  r.cost = f.cost;
  r.quality = f.quality;
  return r;
}

DriftUncertainty DriftRows::uncertainty(std::size_t i) const {
  const Facts& f = facts_[i];
  DriftUncertainty u;
  u.sigma_dx = f.sigma_dx, u.sigma_dy = f.sigma_dy, u.cov_dxdy = f.cov_dxdy, u.noise_variance = f.noise_variance;
  u.singular = singular_[i];
  if (stride_ > 0) u.sigma_angle_deg = model_sigmas_[i * stride_];
  for (std::size_t j = 1; j < stride_; ++j) u.sigma_affine[j - 1] = model_sigmas_[i * stride_ + j];
  return u;
}

std::exception_ptr stage_drift_csv(MPI_Comm comm, OutputSet* set, const DriftRows& rows,
                                   const std::vector<Transform>& transforms, const FrameBlock& mine, MotionModel model,
                                   Point centre, const AverageResult* average, double frame0_noise) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  // Rows of this many frames at a time (~0.5 MB of text on rank 0).
  constexpr std::size_t kChunk = 4096;
  std::string problem;  // this rank's rows could not be formatted
  auto all_rows = [&](std::ostream* out) {
    for (std::size_t c0 = 0; c0 < mine.frames; c0 += kChunk)
      gather_rows(comm, out, c0, std::min(mine.frames, c0 + kChunk), rows, transforms, mine, model, centre, average,
                  frame0_noise, problem);
  };
  if (rank != 0) {
    all_rows(nullptr);
    agree_on_failure(comm, !problem.empty(), ErrorKind::failure, problem);
    return nullptr;
  }
  // Every rank has the uncertainty or none has (its phase runs on all).
  const bool sigmas = rows.sigmas();
  bool gathered = false;
  std::exception_ptr error;
  try {
    if (!set) throw failure("register: rank 0 has no output set");
    set->write("drift.csv", [&](const std::string& path) {
      AtomicFile file(path, "output file");
      file.stream() << drift_csv_header(model, sigmas);
      gathered = true;
      all_rows(&file.stream());
      if (!problem.empty()) throw failure(problem);  // rows missing: not under the final name
      file.commit();
    });
  } catch (...) {
    error = std::current_exception();
  }
  if (!gathered) all_rows(nullptr);  // the others' rows are still to be taken
  agree_on_failure(comm, !problem.empty(), ErrorKind::failure, problem);
  return error;
}

}  // namespace driftscan::mpi
