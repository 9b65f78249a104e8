// mpi-ranks: 1
// SharedSegmentTail (shared_segment_tail.hpp) on its own: which elements of a
// thread's right part may be claimed as the owner's fold advances, dearest
// first anywhere in the tail, and each exactly once under concurrent claims.
// No messages are sent: it lives in the MPI layer with the scan it serves.
#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <thread>
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
  EXPECT_EQ(tail.claim_front(), std::optional<std::size_t>(4));
  EXPECT_EQ(tail.remaining(), 1u);
  EXPECT_FALSE(tail.exhausted());
  EXPECT_EQ(tail.claim_front(), std::optional<std::size_t>(5));
  EXPECT_TRUE(tail.exhausted());
  EXPECT_EQ(tail.claim_front(), std::nullopt);
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
          std::optional<std::size_t> e = t == 0 ? tail.claim_front() : tail.peek_dearest(zero, cost);
          if (!e) break;
          if (t == 0 || tail.claim(*e)) runs[*e].fetch_add(1);
        }
      });
    for (auto& th : pool) th.join();
    for (std::size_t e = 0; e < kElements; ++e) ASSERT_EQ(runs[e].load(), 1) << "element " << e << ", round " << round;
    EXPECT_TRUE(tail.exhausted());
  }
}

}  // namespace
