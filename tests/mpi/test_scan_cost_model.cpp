// mpi-ranks: 1
// The scan's cost model (scan_cost_model.hpp) on cost tables small enough to
// work out by hand, and its bounds on random ones. No messages are sent: it
// lives in the MPI layer only because it models the distributed scan.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <random>
#include <vector>

#include "driftscan/core/error.hpp"
#include "driftscan/mpi/scan/scan_cost_model.hpp"

using namespace driftscan::mpi;

namespace {

constexpr double kTol = 1e-12;

TEST(ScanCostModel, OneWorkerPaysEveryElementButTheFirstTwice) {
  // Reduce 2+3+4, nothing to combine, final phase 2+3+4 again.
  const std::vector<double> c{1, 2, 3, 4};
  for (auto a : all_global_scan_algorithms()) {
    EXPECT_NEAR(model_static_scan(c, 1, 1, a).makespan_s, 18.0, kTol);
    EXPECT_NEAR(model_ideal_stealing_scan(c, 1, 1, a).makespan_s, 18.0, kTol);
  }
}

TEST(ScanCostModel, TwoThreadsOfOneRankByHand) {
  // Static halves [0..3] (cost 1 each) and [4..7] (cost 5 each): thread 1
  // reduces 5+5+5 = 15, the root costs c[7] = 5 more (20), thread 1 scans its
  // half after its own reduce: 15 + 20 = 35 (thread 0 is done at 20 + 3).
  const std::vector<double> c{1, 1, 1, 1, 5, 5, 5, 5};
  const auto a = GlobalScanAlgorithm::dissemination;
  const ScanModel s = model_static_scan(c, 1, 2, a);
  EXPECT_NEAR(s.rank_sums_s, 20.0, kTol);
  EXPECT_NEAR(s.makespan_s, 35.0, kTol);
  // Ideal, a lower bound whatever cuts stealing leaves: the reduce work (all
  // but the starting elements 0 and 7: 18) over two threads, 9; thread 0's
  // segment may be element 0 alone, so the root may cost c[0]: 10 (the
  // master is busy until then). Thread 1 may start at once from element 0,
  // its head as cheap as c[1] (1); rank 0's first segment is final after the
  // reduce; the rest is shared by threads free at 1 and 10 — but no rank
  // ends before its reduce and final work over its threads: model segments
  // [0..4] | [5..7], final work c[6] + c[7] (c[5] paid ahead), (18 + 10) / 2 = 14.
  const ScanModel i = model_ideal_stealing_scan(c, 1, 2, a);
  EXPECT_NEAR(i.rank_sums_s, 10.0, kTol);
  EXPECT_NEAR(i.makespan_s, 14.0, kTol);
}

TEST(ScanCostModel, WholeElementsByHand) {
  // The case above with elements undivided: the root no earlier than the
  // dearest element reduced (5, before 9 anyway), the last items no earlier
  // than thread 1's start (1) + 5; the work bound, 14, holds both.
  const std::vector<double> c{1, 1, 1, 1, 5, 5, 5, 5};
  const auto a = GlobalScanAlgorithm::dissemination;
  const ScanModel w = model_ideal_stealing_scan_whole(c, 1, 2, a);
  EXPECT_NEAR(w.rank_sums_s, 10.0, kTol);
  EXPECT_NEAR(w.makespan_s, 14.0, kTol);
}

// Four ranks of two elements; the blocks end on elements 1, 3, 5, 7 with costs
// 1, 2, 4, 8; every rank's sum known at 0. Rank 3's result goes to nobody.
struct GlobalCase : ::testing::Test {
  std::vector<double> c{0.5, 1, 0.5, 2, 0.5, 4, 0.5, 8};
  std::vector<std::size_t> sizes{2, 2, 2, 2};
  std::vector<double> ready{0, 0, 0, 0};
};

TEST_F(GlobalCase, Dissemination) {
  // Round 1: rank 1 pays c[3] (2), rank 2 c[5] (4). Round 2: rank 2 takes
  // rank 0's at 0 and pays c[5] again: 8; rank 3 waits for rank 1's (2).
  const auto g = model_global_phase(c, sizes, ready, GlobalScanAlgorithm::dissemination);
  EXPECT_EQ(g.done, (std::vector<double>{0, 2, 8, 2}));
  EXPECT_EQ(g.exclusive, (std::vector<double>{0, 0, 2, 8}));
}

TEST_F(GlobalCase, MpiScanIsALinearChain) {
  const auto g = model_global_phase(c, sizes, ready, GlobalScanAlgorithm::mpi_scan);
  EXPECT_EQ(g.done, (std::vector<double>{0, 2, 6, 6}));
  EXPECT_EQ(g.exclusive, (std::vector<double>{0, 0, 2, 6}));
}

TEST_F(GlobalCase, BlellochAndLadnerFischerPayEachEndOnce) {
  for (auto a : {GlobalScanAlgorithm::blelloch, GlobalScanAlgorithm::ladner_fischer}) {
    const auto g = model_global_phase(c, sizes, ready, a);
    EXPECT_EQ(g.done, (std::vector<double>{0, 2, 6, 2})) << to_string(a);
    EXPECT_EQ(g.exclusive, (std::vector<double>{0, 0, 2, 6})) << to_string(a);
  }
}

TEST_F(GlobalCase, ALateRankHoldsUpTheRanksAfterIt) {
  // Rank 1 ready at 10: 12 after its round; rank 2 takes that (14) and rank
  // 0's (18); rank 0 is done at once.
  ready = {0, 10, 0, 0};
  const auto g = model_global_phase(c, sizes, ready, GlobalScanAlgorithm::dissemination);
  EXPECT_EQ(g.done, (std::vector<double>{0, 12, 18, 12}));
  EXPECT_EQ(g.exclusive, (std::vector<double>{0, 0, 12, 18}));
}

TEST(ScanCostModel, StaticScanThenMapAndReduceThenScanCostTheSameOnEqualCosts) {
  const std::vector<double> c(64, 1.0);
  for (auto a : all_global_scan_algorithms())
    EXPECT_NEAR(model_static_scan(c, 4, 4, a, LocalStrategy::scan_then_map).makespan_s,
                model_static_scan(c, 4, 4, a, LocalStrategy::reduce_then_scan).makespan_s, kTol)
        << to_string(a);
}

TEST(ScanCostModel, IdealBalanceNeverLosesToStaticAndRespectsTheWorkBound) {
  std::mt19937 rng(1410);
  std::exponential_distribution<double> exponential(1.0);
  for (int shape = 0; shape < 12; ++shape) {
    const int ranks = 1 + shape % 5, threads = 1 + (shape * 7) % 6, k = 2 + shape % 4;
    std::vector<double> c(std::size_t(ranks * threads * k));
    for (auto& x : c) x = exponential(rng);
    const double largest = *std::max_element(c.begin(), c.end());
    // Both local phases apply every element of a block but at most one per
    // thread: no rank can finish before 2 × (its work − threads × largest) /
    // threads (rank 0: one pass, its first segment's prefixes being final).
    double bound = 0.0;
    for (int r = 0; r < ranks; ++r) {
      const std::ptrdiff_t span = static_cast<std::ptrdiff_t>(threads) * k;
      const auto first = c.begin() + r * span;
      const double work = std::accumulate(first, first + span, 0.0);
      bound = std::max(bound, (r == 0 ? 1.0 : 2.0) * (work - threads * largest) / threads);
    }
    for (auto a : all_global_scan_algorithms()) {
      const double s = model_static_scan(c, ranks, threads, a).makespan_s;
      const double i = model_ideal_stealing_scan(c, ranks, threads, a).makespan_s;
      EXPECT_LE(i, s + kTol) << ranks << "x" << threads << " K=" << k << " " << to_string(a);
      EXPECT_GE(i, bound - kTol) << ranks << "x" << threads << " K=" << k << " " << to_string(a);
      // Whole elements: between the fluid ideal and the static schedule, and
      // never before the dearest element applied (all but element 0) ran once.
      for (bool shared : {false, true}) {
        const double fluid = model_ideal_stealing_scan(c, ranks, threads, a, false, shared).makespan_s;
        const double whole = model_ideal_stealing_scan_whole(c, ranks, threads, a, false, shared).makespan_s;
        EXPECT_GE(whole, fluid - kTol) << ranks << "x" << threads << " K=" << k << " " << to_string(a);
        EXPECT_LE(whole, s + kTol) << ranks << "x" << threads << " K=" << k << " " << to_string(a);
        EXPECT_GE(whole, *std::max_element(c.begin() + 1, c.end()) - kTol)
            << ranks << "x" << threads << " K=" << k << " " << to_string(a);
      }
    }
  }
}

// Stealing between ranks (the blocks cut by cost): with one rank's elements
// four times dearer, the ranks' even blocks hold that rank's four threads to
// its block; cut by cost, every rank's threads share it. Never below the work
// bound of the whole line (both passes over every element but the first
// segment's, spread over all workers, less one largest element per worker).
TEST(ScanCostModel, StealingBetweenRanksCutsTheBlocksByCost) {
  const int ranks = 4, threads = 4;
  const std::size_t block = 64;  // 16 elements per thread
  std::vector<double> c(std::size_t(ranks) * block, 1.0);
  for (std::size_t i = block; i < 2 * block; ++i) c[i] = 4.0;  // rank 1
  const double total = std::accumulate(c.begin(), c.end(), 0.0);
  for (auto a : all_global_scan_algorithms()) {
    const double within = model_ideal_stealing_scan(c, ranks, threads, a).makespan_s;
    const double line = model_ideal_stealing_scan(c, ranks, threads, a, true).makespan_s;
    // Within ranks rank 1's 64 elements of cost 4 take two passes over 4 threads: ≥ 2·(256 − 4·4)/4.
    EXPECT_GE(within, 120.0 - kTol) << to_string(a);
    EXPECT_LT(line, 0.75 * within) << to_string(a);
    EXPECT_GE(line, (2.0 * total - double(ranks * threads) * 4.0) / double(ranks * threads) - kTol) << to_string(a);
  }
}

TEST(ScanCostModel, RejectsFewerElementsThanWorkers) {
  EXPECT_THROW(model_static_scan(std::vector<double>(3, 1.0), 2, 2, GlobalScanAlgorithm::dissemination),
               driftscan::Error);
}

}  // namespace
