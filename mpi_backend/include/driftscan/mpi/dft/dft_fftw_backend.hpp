#pragma once
// Local batched 1-D transforms of the distributed DFT, through FFTW's guru64
// interface: one transform axis with its input/output strides, any number of
// batch ("howmany") dimensions with theirs. That expresses, without extra
// copies, transforms along strided axes and transforms whose output is
// written transposed or straight into per-destination all-to-all blocks.
//
// FFTW's planner is not thread-safe: every plan is created (and destroyed)
// under the engine's process-wide fftw_planner_mutex(). Plans run on the
// arrays they were made for or, through execute(in, out), on other arrays of
// the same alignment. Double and single precision go through FftwTraits
// (driftscan/fftw_traits.hpp).
#include <cstdint>
#include <vector>

#include <fftw3.h>

namespace driftscan::mpi {

enum class FftKind { c2c, r2c, c2r };
enum class FftPlanner { estimate, measure, patient };

// FFTW_ESTIMATE, FFTW_MEASURE or FFTW_PATIENT.
unsigned fftw_planner_flags(FftPlanner p);

struct FftDim {
  std::int64_t n = 1;
  std::int64_t in_stride = 1;   // in elements of the input type (double or complex)
  std::int64_t out_stride = 1;  // in elements of the output type
};

class LocalFft {
 public:
  // `transform.n` is the logical (real) length for r2c/c2r. `sign` is
  // FFTW_FORWARD or FFTW_BACKWARD (ignored for r2c/c2r). MEASURE planning
  // overwrites `in` and `out`; `preserve_input` keeps `in` intact at execution.
  // `single`: fftwf (float) instead of fftw (double) plans and arrays.
  LocalFft(FftKind kind, int sign, FftDim transform, const std::vector<FftDim>& batch, void* in, void* out,
           FftPlanner planner, int threads, bool preserve_input, bool single = false);
  // A multi-dimensional transform (slowest dimension first; for r2c/c2r the
  // last is the halved one).
  LocalFft(FftKind kind, int sign, const std::vector<FftDim>& transform, const std::vector<FftDim>& batch, void* in,
           void* out, FftPlanner planner, int threads, bool preserve_input, bool single = false);
  ~LocalFft();
  LocalFft(LocalFft&& other) noexcept;
  LocalFft& operator=(LocalFft&& other) noexcept;
  LocalFft(const LocalFft&) = delete;
  LocalFft& operator=(const LocalFft&) = delete;

  void execute(const void* in, void* out) const;

 private:
  void destroy();
  FftKind kind_ = FftKind::c2c;
  bool single_ = false;
  fftw_plan plan_ = nullptr;    // double precision
  fftwf_plan planf_ = nullptr;  // single precision
};

// fftw_init_threads and fftwf_init_threads once per process (safe to call repeatedly).
void init_fftw_threads();
// True when `p` has the alignment FFTW (fftwf when `single`) planned our
// internal buffers with.
bool fftw_aligned(const void* p, bool single = false);
// Buffers for plans: fftw_malloc'd, freed with fftw_free.
struct FftwBuffer {
  FftwBuffer() = default;
  explicit FftwBuffer(std::size_t bytes);
  ~FftwBuffer();
  FftwBuffer(FftwBuffer&& other) noexcept;
  FftwBuffer& operator=(FftwBuffer&& other) noexcept;
  FftwBuffer(const FftwBuffer&) = delete;
  FftwBuffer& operator=(const FftwBuffer&) = delete;
  char* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }

 private:
  char* data_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace driftscan::mpi
