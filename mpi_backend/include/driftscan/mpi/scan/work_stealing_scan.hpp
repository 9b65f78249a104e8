#pragma once
// The hierarchical distributed inclusive scan: MPI ranks × OpenMP threads.
//
// The sequence is block-distributed over ranks (rank r holds a contiguous
// block, ranks in order, blocks may be empty) and each rank's block over its
// threads. Phases, per rank:
//   1. local: every thread reduces (reduce-then-scan, optionally with work
//      stealing between neighbouring threads — and between neighbouring
//      ranks, whose edge threads take each other's edge elements, so the
//      ranks' blocks move too: rank_line.hpp) or scans (scan-then-map) its
//      segment;
//   2. the threads reduce their sums by a tree, then the master thread runs
//      the global scan over ranks (only ranks take part — global_scan.hpp),
//      while the other threads assemble the prefixes of their segments within
//      the rank; the exclusive prefix of the ranks before arrives whenever
//      rank r−1 is done, and the master hands it over at once;
//   3. local: every thread scans its segment — as stealing left it — from the
//      carried-in prefix (reduce-then-scan), or maps its local prefixes
//      (scan-then-map), as soon as that prefix and its own are known; the
//      prefixes of elements taken from a neighbour rank go back to it.
// Nothing waits on a barrier: each thread waits only for the results it needs.
// Results equal sequential_inclusive_scan for any associative operator, in
// any configuration; the operator must be thread-safe (it is applied
// concurrently) and may be expensive and of unpredictable cost. Only the
// master thread calls MPI (MPI_THREAD_FUNNELED suffices).
//
//   WorkStealingScan scan(MPI_COMM_WORLD, options);      // plan (collective)
//   std::vector<T> prefixes = scan.run(block, op, &trace);  // execute (collective)
//
// Each run's shared state and its phases, one member each: scan_run.hpp.
#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include <mpi.h>

#include "driftscan/core/error.hpp"
#include "driftscan/mpi/scan/global_scan.hpp"
#include "driftscan/mpi/scan/local_scan.hpp"
#include "driftscan/mpi/scan/rank_line.hpp"
#include "driftscan/mpi/scan/scan_element_codec.hpp"
#include "driftscan/mpi/scan/scan_options.hpp"
#include "driftscan/mpi/scan/scan_run.hpp"
#include "driftscan/mpi/scan/scan_trace.hpp"

namespace driftscan::mpi {

// run()'s default `on_output`: nothing to learn.
struct NoScanOutputHook {
  template <class T>
  void operator()(std::size_t, const T&) const {}
};

class WorkStealingScan {
 public:
  // Collective over `comm` (duplicates it, so the scan's messages never meet the caller's).
  WorkStealingScan(MPI_Comm comm, ScanOptions options) : options_(options) {
    if (options_.threads < 1) throw bad_input("scan: threads must be at least 1");
    MPI_Comm_dup(comm, &comm_);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    if (options_.steals() && options_.between_ranks && size_ > 1)
      line_ = std::make_unique<RankLine>(comm_, options_.threads);
  }
  ~WorkStealingScan() {
    line_.reset();  // its window lives on comm_'s node
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }
  WorkStealingScan(const WorkStealingScan&) = delete;
  WorkStealingScan& operator=(const WorkStealingScan&) = delete;

  const ScanOptions& options() const { return options_; }
  // Whether the reduce phase steals (it needs reduce-then-scan).
  bool steals() const { return options_.steals(); }

  // Collective. `block`: this rank's elements; returns their inclusive
  // prefixes over the whole distributed sequence. `op(a, b)` returns a ⊕ b.
  // On an operator failure on any rank, every rank throws the same Error.
  // With `trace`, every application is recorded (trace->gather() afterwards).
  // `on_output(k, prefix)` is called as soon as block[k]'s final prefix is
  // known (checkpoints), from the worker thread that computed it (a sibling
  // that relayed the segment's final phase, final_scan_relay.hpp): it runs
  // concurrently, must be thread-safe and must not throw. Its time is the
  // worker's: a checkpoint must be cheap; the register's uncertainty with
  // one thread per rank (uncertainty_in_scan.hpp) is work the rank's one
  // worker would do after the scan anyway, while the frame is in its cache.
  template <class T, class Op, class Codec = ScanElementCodec<T>, class OnOutput = NoScanOutputHook>
  std::vector<T> run(const std::vector<T>& block, Op&& op, ScanTrace* trace = nullptr,
                     OnOutput&& on_output = OnOutput{}) {
    std::vector<T> out;
    run_into<T, Op, Codec, OnOutput>(block, out, std::forward<Op>(op), trace, std::forward<OnOutput>(on_output));
    return out;
  }
  // The same, the prefixes written into `out` (resized to the block):
  // on_output's reference is out[k] itself, which stays valid as long as
  // `out` is neither resized nor destroyed, even when the run throws — what
  // a checkpoint saves from without copying the outputs.
  template <class T, class Op, class Codec = ScanElementCodec<T>, class OnOutput = NoScanOutputHook>
  void run_into(const std::vector<T>& block, std::vector<T>& out, Op&& op, ScanTrace* trace = nullptr,
                OnOutput&& on_output = OnOutput{}) {
    if (block.size() >= (std::size_t(1) << 32) - 1) throw bad_input("scan: more than 2^32 elements on one rank");
    detail::ScanRun<T, Codec, std::remove_reference_t<Op>, std::remove_reference_t<OnOutput>> execution(
        comm_, rank_, size_, options_, block, out, op, trace, on_output, line_.get());
    execution.run();
  }

 private:
  ScanOptions options_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  std::unique_ptr<RankLine> line_;  // stealing between ranks, when they share a node
};

}  // namespace driftscan::mpi
