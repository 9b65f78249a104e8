// mpi-ranks: 1
// SharedSegmentTail (shared_segment_tail.hpp) on its own: which elements of a
// thread's right part may be claimed as the owner's fold advances, dearest
// first anywhere in the tail, and each exactly once under concurrent claims;
// a cut of the owner's fold: which elements become claimable, when, and that
// the owner and the cutting thread never both take an element.
// No messages are sent: it lives in the MPI layer with the scan it serves.
#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "driftscan/mpi/scan/shared_segment_tail.hpp"

using namespace driftscan::mpi;

namespace {

// Segment [0, 10), start 4: the reduce took 4 (its start), 5 while the
// segment began at 4, 6-7 once it had stolen back to 2, 8-9 once to 0.
const std::vector<std::size_t> kFirst{0, 0, 0, 0, 4, 4, 2, 2, 0, 0};
auto first_of = [](std::size_t e) { return kFirst[e]; };

TEST(SharedSegmentTail, ADearElementInMidTailIsClaimedFirst) {
  SharedSegmentTail tail;
  tail.reset();
  EXPECT_FALSE(tail.decided());
  tail.open(0, 4, 10, 0);
  const std::vector<double> cost{1, 1, 1, 1, 1, 1, 9, 1, 5, 1};
  auto cost_of = [&](std::size_t e) { return cost[e]; };
  // Only 8 and 9 start at the segment's first element (P(−1): the base).
  EXPECT_EQ(tail.peek_dearest(first_of, cost_of), std::optional<std::size_t>(8));
  EXPECT_TRUE(tail.waits_on(2, first_of));  // 6 and 7 wait for P(1)
  EXPECT_FALSE(tail.waits_on(3, first_of));
  ASSERT_TRUE(tail.claim(8));
  EXPECT_FALSE(tail.claim(8));  // once only
  EXPECT_EQ(tail.peek_dearest(first_of, cost_of), std::optional<std::size_t>(9));
  // The owner's fold writes P(0), P(1): 6 and 7 (a = 2) become claimable, and
  // 6, dearest, is taken before 9 though it is not at either end.
  tail.folded_to(2);
  EXPECT_EQ(tail.peek_dearest(first_of, cost_of), std::optional<std::size_t>(6));
  ASSERT_TRUE(tail.claim(6));
  // Equal costs: the highest claimable (shortest prefix of the fold needed).
  EXPECT_EQ(tail.peek_dearest(first_of, [](std::size_t) { return 1.0; }), std::optional<std::size_t>(9));
  // 4 and 5 wait for P(3).
  EXPECT_TRUE(tail.waits_on(4, first_of));
  ASSERT_TRUE(tail.claim(9));
  ASSERT_TRUE(tail.claim(7));
  EXPECT_EQ(tail.peek_dearest(first_of, cost_of), std::nullopt);
  tail.folded_to(4);
  // The owner from its start up; then nothing is left.
  EXPECT_EQ(tail.claim_front(first_of), std::optional<std::size_t>(4));
  EXPECT_EQ(tail.remaining(), 1u);
  EXPECT_FALSE(tail.exhausted());
  EXPECT_EQ(tail.claim_front(first_of), std::optional<std::size_t>(5));
  EXPECT_TRUE(tail.exhausted());
  EXPECT_EQ(tail.claim_front(first_of), std::nullopt);
}

TEST(SharedSegmentTail, ClosedTailHasNothingToClaim) {
  SharedSegmentTail tail;
  tail.reset();
  tail.close();
  EXPECT_TRUE(tail.decided());
  EXPECT_TRUE(tail.exhausted());
  EXPECT_EQ(tail.peek_dearest(first_of, [](std::size_t) { return 1.0; }), std::nullopt);
  EXPECT_FALSE(tail.claim(5));
}

TEST(SharedSegmentTail, ConcurrentClaimsTakeEachElementOnce) {
  constexpr std::size_t kElements = 2000, kThreads = 6;
  SharedSegmentTail tail;
  for (int round = 0; round < 5; ++round) {
    tail.reset();
    tail.open(0, 0, kElements, 0);  // every element's prefix starts at the base
    std::vector<std::atomic<int>> runs(kElements);
    for (auto& r : runs) r.store(0);
    std::vector<std::thread> pool;
    for (std::size_t t = 0; t < kThreads; ++t)
      pool.emplace_back([&, t] {
        auto zero = [](std::size_t) { return std::size_t(0); };
        // Costs that differ per thread's view, so the threads race for different elements.
        auto cost = [t](std::size_t e) { return double((e * 7919 + t * 104729) % 1000); };
        while (true) {
          std::optional<std::size_t> e = t == 0 ? tail.claim_front(zero) : tail.peek_dearest(zero, cost);
          if (!e) break;
          if (t == 0 || tail.claim(*e)) runs[*e].fetch_add(1);
        }
      });
    for (auto& th : pool) th.join();
    for (std::size_t e = 0; e < kElements; ++e) ASSERT_EQ(runs[e].load(), 1) << "element " << e << ", round " << round;
    EXPECT_TRUE(tail.exhausted());
  }
}

// Segment [0, 8), start 6; 6 and 7 start from P(5). The owner folds 0..5; a
// helper cuts the back of that fold off at 3: the owner stops before 3, the
// helper writes local prefixes [3, e], and 3-5 become claimable once the fold
// has written P(2), then 6-7 once 5's prefix is written.
TEST(SharedSegmentTail, ACutFoldsBackIsClaimedAfterTheOwnersFoldReachesIt) {
  std::vector<std::size_t> first{0, 0, 0, 0, 0, 0, 6, 6};
  auto first_of_cut = [&](std::size_t e) { return first[e]; };
  const std::vector<double> cost{1, 1, 1, 2, 7, 3, 1, 1};
  auto cost_of = [&](std::size_t e) { return cost[e]; };
  SharedSegmentTail tail;
  tail.reset();
  tail.open(0, 6, 8, 0);
  ASSERT_TRUE(tail.fold_step(0));
  tail.folded_to(1);
  EXPECT_EQ(tail.unfolded(), (std::pair<std::size_t, std::size_t>(1, 6)));
  // At least 2 left to the owner (1, 2) and 2 taken: a cut at 2 is refused, at 3 taken.
  EXPECT_EQ(tail.cut(2, [](std::size_t, std::size_t) { return std::size_t(2); }), std::nullopt);
  const auto cut = tail.cut(2, [](std::size_t, std::size_t) { return std::size_t(3); });
  ASSERT_EQ(cut, (std::optional<std::pair<std::size_t, std::size_t>>({3, 6})));
  EXPECT_EQ(tail.cut(2, [](std::size_t, std::size_t) { return std::size_t(4); }), std::nullopt);  // one per tail
  EXPECT_EQ(tail.remaining(), 5u);                                                                // 3-5 and 6-7
  ASSERT_TRUE(tail.fold_step(1));
  ASSERT_TRUE(tail.fold_step(2));
  EXPECT_FALSE(tail.fold_step(3));  // the helper's now
  // Nothing claimable: 3-5 have no local prefix yet, 6-7 wait for P(5).
  EXPECT_EQ(tail.peek_dearest(first_of_cut, cost_of), std::nullopt);
  for (std::size_t e = 3; e < 6; ++e) first[e] = 3;
  tail.cut_local(5);  // [3, 3] and [3, 4] written
  tail.folded_to(2);
  EXPECT_EQ(tail.peek_dearest(first_of_cut, cost_of), std::nullopt);  // P(2) not written yet
  EXPECT_TRUE(tail.waits_on(3, first_of_cut));
  tail.folded_to(3);
  EXPECT_EQ(tail.peek_dearest(first_of_cut, cost_of), std::optional<std::size_t>(4));  // 5 not ready
  tail.cut_local(6);
  ASSERT_TRUE(tail.claim(4));
  EXPECT_EQ(tail.peek_dearest(first_of_cut, cost_of), std::optional<std::size_t>(5));
  EXPECT_EQ(tail.claim_front(first_of_cut), std::nullopt);  // the owner's 6 waits for P(5)
  ASSERT_TRUE(tail.claim(5));
  ASSERT_TRUE(tail.claim(3));
  EXPECT_TRUE(tail.waits_on(6, first_of_cut));
  tail.done(5);
  EXPECT_EQ(tail.claim_front(first_of_cut), std::optional<std::size_t>(6));
  EXPECT_EQ(tail.claim_front(first_of_cut), std::optional<std::size_t>(7));
  EXPECT_TRUE(tail.exhausted());
}

// The owner folding while helpers try to cut: every element of the left part
// is taken by exactly one of them, and a cut only ever takes elements the
// owner had not reached.
TEST(SharedSegmentTail, OwnerAndCuttersNeverShareAnElement) {
  constexpr std::size_t kLeft = 400, kHelpers = 3;
  SharedSegmentTail tail;
  for (int round = 0; round < 200; ++round) {
    tail.reset();
    tail.open(0, kLeft, kLeft + 1, 0);
    std::vector<std::atomic<int>> taken(kLeft);
    for (auto& x : taken) x.store(0);
    std::vector<std::thread> pool;
    pool.emplace_back([&] {
      for (std::size_t k = 0; tail.fold_step(k); ++k) taken[k].fetch_add(1);
    });
    for (std::size_t h = 0; h < kHelpers; ++h)
      pool.emplace_back([&] {
        if (auto c = tail.cut(2, [](std::size_t next, std::size_t end) { return (next + end) / 2; }))
          for (std::size_t e = c->first; e < c->second; ++e) taken[e].fetch_add(1);
      });
    for (auto& th : pool) th.join();
    for (std::size_t e = 0; e < kLeft; ++e) ASSERT_EQ(taken[e].load(), 1) << "element " << e << ", round " << round;
  }
}

}  // namespace
