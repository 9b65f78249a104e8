#pragma once
// FFTW plans shared by the whole process. FFTW's planner is not thread-safe
// (creating or destroying a plan must be serialised), but executing a plan on
// new arrays is. So plans are created once per size under one process-wide
// mutex, cached, and executed with the new-array functions from any thread.
// Wisdom is loaded from (and, for measured plans, saved to)
// $XDG_CACHE_HOME/driftscan (default ~/.cache/driftscan) when it exists.
//
//   RealFft2d<float> fft(w, h);                  // cheap after the first time
//   FftBuffer<float> img(fft.real_size());       // SIMD-aligned
//   FftBuffer<std::complex<float>> spec(fft.spectrum_size());
//   fft.forward(img.data(), spec.data());        // thread-safe
//
// Anyone else calling the FFTW planner (fftw_plan_*, fftw_destroy_plan,
// fftw_mpi_plan_*) must hold fftw_planner_mutex().
#include <complex>
#include <cstddef>
#include <memory>
#include <mutex>
#include <new>
#include <utility>

#include "driftscan/core/fftw_traits.hpp"

namespace driftscan {

std::mutex& fftw_planner_mutex();

// How hard the planner works for new sizes. `estimate` (default) plans in
// microseconds; `measure` times candidate algorithms (slow the first time
// for each size, then remembered in the wisdom file). The environment
// variable DRIFTSCAN_FFTW_RIGOR=measure selects `measure` at start-up.
enum class FftRigor { estimate, measure };
void set_fft_rigor(FftRigor rigor);
FftRigor fft_rigor();

// A SIMD-aligned array for FFTW (fftw_malloc), zero-initialised, move-only.
template <class T>
class FftBuffer {
 public:
  FftBuffer() = default;
  explicit FftBuffer(std::size_t n);
  ~FftBuffer();
  FftBuffer(FftBuffer&& o) noexcept : data_(o.data_), size_(o.size_) {
    o.data_ = nullptr;
    o.size_ = 0;
  }
  FftBuffer& operator=(FftBuffer&& o) noexcept;
  FftBuffer(const FftBuffer&) = delete;
  FftBuffer& operator=(const FftBuffer&) = delete;

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return size_; }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

// 2-D real <-> complex transforms of one size (row-major, `height` rows of
// `width` reals; the spectrum is `height` rows of width/2+1 complex values).
// T is float or double. Copies share the cached plans.
template <class T>
class RealFft2d {
 public:
  RealFft2d(int width, int height);  // throws driftscan::Error on bad size or planner failure

  int width() const { return width_; }
  int height() const { return height_; }
  int spectrum_width() const { return width_ / 2 + 1; }
  std::size_t real_size() const { return static_cast<std::size_t>(width_) * height_; }
  std::size_t spectrum_size() const { return static_cast<std::size_t>(spectrum_width()) * height_; }

  // r2c; `in` is preserved. Any alignment works (aligned buffers are faster).
  void forward(const T* in, std::complex<T>* out) const;
  // c2r, unnormalised (the result is w*h times the original); destroys `in`.
  void inverse(std::complex<T>* in, T* out) const;

  struct Plans;  // opaque, defined in the .cpp

 private:
  int width_ = 0, height_ = 0;
  std::shared_ptr<Plans> plans_;
};

extern template class FftBuffer<float>;
extern template class FftBuffer<double>;
extern template class FftBuffer<std::complex<float>>;
extern template class FftBuffer<std::complex<double>>;
extern template class RealFft2d<float>;
extern template class RealFft2d<double>;

// ---- Plan owners (the first version of this header; kept for code that
// manages its own plans). They plan under fftw_planner_mutex(); executing
// them on new arrays needs buffers aligned like the planning ones.

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
template <class R>
class FftwPlanOwner {
 public:
  using F = FftwTraits<R>;
  using plan = typename F::plan;
  using complex = typename F::complex;

  FftwPlanOwner() = default;
  explicit FftwPlanOwner(plan p) : plan_(p) {}
  ~FftwPlanOwner() { reset(); }
  FftwPlanOwner(FftwPlanOwner&& o) noexcept : plan_(std::exchange(o.plan_, nullptr)) {}
  FftwPlanOwner& operator=(FftwPlanOwner&& o) noexcept {
    std::swap(plan_, o.plan_);
    return *this;
  }
  FftwPlanOwner(const FftwPlanOwner&) = delete;
  FftwPlanOwner& operator=(const FftwPlanOwner&) = delete;
  void reset();
  plan get() const { return plan_; }
  explicit operator bool() const { return plan_ != nullptr; }

  // 2-D transforms of an ny x nx (rows x columns) array, row-major.
  static FftwPlanOwner r2c_2d(int ny, int nx, R* in, complex* out, unsigned flags = FFTW_ESTIMATE);
  static FftwPlanOwner c2r_2d(int ny, int nx, complex* in, R* out, unsigned flags = FFTW_ESTIMATE);
  static FftwPlanOwner dft_2d(int ny, int nx, complex* in, complex* out, int sign, unsigned flags = FFTW_ESTIMATE);

 private:
  plan plan_ = nullptr;
};

extern template class FftwPlanOwner<double>;
extern template class FftwPlanOwner<float>;
using FftwPlan = FftwPlanOwner<double>;
using FftwfPlan = FftwPlanOwner<float>;

}  // namespace driftscan
