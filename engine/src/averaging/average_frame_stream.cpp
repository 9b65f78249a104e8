// Warping frames into frame 0's coordinates and streaming them for the
// averaging; see average_frame_stream.hpp.
#include "averaging/average_frame_stream.hpp"

#include <cmath>

namespace driftscan {
namespace averaging {

namespace {
constexpr double kPi = 3.14159265358979323846;
}  // namespace

Warper::Warper(int width, int height, Interpolation interpolation)
    : w_(width), h_(height), interpolation_(interpolation), cubic_(width, height) {
  if (interpolation_ == Interpolation::fourier) fft_ = std::make_unique<RealFft2d<float>>(w_, h_);
}

Warper::Scratch Warper::scratch() const {
  Scratch s;
  if (interpolation_ == Interpolation::cubic) s.cubic = cubic_.scratch();
  if (fft_) {
    s.real.resize(fft_->real_size());
    s.spectrum = FftBuffer<std::complex<float>>(fft_->spectrum_size());
  }
  return s;
}

void Warper::warp(const Frame& f, const Transform& to_reference, bool has_bad_pixels, int y0, int y1, float* out,
                  Scratch& s) const {
  if (interpolation_ == Interpolation::cubic) {
    cubic_.warp(f.pixels.data(), 0, h_, to_reference, y0, y1, out, s.cubic);
    return;
  }
  const Transform inv = to_reference.inverse();
  if (interpolation_ == Interpolation::fourier) {
    fourier_shift(f, -to_reference.tx, -to_reference.ty, s);
  }
  const double eps = 1e-6;  // keeps exact integer shifts inside despite rounding
  for (int y = y0; y < y1; ++y) {
    float* row = out + static_cast<std::size_t>(y - y0) * w_;
    for (int x = 0; x < w_; ++x) {
      Point q = inv.apply(x, y);
      if (q.x < -eps || q.y < -eps || q.x > w_ - 1 + eps || q.y > h_ - 1 + eps) {
        row[x] = kMissing;
        continue;
      }
      q.x = std::clamp(q.x, 0.0, w_ - 1.0);
      q.y = std::clamp(q.y, 0.0, h_ - 1.0);
      row[x] = has_bad_pixels && near_bad(f, q) ? kMissing : s.real[static_cast<std::size_t>(y) * w_ + x];
    }
  }
}

// The cubic kernel's 4x4 support around q holds a non-finite pixel.
bool Warper::near_bad(const Frame& f, Point q) const {
  int ix = static_cast<int>(std::floor(q.x)), iy = static_cast<int>(std::floor(q.y));
  for (int yy = std::max(0, iy - 1); yy <= std::min(h_ - 1, iy + 2); ++yy)
    for (int xx = std::max(0, ix - 1); xx <= std::min(w_ - 1, ix + 2); ++xx)
      if (!std::isfinite(f.at(xx, yy))) return true;
  return false;
}

// s.real = g with g(p) = f(p + (sx, sy)), i.e. G(u) = F(u) exp(+2 pi i u.s / N).
// warp() passes s = -t, so g(p) = f(T^{-1}(p)). The shift is circular: the
// wrapped border is marked missing by warp()'s inside test. Non-finite
// pixels are replaced by the frame's mean first so they cannot spread.
void Warper::fourier_shift(const Frame& f, double sx, double sy, Scratch& s) const {
  double mean = 0;
  long n = 0;
  for (float v : f.pixels)
    if (std::isfinite(v)) mean += v, ++n;
  mean = n ? mean / n : 0.0;
  for (std::size_t i = 0; i < f.size(); ++i)
    s.real[i] = std::isfinite(f.pixels[i]) ? f.pixels[i] : static_cast<float>(mean);
  fft_->forward(s.real.data(), s.spectrum.data());
  const int sw = fft_->spectrum_width();
  const double scale = 1.0 / (static_cast<double>(w_) * h_);
  for (int v = 0; v < h_; ++v) {
    int fv = v <= h_ / 2 ? v : v - h_;
    bool nyquist_v = (h_ % 2 == 0) && v == h_ / 2;
    for (int u = 0; u < sw; ++u) {
      bool nyquist_u = (w_ % 2 == 0) && u == w_ / 2;
      // At a Nyquist frequency the shift's phase is ambiguous (+-); its
      // real part (cos) keeps the result real and symmetric.
      std::complex<double> phase(1.0, 0.0);
      if (nyquist_u) phase *= std::cos(kPi * sx);
      else phase *= std::polar(1.0, 2 * kPi * u * sx / w_);
      if (nyquist_v) phase *= std::cos(kPi * sy);
      else phase *= std::polar(1.0, 2 * kPi * fv * sy / h_);
      std::complex<float>& c = s.spectrum[static_cast<std::size_t>(v) * sw + u];
      c = std::complex<float>(std::complex<double>(c) * phase * scale);
    }
  }
  fft_->inverse(s.spectrum.data(), s.real.data());
}

std::string FrameStream::describe_source() const {
  std::string d = source_.describe();
  auto colon = d.find(':');
  return colon == std::string::npos ? std::string() : d.substr(0, colon) + ": ";
}

void FrameStream::inspect(const Frame& f, FrameState& st) {
  long bad = 0;
  float lo = std::numeric_limits<float>::infinity(), hi = -lo;
  for (float v : f.pixels) {
    if (!std::isfinite(v)) {
      ++bad;
      continue;
    }
    lo = std::min(lo, v), hi = std::max(hi, v);
  }
  st.bad_pixels = bad;
  st.blank = !(hi > lo);  // no finite pixel, or all the same value
  st.inspected = true;
}

}  // namespace averaging
}  // namespace driftscan
