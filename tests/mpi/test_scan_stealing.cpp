// mpi-ranks: 1 2 3
// Work stealing really moves work, the trace describes what happened, and an
// operator failure on one rank surfaces as the same Error on every rank
// (never a hang).
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "driftscan/mpi/scan/work_stealing_scan.hpp"
#include "driftscan/registration/sequential_scan.hpp"
#include "mpi_world.hpp"

using namespace driftscan;
using namespace driftscan::mpi;

namespace {

// The element range a result covers; the operator checks adjacency.
struct Range {
  std::int64_t first = 0, last = 0;
  bool operator==(const Range& o) const { return first == o.first && last == o.last; }
};

std::vector<Range> my_ranges(std::size_t per_rank) {
  const std::int64_t offset = static_cast<std::int64_t>(per_rank) * world_rank();
  std::vector<Range> v(per_rank);
  for (std::size_t k = 0; k < per_rank; ++k) v[k] = {offset + std::int64_t(k), offset + std::int64_t(k)};
  return v;
}

// The element an application takes in the reduce: the left one when a single
// element joins a run from the left, else the right one.
std::int64_t element_taken(const Range& a, const Range& b) {
  return (a.first == a.last && b.first != b.last) ? a.first : b.last;
}

// Runs the scan of this rank's `per_rank` ranges on `threads` threads (the
// dissemination global scan, reduce-then-scan, stealing as given), each
// application first sleeping `pause_ms(a, b, offset)` ms (offset: this rank's
// first index); checks every prefix is the sequential one and gathers the
// trace on rank 0.
// `share`: ScanOptions::share_final_phase.
template <class PauseMs>
ScanTrace run_paused(std::size_t per_rank, std::size_t threads, bool stealing, PauseMs pause_ms, bool share = false) {
  ScanOptions options{GlobalScanAlgorithm::dissemination, LocalStrategy::reduce_then_scan, stealing, int(threads)};
  options.share_final_phase = share;
  WorkStealingScan scan(MPI_COMM_WORLD, options);
  ScanTrace trace;
  const std::int64_t offset = static_cast<std::int64_t>(per_rank) * world_rank();
  auto op = [&](const Range& a, const Range& b) {
    if (a.last + 1 != b.first) throw failure("not adjacent");
    if (const int ms = pause_ms(a, b, offset); ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    return Range{a.first, b.last};
  };
  std::vector<Range> got = scan.run(my_ranges(per_rank), op, &trace);
  for (std::size_t k = 0; k < per_rank; ++k) EXPECT_EQ(got[k], (Range{0, offset + std::int64_t(k)}));
  gather_trace(trace, MPI_COMM_WORLD);
  return trace;
}

}  // namespace

// Elements of thread 0's static segment cost 2 ms, all others nothing: thread
// 1 must take over part of segment 0, and the final phase must use the
// segments as stealing left them (so the slow elements are split too).
TEST(ScanStealing, FastThreadTakesOverSlowNeighboursElements) {
  const std::size_t per_rank = 60, threads = 3;
  const ScanTrace trace = run_paused(per_rank, threads, true, [](const Range& a, const Range& b, std::int64_t offset) {
    return element_taken(a, b) - offset < 20 ? 2 : 0;
  });

  if (world_rank() == 0) {
    ScanSummary s = trace.summary();
    ASSERT_EQ(s.workers.size(), std::size_t(world_size()) * threads);
    std::map<std::pair<int, int>, std::size_t> stolen;
    for (const auto& w : s.workers) stolen[{w.rank, w.thread}] = w.stolen;
    for (int r = 0; r < world_size(); ++r) {
      EXPECT_GT((stolen[{r, 1}]), 3u) << "rank " << r << ": thread 1 should have taken slow elements of segment 0";
      // Final phase of thread 0 on this rank: its segment as stealing left it ends before 20.
      std::int64_t last_final_of_thread0 = -1;
      for (const auto& rec : trace.records())
        if (rec.rank == r && rec.thread == 0 && rec.phase == ScanPhase::final_scan)
          last_final_of_thread0 = std::max(last_final_of_thread0, rec.last - std::int64_t(per_rank) * r);
      EXPECT_LT(last_final_of_thread0, 19) << "rank " << r;
    }
    // Every application is one record, with a sane time interval.
    for (const auto& rec : trace.records()) {
      EXPECT_LE(rec.start_s, rec.end_s);
      EXPECT_GE(rec.start_s, 0.0);
      EXPECT_LE(rec.first, rec.last);
    }
    EXPECT_GE(s.imbalance, 1.0);
    EXPECT_GT(s.makespan_s, 0.0);
    EXPECT_FALSE(s.critical_path.empty());

    nlohmann::json j = trace.to_json();
    EXPECT_EQ(j["records"].size(), trace.records().size());
    EXPECT_EQ(j["workers"].size(), s.workers.size());
    EXPECT_EQ(j["details"]["algorithm"], "dissemination");
    EXPECT_EQ(j["details"]["work_stealing"], true);
    std::set<std::string> phases;
    for (const auto& r : j["records"]) phases.insert(r["phase"].get<std::string>());
    EXPECT_TRUE(phases.count("local-reduce"));
    EXPECT_TRUE(phases.count("final-scan"));
  }
}

// A thread's final phase waits only for what precedes its segment, not for
// its slowest sibling: on rank 0 (nothing precedes it), thread 1 scans its
// segment while thread 2 is still in the last, slow step of its reduce.
// (Static segments, so that step is certainly thread 2's.)
TEST(ScanStealing, FinalPhaseDoesNotWaitForSlowestSibling) {
  const std::size_t per_rank = 30, threads = 3;
  const ScanTrace trace = run_paused(per_rank, threads, false, [](const Range& a, const Range& b, std::int64_t offset) {
    return a.first == offset + 20 && b.last == offset + 29 ? 300 : 0;
  });
  if (world_rank() == 0) {
    double thread1_final_start = 1e300, thread2_reduce_end = 0.0;
    for (const auto& rec : trace.records()) {
      if (rec.rank != 0) continue;
      if (rec.thread == 1 && rec.phase == ScanPhase::final_scan)
        thread1_final_start = std::min(thread1_final_start, rec.start_s);
      if (rec.thread == 2 && rec.phase == ScanPhase::local_reduce)
        thread2_reduce_end = std::max(thread2_reduce_end, rec.end_s);
    }
    EXPECT_GT(thread2_reduce_end, 0.3);
    EXPECT_LT(thread1_final_start, thread2_reduce_end - 0.2);
  }
}

// A dear element taken last in the reduce is not paid again back to back by
// the same thread: on rank 0 (nothing precedes it) thread 1 takes element 10
// (300 ms) while thread 0 crawls through 1..9 (20 ms each); thread 2, idle,
// scans the head of thread 1's segment as soon as thread 0's sum is known,
// so element 10's prefix is under way before thread 1's reduce has finished
// with it, on another thread, and the prefixes are the sequential ones.
TEST(ScanStealing, IdleThreadStartsABusySiblingsFinalPhase) {
  const std::size_t per_rank = 30, threads = 3;
  const ScanTrace trace = run_paused(per_rank, threads, true, [](const Range& a, const Range& b, std::int64_t offset) {
    const std::int64_t k = element_taken(a, b) - offset;
    return k == 10 ? 300 : k < 10 ? 20 : 0;
  });
  if (world_rank() == 0) {
    const ScanRecord* reduced = nullptr;  // the reduce's application of element 10
    const ScanRecord* prefix = nullptr;   // the final phase's application ending on it
    for (const auto& rec : trace.records()) {
      if (rec.rank != 0) continue;
      if (rec.phase == ScanPhase::local_reduce && rec.busy_s > 0.25) reduced = &rec;
      if (rec.phase == ScanPhase::final_scan && rec.last == 10) prefix = &rec;
    }
    ASSERT_NE(reduced, nullptr);
    ASSERT_NE(prefix, nullptr);
    EXPECT_EQ(reduced->thread, 1);
    EXPECT_NE(prefix->thread, reduced->thread);
    EXPECT_LT(prefix->start_s, reduced->end_s);
  }
}

// With the final phase shared, a dear segment's elements right of its
// thread's start are run by idle siblings too: every application costs 5 ms
// (the reduce stays near the static segments), and on each rank the final
// phase's prefixes of elements 15..19 (thread 1's static segment is 10..19,
// its start 15) cost 65 ms. Shared, some of them run on
// threads 0 and 2, which are otherwise done; folded (the default), all on
// thread 1. Every prefix equals the sequential one either way.
//
// A final prefix of e in 15..19 is P(a−1) ⊕ [a, e], a being where thread 1's
// reduce had got to on its left when it took e: below 10 when a loaded
// machine starts thread 0 late and thread 1 takes its elements first (traced:
// element 19 as P(7) ⊕ [8, 19]), so every such a > 0 counts as dear. Only
// a = 0 is not: the ranks' prefix ⊕ what precedes a segment in the rank,
// the base of a segment (thread 0's reduce cannot reach 15, thread 1's start).
TEST(ScanStealing, SharedFinalPhaseRunsADearSegmentsTailOnIdleSiblings) {
  const std::size_t per_rank = 30, threads = 3;
  for (bool share : {true, false}) {
    const ScanTrace trace = run_paused(
        per_rank, threads, true,
        [](const Range& a, const Range& b, std::int64_t offset) {
          const std::int64_t k = b.last - offset;
          if (a.first == 0 && k >= 15 && k < 20 && b.first > offset) return 65;
          // Thread 1's reduce is quick, so no sibling steals the end of its
          // segment (the dear elements would then be a sibling's own, folded
          // or not: the check below would count them as shared).
          return a.first != 0 && b.first - offset >= 10 && k < 20 ? 1 : 5;
        },
        share);
    if (world_rank() != 0) continue;
    for (int r = 0; r < world_size(); ++r) {
      // On rank 0 thread 0's reduce prefixes are final (none of 15..19: it
      // cannot pass thread 1's start; counted should that change).
      std::size_t dear = 0, elsewhere = 0, in_reduce = 0;
      bool in_range = true;
      std::string seen;  // what the rank ran, for a failure's message
      for (const auto& rec : trace.records()) {
        const std::int64_t k = rec.last - std::int64_t(per_rank) * r;
        if (rec.rank != r) continue;
        seen += "\n  t" + std::to_string(rec.thread) + " " + to_string(rec.phase) + " [" +
                std::to_string(rec.first - std::int64_t(per_rank) * r) + ", " + std::to_string(k) + "] " +
                std::to_string(int(rec.busy_s * 1000)) + " ms";
        if (rec.busy_s < 0.05) continue;
        if (rec.phase == ScanPhase::local_reduce && r == 0) {
          in_range = in_range && k >= 15 && k < 20;
          ++in_reduce;
          continue;
        }
        if (rec.phase != ScanPhase::final_scan) continue;
        in_range = in_range && k >= 15 && k < 20;
        ++dear;
        if (rec.thread != 1) ++elsewhere;
      }
      EXPECT_TRUE(in_range) << "rank " << r << seen;
      EXPECT_EQ(dear + in_reduce, 5u) << "rank " << r << (share ? " shared" : " folded") << seen;
      if (share) EXPECT_GE(elsewhere + in_reduce, 2u) << "rank " << r << seen;
      else EXPECT_EQ(elsewhere, 0u) << "rank " << r << seen;
    }
  }
}

// The operator is only approximately associative in DriftScan (the
// registration's refinement), so how each prefix is bracketed matters: inside
// a thread's segment, each prefix must be the previous one extended by one
// application (a left fold from what precedes the segment), also in thread
// 0's segment on ranks after the first, where its reduce's local prefixes are
// not final (combining the rank's prefix with each of them would bracket
// otherwise and make the results depend on the decomposition). Only where a
// later thread's segment starts may a prefix be built otherwise; on rank 0
// thread 0's prefixes are its reduce's own, the same left fold.
TEST(ScanStealing, EachPrefixExtendsThePreviousOneInsideASegment) {
  const std::size_t per_rank = 45, threads = 3;
  WorkStealingScan scan(MPI_COMM_WORLD, ScanOptions{GlobalScanAlgorithm::dissemination, LocalStrategy::reduce_then_scan,
                                                    true, int(threads)});
  const std::int64_t offset = static_cast<std::int64_t>(per_rank) * world_rank();
  std::vector<std::string> block(per_rank);
  for (std::size_t k = 0; k < per_rank; ++k) block[k] = std::to_string(offset + std::int64_t(k));
  auto op = [](const std::string& a, const std::string& b) {
    std::this_thread::sleep_for(std::chrono::microseconds(300));  // so the threads overlap
    return "(" + a + "," + b + ")";
  };
  std::vector<std::string> got = scan.run(block, op);
  std::size_t otherwise = 0;
  for (std::size_t k = 1; k < per_rank; ++k)
    if (got[k] != "(" + got[k - 1] + "," + block[k] + ")") ++otherwise;
  EXPECT_LE(otherwise, threads - 1) << "rank " << world_rank();
  if (world_rank() == 0) {
    EXPECT_EQ(got[1], "(0,1)");
  }
}

// Stealing off: every thread keeps exactly its static segment.
TEST(ScanStealing, StaticRunStealsNothing) {
  WorkStealingScan scan(MPI_COMM_WORLD,
                        ScanOptions{GlobalScanAlgorithm::blelloch, LocalStrategy::reduce_then_scan, false, 4});
  ScanTrace trace;
  auto got = scan.run(
      my_ranges(40),
      [](const Range& a, const Range& b) {
        return Range{a.first, b.last};
      },
      &trace);
  gather_trace(trace, MPI_COMM_WORLD);
  if (world_rank() == 0) {
    for (const auto& w : trace.summary().workers) EXPECT_EQ(w.stolen, 0u);
  }
}

// The operator throws on one element of the last rank: every rank throws the
// same Error, in every configuration, and the next scan still works.
TEST(ScanFailure, OperatorErrorReachesEveryRank) {
  const std::size_t per_rank = 12;
  const std::int64_t bad = static_cast<std::int64_t>(per_rank) * world_size() - 3;
  for (auto algorithm : all_global_scan_algorithms())
    for (auto strategy : all_local_strategies())
      for (bool stealing : {false, true})
        for (ErrorKind kind : {ErrorKind::failure, ErrorKind::cancelled}) {
          WorkStealingScan scan(MPI_COMM_WORLD, ScanOptions{algorithm, strategy, stealing, 2});
          auto op = [&](const Range& a, const Range& b) {
            if (b.last == bad || a.first == bad) throw Error(kind, "boom at frame " + std::to_string(bad));
            return Range{a.first, b.last};
          };
          std::string what;
          ErrorKind got = ErrorKind::bad_input;
          try {
            scan.run(my_ranges(per_rank), op);
          } catch (const Error& e) {
            what = e.what();
            got = e.kind();
          }
          EXPECT_NE(what.find("boom at frame"), std::string::npos)
              << to_string(algorithm) << " " << to_string(strategy) << " stealing=" << stealing;
          EXPECT_EQ(got, kind);
        }
  WorkStealingScan scan(MPI_COMM_WORLD, ScanOptions{});
  auto ok = scan.run(my_ranges(per_rank), [](const Range& a, const Range& b) { return Range{a.first, b.last}; });
  EXPECT_EQ(ok.back().first, 0);
}

// run_into: on_output's reference is the output element itself, reported
// once, final, and still there after the run — also when the run fails (a
// checkpoint saves from there instead of a copy).
TEST(ScanOutputs, HookSeesEachFinalPrefixInPlace) {
  const std::size_t per_rank = 16;
  const std::int64_t offset = static_cast<std::int64_t>(per_rank) * world_rank();
  for (auto algorithm : all_global_scan_algorithms())
    for (auto strategy : all_local_strategies())
      for (bool stealing : {false, true})
        for (bool fail : {false, true}) {
          const std::string config =
              std::string(to_string(algorithm)) + " " + to_string(strategy) + " stealing=" + std::to_string(stealing);
          WorkStealingScan scan(MPI_COMM_WORLD, ScanOptions{algorithm, strategy, stealing, 2});
          const std::int64_t bad = static_cast<std::int64_t>(per_rank) * world_size() - 2;
          auto op = [&](const Range& a, const Range& b) {
            if (fail && (b.last == bad || a.first == bad)) throw failure("boom");
            return Range{a.first, b.last};
          };
          std::mutex mu;
          std::map<std::size_t, std::pair<const Range*, Range>> seen;
          int repeated = 0;
          std::vector<Range> out;
          bool threw = false;
          try {
            scan.run_into(my_ranges(per_rank), out, op, nullptr, [&](std::size_t k, const Range& r) {
              std::lock_guard<std::mutex> lock(mu);
              repeated += seen.count(k) ? 1 : 0;
              seen[k] = {&r, r};
            });
          } catch (const Error&) {
            threw = true;
          }
          EXPECT_EQ(threw, fail) << config;
          EXPECT_EQ(repeated, 0) << config;
          ASSERT_EQ(out.size(), per_rank) << config;
          if (!fail) {
            EXPECT_EQ(seen.size(), per_rank) << config;
          }
          for (const auto& [k, where] : seen) {
            ASSERT_LT(k, per_rank) << config;
            EXPECT_EQ(where.first, &out[k]) << config << " k=" << k;
            EXPECT_EQ(out[k], where.second) << config << " k=" << k;
            EXPECT_EQ(where.second, (Range{0, offset + std::int64_t(k)})) << config << " k=" << k;
          }
        }
}

TEST(ScanNames, RoundTripAndRejectUnknown) {
  for (auto a : all_global_scan_algorithms()) EXPECT_EQ(global_scan_algorithm_from_string(to_string(a)), a);
  for (auto s : all_local_strategies()) EXPECT_EQ(local_strategy_from_string(to_string(s)), s);
  EXPECT_THROW(global_scan_algorithm_from_string("bogus"), Error);
  EXPECT_THROW(local_strategy_from_string("bogus"), Error);
}

// A long scan's trace stays bounded: past kMaxRecordsPerWorker records a
// worker's consecutive applications of one phase share records, and what
// the summary says (applications, busy time, stolen, per worker) stays exact.
TEST(ScanTraceBound, ManyApplicationsStayFewRecordsWithAnExactSummary) {
  const int rank = world_rank(), threads = 2;
  const std::size_t per_thread = 5 * ScanTrace::kMaxRecordsPerWorker + 123;
  ScanTrace trace;
  begin_trace(trace, MPI_COMM_WORLD, threads);
  double busy[2] = {0.0, 0.0};
  std::size_t stolen[2] = {0, 0};
  for (int t = 0; t < threads; ++t)
    for (std::size_t i = 0; i < per_thread; ++i) {
      // Three phases in turn, as a scan runs them; applications of 1 to 1.1 ms, 1.5 ms apart.
      const ScanPhase phase = i < per_thread / 3       ? ScanPhase::local_reduce
                              : i < per_thread / 3 + 2 ? ScanPhase::global
                                                       : ScanPhase::final_scan;
      const double start = 0.0015 * static_cast<double>(i), d = 0.001 + 1e-6 * static_cast<double>(i % 100);
      const std::uint8_t steal = i % 7 == 0 ? 1 : 0;
      trace.record(t, ScanRecord{rank, t, static_cast<std::int64_t>(i), static_cast<std::int64_t>(i), phase, steal,
                                 start, start + d});
      busy[t] += d;
      stolen[t] += steal;
    }
  trace.end();
  gather_trace(trace, MPI_COMM_WORLD);
  const std::size_t ranks_held = rank == 0 ? static_cast<std::size_t>(world_size()) : 1;
  EXPECT_LE(trace.records().size(), ranks_held * threads * ScanTrace::kMaxRecordsPerWorker);
  EXPECT_GT(trace.records().size(), ranks_held * threads * ScanTrace::kMaxRecordsPerWorker / 4);
  std::size_t covered = 0;
  for (const auto& r : trace.records()) {
    if (r.rank != rank || r.thread != 0) continue;
    EXPECT_LE(r.first, r.last);
    EXPECT_LE(r.start_s, r.end_s);
    EXPECT_LE(r.busy_s, r.end_s - r.start_s + 1e-12);
    covered += static_cast<std::size_t>(r.last - r.first + 1);
  }
  EXPECT_EQ(covered, per_thread);  // every application in exactly one record
  const ScanSummary s = trace.summary();
  ASSERT_EQ(s.workers.size(), ranks_held * threads);
  for (const auto& w : s.workers) {
    if (w.rank != rank) continue;
    EXPECT_EQ(w.applications, per_thread);
    EXPECT_EQ(w.stolen, stolen[w.thread]);
    EXPECT_NEAR(w.busy_s, busy[w.thread], 1e-9);
  }
  // The phases stay apart: the two global applications of each worker are one record's.
  std::size_t global = 0;
  for (const auto& r : trace.records())
    if (r.rank == rank && r.phase == ScanPhase::global) global += r.applications;
  EXPECT_EQ(global, 2u * threads);
  const nlohmann::json j = trace.to_json();
  EXPECT_EQ(j["records"].size(), trace.records().size());
  EXPECT_TRUE(j["records"][0].contains("applications"));
}
