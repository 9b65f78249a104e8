#include "driftscan/mpi/dft_fftw_backend.hpp"

#include <mutex>
#include <new>
#include <utility>

#include "driftscan/error.hpp"

namespace driftscan::mpi {
namespace {
std::mutex& planner_mutex() {
  static std::mutex m;
  return m;
}

unsigned planner_flags(FftPlanner p) {
  switch (p) {
    case FftPlanner::estimate: return FFTW_ESTIMATE;
    case FftPlanner::measure: return FFTW_MEASURE;
    case FftPlanner::patient: return FFTW_PATIENT;
  }
  return FFTW_MEASURE;
}

fftw_iodim64 iodim(const FftDim& d) {
  fftw_iodim64 r;
  r.n = d.n;
  r.is = d.in_stride;
  r.os = d.out_stride;
  return r;
}
}  // namespace

void init_fftw_threads() {
  static std::once_flag once;
  std::call_once(once, [] {
    fftw_init_threads();
    fftwf_init_threads();
  });
}

bool fftw_aligned(const void* p, bool single) {
  if (single) return fftwf_alignment_of(static_cast<float*>(const_cast<void*>(p))) == 0;
  return fftw_alignment_of(static_cast<double*>(const_cast<void*>(p))) == 0;
}

LocalFft::LocalFft(FftKind kind, int sign, FftDim transform, const std::vector<FftDim>& batch,
                   void* in, void* out, FftPlanner planner, int threads, bool preserve_input, bool single)
    : LocalFft(kind, sign, std::vector<FftDim>{transform}, batch, in, out, planner, threads, preserve_input,
               single) {}

LocalFft::LocalFft(FftKind kind, int sign, const std::vector<FftDim>& transform, const std::vector<FftDim>& batch,
                   void* in, void* out, FftPlanner planner, int threads, bool preserve_input, bool single)
    : kind_(kind), single_(single) {
  init_fftw_threads();
  std::vector<fftw_iodim64> howmany, dims;
  for (const auto& b : batch) howmany.push_back(iodim(b));
  for (const auto& t : transform) dims.push_back(iodim(t));
  const int rank = static_cast<int>(dims.size());
  const fftw_iodim64* dim = dims.data();
  // fftwf_iodim64 is the same struct under another name.
  static_assert(sizeof(fftw_iodim64) == sizeof(fftwf_iodim64), "iodim layouts differ");
  const auto* hmf = reinterpret_cast<const fftwf_iodim64*>(howmany.data());
  const auto* dimf = reinterpret_cast<const fftwf_iodim64*>(dims.data());
  unsigned flags = planner_flags(planner) | (preserve_input ? FFTW_PRESERVE_INPUT : FFTW_DESTROY_INPUT);
  std::lock_guard<std::mutex> lock(planner_mutex());
  const int hm = static_cast<int>(howmany.size());
  if (single) {
    fftwf_plan_with_nthreads(threads);
    switch (kind) {
      case FftKind::c2c:
        planf_ = fftwf_plan_guru64_dft(rank, dimf, hm, hmf, static_cast<fftwf_complex*>(in),
                                       static_cast<fftwf_complex*>(out), sign, flags);
        break;
      case FftKind::r2c:
        planf_ = fftwf_plan_guru64_dft_r2c(rank, dimf, hm, hmf, static_cast<float*>(in),
                                           static_cast<fftwf_complex*>(out), flags);
        break;
      case FftKind::c2r:
        planf_ = fftwf_plan_guru64_dft_c2r(rank, dimf, hm, hmf, static_cast<fftwf_complex*>(in),
                                           static_cast<float*>(out), flags);
        break;
    }
  } else {
    fftw_plan_with_nthreads(threads);
    switch (kind) {
      case FftKind::c2c:
        plan_ = fftw_plan_guru64_dft(rank, dim, hm, howmany.data(), static_cast<fftw_complex*>(in),
                                     static_cast<fftw_complex*>(out), sign, flags);
        break;
      case FftKind::r2c:
        plan_ = fftw_plan_guru64_dft_r2c(rank, dim, hm, howmany.data(), static_cast<double*>(in),
                                         static_cast<fftw_complex*>(out), flags);
        break;
      case FftKind::c2r:
        plan_ = fftw_plan_guru64_dft_c2r(rank, dim, hm, howmany.data(), static_cast<fftw_complex*>(in),
                                         static_cast<double*>(out), flags);
        break;
    }
  }
  if (!plan_ && !planf_)
    throw failure("FFTW could not plan a local transform of length " + std::to_string(transform.back().n));
}

void LocalFft::destroy() {
  if (!plan_ && !planf_) return;
  std::lock_guard<std::mutex> lock(planner_mutex());
  if (plan_) fftw_destroy_plan(plan_);
  if (planf_) fftwf_destroy_plan(planf_);
  plan_ = nullptr;
  planf_ = nullptr;
}

LocalFft::~LocalFft() { destroy(); }

LocalFft::LocalFft(LocalFft&& other) noexcept
    : kind_(other.kind_), single_(other.single_), plan_(std::exchange(other.plan_, nullptr)),
      planf_(std::exchange(other.planf_, nullptr)) {}

LocalFft& LocalFft::operator=(LocalFft&& other) noexcept {
  if (this != &other) {
    destroy();
    kind_ = other.kind_;
    single_ = other.single_;
    plan_ = std::exchange(other.plan_, nullptr);
    planf_ = std::exchange(other.planf_, nullptr);
  }
  return *this;
}

void LocalFft::execute(const void* in, void* out) const {
  // FFTW's new-array execute takes non-const input; plans made with
  // preserve_input never write it.
  void* i = const_cast<void*>(in);
  if (single_) {
    switch (kind_) {
      case FftKind::c2c:
        fftwf_execute_dft(planf_, static_cast<fftwf_complex*>(i), static_cast<fftwf_complex*>(out));
        break;
      case FftKind::r2c:
        fftwf_execute_dft_r2c(planf_, static_cast<float*>(i), static_cast<fftwf_complex*>(out));
        break;
      case FftKind::c2r:
        fftwf_execute_dft_c2r(planf_, static_cast<fftwf_complex*>(i), static_cast<float*>(out));
        break;
    }
    return;
  }
  switch (kind_) {
    case FftKind::c2c:
      fftw_execute_dft(plan_, static_cast<fftw_complex*>(i), static_cast<fftw_complex*>(out));
      break;
    case FftKind::r2c:
      fftw_execute_dft_r2c(plan_, static_cast<double*>(i), static_cast<fftw_complex*>(out));
      break;
    case FftKind::c2r:
      fftw_execute_dft_c2r(plan_, static_cast<fftw_complex*>(i), static_cast<double*>(out));
      break;
  }
}

FftwBuffer::FftwBuffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  data_ = static_cast<char*>(fftw_malloc(bytes));
  if (!data_) throw failure("out of memory allocating " + std::to_string(bytes >> 20) + " MiB for the DFT");
}

FftwBuffer::~FftwBuffer() {
  if (data_) fftw_free(data_);
}

FftwBuffer::FftwBuffer(FftwBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

FftwBuffer& FftwBuffer::operator=(FftwBuffer&& other) noexcept {
  if (this != &other) {
    if (data_) fftw_free(data_);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

}  // namespace driftscan::mpi
