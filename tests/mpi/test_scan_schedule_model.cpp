// mpi-ranks: 1
// The scan's own schedule simulated with no overheads (scan_schedule_model.hpp)
// on cost tables small enough to follow by hand, and against the lower bound
// (scan_cost_model.hpp) on random ones. No messages are sent.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "driftscan/core/error.hpp"
#include "driftscan/mpi/scan/scan_cost_model.hpp"
#include "driftscan/mpi/scan/scan_schedule_model.hpp"

using namespace driftscan::mpi;

namespace {

constexpr double kTol = 1e-12;
// The simulations after the first start each thread up to 2% of the mean cost late.
double spread(const std::vector<double>& c) { return 0.02 * std::accumulate(c.begin(), c.end(), 0.0) / c.size(); }

TEST(ScanScheduleModel, TwoThreadsOfOneRankByHand) {
  // Thread 0 starts at 0, thread 1 (the last, its right gap its own) at 6.
  // Thread 0 takes 1, 2, 3 (cost 1 each) and 4 (5) to its right: its sum at
  // 8. Thread 1's left side would finish later than its own gap ([7]), so it
  // takes 5 first (x5 ⊕ x6 costs c[6], 5), then 7 (5): its sum at 10, its
  // segment [5..7], 7's local prefix [5..7]. The root, the master's: 10 +
  // c[7] = 15. Final phase (rank 0: nothing before): the mean measured cost
  // is (1+1+1+5+5+5)/6 = 3, nothing is dearer than twice that, so thread 1
  // folds 5 from 10 to 15. At 15 the master claims 7 (P(4) ⊕ [5..7]) and
  // thread 1 its start 6 (P(5) ⊕ x6): both end at 20.
  const std::vector<double> c{1, 1, 1, 1, 5, 5, 5, 5};
  for (auto a : all_global_scan_algorithms()) {
    const ScanModel m = model_simulated_stealing_scan(c, 1, 2, a);
    EXPECT_NEAR(m.rank_sums_s, 15.0, spread(c)) << to_string(a);
    EXPECT_GE(m.makespan_s, 20.0 - kTol) << to_string(a);
    EXPECT_LE(m.makespan_s, 20.0 + spread(c)) << to_string(a);
    // Static: 35; the bound: 14.
    EXPECT_LT(m.makespan_s, model_static_scan(c, 1, 2, a).makespan_s);
    EXPECT_GT(m.makespan_s, model_ideal_stealing_scan(c, 1, 2, a, false, true).makespan_s);
  }
}

TEST(ScanScheduleModel, TwoRanksOfEqualCostsByHand) {
  // Each rank: threads start at 0 and 3 of 4 elements; thread 1 takes 2
  // (its own gap is empty): both sums at 1, the root at 2. Rank 1's
  // exclusive prefix comes at 2 (rank 0's sum, sent at once). Rank 1: thread
  // 0's tail is its whole segment (start 0): it runs 0 (P(3) ⊕ x4) and 1
  // (P(3) ⊕ [4..5]) from 2; thread 1 pays exclusive ⊕ before (c[5]) until 3,
  // folds 6 until 4 and runs 7 until 5.
  const std::vector<double> c(8, 1.0);
  for (auto a : all_global_scan_algorithms()) {
    const ScanModel m = model_simulated_stealing_scan(c, 2, 2, a);
    EXPECT_NEAR(m.rank_sums_s, 2.0, spread(c)) << to_string(a);
    EXPECT_GE(m.makespan_s, 5.0 - kTol) << to_string(a);
    EXPECT_LE(m.makespan_s, 5.0 + 2 * spread(c)) << to_string(a);
  }
}

TEST(ScanScheduleModel, OneThreadPerRankIsTheStaticSchedule) {
  const std::vector<double> c{1, 2, 3, 4, 5, 6, 7, 8};
  for (auto a : all_global_scan_algorithms())
    EXPECT_NEAR(model_simulated_stealing_scan(c, 4, 1, a).makespan_s, model_static_scan(c, 4, 1, a).makespan_s, kTol);
}

// A schedule the scan could run: never below the bound that holds for any
// cuts stealing leaves, nor below each rank's work (both passes, all but one
// element per thread) over its threads.
TEST(ScanScheduleModel, NeverBelowTheBoundOnRandomCosts) {
  std::mt19937 rng(1410);
  std::exponential_distribution<double> exponential(1.0);
  for (int shape = 0; shape < 16; ++shape) {
    const int ranks = 1 + shape % 5, threads = 2 + (shape * 7) % 7, k = 2 + shape % 9;
    std::vector<double> c(std::size_t(ranks * threads * k));
    for (auto& x : c) x = exponential(rng);
    const double largest = *std::max_element(c.begin(), c.end());
    double work_bound = 0.0;
    for (int r = 0; r < ranks; ++r) {
      const std::ptrdiff_t span = static_cast<std::ptrdiff_t>(threads) * k;
      const auto first = c.begin() + r * span;
      const double work = std::accumulate(first, first + span, 0.0);
      work_bound = std::max(work_bound, (r == 0 ? 1.0 : 2.0) * (work - threads * largest) / threads);
    }
    for (auto a : all_global_scan_algorithms()) {
      const double m = model_simulated_stealing_scan(c, ranks, threads, a).makespan_s;
      EXPECT_GE(m, model_ideal_stealing_scan(c, ranks, threads, a, false, true).makespan_s - kTol)
          << ranks << "x" << threads << " K=" << k << " " << to_string(a);
      EXPECT_GE(m, work_bound - kTol) << ranks << "x" << threads << " K=" << k << " " << to_string(a);
    }
  }
}

TEST(ScanScheduleModel, RejectsFewerElementsThanWorkers) {
  EXPECT_THROW(model_simulated_stealing_scan(std::vector<double>(3, 1.0), 2, 2, GlobalScanAlgorithm::dissemination),
               driftscan::Error);
}

}  // namespace
