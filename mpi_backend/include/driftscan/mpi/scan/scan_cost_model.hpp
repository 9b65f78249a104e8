#pragma once
// What the distributed scan (work_stealing_scan.hpp) could take for known
// operator costs, with no overheads: no message latency, no wake-up delay, no
// time outside the operator. scan-bench prints it beside what it measures,
// so a gap between them is the code's (or the machine's), not the algorithm's.
// For stealing with the shared final phase inside ranks, scan-bench's model
// is the scan's own schedule simulated (scan_schedule_model.hpp), and the
// ideal below is its model_bound_s.
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
//   ideal stealing: a lower bound on the scan with stealing inside each
//     rank, whatever cuts the stealing leaves — the reduce phase's work
//     (every element but the threads' starting ones) spread evenly over the
//     rank's threads and overlapped with the tree of thread sums: a tree
//     node, and each thread's prefix within the rank, known no earlier than
//     its children plus its application at the cheapest place its cut may
//     fall (between two threads' starting elements; the last segment always
//     ends on the block's last element), nor than the reduce work it covers
//     over all the rank's threads; the final phase's work (every element
//     once; on rank 0 not the first segment, whose local prefixes the reduce
//     leaves final) spread evenly over the threads from the moment each may
//     start (its prefix within the rank known, the ranks' exclusive prefix
//     arrived; the master also done with its global phase), and no rank done
//     before its reduce and final work over its threads — or the static
//     schedule, where that is shorter. (Until scan-scale-11b the tree began
//     when the fluid reduce ended, over the even-cost cuts: the scan beat
//     that at K=4, 0.76-0.93 of it at 16x64 and 32x32.) Rank 0 keeps the
//     even-cost cuts for which segment's prefixes the reduce leaves final.
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

// The same bound with whole elements: no tree node before the dearest
// element of the reduce work it covers ran, no rank done before its first
// thread free for the final phase plus its dearest final application. With a
// few elements per thread and exponential costs the fluid sharing above is
// out of reach of any schedule: the dearest element of a rank alone outlasts
// a thread's even share (K=4: 3-5x the mean against 4).
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
