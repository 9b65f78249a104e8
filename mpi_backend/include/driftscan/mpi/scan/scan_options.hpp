#pragma once
// How a WorkStealingScan runs: the global algorithm over ranks, the local
// strategy within a rank, stealing (within and between ranks), and the
// threads per rank.
#include "driftscan/mpi/scan/global_scan.hpp"
#include "driftscan/mpi/scan/local_scan.hpp"

namespace driftscan::mpi {

struct ScanOptions {
  GlobalScanAlgorithm algorithm = GlobalScanAlgorithm::dissemination;
  LocalStrategy strategy = LocalStrategy::reduce_then_scan;
  bool work_stealing = true;  // reduce-then-scan only; scan-then-map is always static
  int threads = 1;            // OpenMP threads per rank
  // Stealing also between neighbouring ranks (when they share a node:
  // rank_line.hpp). Off by default: the ranks' blocks then move with the
  // timing, and the registration's scan-distortion lines of 1 and 3 ranks
  // drift apart (0.0195 px, test_scan_distortion holds 0.01).
  bool between_ranks = false;
  // With stealing (inside ranks or along a line): the final phase's elements
  // right of each thread's start are run by whichever thread of the rank is free, each as one
  // application P(a−1) ⊕ local prefix kept from the reduce
  // (shared_segment_tail.hpp). Exact for an associative operator, in order
  // (it need not commute), but bracketed otherwise than the fold from the
  // segment's start: off by default, as the registration's refinement is
  // only approximately associative and its results would depend on where
  // the threads' reduces happened to be (test_scan_stealing's
  // EachPrefixExtendsThePreviousOneInsideASegment). scan-bench turns it on.
  bool share_final_phase = false;

  // Whether the reduce phase steals (it needs reduce-then-scan).
  bool steals() const { return work_stealing && strategy == LocalStrategy::reduce_then_scan; }
};

}  // namespace driftscan::mpi
