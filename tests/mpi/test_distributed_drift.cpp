// mpi-ranks: 1 2 3
// The drift of a multi-rank register held in blocks (distributed_drift.hpp):
// what is combined over ranks from each rank's own frames equals what the
// serial functions give on the whole table — the exact median (negative,
// repeated and infinite values, ranks without values), the failure
// classification, the uncertainty summary (a tie for the worst frame across
// blocks), frame 0's noise, the frames above max_sigma, the inverse-variance
// weights — and drift.csv gathered from every rank's rows is byte for byte
// the serial writer's, for translation, rigid and affine models.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "driftscan/mpi/register/distributed_drift.hpp"
#include "driftscan/pipeline/register_pipeline.hpp"
#include "mpi_world.hpp"

using namespace driftscan;
using namespace driftscan::mpi;
namespace fs = std::filesystem;

namespace {

double serial_median(std::vector<double> v) {
  auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

// Uneven pieces: rank 1 of 3 gets nothing.
std::vector<double> my_piece(const std::vector<double>& all) {
  const std::size_t n = all.size(), r = static_cast<std::size_t>(world_rank()),
                    s = static_cast<std::size_t>(world_size());
  std::size_t first = n * r / s, last = n * (r + 1) / s;
  if (s == 3 && r == 0) last = n * 2 / 3;
  if (s == 3 && r == 1) first = last = n * 2 / 3;
  return {all.begin() + static_cast<long>(first), all.begin() + static_cast<long>(last)};
}

TEST(MedianOverRanks, EqualsTheSerialPick) {
  std::mt19937 rng(5);
  std::normal_distribution<double> normal(0.0, 3.0);
  for (std::size_t n : {1u, 2u, 7u, 1000u, 1001u}) {
    std::vector<double> all;
    for (std::size_t i = 0; i < n; ++i) all.push_back(i % 5 == 0 ? std::round(normal(rng)) : normal(rng));
    if (n > 10) {
      all[3] = std::numeric_limits<double>::infinity();
      all[4] = -std::numeric_limits<double>::infinity();
      all[5] = 1e-300;
      all[6] = -1e-300;
    }
    const std::optional<double> m = median_over_ranks(MPI_COMM_WORLD, my_piece(all));
    ASSERT_TRUE(m.has_value()) << n;
    EXPECT_EQ(*m, serial_median(all)) << n << " values";
  }
  EXPECT_FALSE(median_over_ranks(MPI_COMM_WORLD, {}).has_value());
}

// A table of n frames with every failure reason, singular frames, a worst
// sigma shared by two frames in different blocks, and noise views.
struct Table {
  std::vector<Registration> regs;
  std::vector<DriftUncertainty> u;
};
Table table(std::size_t n, MotionModel model) {
  std::mt19937 rng(9);
  std::uniform_real_distribution<double> uni(0.0, 1.0);
  Table t;
  for (std::size_t k = 0; k < n; ++k) {
    Registration r;
    r.from = 0;
    r.to = k;
    r.transform.tx = 10 * uni(rng) - 5;
    r.transform.ty = 10 * uni(rng) - 5;
    if (model != MotionModel::translation) {
      const double a = 0.02 * (uni(rng) - 0.5);
      r.transform.a = std::cos(a), r.transform.b = -std::sin(a), r.transform.c = std::sin(a),
      r.transform.d = std::cos(a);
    }
    if (model == MotionModel::affine) r.transform.b += 0.001 * uni(rng);
    r.iterations = static_cast<int>(k % 7);
    r.cost = uni(rng);
    r.quality = uni(rng);
    if (k % 11 == 3) r.flags |= kNoPeak;
    if (k % 13 == 5) r.flags |= kBadFrame;
    if (k % 17 == 2) r.flags |= kNotConverged;
    if (k % 19 == 7) r.flags |= kRefineFailed;
    if (k % 23 == 9) r.flags |= kNoMatch;
    t.regs.push_back(r);
    DriftUncertainty u;
    u.sigma_dx = 0.01 + 0.05 * uni(rng);
    u.sigma_dy = 0.01 + 0.05 * uni(rng);
    u.cov_dxdy = 1e-4 * (uni(rng) - 0.5);
    u.sigma_angle_deg = 0.001 * uni(rng);
    for (double& s : u.sigma_affine) s = 0.002 * uni(rng);
    u.common_sigma_dx = 0.01 * uni(rng);
    u.common_sigma_dy = 0.01 * uni(rng);
    u.common_cov_dxdy = 1e-5 * (uni(rng) - 0.5);
    u.noise_variance = 2 + uni(rng);
    u.reference_noise_variance = k % 4 == 0 ? 0.0 : 2 + uni(rng);
    if (k % 29 == 8) {
      u.singular = true;
      u.sigma_dx = u.sigma_dy = std::numeric_limits<double>::infinity();
    }
    t.u.push_back(u);
  }
  t.u[n / 5].sigma_dx = t.u[n - 2].sigma_dx = 0.5;  // the first of the two is the worst
  return t;
}

template <class T>
std::vector<T> block_of(const std::vector<T>& all, const FrameBlock& b) {
  return {all.begin() + static_cast<long>(b.first), all.begin() + static_cast<long>(b.last)};
}

TEST(DriftOverRanks, CombinedFiguresEqualTheSerialOnes) {
  // 2 and 3 frames: on 3 ranks some rank (rank 0 at 2 frames) owns none.
  for (std::size_t n : {2u, 3u, 400u}) {
    SCOPED_TRACE(std::to_string(n) + " frames");
    const Table t = table(n, MotionModel::translation);
    const FrameBlock mine = own_block(MPI_COMM_WORLD, n);
    const auto regs = block_of(t.regs, mine);
    const auto u = block_of(t.u, mine);

    const RegistrationFailures serial = classify_failures(t.regs);
    const RegistrationFailures combined = classify_failures_over_ranks(MPI_COMM_WORLD, regs, mine);
    EXPECT_EQ(combined.to_json(), serial.to_json());
    EXPECT_EQ(combined.warnings(), serial.warnings());

    EXPECT_EQ(to_json(summarize_uncertainty_over_ranks(MPI_COMM_WORLD, u, mine)), to_json(summarize_uncertainty(t.u)));
    if (n > 10) {  // the table's tie (frames n/5 and n-2) is only two frames apart from frame 0 then
      EXPECT_EQ(summarize_uncertainty_over_ranks(MPI_COMM_WORLD, u, mine).worst_frame, n / 5);
    }
    const double noise0 = frame0_noise_over_ranks(MPI_COMM_WORLD, u, mine);
    EXPECT_EQ(noise0, frame_noise_variances(t.u)[0]);

    std::vector<double> sigma;
    for (const auto& x : t.u) sigma.push_back(x.sigma());
    EXPECT_EQ(frames_above_sigma_over_ranks(MPI_COMM_WORLD, u, mine, 0.05), frames_above_sigma(sigma, 0.05));
    EXPECT_EQ(uncertainty_weights_over_ranks(MPI_COMM_WORLD, u, noise0), uncertainty_weights(t.u));
  }
}

TEST(DriftOverRanks, FrameZeroNoiseWithoutViewsIsItsOwn) {
  Table t = table(50, MotionModel::translation);
  for (auto& u : t.u) u.reference_noise_variance = 0.0;
  const FrameBlock mine = own_block(MPI_COMM_WORLD, t.u.size());
  EXPECT_EQ(frame0_noise_over_ranks(MPI_COMM_WORLD, block_of(t.u, mine), mine), t.u[0].noise_variance);
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A folder every rank knows (rank 0's pid), removed at the end.
std::string shared_folder(const std::string& name) {
  int pid = world_rank() == 0 ? static_cast<int>(getpid()) : 0;
  MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return (fs::temp_directory_path() / ("driftscan-drift-" + name + "-" + std::to_string(pid))).string();
}

TEST(DriftOverRanks, DriftCsvIsTheSerialWritersByteForByte) {
  // More frames than a chunk of gathered rows (4096), so rows cross chunks;
  // and 2 frames, fewer than the ranks of the 3-rank run.
  for (std::size_t n : {2u, 9001u})
    for (MotionModel model : {MotionModel::translation, MotionModel::rigid, MotionModel::affine}) {
      const Table t = table(n, model);
      const FrameBlock mine = own_block(MPI_COMM_WORLD, n);
      AverageResult avg;
      for (std::size_t k = 0; k < n; ++k) {
        avg.quality.push_back(0.5 + 0.4 * std::sin(static_cast<double>(k)));
        avg.used.push_back(k % 9 != 4);
      }
      const std::vector<Transform> transforms = [&] {
        std::vector<Transform> v;
        for (const auto& r : t.regs) v.push_back(r.transform);
        return v;
      }();
      const Point centre{63.5, 47.5};
      const std::string dir = shared_folder(to_string(model));
      const DriftRows rows(block_of(t.regs, mine), block_of(t.u, mine), model);
      const double noise0 = frame0_noise_over_ranks(MPI_COMM_WORLD, block_of(t.u, mine), mine);
      for (const AverageResult* a :
           {static_cast<const AverageResult*>(&avg), static_cast<const AverageResult*>(nullptr)}) {
        std::optional<OutputSet> set;
        if (world_rank() == 0) set.emplace(dir, "register");
        const std::exception_ptr error =
            stage_drift_csv(MPI_COMM_WORLD, set ? &*set : nullptr, rows, transforms, mine, model, centre, a, noise0);
        EXPECT_FALSE(error);
        if (world_rank() == 0) {
          const std::string serial = dir + "/serial.csv";
          write_drift_csv(serial, t.regs, model, centre, a, &t.u);
          EXPECT_EQ(read_all(set->staged_path("drift.csv")), read_all(serial))
              << to_string(model) << (a ? " averaged" : "");
          set.reset();  // uncommitted: its staged file goes
          fs::remove_all(dir);
        }
        MPI_Barrier(MPI_COMM_WORLD);
      }
    }
}

TEST(DriftOverRanks, RankZerosFailureToStageIsReturnedAfterEveryChunk) {
  const std::size_t n = 5000;
  const Table t = table(n, MotionModel::translation);
  const FrameBlock mine = own_block(MPI_COMM_WORLD, n);
  const DriftRows rows(block_of(t.regs, mine), block_of(t.u, mine), MotionModel::translation);
  std::vector<Transform> transforms(n);
  // Rank 0 without an output set: an error there, and no rank left waiting.
  const std::exception_ptr error = stage_drift_csv(MPI_COMM_WORLD, nullptr, rows, transforms, mine,
                                                   MotionModel::translation, {10, 10}, nullptr, 1.0);
  EXPECT_EQ(static_cast<bool>(error), world_rank() == 0);
  MPI_Barrier(MPI_COMM_WORLD);
}

}  // namespace
