#pragma once
// Redistribution of a 3-D array between two box layouts on a communicator:
// pack (per-destination blocks, contiguous in a send buffer), all-to-all,
// unpack. MPI_Alltoall is used when every block of the exchange has the same
// size, MPI_Alltoallv otherwise. Pack and unpack are strided box copies run
// with OpenMP threads.
//
// The DFT plan fuses pack and unpack into its FFTs whenever the block
// structure allows (see dft_plan.cpp); this header holds the pieces, and a
// stand-alone BoxRedistribution for arbitrary layouts (used by the benchmark
// to compare against FFTW-MPI's distribution).
#include <cstdint>
#include <vector>

#include <mpi.h>

#include "driftscan/mpi/dft/dft_geometry.hpp"

namespace driftscan::mpi {

// A box of elements inside some buffer: element (i0,i1,i2) of `box` lives at
// offset + sum_d (i_d - box.lo_d) * stride_d.
struct StridedView {
  std::int64_t offset = 0;
  Box3 box;
  Extent3 stride{0, 0, 0};

  static StridedView dense(std::int64_t offset, const Box3& box, const AxisOrder& order) {
    return {offset, box, box_strides(box, order)};
  }
  // The part of this view covering `sub` (which must lie inside box).
  StridedView sub(const Box3& sub_box) const;
  // Memory order by decreasing stride (axes of extent 1 sorted last-stable).
  AxisOrder order() const;
};

// dst[view] = src[view] for views of the same box, `elem` bytes per element.
void copy_box(const char* src, const StridedView& src_view, char* dst, const StridedView& dst_view, std::size_t elem,
              int threads);

// Counts and displacements of one all-to-all, in real scalars (MPI_DOUBLE or
// MPI_FLOAT; a complex element is two).
struct ExchangeCounts {
  std::vector<int> send_counts, send_displs, recv_counts, recv_displs;
  bool even = false;  // every block of the whole exchange has one size: MPI_Alltoall
  int even_count = 0;
  std::int64_t total_scalars = 0;  // summed over all members (for the bandwidth bound)
  MPI_Datatype scalar = MPI_DOUBLE;
  int me = -1;  // this member's index
  // Scalars the send and receive buffers span (every block, the own block
  // included even when it does not travel through MPI).
  std::int64_t send_span = 0, recv_span = 0;
  int own_block = 0;  // > 0: the member's own block is copied by memcpy, not by MPI

  // A large own block costs more inside OpenMPI 4.1's all-to-all than as a
  // plain memcpy (2 ranks, 8 MiB blocks, measured here: MPI_Alltoall 4.7 ms;
  // MPI_Alltoallv of the other block 2.5 ms + memcpy 1.4 ms). Large
  // exchanges therefore copy their own block themselves.
  static constexpr std::int64_t own_copy_threshold_bytes = std::int64_t(1) << 18;
  void copy_own_block_outside_mpi();
  // Every block grows by the given scalars (padding inside the blocks);
  // displacements and spans follow, and the exchange becomes MPI_Alltoallv.
  // Throws bad_input past MPI's int counts.
  void grow_blocks(const std::vector<std::int64_t>& send_extra, const std::vector<std::int64_t>& recv_extra);
};

// The blocks of an exchange among the members of a communicator whose source
// boxes are `src[r]` and destination boxes `dst[r]`: member `me` sends
// src[me] ∩ dst[s] to s and receives src[r] ∩ dst[me] from r, blocks stored
// consecutively in member order. `doubles_per_elem` is 1 (real) or 2 (complex).
ExchangeCounts exchange_counts(const std::vector<Box3>& src, const std::vector<Box3>& dst, int me,
                               int doubles_per_elem);

// Runs the exchange (MPI_Alltoall or MPI_Alltoallv of x.scalar).
void run_exchange(const ExchangeCounts& x, const void* send, void* recv, MPI_Comm comm);

// Arbitrary layout change of a distributed array: each rank gives its source
// box (stored densely in `src_order`) and its destination box (in
// `dst_order`); boxes are exchanged once at construction (collective).
class BoxRedistribution {
 public:
  BoxRedistribution(MPI_Comm comm, const Box3& src_box, const AxisOrder& src_order, const Box3& dst_box,
                    const AxisOrder& dst_order, int doubles_per_elem, int threads = 1);
  void execute(const void* src, void* dst);  // collective

 private:
  MPI_Comm comm_;
  int threads_;
  std::size_t elem_;
  ExchangeCounts counts_;
  std::vector<StridedView> pack_src_, unpack_dst_;
  std::vector<std::int64_t> block_offset_send_, block_offset_recv_;
  std::vector<Box3> send_boxes_, recv_boxes_;
  AxisOrder src_order_;
  std::vector<double> send_, recv_;
};

}  // namespace driftscan::mpi
