#include "driftscan/spectra/power_spectrum.hpp"

#include <algorithm>
#include <cmath>
#include <complex>
#include <string>

#include "driftscan/core/apodisation_window.hpp"
#include "driftscan/core/error.hpp"

namespace driftscan {

PowerSpectrum::PowerSpectrum(int width, int height, SpectrumWindow window)
    : width_(width), height_(height), fft_(width, height) {
  const std::size_t n = static_cast<std::size_t>(width) * height;
  window_.assign(n, 1.0);
  if (window == SpectrumWindow::hann) {
    std::vector<double> wx = hann_window(static_cast<std::size_t>(width)),
                        wy = hann_window(static_cast<std::size_t>(height));
    for (int y = 0; y < height; ++y)
      for (int x = 0; x < width; ++x)
        window_[static_cast<std::size_t>(y) * width + x] =
            wx[static_cast<std::size_t>(x)] * wy[static_cast<std::size_t>(y)];
  }
  window_energy_ = 0;
  for (double v : window_) window_energy_ += v * v;
  if (!(window_energy_ > 0)) window_energy_ = 1.0;  // 1-pixel frames: Hann is all zero
}

std::vector<double> PowerSpectrum::power(const Frame& f) const {
  if (f.width != width_ || f.height != height_)
    throw bad_input("power spectrum: frame is " + std::to_string(f.width) + "x" + std::to_string(f.height) +
                    ", the plan is for " + std::to_string(width_) + "x" + std::to_string(height_));
  const std::size_t n = f.size();
  // Remove the window-weighted mean, so the zero frequency is exactly 0 and
  // does not leak into its neighbours through the window.
  double sw = 0, swf = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (std::isfinite(f.pixels[i])) sw += window_[i], swf += window_[i] * f.pixels[i];
  const double mean = sw > 0 ? swf / sw : 0.0;
  FftBuffer<double> in(n);
  for (std::size_t i = 0; i < n; ++i) in[i] = std::isfinite(f.pixels[i]) ? (f.pixels[i] - mean) * window_[i] : 0.0;
  FftBuffer<std::complex<double>> spec(fft_.spectrum_size());
  fft_.forward(in.data(), spec.data());

  const int w = width_, h = height_, sw2 = fft_.spectrum_width();
  std::vector<double> out(n);
  for (int y = 0; y < h; ++y) {
    int v = y - h / 2;
    for (int x = 0; x < w; ++x) {
      int u = x - w / 2;
      // r2c keeps u >= 0; the other half is the conjugate at (-u, -v).
      int uu = u >= 0 ? u : -u, vv = u >= 0 ? v : -v;
      int row = ((vv % h) + h) % h;
      std::complex<double> c = spec[static_cast<std::size_t>(row) * sw2 + uu];
      out[static_cast<std::size_t>(y) * w + x] = std::norm(c) / window_energy_;
    }
  }
  return out;
}

Frame PowerSpectrum::log_power(const Frame& f) const {
  std::vector<double> p = power(f);
  Frame out(width_, height_);
  for (std::size_t i = 0; i < p.size(); ++i) out.pixels[i] = static_cast<float>(std::log1p(p[i]));
  return out;
}

SpectrumPeak PowerSpectrum::strongest_peak(const Frame& f, double min_radius) const {
  return strongest_peak_of(power(f), min_radius);
}

SpectrumPeak PowerSpectrum::strongest_peak_of(const std::vector<double>& p, double min_radius) const {
  if (p.size() != static_cast<std::size_t>(width_) * height_)
    throw bad_input("power spectrum: " + std::to_string(p.size()) + " values given for a " + std::to_string(width_) +
                    "x" + std::to_string(height_) + " spectrum");
  SpectrumPeak best;
  std::vector<double> ring;
  ring.reserve(p.size());
  const int cx = width_ / 2, cy = height_ / 2;
  double r2min = min_radius * min_radius;
  best.power = -1;
  for (int y = 0; y < height_; ++y)
    for (int x = 0; x < width_; ++x) {
      double dx = x - cx, dy = y - cy;
      if (dx * dx + dy * dy < r2min) continue;
      double v = p[static_cast<std::size_t>(y) * width_ + x];
      ring.push_back(v);
      if (v > best.power) best.power = v, best.x = x, best.y = y;
    }
  if (ring.empty()) return SpectrumPeak{};
  auto mid = ring.begin() + static_cast<std::ptrdiff_t>(ring.size() / 2);
  std::nth_element(ring.begin(), mid, ring.end());
  best.background = *mid;
  best.fx = static_cast<double>(best.x - cx) / width_;
  best.fy = static_cast<double>(best.y - cy) / height_;
  double fr = std::hypot(best.fx, best.fy);
  best.period = fr > 0 ? 1.0 / fr : 0.0;
  best.sharpness = best.background > 0 ? best.power / best.background : (best.power > 0 ? 1e300 : 0.0);
  return best;
}

Frame log_power_spectrum(const Frame& f, SpectrumWindow window) {
  return PowerSpectrum(f.width, f.height, window).log_power(f);
}

double lattice_sharpness(const Frame& f, double min_radius) {
  return PowerSpectrum(f.width, f.height).strongest_peak(f, min_radius).sharpness;
}

}  // namespace driftscan
