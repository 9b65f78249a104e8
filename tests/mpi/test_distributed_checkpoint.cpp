// mpi-ranks: 1 2 3
// Multi-rank checkpoints: merging every checkpoint file of a folder (per-rank
// and serial, sparse records, first file wins, temporaries ignored), refusing
// files of another series, the uncertainty kept with a finished scan, what
// is left to scan (gaps) and who does it; and
// the scan's on_output hook, which checkpoints learn outputs from: every
// output reported exactly once, with the value the scan returns.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#include <numeric>
#include <string>
#include <vector>

#include "driftscan/core/error.hpp"
#include "driftscan/mpi/scan/work_stealing_scan.hpp"
#include "driftscan/pipeline/rank_checkpoints.hpp"
#include "driftscan/pipeline/register_checkpoint.hpp"
#include "mpi_world.hpp"

using namespace driftscan;
using namespace driftscan::mpi;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) {
  fs::path p = fs::temp_directory_path() /
               ("driftscan-ckpt-" + name + "-" + std::to_string(::getpid()) + "-" + std::to_string(world_rank()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

Registration element(std::uint64_t k, double tx) {
  Registration r = Registration::identity(k);
  r.from = k == 0 ? 0 : k - 1;
  r.transform.tx = tx;
  return r;
}
Registration output(std::uint64_t k, double tx) {
  Registration r = Registration::identity(k);
  r.from = 0;
  r.transform.tx = tx;
  return r;
}

const nlohmann::json kPrint = {{"input", "/x/s.tif"}, {"frames", 10}, {"width", 8}, {"height", 8}};

}  // namespace

TEST(DistributedCheckpoint, MergesEveryFileOfTheFolder) {
  fs::path dir = scratch("merge");
  RegisterCheckpoint a{kPrint, {}, {}, {}}, b{kPrint, {}, {}, {}}, serial{kPrint, {}, {}, {}};
  for (std::uint64_t k = 0; k < 5; ++k) a.elements.push_back(element(k, 1.0 + k));
  for (std::uint64_t k = 0; k < 3; ++k) a.prefix.push_back(output(k, 10.0 + k));
  for (std::uint64_t k = 5; k < 10; ++k) b.elements.push_back(element(k, 1.0 + k));
  b.prefix = {output(6, 16.0), output(5, 15.0)};           // a rank's file: any order
  serial.elements = {element(0, -1.0), element(1, -1.0)};  // known twice: checkpoint.dsck sorts first and wins
  save_checkpoint(a, rank_checkpoint_path(dir.string(), 0));
  save_checkpoint(b, rank_checkpoint_path(dir.string(), 1));
  save_checkpoint(serial, (dir / "checkpoint.dsck").string());
  // A kill mid-write leaves a temporary: AtomicFile's name, and an older version's.
  std::ofstream(dir / ".checkpoint.rank-2.dsck.tmp-123-0") << "half a file";
  std::ofstream(dir / "checkpoint.rank-2.dsck.tmp.123") << "half a file";

  ASSERT_EQ(checkpoint_files(dir.string()).size(), 3u);
  CheckpointState s = load_checkpoints(dir.string(), kPrint, 10);
  EXPECT_EQ(s.files, 3u);
  EXPECT_EQ(s.element_count(), 10u);
  EXPECT_EQ(s.output_count(), 5u);
  EXPECT_DOUBLE_EQ(s.elements[0]->transform.tx, -1.0);
  EXPECT_DOUBLE_EQ(s.elements[7]->transform.tx, 8.0);
  EXPECT_DOUBLE_EQ(s.outputs[6]->transform.tx, 16.0);
  EXPECT_FALSE(s.outputs[3].has_value());

  const auto gaps = missing_outputs(s.outputs);
  ASSERT_EQ(gaps.size(), 2u);
  EXPECT_EQ(gaps[0].first, 3u);
  EXPECT_EQ(gaps[0].last, 4u);
  EXPECT_EQ(gaps[1].first, 7u);
  EXPECT_EQ(gaps[1].last, 9u);

  remove_checkpoints(dir.string());
  EXPECT_TRUE(fs::is_empty(dir));  // the temporary too
  EXPECT_EQ(load_checkpoints(dir.string(), kPrint, 10).files, 0u);
  fs::remove_all(dir);
}

TEST(DistributedCheckpoint, RefusesAnotherSeriesOrBadRecords) {
  fs::path dir = scratch("refuse");
  nlohmann::json other = kPrint;
  other["frames"] = 11;
  save_checkpoint(RegisterCheckpoint{other, {element(0, 0)}, {}, {}}, rank_checkpoint_path(dir.string(), 0));
  try {
    load_checkpoints(dir.string(), kPrint, 10);
    FAIL() << "a checkpoint of another series was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::bad_input);
    EXPECT_NE(std::string(e.what()).find("checkpoint.rank-0.dsck"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("another input"), std::string::npos) << e.what();
  }
  // A record for frame 12 of a 10-frame series, or an element that skips a frame.
  save_checkpoint(RegisterCheckpoint{kPrint, {}, {output(12, 0)}, {}}, rank_checkpoint_path(dir.string(), 0));
  EXPECT_THROW(load_checkpoints(dir.string(), kPrint, 10), Error);
  Registration skip = element(5, 0);
  skip.from = 3;
  save_checkpoint(RegisterCheckpoint{kPrint, {skip}, {}, {}}, rank_checkpoint_path(dir.string(), 0));
  EXPECT_THROW(load_checkpoints(dir.string(), kPrint, 10), Error);
  std::ofstream(rank_checkpoint_path(dir.string(), 0), std::ios::trunc) << "garbage\n";
  EXPECT_THROW(load_checkpoints(dir.string(), kPrint, 10), Error);
  fs::remove_all(dir);
}

// Once the scan is done the checkpoints keep each frame's drift uncertainty
// too (its phase follows the scan): a resume averages without recomputing it.
TEST(DistributedCheckpoint, KeepsTheUncertaintyOfEveryFrameExactly) {
  fs::path dir = scratch("uncertainty");
  auto sigma = [](std::uint64_t k) {
    DriftUncertainty u;
    u.sigma_dx = 0.01 * static_cast<double>(k + 1) + 1e-17;
    u.sigma_dy = 1.0 / 3.0 + static_cast<double>(k);
    u.cov_dxdy = -1e-5;
    u.sigma_affine[5] = 2.5;
    u.noise_variance = 0.04;
    u.reference_noise_variance = 0.05;
    u.singular = k == 7;
    if (u.singular) u.sigma_dx = u.sigma_dy = std::numeric_limits<double>::infinity();
    return u;
  };
  RegisterCheckpoint a{kPrint, {}, {}, {}}, b{kPrint, {}, {}, {}};
  for (std::uint64_t k = 0; k < 10; ++k) {
    a.prefix.push_back(output(k, 1.0 * k));
    (k < 5 ? a : b).uncertainty.emplace_back(k, sigma(k));
  }
  save_checkpoint(a, rank_checkpoint_path(dir.string(), 0));
  save_checkpoint(b, rank_checkpoint_path(dir.string(), 1));
  CheckpointState s = load_checkpoints(dir.string(), kPrint, 10);
  for (std::uint64_t k = 0; k < 10; ++k) {
    ASSERT_TRUE(s.uncertainty[k].has_value()) << k;
    const DriftUncertainty& u = *s.uncertainty[k];
    EXPECT_EQ(u.sigma_dx, sigma(k).sigma_dx);  // bit for bit
    EXPECT_EQ(u.sigma_dy, sigma(k).sigma_dy);
    EXPECT_EQ(u.cov_dxdy, -1e-5);
    EXPECT_EQ(u.sigma_affine[5], 2.5);
    EXPECT_EQ(u.reference_noise_variance, 0.05);
    EXPECT_EQ(u.singular, k == 7);
  }
  // A file of an older version (no uncertainty count) reads as before.
  remove_checkpoints(dir.string());
  std::ofstream(rank_checkpoint_path(dir.string(), 0))
      << nlohmann::json{{"magic", "driftscan-checkpoint-1"}, {"fingerprint", kPrint}, {"elements", 0}, {"prefix", 0}}
             .dump()
      << '\n';
  s = load_checkpoints(dir.string(), kPrint, 10);
  EXPECT_EQ(s.files, 1u);
  EXPECT_FALSE(s.uncertainty[0].has_value());
  // An uncertainty for frame 12 of a 10-frame series is refused.
  RegisterCheckpoint bad{kPrint, {}, {}, {}};
  bad.uncertainty.emplace_back(12, sigma(0));
  save_checkpoint(bad, rank_checkpoint_path(dir.string(), 0));
  EXPECT_THROW(load_checkpoints(dir.string(), kPrint, 10), Error);
  fs::remove_all(dir);
}

TEST(DistributedCheckpoint, GapsGoLongestFirstToTheLeastLoadedWorker) {
  std::vector<std::optional<Registration>> outputs(20);
  EXPECT_EQ(missing_outputs(outputs).size(), 1u);  // nothing known: one gap, 0..19
  for (std::size_t k : {0, 1, 2, 9, 10, 15}) outputs[k] = output(k, 0);
  const auto gaps = missing_outputs(outputs);  // 3..8 (6), 11..14 (4), 16..19 (4)
  ASSERT_EQ(gaps.size(), 3u);
  EXPECT_EQ(assign_gaps(gaps, 2), (std::vector<int>{0, 1, 1}));
  EXPECT_EQ(assign_gaps(gaps, 4), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(assign_gaps(gaps, 1), (std::vector<int>{0, 0, 0}));
  for (auto& o : outputs) o = output(0, 0);
  EXPECT_TRUE(missing_outputs(outputs).empty());
}

TEST(ScanOutputHook, ReportsEveryOutputOnceWithItsValue) {
  const std::size_t total = 200;
  std::vector<long> all(total);
  std::iota(all.begin(), all.end(), 1L);
  SegmentRange r =
      static_segment(total, static_cast<std::size_t>(world_size()), static_cast<std::size_t>(world_rank()));
  std::vector<long> block(all.begin() + static_cast<std::ptrdiff_t>(r.lo),
                          all.begin() + static_cast<std::ptrdiff_t>(r.hi));
  for (LocalStrategy strategy : {LocalStrategy::reduce_then_scan, LocalStrategy::scan_then_map})
    for (int threads : {1, 2, 3}) {
      ScanOptions options;
      options.strategy = strategy;
      options.threads = threads;
      WorkStealingScan scan(MPI_COMM_WORLD, options);
      std::mutex mu;
      std::vector<int> seen(block.size(), 0);
      std::vector<long> value(block.size(), 0);
      auto result = scan.run(
          block, [](long a, long b) { return a + b; }, nullptr,
          [&](std::size_t k, const long& v) {
            std::lock_guard<std::mutex> lock(mu);
            ++seen[k];
            value[k] = v;
          });
      for (std::size_t k = 0; k < block.size(); ++k) {
        EXPECT_EQ(seen[k], 1) << "element " << r.lo + k << ", threads " << threads;
        EXPECT_EQ(value[k], result[k]);
        const long g = static_cast<long>(r.lo + k) + 1;
        EXPECT_EQ(result[k], g * (g + 1) / 2);
      }
    }
}
