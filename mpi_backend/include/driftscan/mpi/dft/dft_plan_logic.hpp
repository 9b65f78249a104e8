#pragma once
// The decisions of the distributed DFT plan, as plain data (heFFTe's
// "plan logic"), apart from the code that turns them into steps
// (dft_plan.cpp), the exchanges (dft_reshape.hpp) and the local FFTs
// (dft_fftw_backend.hpp):
//  - the stage plan: which stage layouts the transform visits, in which
//    order, the FFT axes in each and the sub-communicator of each exchange;
//  - for every exchange, how it is realised: how the send buffer is filled
//    (FFT writing the blocks, FFT writing the split axis slowest, as is, or a
//    pack), the blocks' memory order and padding, which buffers the blocks
//    land in and whether they need unpacking, and what becomes of the own
//    block (the tuned variants of DftOptions act here).
// The choices every rank must share are agreed through a Consensus, so this
// code does no communication itself.
#include <functional>
#include <vector>

#include "driftscan/mpi/dft/dft_geometry.hpp"
#include "driftscan/mpi/dft/dft_plan.hpp"
#include "driftscan/mpi/dft/dft_reshape.hpp"

namespace driftscan::mpi::dft {

// The buffers a compiled plan moves data between: the user's input and
// output, two work buffers, the send and the receive buffer.
enum Buf { IN = 0, OUT = 1, W0 = 2, W1 = 3, SEND = 4, RECV = 5, NBUF = 6 };

// A work buffer other than a and b.
inline int free_work(int a, int b = -1) {
  for (int w : {W0, W1})
    if (w != a && w != b) return w;
  return W1;
}

// ---- The stage plan ---------------------------------------------------------

struct StageVisit {
  int stage = 0;
  // FFT axes in execution order (with real data: the r2c first, the c2r last).
  std::vector<int> axes;
  // How the visit is entered: by an exchange on the sub-communicator of
  // these grid dimensions (empty: the whole grid), or not (the first visit).
  bool exchange = false;
  std::vector<int> comm_dims;
};

struct StagePlan {
  std::vector<StageVisit> visits;
  int out_stage = 0;
  // Is visit i + 1 the last one and free of FFTs? The exchange into it then
  // delivers the result, in the output's row-major order.
  bool next_is_final(std::size_t i) const { return i + 2 == visits.size() && visits[i + 1].axes.empty(); }
};

// The stages a transform of `opt` visits under `decomp` (more than one rank).
StagePlan plan_stages(Decomposition decomp, const DftOptions& opt);

// ---- One exchange -----------------------------------------------------------

// Agreement among all ranks of the plan on a locally evaluated finding.
struct Consensus {
  std::function<bool(bool)> all;      // true on every rank
  std::function<int(int)> same_axis;  // the axis when every rank gives the same one, else -1
};

// What is known of an exchange before choosing how to realise it: this
// member's boxes (`after`: what it holds once the stage's last FFT, if any,
// has run), the members' boxes and this member's blocks.
struct ExchangeShape {
  int me = 0;
  std::vector<Box3> src, dst;      // every member's box before and after
  std::vector<Box3> sends, recvs;  // this member's blocks to and from each member
  Box3 after, next_box;
  bool has_fft = false;  // the stage's last FFT is still to run (fused into the exchange if possible)
  int fft_axis = 0;
  bool fft_c2c = true;
  int cur_buf = IN;  // where the data is
  AxisOrder cur_order = row_major_order;
  bool next_is_final = false;
  int scalars_per_elem = 2;      // of the data after the FFT: 1 real, 2 complex
  std::size_t scalar_bytes = 8;  // 4 single, 8 double precision
  std::size_t elem_bytes() const { return scalar_bytes * static_cast<std::size_t>(scalars_per_elem); }
};

struct ExchangeChoice {
  // How the send buffer is filled: the FFT writes each block; the FFT writes
  // with the split axis slowest (contiguous blocks); the data is sent where
  // it is; or an explicit pack (after an FFT in place or into a work buffer).
  enum How { fused_blocks, fused_slowest, send_as_is, pack } how = pack;
  AxisOrder sigma = row_major_order;  // memory order of the blocks
  bool box_now = false;               // the received blocks, concatenated, are the new box in order sigma
  bool direct_out = false;            // ... and the output itself: received straight into OUT
  std::int64_t pad = 0;               // elements of padding after every slice along sigma[0]
  int send_buf = SEND, recv_buf = RECV;
  bool self_direct = false;    // the own block written where it is received, outside MPI
  bool unpack_needed = false;  // the received blocks are copied into unpack_buf
  int unpack_buf = OUT;
  bool self_to_unpacked = false;  // the own block written straight to its unpacked place
  bool own_from_send = false;     // the own block unpacked from the send buffer, outside MPI

  // A block (or the whole new box) written from element `offset` of a
  // buffer: order sigma, padded.
  StridedView block_view(std::int64_t offset, const Box3& b) const;
};

// Chooses how to realise the exchange (collective through `agree`). The
// variants of `opt` act here: local_block_direct and pack_after_fft.
ExchangeChoice choose_exchange(const ExchangeShape& x, const DftOptions& opt, const Consensus& agree);

// The counts of the exchange as chosen: blocks grown by the padding, the own
// block kept out of MPI when it is written directly, copied from the send
// buffer, or large.
ExchangeCounts exchange_counts_for(const ExchangeShape& x, const ExchangeChoice& c, MPI_Datatype scalar);

}  // namespace driftscan::mpi::dft
