#pragma once
// The local phases of the distributed scan: how a rank's threads split its
// block and in which order they evaluate it.
//
//   scan-then-map     each thread scans its segment left to right (local
//                     prefixes); after the global phase each prefix is mapped
//                     to offset ⊕ prefix. The strict left-to-right order of the
//                     first phase leaves no room for load balancing.
//   reduce-then-scan  each thread only reduces its segment to one sum; after the
//                     global phase it scans the segment from the carried-in
//                     offset. The reduce may run in any order, which is what
//                     lets neighbouring threads steal each other's elements
//                     (stealing_reduce.hpp).
#include <cstddef>
#include <string>
#include <vector>

namespace driftscan::mpi {

enum class LocalStrategy { scan_then_map, reduce_then_scan };

const char* to_string(LocalStrategy strategy);
// Accepts the names above; throws bad_input otherwise.
LocalStrategy local_strategy_from_string(const std::string& name);
const std::vector<LocalStrategy>& all_local_strategies();

// Half-open element range [lo, hi) of a block.
struct SegmentRange {
  std::size_t lo = 0;
  std::size_t hi = 0;
  std::size_t size() const { return hi - lo; }
  bool contains(std::size_t k) const { return k >= lo && k < hi; }
};

// Block distribution: part `i` of `n` elements split over `parts` (sizes differ by at most one).
inline SegmentRange static_segment(std::size_t n, std::size_t parts, std::size_t i) {
  return {n * i / parts, n * (i + 1) / parts};
}

}  // namespace driftscan::mpi
