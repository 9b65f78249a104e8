// mpi-ranks: 1 2 3
// The average shared by MPI ranks (MpiAveragingTeam): for every method, with
// blank, NaN and misregistered frames and a quality threshold, the result on
// every rank equals the serial average within 1e-6 relative (quality and use
// of every frame too); a median split in several bands per rank; and a frame
// that one rank cannot read ends the average on every rank with the same
// one-line error naming the rank, its host and the frame's file. The
// standard-error map (sigma.tif) equals the serial one within 1e-5 relative,
// the weighted mean's included.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "driftscan/averaging/averaging.hpp"
#include "driftscan/core/error.hpp"
#include "driftscan/formats/tiff/tiff_series.hpp"
#include "driftscan/formats/tiff/tiff_writer.hpp"
#include "driftscan/mpi/register/distributed_average.hpp"
#include "driftscan/synthetic/synthetic_series.hpp"
#include "mpi_world.hpp"

using namespace driftscan;
using namespace driftscan::mpi;
namespace fs = std::filesystem;

namespace {

struct Series {
  FrameVector frames;
  std::vector<Transform> truth;
};

// A drifting lattice with a blank frame, a frame with NaN pixels and a
// misregistered frame (its transform off by 3 px) the quality rejects.
Series awkward_series() {
  SynthOptions o;
  o.frames = 23;
  o.width = 72;
  o.height = 61;
  o.period = 9;
  o.dose = 6;
  o.drift_step = 0.4;
  o.drift_linear_x = 0.2;
  o.drift_linear_y = -0.15;
  o.seed = 11;
  SyntheticSeries s(o);
  Series out;
  for (std::size_t k = 0; k < o.frames; ++k) {
    Frame f = s.frame(k);
    if (k == 9) std::fill(f.pixels.begin(), f.pixels.end(), 5.0f);
    if (k == 14)
      for (int x = 10; x < 30; ++x) f.at(x, 20) = std::numeric_limits<float>::quiet_NaN();
    out.frames.push_back(std::move(f));
    Transform t = s.truth(k);
    if (k == 17) t.tx += 3.0;
    out.truth.push_back(t);
  }
  // The rotated variant is what rigid drift looks like: the affine warp path.
  return out;
}

void expect_same_result(const AverageResult& a, const AverageResult& b, const char* what) {
  ASSERT_EQ(a.average.size(), b.average.size()) << what;
  double worst = 0;
  for (std::size_t i = 0; i < a.average.size(); ++i) {
    ASSERT_EQ(a.coverage.pixels[i], b.coverage.pixels[i]) << what << " pixel " << i;
    const double ref = b.average.pixels[i];
    worst = std::max(worst, std::fabs(a.average.pixels[i] - ref) / std::max(std::fabs(ref), 1e-3));
  }
  EXPECT_LE(worst, 1e-6) << what;
  // The standard-error map (sigma.tif) too: NaN at the same pixels.
  ASSERT_EQ(a.sigma.size(), b.sigma.size()) << what;
  double worst_sigma = 0;
  std::size_t finite = 0;
  for (std::size_t i = 0; i < a.sigma.size(); ++i) {
    ASSERT_EQ(std::isnan(a.sigma.pixels[i]), std::isnan(b.sigma.pixels[i])) << what << " sigma pixel " << i;
    if (std::isnan(b.sigma.pixels[i])) continue;
    ++finite;
    const double ref = b.sigma.pixels[i];
    worst_sigma = std::max(worst_sigma, std::fabs(a.sigma.pixels[i] - ref) / std::max(std::fabs(ref), 1e-3));
  }
  EXPECT_LE(worst_sigma, 1e-5) << what;
  EXPECT_GT(finite, a.sigma.size() / 2) << what << ": sigma where frames cover";
  ASSERT_EQ(a.quality.size(), b.quality.size());
  for (std::size_t k = 0; k < a.quality.size(); ++k) {
    EXPECT_NEAR(a.quality[k], b.quality[k], 1e-9) << what << " frame " << k;
    EXPECT_EQ(a.used[k], b.used[k]) << what << " frame " << k;
  }
}

fs::path scratch_dir(const std::string& name) {
  // The same folder on every rank: rank 0 names it, the others learn it.
  std::string path;
  if (world_rank() == 0) path = (fs::temp_directory_path() / (name + "-" + std::to_string(getpid()))).string();
  int len = static_cast<int>(path.size());
  MPI_Bcast(&len, 1, MPI_INT, 0, MPI_COMM_WORLD);
  path.resize(static_cast<std::size_t>(len));
  MPI_Bcast(path.data(), len, MPI_CHAR, 0, MPI_COMM_WORLD);
  return path;
}

}  // namespace

TEST(DistributedAverage, EveryMethodEqualsTheSerialAverage) {
  const Series s = awkward_series();
  for (AverageMethod method : {AverageMethod::mean, AverageMethod::clipped, AverageMethod::median}) {
    for (int rotated = 0; rotated < 2; ++rotated) {
      std::vector<Transform> t = s.truth;
      if (rotated)
        for (std::size_t k = 0; k < t.size(); ++k)
          t[k] = compose(t[k], Transform::rigid(0.003 * double(k), 0, 0, {36, 30}));
      AveragingOptions opt;
      opt.method = method;
      opt.min_quality = 0.5;
      opt.exclude_frames = {4};
      const AverageResult serial = average_series(s.frames, t, opt);
      const AverageResult shared = average_distributed(MPI_COMM_WORLD, s.frames, t, opt, nullptr, nullptr);
      const std::string what = std::string(method == AverageMethod::mean      ? "mean"
                                           : method == AverageMethod::clipped ? "clipped"
                                                                              : "median") +
                               (rotated ? " rigid" : " translation");
      expect_same_result(shared, serial, what.c_str());
      EXPECT_FALSE(shared.used[17]) << "the misregistered frame is rejected";
      EXPECT_FALSE(shared.used[9]) << "the blank frame is left out";
    }
  }
}

TEST(DistributedAverage, WeightedMeanAndItsSigmaEqualTheSerialOnes) {
  const Series s = awkward_series();
  AveragingOptions opt;
  opt.min_quality = 0.5;
  for (std::size_t k = 0; k < s.frames.frame_count(); ++k) opt.frame_weights.push_back(1.0 + double(k % 3));
  const AverageResult serial = average_series(s.frames, s.truth, opt);
  const AverageResult shared = average_distributed(MPI_COMM_WORLD, s.frames, s.truth, opt, nullptr, nullptr);
  expect_same_result(shared, serial, "weighted mean");
}

TEST(DistributedAverage, MedianInSeveralBandsPerRank) {
  const Series s = awkward_series();
  AveragingOptions opt;
  opt.method = AverageMethod::median;
  opt.median_tile = 4;  // rows per band: several bands per rank, uneven ones
  const AverageResult serial = average_series(s.frames, s.truth, AveragingOptions{opt});
  const AverageResult shared = average_distributed(MPI_COMM_WORLD, s.frames, s.truth, opt, nullptr, nullptr);
  expect_same_result(shared, serial, "median in bands");
}

TEST(DistributedAverage, AFrameOneRankCannotReadFailsEveryRankWithOneError) {
  const fs::path dir = scratch_dir("driftscan-dist-avg");
  const Series s = awkward_series();
  const std::size_t n = s.frames.frame_count();
  if (world_rank() == 0) {
    fs::create_directories(dir);
    for (std::size_t k = 0; k < n; ++k) {
      char name[32];
      std::snprintf(name, sizeof name, "f%03zu.tif", k);
      Frame f = s.frames.frames()[k];
      for (float& v : f.pixels)
        if (!std::isfinite(v)) v = 0;
      write_tiff((dir / name).string(), f);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  auto series = TiffSeries::open(dir.string());
  MPI_Barrier(MPI_COMM_WORLD);
  // The last rank's last frame is cut short after every rank opened the series.
  const std::size_t victim = n - 1;
  char victim_name[32];
  std::snprintf(victim_name, sizeof victim_name, "f%03zu.tif", victim);
  if (world_rank() == 0) fs::resize_file(dir / victim_name, 200);
  MPI_Barrier(MPI_COMM_WORLD);
  std::string message;
  try {
    average_distributed(MPI_COMM_WORLD, *series, s.truth, AveragingOptions{}, nullptr, nullptr);
  } catch (const Error& e) {
    message = e.what();
  }
  EXPECT_NE(message.find(victim_name), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  if (world_size() > 1) {
    char host[256] = {0};
    gethostname(host, sizeof host - 1);
    const std::string who = "rank " + std::to_string(world_size() - 1) + " on " + host;
    EXPECT_NE(message.find(who), std::string::npos) << message;
  }
  // Every rank saw the same error.
  int len = static_cast<int>(message.size()), min_len = 0, max_len = 0;
  MPI_Allreduce(&len, &min_len, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&len, &max_len, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  EXPECT_EQ(min_len, max_len);
  EXPECT_GT(min_len, 0);
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) fs::remove_all(dir);
}
