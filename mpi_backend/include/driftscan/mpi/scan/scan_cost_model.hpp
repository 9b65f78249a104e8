#pragma once
// What the distributed scan (work_stealing_scan.hpp) could take for known
// operator costs, with no overheads: no message latency, no wake-up delay, no
// time outside the operator. scan-bench prints it beside what it measures,
// so a gap between them is the code's (or the machine's), not the algorithm's.
//
// Costs are per element, as scan-bench's sleeping operator charges them: an
// application l ⊕ r costs the cost of r's last element, except extending a
// single element leftwards onto a longer range (x_k ⊕ [k+1..j]), which costs
// x_k's. Rank r holds the block static_segment(n, ranks, r), split over
// `threads` threads as the scan does.
//
//   static: the schedule of the scan without stealing, exactly — each thread
//     reduces its static segment, the tree of thread sums, the global scan
//     over the ranks' sums (every message as the algorithm sends it), the
//     final phase of each segment from the carried-in prefix.
//   ideal stealing: the same phases with perfect balance inside each rank —
//     the reduce phase's work (every element but the threads' starting ones)
//     spread evenly over the rank's threads; the tree and the prefixes
//     within the rank over the evenly balanced segments; the final phase's
//     work (every element once; on rank 0 not the first segment, whose local
//     prefixes the reduce leaves final) spread evenly over the threads from the
//     moment each may start (its prefix within the rank known, the ranks'
//     exclusive prefix arrived; the master also done with its global phase)
//     — or the static schedule, where that is shorter (with few elements per
//     thread the static cut points may happen to be the cheaper ones).
//   ideal stealing between ranks (`between_ranks`): the same, with the
//     ranks' blocks cut where the total cost is evenly shared (where perfect
//     stealing along the whole line of workers would leave the ranks'
//     boundaries; rank_line.hpp) instead of the equal element counts.
//
// In both, only the results the scan needs are computed: the last rank's
// inclusive result goes to nobody, so its global phase applies nothing.
// MPI_Scan is modelled as the linear chain Open MPI runs for a
// non-commutative operator (libnbc's MPI_Iscan): rank r combines once rank
// r−1's result has arrived.
#include <cstddef>
#include <vector>

#include "driftscan/mpi/scan/global_scan.hpp"
#include "driftscan/mpi/scan/local_scan.hpp"

namespace driftscan::mpi {

struct ScanModel {
  double makespan_s = 0.0;
  double rank_sums_s = 0.0;  // the last rank sum known (end of the tree)
  double global_s = 0.0;     // the last master done with the global phase
};

// `costs[k]`: element k's cost (s); requires at least `threads` elements per rank.
ScanModel model_static_scan(const std::vector<double>& costs, int ranks, int threads, GlobalScanAlgorithm algorithm,
                            LocalStrategy strategy = LocalStrategy::reduce_then_scan);
// `shared_final_phase`: the scan's ScanOptions::share_final_phase (its last
// thread then starts inside its segment too, so a different element is free).
ScanModel model_ideal_stealing_scan(const std::vector<double>& costs, int ranks, int threads,
                                    GlobalScanAlgorithm algorithm, bool between_ranks = false,
                                    bool shared_final_phase = false);

// The same ideal with whole elements: the reduce's elements and the final
// phase's applications each run by one thread, dearest first on the thread
// free first (list scheduling; elements are never divided, and a thread
// starting from the prefix within its rank pays exclusive ⊕ before itself).
// Order constraints are ignored still (any element may run once its thread
// may start). With a few elements per thread and exponential costs the fluid
// sharing above is out of reach of any schedule: the dearest element of a
// rank alone outlasts a thread's even share (K=4: 3-5x the mean against 4).
ScanModel model_ideal_stealing_scan_whole(const std::vector<double>& costs, int ranks, int threads,
                                          GlobalScanAlgorithm algorithm, bool between_ranks = false,
                                          bool shared_final_phase = false);

// The global phase alone, for tests: ranks' sums known at `ready[r]` covering
// ranks' blocks of the given sizes; returns when each master is done with it
// (`done`) and when each rank's exclusive prefix arrives (`exclusive`).
struct GlobalPhaseTimes {
  std::vector<double> done, exclusive;
};
GlobalPhaseTimes model_global_phase(const std::vector<double>& costs, const std::vector<std::size_t>& block_sizes,
                                    const std::vector<double>& ready, GlobalScanAlgorithm algorithm);

}  // namespace driftscan::mpi
