// mpi-ranks: 2 3 4
// Stealing between ranks (rank_line.hpp): with one rank's elements slow, its
// neighbours' edge threads take elements of its block, and the result still
// equals the sequential scan for a non-commutative operator, in every
// configuration of threads and global algorithm; a rank's elements that a
// neighbour took get their prefixes back, also through the output hook.
#include <gtest/gtest.h>
#include <mpi.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "driftscan/mpi/scan/work_stealing_scan.hpp"
#include "driftscan/registration/sequential_scan.hpp"
#include "mpi_world.hpp"

using namespace driftscan;
using namespace driftscan::mpi;

namespace {

constexpr std::uint64_t kPrime = 1000000007ULL;

// A 2×2 matrix mod a prime with the element range it covers: the product is
// associative and not commutative, and the range lets the operator check
// that it only ever combines neighbours.
struct Mat {
  std::int64_t first = 0, last = 0;
  std::array<std::uint64_t, 4> m{1, 0, 0, 1};
  bool operator==(const Mat& o) const { return first == o.first && last == o.last && m == o.m; }
};

Mat product(const Mat& a, const Mat& b) {
  if (a.last + 1 != b.first) throw failure("not adjacent");
  Mat c{a.first, b.last, {}};
  c.m[0] = (a.m[0] * b.m[0] + a.m[1] * b.m[2]) % kPrime;
  c.m[1] = (a.m[0] * b.m[1] + a.m[1] * b.m[3]) % kPrime;
  c.m[2] = (a.m[2] * b.m[0] + a.m[3] * b.m[2]) % kPrime;
  c.m[3] = (a.m[2] * b.m[1] + a.m[3] * b.m[3]) % kPrime;
  return c;
}

Mat element(std::int64_t k) {
  const auto u = static_cast<std::uint64_t>(k);
  return Mat{k, k, {(u * 7 + 1) % kPrime, (u * 3 + 2) % kPrime, (u * 5 + 3) % kPrime, (u * 11 + 4) % kPrime}};
}

// The element an application takes, when one operand is a single element
// (the reduce and final phases; the global phase combines whole rank sums);
// -1 otherwise.
std::int64_t element_taken(const Mat& a, const Mat& b) {
  if (a.first == a.last && b.first != b.last) return a.first;
  if (b.first == b.last) return b.last;
  return -1;
}

// The rank whose elements are slow: a middle one when there is one, so both
// its neighbours have something to take.
int slow_rank() { return world_size() > 2 ? 1 : 0; }

// Runs one scan with the slow rank's elements 1.5 ms each; returns the
// prefixes and counts (in `moved`, summed over ranks) the slow rank's
// elements that another rank applied.
std::vector<Mat> run_skewed(const ScanOptions& options, std::size_t per_rank, const std::vector<Mat>& expected,
                            int& moved) {
  const std::int64_t offset = static_cast<std::int64_t>(per_rank) * world_rank();
  const std::int64_t slow_lo = static_cast<std::int64_t>(per_rank) * slow_rank();
  const std::int64_t slow_hi = slow_lo + std::int64_t(per_rank);
  std::vector<Mat> block;
  for (std::size_t k = 0; k < per_rank; ++k) block.push_back(element(offset + std::int64_t(k)));
  WorkStealingScan scan(MPI_COMM_WORLD, options);
  std::mutex mutex;
  int mine = 0;
  auto op = [&](const Mat& a, const Mat& b) {
    const std::int64_t k = element_taken(a, b);
    if (k >= slow_lo && k < slow_hi) {
      std::this_thread::sleep_for(std::chrono::microseconds(1500));
      if (world_rank() != slow_rank()) {
        std::lock_guard<std::mutex> lock(mutex);
        ++mine;
      }
    }
    return product(a, b);
  };
  std::vector<int> heard(per_rank, 0);
  std::vector<Mat> got = scan.run(block, op, nullptr, [&](std::size_t k, const Mat& prefix) {
    std::lock_guard<std::mutex> lock(mutex);
    heard[k] += prefix == expected[std::size_t(offset) + k] ? 1 : 100;
  });
  for (std::size_t k = 0; k < per_rank; ++k)
    EXPECT_EQ(heard[k], 1) << "rank " << world_rank() << " element " << k << ": the hook heard it otherwise";
  MPI_Allreduce(&mine, &moved, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  return got;
}

std::vector<Mat> sequential(std::size_t per_rank) {
  std::vector<Mat> all;
  for (std::int64_t k = 0; k < static_cast<std::int64_t>(per_rank) * world_size(); ++k) all.push_back(element(k));
  return sequential_inclusive_scan(all, product);
}

}  // namespace

TEST(ScanRankStealing, SlowRanksElementsAreTakenAndResultsEqualTheSequentialScan) {
  const std::size_t per_rank = 48;
  const std::vector<Mat> expected = sequential(per_rank);
  const std::size_t offset = per_rank * std::size_t(world_rank());
  for (auto algorithm : all_global_scan_algorithms())
    for (int threads : {1, 2, 3})
      for (bool share : {false, true}) {
        int moved = 0;
        ScanOptions options{algorithm, LocalStrategy::reduce_then_scan, true, threads};
        options.between_ranks = true;
        options.share_final_phase = share;
        const std::vector<Mat> got = run_skewed(options, per_rank, expected, moved);
        const std::string config = std::string(to_string(algorithm)) + ", " + std::to_string(threads) + " threads" +
                                   (share ? ", final phase shared" : "");
        for (std::size_t k = 0; k < per_rank; ++k)
          EXPECT_EQ(got[k], expected[offset + k]) << "rank " << world_rank() << " element " << k << ", " << config;
        EXPECT_GT(moved, 0) << config << ": no element moved between ranks";
      }
}

// Along a line with the final phase shared, each rank's free threads run its
// threads' tails: rank 0's master, whose reduce leaves its own prefixes
// final, runs final-phase applications of its siblings' segments instead of
// waiting out the run (traced case B: idle for 0.15 s of 0.3). Every
// application sleeps 2 ms; 3 threads of 16 elements each per rank.
TEST(ScanRankStealing, SharedFinalPhaseAlongALineGivesRankZerosMasterItsSiblingsTails) {
  const std::size_t per_rank = 48;
  const std::vector<Mat> expected = sequential(per_rank);
  const std::size_t offset = per_rank * std::size_t(world_rank());
  std::vector<Mat> block;
  for (std::size_t k = 0; k < per_rank; ++k) block.push_back(element(std::int64_t(offset + k)));
  ScanOptions options{GlobalScanAlgorithm::dissemination, LocalStrategy::reduce_then_scan, true, 3};
  options.between_ranks = true;
  options.share_final_phase = true;
  WorkStealingScan scan(MPI_COMM_WORLD, options);
  ScanTrace trace;
  const std::vector<Mat> got = scan.run(
      block,
      [](const Mat& a, const Mat& b) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        return product(a, b);
      },
      &trace);
  for (std::size_t k = 0; k < per_rank; ++k) EXPECT_EQ(got[k], expected[offset + k]) << "element " << k;
  gather_trace(trace, MPI_COMM_WORLD);
  if (world_rank() != 0) return;
  int master_final = 0;
  for (const ScanRecord& r : trace.records())
    if (r.rank == 0 && r.thread == 0 && r.phase == ScanPhase::final_scan) ++master_final;
  EXPECT_GT(master_final, 0) << "rank 0's master ran none of its siblings' final-phase elements";
}

// Off (the default), every rank applies only its own elements (outside the global phase).
TEST(ScanRankStealing, OffKeepsEachRankToItsBlock) {
  const std::size_t per_rank = 24;
  const std::vector<Mat> expected = sequential(per_rank);
  const ScanOptions options{GlobalScanAlgorithm::dissemination, LocalStrategy::reduce_then_scan, true, 2};
  int moved = 0;
  const std::vector<Mat> got = run_skewed(options, per_rank, expected, moved);
  for (std::size_t k = 0; k < per_rank; ++k) EXPECT_EQ(got[k], expected[per_rank * std::size_t(world_rank()) + k]);
  EXPECT_EQ(moved, 0);
}

// Where two ranks meet, the left rank's last element is one it took as the
// last of the gap, not one it was stuck on while the right rank emptied the
// gap: every combine with the rank's sum as the right operand (its tree, each
// global round) pays that element again (StealingView::leave_last_left).
// Two threads per rank, 24 elements: each rank's last thread starts at its
// element 18 and first takes 19, which costs 300 ms; the right neighbour
// (whose own first 6 elements, in the same gap, cost 20 ms each, so it gets
// there after 19 is taken) takes the rest of the gap in the meantime, except element 20, which the
// stuck rank takes after 19 and ends its block on. Without the rule the
// neighbour takes 20 too.
TEST(ScanRankStealing, ALeftRanksBlockEndsOnAnElementItTookLast) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  const std::size_t per_rank = 24;
  const std::vector<Mat> expected = sequential(per_rank);
  const std::int64_t offset = static_cast<std::int64_t>(per_rank) * world_rank();
  std::vector<Mat> block;
  for (std::size_t k = 0; k < per_rank; ++k) block.push_back(element(offset + std::int64_t(k)));
  ScanOptions options{GlobalScanAlgorithm::dissemination, LocalStrategy::reduce_then_scan, true, 2};
  options.between_ranks = true;
  WorkStealingScan scan(MPI_COMM_WORLD, options);
  const auto local = [&](std::int64_t k) { return k % static_cast<std::int64_t>(per_rank); };
  std::mutex mutex;
  std::vector<int> applied_here(std::size_t(world_size()), 0);  // rank q's element 20, applied on this rank
  auto op = [&](const Mat& a, const Mat& b) {
    const std::int64_t k = element_taken(a, b);
    if (k >= 0 && local(k) == 19 && k / std::int64_t(per_rank) + 1 < world_size())
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    if (k >= std::int64_t(per_rank) && local(k) < 6)  // so the neighbour reaches the gap after 19 is taken
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (k >= 0 && local(k) == 20) {
      std::lock_guard<std::mutex> lock(mutex);
      applied_here[std::size_t(k / std::int64_t(per_rank))] = 1;
    }
    return product(a, b);
  };
  const std::vector<Mat> got = scan.run(block, op);
  for (std::size_t k = 0; k < per_rank; ++k) EXPECT_EQ(got[k], expected[std::size_t(offset) + k]);
  for (int q = 0; q + 1 < world_size(); ++q) {
    int on_owner = q == world_rank() ? applied_here[std::size_t(q)] : 0;
    int elsewhere = q == world_rank() ? 0 : applied_here[std::size_t(q)];
    MPI_Allreduce(MPI_IN_PLACE, &on_owner, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &elsewhere, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    EXPECT_EQ(on_owner, 1) << "rank " << q << " did not apply its element 20";
    EXPECT_EQ(elsewhere, 0) << "rank " << q << "'s element 20 was applied by another rank";
  }
}

// A rank without elements before ranks with elements: nobody on it takes
// from the gap to its right, so the right rank must take all of it.
TEST(ScanRankStealing, AnEmptyRankLeavesItsNeighboursHeadToIt) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  const std::size_t per_rank = 12;
  const std::size_t mine = world_rank() == 0 ? 0 : per_rank;
  std::vector<Mat> all;
  for (std::int64_t k = 0; k < static_cast<std::int64_t>(per_rank) * (world_size() - 1); ++k) all.push_back(element(k));
  const std::vector<Mat> expected = sequential_inclusive_scan(all, product);
  const std::int64_t offset = world_rank() == 0 ? 0 : static_cast<std::int64_t>(per_rank) * (world_rank() - 1);
  std::vector<Mat> block;
  for (std::size_t k = 0; k < mine; ++k) block.push_back(element(offset + std::int64_t(k)));
  for (int threads : {1, 2, 3}) {
    ScanOptions options{GlobalScanAlgorithm::dissemination, LocalStrategy::reduce_then_scan, true, threads};
    options.between_ranks = true;
    WorkStealingScan scan(MPI_COMM_WORLD, options);
    const std::vector<Mat> got = scan.run(block, product);
    ASSERT_EQ(got.size(), mine);
    for (std::size_t k = 0; k < mine; ++k)
      EXPECT_EQ(got[k], expected[std::size_t(offset) + k]) << "rank " << world_rank() << " element " << k;
  }
}
