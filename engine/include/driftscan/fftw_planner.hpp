#pragma once
// FFTW plans, safely shared between threads. FFTW's rule: only the execute
// functions are thread-safe; creating and destroying plans is not. Every
// planner call of the process therefore goes through fftw_planner_mutex(),
// and the plan owners below take it for creation and destruction. A plan
// made once per size is then executed concurrently on per-thread buffers
// with the new-array execute functions (fftw_execute_dft_r2c, ...), which
// requires those buffers to be aligned like the planning buffers: allocate
// them with FftwBuffer (fftw_malloc).
#include <fftw3.h>

#include <cstddef>
#include <mutex>
#include <new>
#include <utility>

namespace driftscan {

// The process-wide lock for FFTW's planner (plan creation and destruction).
std::mutex& fftw_planner_mutex();

// Memory from fftw_malloc (SIMD-aligned), value-initialised, move-only.
template <class T>
class FftwBuffer {
 public:
  FftwBuffer() = default;
  explicit FftwBuffer(std::size_t n) : n_(n) {
    data_ = static_cast<T*>(fftw_malloc(sizeof(T) * (n ? n : 1)));
    if (!data_) throw std::bad_alloc();
    for (std::size_t i = 0; i < n; ++i) new (data_ + i) T();
  }
  ~FftwBuffer() { fftw_free(data_); }
  FftwBuffer(FftwBuffer&& o) noexcept : data_(std::exchange(o.data_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  FftwBuffer& operator=(FftwBuffer&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(n_, o.n_);
    return *this;
  }
  FftwBuffer(const FftwBuffer&) = delete;
  FftwBuffer& operator=(const FftwBuffer&) = delete;

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return n_; }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }

 private:
  T* data_ = nullptr;
  std::size_t n_ = 0;
};

// Owners of a double (FftwPlan) or single precision (FftwfPlan) plan. The
// factories plan with FFTW_ESTIMATE by default (MEASURE would overwrite the
// planning arrays and cost seconds per size) and throw std::runtime_error if
// FFTW returns no plan.
class FftwPlan {
 public:
  FftwPlan() = default;
  explicit FftwPlan(fftw_plan p) : plan_(p) {}
  ~FftwPlan() { reset(); }
  FftwPlan(FftwPlan&& o) noexcept : plan_(std::exchange(o.plan_, nullptr)) {}
  FftwPlan& operator=(FftwPlan&& o) noexcept {
    std::swap(plan_, o.plan_);
    return *this;
  }
  FftwPlan(const FftwPlan&) = delete;
  FftwPlan& operator=(const FftwPlan&) = delete;
  void reset();
  fftw_plan get() const { return plan_; }
  explicit operator bool() const { return plan_ != nullptr; }

  // 2-D transforms of an ny x nx (rows x columns) array, row-major.
  static FftwPlan r2c_2d(int ny, int nx, double* in, fftw_complex* out, unsigned flags = FFTW_ESTIMATE);
  static FftwPlan c2r_2d(int ny, int nx, fftw_complex* in, double* out, unsigned flags = FFTW_ESTIMATE);
  static FftwPlan dft_2d(int ny, int nx, fftw_complex* in, fftw_complex* out, int sign,
                         unsigned flags = FFTW_ESTIMATE);

 private:
  fftw_plan plan_ = nullptr;
};

class FftwfPlan {
 public:
  FftwfPlan() = default;
  explicit FftwfPlan(fftwf_plan p) : plan_(p) {}
  ~FftwfPlan() { reset(); }
  FftwfPlan(FftwfPlan&& o) noexcept : plan_(std::exchange(o.plan_, nullptr)) {}
  FftwfPlan& operator=(FftwfPlan&& o) noexcept {
    std::swap(plan_, o.plan_);
    return *this;
  }
  FftwfPlan(const FftwfPlan&) = delete;
  FftwfPlan& operator=(const FftwfPlan&) = delete;
  void reset();
  fftwf_plan get() const { return plan_; }
  explicit operator bool() const { return plan_ != nullptr; }

  static FftwfPlan r2c_2d(int ny, int nx, float* in, fftwf_complex* out, unsigned flags = FFTW_ESTIMATE);
  static FftwfPlan c2r_2d(int ny, int nx, fftwf_complex* in, float* out, unsigned flags = FFTW_ESTIMATE);
  static FftwfPlan dft_2d(int ny, int nx, fftwf_complex* in, fftwf_complex* out, int sign,
                          unsigned flags = FFTW_ESTIMATE);

 private:
  fftwf_plan plan_ = nullptr;
};

}  // namespace driftscan
