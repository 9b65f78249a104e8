#include "driftscan/mpi/scan/rank_line.hpp"

#include <new>

namespace driftscan::mpi {

namespace {
std::size_t round_up(std::size_t bytes) { return (bytes + 63) / 64 * 64; }
}  // namespace

RankLine::RankLine(MPI_Comm comm, int slots) : slots_(slots) {
  int size = 0, node_size = 0;
  MPI_Comm_size(comm, &size);
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node_);
  MPI_Comm_size(node_, &node_size);
  int all_here = node_size == size ? 1 : 0, everywhere = 0;
  MPI_Allreduce(&all_here, &everywhere, 1, MPI_INT, MPI_MIN, comm);
  if (!everywhere || size < 2) return;  // several nodes (or nothing to share): steal inside ranks only
  ranks_ = size;
  gaps_at_ = round_up(sizeof(SegmentGap));
  paces_at_ = gaps_at_ + round_up(sizeof(SegmentGap) * std::size_t(slots));
  area_bytes_ = paces_at_ + round_up(sizeof(WorkerPace) * std::size_t(slots));
  // One contiguous allocation, the areas in rank order (the node
  // communicator keeps comm's order: key 0 for all).
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "alloc_shared_noncontig", "false");
  void* mine = nullptr;
  MPI_Win_allocate_shared(static_cast<MPI_Aint>(area_bytes_), 64, info, node_, &mine, &win_);
  MPI_Info_free(&info);
  MPI_Aint bytes = 0;
  int unit = 0;
  void* first = nullptr;
  MPI_Win_shared_query(win_, 0, &bytes, &unit, &first);
  base_ = static_cast<unsigned char*>(first);
  // Each rank constructs its own area's objects in place (lock-free 64-bit
  // atomics work across the processes of one node).
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  new (at(rank, 0, 0, 0)) SegmentGap();
  for (int g = 0; g < slots; ++g) new (at(rank, gaps_at_, g, sizeof(SegmentGap))) SegmentGap();
  for (int t = 0; t < slots; ++t) new (at(rank, paces_at_, t, sizeof(WorkerPace))) WorkerPace();
  MPI_Win_lock_all(MPI_MODE_NOCHECK, win_);
  sync();
  MPI_Barrier(comm);  // every area constructed before anyone reads one
}

RankLine::~RankLine() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (win_ != MPI_WIN_NULL) {
    MPI_Win_unlock_all(win_);
    MPI_Win_free(&win_);
  }
  if (node_ != MPI_COMM_NULL) MPI_Comm_free(&node_);
}

void RankLine::sync() const {
  if (win_ != MPI_WIN_NULL) MPI_Win_sync(win_);
}

}  // namespace driftscan::mpi
