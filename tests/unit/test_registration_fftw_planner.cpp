// The FFTW plan cache: correct transforms, reuse across threads, any alignment.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <complex>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <thread>
#include <vector>

#include "driftscan/core/fftw_planner.hpp"

using namespace driftscan;
namespace fs = std::filesystem;

namespace {

template <class T>
double roundtrip_error(const RealFft2d<T>& fft, const T* in, std::complex<T>* spec, T* out) {
  fft.forward(in, spec);
  fft.inverse(spec, out);
  double n = static_cast<double>(fft.real_size()), err = 0.0;
  for (std::size_t i = 0; i < fft.real_size(); ++i) err = std::max(err, std::abs(out[i] / n - in[i]));
  return err;
}

}  // namespace

TEST(FftwPlanner, ForwardMatchesDirectDftOnOddSize) {
  const int w = 7, h = 5;
  RealFft2d<double> fft(w, h);
  FftBuffer<double> img(fft.real_size());
  FftBuffer<std::complex<double>> spec(fft.spectrum_size());
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(-1, 1);
  for (std::size_t i = 0; i < img.size(); ++i) img[i] = u(rng);
  fft.forward(img.data(), spec.data());
  const double pi = std::acos(-1.0);
  for (int ky = 0; ky < h; ++ky)
    for (int kx = 0; kx < fft.spectrum_width(); ++kx) {
      std::complex<double> s = 0;
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
          s += img[y * w + x] * std::polar(1.0, -2 * pi * (double(kx) * x / w + double(ky) * y / h));
      EXPECT_NEAR(std::abs(s - spec[ky * fft.spectrum_width() + kx]), 0.0, 1e-10);
    }
}

// Sharing is observed through the wisdom file: measured planning saves it
// after every plan it makes, so once removed it stays absent as long as no
// new plan is made — however many more transforms of the size are built.
TEST(FftwPlanner, SameSizeSharesPlansAndRoundTripsFromManyThreads) {
  const int w = 64, h = 48;  // a size no other test here plans
  const fs::path cache = fs::temp_directory_path() / ("driftscan-wisdom-" + std::to_string(::getpid()));
  fs::remove_all(cache);
  const char* old_cache = std::getenv("XDG_CACHE_HOME");
  const std::string saved_cache = old_cache ? old_cache : "";
  ::setenv("XDG_CACHE_HOME", cache.c_str(), 1);
  const FftRigor saved_rigor = fft_rigor();
  set_fft_rigor(FftRigor::measure);
  const fs::path wisdom = cache / "driftscan" / "fftw3f.wisdom";
  { RealFft2d<float> first(w, h); }
  EXPECT_TRUE(fs::exists(wisdom)) << "the first transform of the size was not planned here";
  fs::remove(wisdom);

  std::vector<std::thread> threads;
  threads.reserve(4);
  std::vector<double> errors(4, 1.0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      RealFft2d<float> fft(w, h);  // concurrent construction: serialised inside
      FftBuffer<float> in(fft.real_size()), out(fft.real_size());
      FftBuffer<std::complex<float>> spec(fft.spectrum_size());
      std::mt19937 rng(t);
      std::uniform_real_distribution<float> u(-1, 1);
      double worst = 0;
      for (int rep = 0; rep < 50; ++rep) {
        for (std::size_t i = 0; i < in.size(); ++i) in[i] = u(rng);
        worst = std::max(worst, roundtrip_error(fft, in.data(), spec.data(), out.data()));
      }
      errors[t] = worst;
    });
  for (auto& th : threads) th.join();
  for (double e : errors) EXPECT_LT(e, 1e-5);

  EXPECT_FALSE(fs::exists(wisdom)) << "a transform of the same size planned again instead of sharing";
  EXPECT_TRUE(fs::is_empty(cache / "driftscan")) << "a temporary wisdom file was left behind";
  set_fft_rigor(saved_rigor);
  if (old_cache) ::setenv("XDG_CACHE_HOME", saved_cache.c_str(), 1);
  else ::unsetenv("XDG_CACHE_HOME");
  fs::remove_all(cache);
}

TEST(FftwPlanner, UnalignedArraysUseTheirOwnPlans) {
  const int w = 32, h = 32;
  RealFft2d<float> fft(w, h);
  // Offset by one element: not SIMD-aligned, must still be right.
  std::vector<float> in(fft.real_size() + 1), out(fft.real_size() + 1);
  std::vector<std::complex<float>> spec(fft.spectrum_size() + 1);
  for (std::size_t i = 0; i < fft.real_size(); ++i) in[i + 1] = std::sin(0.3f * i) + 0.01f * (i % 7);
  EXPECT_LT(roundtrip_error(fft, in.data() + 1, spec.data() + 1, out.data() + 1), 1e-5);
}

TEST(FftwPlanner, RejectsNonsenseSizes) {
  EXPECT_THROW(RealFft2d<float>(0, 10), std::exception);
  EXPECT_THROW(RealFft2d<double>(10, -1), std::exception);
}
