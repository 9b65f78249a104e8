// mpi-ranks: 1 2 3 4 5 8
// The hierarchical scan against the sequential reference, in every
// configuration: threads {1,2,3,4} × element counts {0, 1, P−1, P, P+1, 1000}
// × every global algorithm × both local strategies × stealing on/off, on
// integer addition, 2×2 matrices modulo a prime (non-commutative: any order
// error shows) and string concatenation (variable-size elements). The
// operators sleep or yield at random to shake out races.
#include <gtest/gtest.h>
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "driftscan/mpi/scan/work_stealing_scan.hpp"
#include "driftscan/registration/sequential_scan.hpp"
#include "mpi_world.hpp"

using namespace driftscan;
using namespace driftscan::mpi;

namespace {

// A few microseconds now and then, so threads interleave differently every run.
void jitter() {
  thread_local std::mt19937 rng(std::random_device{}());
  unsigned r = rng() % 16;
  if (r == 0) std::this_thread::sleep_for(std::chrono::microseconds(rng() % 20));
  else if (r < 4) std::this_thread::yield();
}

struct Mat2 {
  std::int64_t a = 1, b = 0, c = 0, d = 1;
  bool operator==(const Mat2& o) const { return a == o.a && b == o.b && c == o.c && d == o.d; }
};
constexpr std::int64_t kPrime = 1000003;
Mat2 multiply(const Mat2& x, const Mat2& y) {
  return {(x.a * y.a + x.b * y.c) % kPrime, (x.a * y.b + x.b * y.d) % kPrime, (x.c * y.a + x.d * y.c) % kPrime,
          (x.c * y.b + x.d * y.d) % kPrime};
}

std::vector<std::int64_t> integers(std::size_t n) {
  std::mt19937 rng(7);
  std::vector<std::int64_t> v(n);
  for (auto& x : v) x = static_cast<std::int64_t>(rng() % 1000) - 500;
  return v;
}
std::vector<Mat2> matrices(std::size_t n) {
  std::mt19937 rng(11);
  std::vector<Mat2> v(n);
  for (auto& m : v)
    m = {std::int64_t(rng() % kPrime), std::int64_t(rng() % kPrime), std::int64_t(rng() % kPrime),
         std::int64_t(rng() % kPrime)};
  return v;
}
std::vector<std::string> strings(std::size_t n) {
  std::vector<std::string> v(n);
  for (std::size_t k = 0; k < n; ++k) v[k] = std::string(1, char('a' + k % 26)) + (k % 7 == 0 ? "|" : "");
  return v;
}

template <class T>
std::vector<T> my_block(const std::vector<T>& all) {
  SegmentRange r =
      static_segment(all.size(), static_cast<std::size_t>(world_size()), static_cast<std::size_t>(world_rank()));
  return std::vector<T>(all.begin() + static_cast<std::ptrdiff_t>(r.lo),
                        all.begin() + static_cast<std::ptrdiff_t>(r.hi));
}

std::vector<std::size_t> element_counts() {
  const std::size_t p = static_cast<std::size_t>(world_size());
  return {0, 1, p - 1, p, p + 1, 1000};
}

// Runs every configuration (element count × thread count × global algorithm ×
// local strategy × stealing: none, inside ranks, also between ranks) and
// expects each to give this rank's block of the sequential reference.
template <class T, class Op>
void check_all_configurations(const std::vector<T>& all_elements, Op op, const std::vector<int>& thread_counts,
                              const std::vector<std::size_t>& counts) {
  for (std::size_t n : counts) {
    std::vector<T> all(all_elements.begin(), all_elements.begin() + static_cast<std::ptrdiff_t>(n));
    const std::vector<T> expected = my_block(sequential_inclusive_scan(all, op));
    const std::vector<T> block = my_block(all);
    for (int threads : thread_counts)
      for (auto algorithm : all_global_scan_algorithms())
        for (auto strategy : all_local_strategies())
          // 2: also between ranks; 3: the final phase shared; 4: both (each rank shares its threads' tails,
          // elements taken from a neighbour rank among them)
          for (int stealing : {0, 1, 2, 3, 4}) {
            std::ostringstream config;
            config << "n=" << n << " threads=" << threads << " " << to_string(algorithm) << " " << to_string(strategy)
                   << (stealing == 4   ? " stealing between ranks, final phase shared"
                       : stealing == 3 ? " stealing, final phase shared"
                       : stealing == 2 ? " stealing between ranks"
                       : stealing      ? " stealing"
                                       : " static")
                   << " rank " << world_rank();
            ScanOptions options{algorithm, strategy, stealing > 0, threads};
            options.between_ranks = stealing == 2 || stealing == 4;
            options.share_final_phase = stealing >= 3;
            WorkStealingScan scan(MPI_COMM_WORLD, options);
            std::vector<T> got = scan.run(block, [&](const T& a, const T& b) {
              jitter();
              return op(a, b);
            });
            EXPECT_TRUE(got == expected) << config.str();
          }
  }
}

}  // namespace

TEST(ScanCorrectness, IntegerAddition) {
  check_all_configurations(
      integers(1000), [](std::int64_t a, std::int64_t b) { return a + b; }, {1, 2, 3, 4}, element_counts());
}

TEST(ScanCorrectness, MatrixProductModPrime) {
  check_all_configurations(matrices(1000), multiply, {1, 2, 3, 4}, element_counts());
}

TEST(ScanCorrectness, StringConcatenationVariableSize) {
  check_all_configurations(
      strings(1000), [](const std::string& a, const std::string& b) { return a + b; }, {1, 3}, element_counts());
}

// One rank with one thread (a --scan-distortion register at --threads 1):
// its reduce's running sums are already the prefixes, so every element is
// combined once (not reduced, then scanned again) and every prefix is
// reported once, in order, as it is found. Each process runs its own
// one-rank scan (MPI_COMM_SELF), whatever the world's size.
TEST(ScanCorrectness, OneWorkerCombinesEachElementOnce) {
  const std::vector<Mat2> all = matrices(100);
  const std::vector<Mat2> expected = sequential_inclusive_scan(all, multiply);
  for (auto algorithm : all_global_scan_algorithms())
    for (bool stealing : {false, true}) {
      WorkStealingScan scan(MPI_COMM_SELF, ScanOptions{algorithm, LocalStrategy::reduce_then_scan, stealing, 1});
      std::atomic<int> calls{0};
      std::vector<std::size_t> reported;
      std::vector<Mat2> got = scan.run(
          all,
          [&](const Mat2& a, const Mat2& b) {
            ++calls;
            return multiply(a, b);
          },
          nullptr,
          [&](std::size_t k, const Mat2& prefix) {
            EXPECT_TRUE(prefix == expected[k]) << "element " << k;
            reported.push_back(k);
          });
      EXPECT_TRUE(got == expected) << to_string(algorithm) << (stealing ? " stealing" : "");
      EXPECT_EQ(calls.load(), 99) << to_string(algorithm) << (stealing ? " stealing" : "");
      ASSERT_EQ(reported.size(), all.size());
      for (std::size_t k = 0; k < reported.size(); ++k) EXPECT_EQ(reported[k], k);
    }
}

// The matrix operator really is non-commutative, so the test above can see order errors.
TEST(ScanCorrectness, MatrixOperatorIsNotCommutative) {
  auto m = matrices(2);
  EXPECT_FALSE(multiply(m[0], m[1]) == multiply(m[1], m[0]));
}
