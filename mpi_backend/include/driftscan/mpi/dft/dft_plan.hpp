#pragma once
// The distributed 3-D DFT: plan once, execute many times.
//
//   DftOptions o;                       // n0 x n1 x n2, axis 2 fastest
//   o.size = {256, 256, 256};
//   o.decomposition = Decomposition::slab_pencil;
//   o.output_layout = DftLayout::transposed;   // skip the last all-to-all
//   DftPlan plan(MPI_COMM_WORLD, o);
//   std::vector<std::complex<double>> in(plan.input_count()), out(plan.output_count());
//   // fill `in`: this rank's plan.input_box(), row-major inside the box
//   DftTimes t = plan.execute(in, out);    // out: plan.output_box(), row-major
//
// Layouts (see dft_geometry.hpp for the boxes of every stage):
//  - natural: the decomposition's first stage (slab-pencil: slabs of axis 0;
//    pencil: axis-2 pencils on a p0 x p1 grid; volumetric: bricks);
//  - transposed: its last stage (slab-pencil: slabs of axis 1; pencil and
//    volumetric: axis-0 pencils, axis 1 split over grid dim 0, axis 2 over the
//    rest). Output left transposed saves the final all-to-all; a backward plan
//    with transposed input takes it back.
// Every rank's data is stored row-major inside its box: element (i0,i1,i2)
// at ((i0-lo0)*e1 + (i1-lo1))*e2 + (i2-lo2), e_d = hi_d - lo_d.
//
// Real transforms (real_to_complex): forward maps a real n0 x n1 x n2 array
// (natural input) to its n0 x n1 x (n2/2+1) half spectrum (FFTW's
// convention); backward maps the half spectrum back to real (natural output).
//
// Errors (bad size, grid, layout, buffer sizes) throw driftscan::Error on
// every rank: parameters are validated collectively before any exchange.
#include <complex>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <mpi.h>

#include "driftscan/mpi/dft/dft_fftw_backend.hpp"
#include "driftscan/mpi/dft/dft_geometry.hpp"

namespace driftscan::mpi {

enum class DftLayout { natural, transposed };
enum class DftDirection { forward, backward };
// Single precision halves memory and exchange volume (spectra of long stacks
// need no more than float's 7 digits); double is the default.
enum class DftPrecision { single, double_ };
std::string to_string(DftLayout l);
DftLayout parse_layout(const std::string& name);

struct DftOptions {
  Extent3 size{0, 0, 0};
  Decomposition decomposition = Decomposition::automatic;
  std::vector<int> grid;  // empty: minimum-surface choice; else 1/2/3 dims multiplying to the ranks
  DftLayout input_layout = DftLayout::natural;
  DftLayout output_layout = DftLayout::natural;
  DftDirection direction = DftDirection::forward;
  bool real_to_complex = false;
  DftPrecision precision = DftPrecision::double_;
  bool normalize = false;  // multiply the result by 1/(n0*n1*n2)
  int threads = 1;         // OpenMP/FFTW threads per rank
  FftPlanner planner = FftPlanner::measure;
  // Consecutive local FFTs run chunk by chunk (planes of an untransformed
  // axis) of about this many bytes, so each chunk stays in cache between them.
  std::size_t chunk_bytes = std::size_t(256) << 10;
  // false: every block goes through MPI (MPI_Alltoall when all blocks are
  // even, MPI_Alltoallv otherwise). true: a rank's own block is written by
  // the FFT or pack straight to where it is received and only the others go
  // through MPI_Alltoallv (saves a copy of 1/p of the data).
  bool local_block_direct = false;
  // Slab-pencil only: the slab's FFTs in the order axis 1, axis 2 (axis 2's
  // FFT then writes the blocks, which arrive as one box: no unpack) instead
  // of axis 2, axis 1 (contiguous blocks, strided FFT output, an unpack).
  bool slab_axis2_last = false;
  // The last FFT writes chunks of a work buffer, copied to the output,
  // instead of writing the output along its large strides.
  bool final_through_work = false;
  // FFTs before an exchange run in place and are then packed into the send
  // blocks, instead of writing the blocks themselves (other strides out).
  bool pack_after_fft = false;
  // With the measure or patient planner: build the variants above
  // (local_block_direct, slab_axis2_last, final_through_work, pack_after_fft),
  // time them and
  // keep the fastest,
  // as FFTW chooses among its algorithms. Off: the options as given.
  bool autotune = true;
};

// Seconds spent by this rank in each part of one execute().
struct DftTimes {
  double fft = 0, pack = 0, alltoall = 0, unpack = 0, total = 0;
  DftTimes& operator+=(const DftTimes& o);
};

// One all-to-all of the plan, for the communication lower bounds.
struct DftExchangeInfo {
  int comm_size = 1;
  std::int64_t bytes = 0;  // total over the sub-communicator
  bool even = false;
};

class DftPlan {
 public:
  DftPlan(MPI_Comm comm, const DftOptions& options);  // collective
  ~DftPlan();
  DftPlan(const DftPlan&) = delete;
  DftPlan& operator=(const DftPlan&) = delete;

  using cplx = std::complex<double>;
  using cplxf = std::complex<float>;
  // Collective. Sizes, and the precision against the plan's, are checked on
  // every rank before any exchange.
  DftTimes execute(const cplx* in, std::size_t in_count, cplx* out, std::size_t out_count);
  DftTimes execute(const double* in, std::size_t in_count, cplx* out, std::size_t out_count);  // r2c
  DftTimes execute(const cplx* in, std::size_t in_count, double* out, std::size_t out_count);  // c2r
  DftTimes execute(const cplxf* in, std::size_t in_count, cplxf* out, std::size_t out_count);
  DftTimes execute(const float* in, std::size_t in_count, cplxf* out, std::size_t out_count);  // r2c
  DftTimes execute(const cplxf* in, std::size_t in_count, float* out, std::size_t out_count);  // c2r
  template <class In, class Out>
  DftTimes execute(const std::vector<In>& in, std::vector<Out>& out) {
    return execute(in.data(), in.size(), out.data(), out.size());
  }

  const Box3& input_box() const;
  const Box3& output_box() const;
  std::size_t input_count() const { return static_cast<std::size_t>(input_box().count()); }
  std::size_t output_count() const { return static_cast<std::size_t>(output_box().count()); }
  Decomposition decomposition() const;
  const std::vector<int>& grid() const;
  std::string grid_string() const;  // "2x1"
  const std::vector<DftExchangeInfo>& exchanges() const;
  const DftOptions& options() const;   // as planned (the variant autotuning chose)
  std::string variant_string() const;  // e.g. "own-block-direct,axis2-last"

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// Throws the same driftscan::Error on every rank of `comm` when any rank's
// `local_error` is non-empty (the message of the lowest such rank). Collective.
void agree_on_errors(MPI_Comm comm, const std::string& local_error);

}  // namespace driftscan::mpi
