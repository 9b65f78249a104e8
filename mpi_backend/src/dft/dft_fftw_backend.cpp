#include "driftscan/mpi/dft/dft_fftw_backend.hpp"

#include <mutex>
#include <new>
#include <utility>

#include "driftscan/core/error.hpp"
#include "driftscan/core/fftw_planner.hpp"
#include "driftscan/core/fftw_traits.hpp"

namespace driftscan::mpi {
namespace {
template <class R>
using iodims = std::vector<typename FftwTraits<R>::iodim64>;

template <class R>
iodims<R> to_iodims(const std::vector<FftDim>& ds) {
  iodims<R> r;
  for (const FftDim& d : ds) {
    typename FftwTraits<R>::iodim64 x;
    x.n = d.n;
    x.is = d.in_stride;
    x.os = d.out_stride;
    r.push_back(x);
  }
  return r;
}

// Caller holds the planner mutex.
template <class R>
typename FftwTraits<R>::plan plan_guru64(FftKind kind, int sign, const std::vector<FftDim>& transform,
                                         const std::vector<FftDim>& batch, void* in, void* out, int threads,
                                         unsigned flags) {
  using F = FftwTraits<R>;
  using C = typename F::complex;
  const iodims<R> dims = to_iodims<R>(transform), howmany = to_iodims<R>(batch);
  const int rank = static_cast<int>(dims.size()), hm = static_cast<int>(howmany.size());
  F::plan_with_nthreads(threads);
  switch (kind) {
    case FftKind::c2c:
      return F::plan_guru64_dft(rank, dims.data(), hm, howmany.data(), static_cast<C*>(in), static_cast<C*>(out), sign,
                                flags);
    case FftKind::r2c:
      return F::plan_guru64_dft_r2c(rank, dims.data(), hm, howmany.data(), static_cast<R*>(in), static_cast<C*>(out),
                                    flags);
    case FftKind::c2r:
      return F::plan_guru64_dft_c2r(rank, dims.data(), hm, howmany.data(), static_cast<C*>(in), static_cast<R*>(out),
                                    flags);
  }
  return nullptr;
}

template <class R>
void execute_plan(typename FftwTraits<R>::plan p, FftKind kind, void* in, void* out) {
  using F = FftwTraits<R>;
  using C = typename F::complex;
  switch (kind) {
    case FftKind::c2c: F::execute_dft(p, static_cast<C*>(in), static_cast<C*>(out)); break;
    case FftKind::r2c: F::execute_dft_r2c(p, static_cast<R*>(in), static_cast<C*>(out)); break;
    case FftKind::c2r: F::execute_dft_c2r(p, static_cast<C*>(in), static_cast<R*>(out)); break;
  }
}
}  // namespace

unsigned fftw_planner_flags(FftPlanner p) {
  switch (p) {
    case FftPlanner::estimate: return FFTW_ESTIMATE;
    case FftPlanner::measure: return FFTW_MEASURE;
    case FftPlanner::patient: return FFTW_PATIENT;
  }
  return FFTW_MEASURE;
}

void init_fftw_threads() {
  static std::once_flag once;
  std::call_once(once, [] {
    FftwTraits<double>::init_threads();
    FftwTraits<float>::init_threads();
  });
}

bool fftw_aligned(const void* p, bool single) {
  if (single) return FftwTraits<float>::alignment_of(static_cast<float*>(const_cast<void*>(p))) == 0;
  return FftwTraits<double>::alignment_of(static_cast<double*>(const_cast<void*>(p))) == 0;
}

LocalFft::LocalFft(FftKind kind, int sign, FftDim transform, const std::vector<FftDim>& batch, void* in, void* out,
                   FftPlanner planner, int threads, bool preserve_input, bool single)
    : LocalFft(kind, sign, std::vector<FftDim>{transform}, batch, in, out, planner, threads, preserve_input, single) {}

LocalFft::LocalFft(FftKind kind, int sign, const std::vector<FftDim>& transform, const std::vector<FftDim>& batch,
                   void* in, void* out, FftPlanner planner, int threads, bool preserve_input, bool single)
    : kind_(kind), single_(single) {
  init_fftw_threads();
  const unsigned flags = fftw_planner_flags(planner) | (preserve_input ? FFTW_PRESERVE_INPUT : FFTW_DESTROY_INPUT);
  std::lock_guard<std::mutex> lock(fftw_planner_mutex());
  if (single) planf_ = plan_guru64<float>(kind, sign, transform, batch, in, out, threads, flags);
  else plan_ = plan_guru64<double>(kind, sign, transform, batch, in, out, threads, flags);
  if (!plan_ && !planf_)
    throw failure("FFTW could not plan a local transform of length " + std::to_string(transform.back().n));
}

void LocalFft::destroy() {
  if (!plan_ && !planf_) return;
  std::lock_guard<std::mutex> lock(fftw_planner_mutex());
  if (plan_) FftwTraits<double>::destroy_plan(plan_);
  if (planf_) FftwTraits<float>::destroy_plan(planf_);
  plan_ = nullptr;
  planf_ = nullptr;
}

LocalFft::~LocalFft() { destroy(); }

LocalFft::LocalFft(LocalFft&& other) noexcept
    : kind_(other.kind_),
      single_(other.single_),
      plan_(std::exchange(other.plan_, nullptr)),
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
  if (single_) execute_plan<float>(planf_, kind_, i, out);
  else execute_plan<double>(plan_, kind_, i, out);
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
