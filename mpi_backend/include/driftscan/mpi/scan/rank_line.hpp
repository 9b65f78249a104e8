#pragma once
// Stealing between ranks: all workers of all ranks as one line (rank 0's
// threads, then rank 1's, ...), the gaps between neighbours and every
// worker's pace in memory shared by the ranks of one node, so a rank's edge
// thread takes elements of its neighbour rank's block by the same
// compare-and-swap as between threads (stealing_reduce.hpp), and every thread
// sees the whole line's unclaimed work and speed when it picks a direction.
//
// The gap between rank r and r+1 (boundary r) spans rank r's last elements
// and rank r+1's first ones; its word counts from the gap's first element.
// Only its two edge threads ever take from it; the other gaps and the paces
// are read by everyone (for the greedy choice) but written by their rank.
// Collective to build; needs every rank of the communicator on one node
// (MPI_Win_allocate_shared), otherwise active() is false and the scan steals
// only inside each rank.
#include <cstddef>

#include <mpi.h>

#include "driftscan/mpi/scan/stealing_reduce.hpp"

namespace driftscan::mpi {

class RankLine {
 public:
  // Collective over `comm`; `slots` = threads per rank (the most any rank uses).
  RankLine(MPI_Comm comm, int slots);
  ~RankLine();
  RankLine(const RankLine&) = delete;
  RankLine& operator=(const RankLine&) = delete;

  bool active() const { return base_ != nullptr; }
  int ranks() const { return ranks_; }
  int slots() const { return slots_; }
  // Rank r's internal gap g (between its threads g and g+1), g < slots − 1.
  SegmentGap& gap(int r, int g) const { return *reinterpret_cast<SegmentGap*>(at(r, gaps_at_, g, sizeof(SegmentGap))); }
  // The gap between rank r and rank r+1 (stored with rank r).
  SegmentGap& boundary(int r) const { return *reinterpret_cast<SegmentGap*>(at(r, 0, 0, 0)); }
  WorkerPace& pace(int r, int t) const {
    return *reinterpret_cast<WorkerPace*>(at(r, paces_at_, t, sizeof(WorkerPace)));
  }
  // Make this rank's writes to the window visible to the others (MPI_Win_sync).
  void sync() const;

 private:
  unsigned char* at(int r, std::size_t part, int i, std::size_t item) const {
    return base_ + area_bytes_ * std::size_t(r) + part + item * std::size_t(i);
  }

  MPI_Comm node_ = MPI_COMM_NULL;
  MPI_Win win_ = MPI_WIN_NULL;
  unsigned char* base_ = nullptr;  // rank 0's area; the others follow contiguously
  int ranks_ = 0, slots_ = 0;
  // Each rank's area: its boundary gap, then slots − 1 gaps, then slots paces.
  std::size_t gaps_at_ = 0, paces_at_ = 0, area_bytes_ = 0;
};

}  // namespace driftscan::mpi
