// FFTW plan cache: see fftw_planner.hpp for the rules it enforces.
#include "driftscan/core/fftw_planner.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>

#include "driftscan/core/atomic_file.hpp"
#include "driftscan/core/error.hpp"
#include "driftscan/core/fftw_traits.hpp"

namespace driftscan {

namespace {

FftRigor initial_rigor() {
  const char* env = std::getenv("DRIFTSCAN_FFTW_RIGOR");
  return env && std::string(env) == "measure" ? FftRigor::measure : FftRigor::estimate;
}

FftRigor& rigor_setting() {
  static FftRigor rigor = initial_rigor();
  return rigor;
}

std::filesystem::path wisdom_dir() {
  namespace fs = std::filesystem;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return fs::path(xdg) / "driftscan";
  if (const char* home = std::getenv("HOME"); home && *home) return fs::path(home) / ".cache" / "driftscan";
  return {};
}

// Both called with the planner mutex held.
template <class T>
void load_wisdom_once() {
  static bool loaded = false;
  if (loaded) return;
  loaded = true;
  auto dir = wisdom_dir();
  if (dir.empty()) return;
  auto file = dir / FftwTraits<T>::wisdom_name;
  std::error_code ec;
  if (std::filesystem::exists(file, ec))
    FftwTraits<T>::import_wisdom_from_filename(file.c_str());  // stale/corrupt: ignored
}

template <class T>
void save_wisdom() {
  namespace fs = std::filesystem;
  auto dir = wisdom_dir();
  if (dir.empty()) return;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return;  // wisdom is an optimisation: a read-only cache folder is not an error
  try {
    AtomicFile file((dir / FftwTraits<T>::wisdom_name).string(), "FFTW wisdom");
    if (FftwTraits<T>::export_wisdom_to_filename(file.temporary_path().c_str())) file.commit();
  } catch (const Error&) {
    // not saved: the next run plans again
  }
}

}  // namespace

std::mutex& fftw_planner_mutex() {
  static std::mutex m;
  return m;
}

void set_fft_rigor(FftRigor rigor) {
  std::lock_guard<std::mutex> lock(fftw_planner_mutex());
  rigor_setting() = rigor;
}

FftRigor fft_rigor() {
  std::lock_guard<std::mutex> lock(fftw_planner_mutex());
  return rigor_setting();
}

// ---- FftBuffer --------------------------------------------------------------

template <class T>
FftBuffer<T>::FftBuffer(std::size_t n) : size_(n) {
  if (n == 0) return;
  data_ = static_cast<T*>(FftwTraits<fftw_real_t<T>>::malloc(n * sizeof(T)));
  if (!data_) throw failure("out of memory allocating an FFT buffer of " + std::to_string(n) + " elements");
  for (std::size_t i = 0; i < n; ++i) data_[i] = T{};
}

template <class T>
FftBuffer<T>::~FftBuffer() {
  if (data_) FftwTraits<fftw_real_t<T>>::free(data_);
}

template <class T>
FftBuffer<T>& FftBuffer<T>::operator=(FftBuffer&& o) noexcept {
  if (this != &o) {
    FftBuffer tmp(std::move(*this));
    data_ = o.data_;
    size_ = o.size_;
    o.data_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

template class FftBuffer<float>;
template class FftBuffer<double>;
template class FftBuffer<std::complex<float>>;
template class FftBuffer<std::complex<double>>;

// ---- RealFft2d --------------------------------------------------------------

template <class T>
struct RealFft2d<T>::Plans {
  using F = FftwTraits<T>;
  typename F::plan forward = nullptr, inverse = nullptr;                      // SIMD-aligned arrays
  typename F::plan forward_unaligned = nullptr, inverse_unaligned = nullptr;  // made on first need
  ~Plans() {
    // Never reached in practice (the cache keeps every size alive); kept
    // correct anyway: destruction goes through the planner lock.
    std::lock_guard<std::mutex> lock(fftw_planner_mutex());
    for (auto p : {forward, inverse, forward_unaligned, inverse_unaligned})
      if (p) F::destroy_plan(p);
  }
};

namespace {

unsigned planner_flags() { return rigor_setting() == FftRigor::measure ? FFTW_MEASURE : FFTW_ESTIMATE; }

// Creates a pair of plans; caller holds the planner mutex.
template <class T, class Plan>
void make_plans(int w, int h, unsigned extra, Plan& fwd, Plan& inv) {
  using F = FftwTraits<T>;
  load_wisdom_once<T>();
  std::size_t nr = static_cast<std::size_t>(w) * h, nc = static_cast<std::size_t>(w / 2 + 1) * h;
  T* r = static_cast<T*>(F::malloc(nr * sizeof(T)));
  auto* c = static_cast<typename F::complex*>(F::malloc(nc * sizeof(typename F::complex)));
  if (!r || !c) {
    if (r) F::free(r);
    if (c) F::free(c);
    throw failure("out of memory planning a " + std::to_string(w) + "x" + std::to_string(h) + " FFT");
  }
  unsigned flags = planner_flags() | extra;
  fwd = F::plan_dft_r2c_2d(h, w, r, c, flags);
  inv = F::plan_dft_c2r_2d(h, w, c, r, flags);
  F::free(r);
  F::free(c);
  if (!fwd || !inv)
    throw failure("FFTW could not plan a " + std::to_string(w) + "x" + std::to_string(h) + " transform");
  if (rigor_setting() == FftRigor::measure) save_wisdom<T>();
}

}  // namespace

template <class T>
RealFft2d<T>::RealFft2d(int width, int height) : width_(width), height_(height) {
  if (width < 1 || height < 1 || width > (1 << 20) || height > (1 << 20))
    throw bad_input("FFT size " + std::to_string(width) + "x" + std::to_string(height) + " is not supported");
  std::lock_guard<std::mutex> lock(fftw_planner_mutex());
  // Process lifetime, never destroyed: plans stay valid for objects that
  // outlive static destruction order (guarded by the planner mutex).
  static auto* cache = new std::map<std::pair<int, int>, std::shared_ptr<Plans>>();
  auto& slot = (*cache)[{width, height}];
  if (!slot) {
    auto p = std::make_shared<Plans>();
    make_plans<T>(width, height, 0u, p->forward, p->inverse);
    slot = std::move(p);
  }
  plans_ = slot;
}

template <class T>
void RealFft2d<T>::forward(const T* in, std::complex<T>* out) const {
  using F = FftwTraits<T>;
  T* rin = const_cast<T*>(in);  // r2c out-of-place preserves its input (FFTW's default)
  auto* cout = reinterpret_cast<typename F::complex*>(out);
  if (F::alignment_of(rin) == 0 && F::alignment_of(reinterpret_cast<T*>(out)) == 0) {
    F::execute_dft_r2c(plans_->forward, rin, cout);
    return;
  }
  typename F::plan p;
  {
    std::lock_guard<std::mutex> lock(fftw_planner_mutex());
    if (!plans_->forward_unaligned)
      make_plans<T>(width_, height_, FFTW_UNALIGNED, plans_->forward_unaligned, plans_->inverse_unaligned);
    p = plans_->forward_unaligned;
  }
  F::execute_dft_r2c(p, rin, cout);
}

template <class T>
void RealFft2d<T>::inverse(std::complex<T>* in, T* out) const {
  using F = FftwTraits<T>;
  auto* cin = reinterpret_cast<typename F::complex*>(in);
  if (F::alignment_of(reinterpret_cast<T*>(in)) == 0 && F::alignment_of(out) == 0) {
    F::execute_dft_c2r(plans_->inverse, cin, out);
    return;
  }
  typename F::plan p;
  {
    std::lock_guard<std::mutex> lock(fftw_planner_mutex());
    if (!plans_->inverse_unaligned)
      make_plans<T>(width_, height_, FFTW_UNALIGNED, plans_->forward_unaligned, plans_->inverse_unaligned);
    p = plans_->inverse_unaligned;
  }
  F::execute_dft_c2r(p, cin, out);
}

template class RealFft2d<float>;
template class RealFft2d<double>;

// ---- Plan owners -------------------------------------------------------------

namespace {
template <class P>
P checked(P p, const char* what, int ny, int nx) {
  if (!p)
    throw std::runtime_error(std::string("FFTW could not plan a ") + what + " of " + std::to_string(nx) + "x" +
                             std::to_string(ny));
  return p;
}
}  // namespace

template <class R>
void FftwPlanOwner<R>::reset() {
  if (!plan_) return;
  std::lock_guard<std::mutex> lock(fftw_planner_mutex());
  F::destroy_plan(plan_);
  plan_ = nullptr;
}

template <class R>
FftwPlanOwner<R> FftwPlanOwner<R>::r2c_2d(int ny, int nx, R* in, complex* out, unsigned flags) {
  std::lock_guard<std::mutex> lock(fftw_planner_mutex());
  return FftwPlanOwner(checked(F::plan_dft_r2c_2d(ny, nx, in, out, flags), "r2c transform", ny, nx));
}

template <class R>
FftwPlanOwner<R> FftwPlanOwner<R>::c2r_2d(int ny, int nx, complex* in, R* out, unsigned flags) {
  std::lock_guard<std::mutex> lock(fftw_planner_mutex());
  return FftwPlanOwner(checked(F::plan_dft_c2r_2d(ny, nx, in, out, flags), "c2r transform", ny, nx));
}

template <class R>
FftwPlanOwner<R> FftwPlanOwner<R>::dft_2d(int ny, int nx, complex* in, complex* out, int sign, unsigned flags) {
  std::lock_guard<std::mutex> lock(fftw_planner_mutex());
  return FftwPlanOwner(checked(F::plan_dft_2d(ny, nx, in, out, sign, flags), "complex transform", ny, nx));
}

template class FftwPlanOwner<double>;
template class FftwPlanOwner<float>;

}  // namespace driftscan
