#include "driftscan/scan_distortion/template_wiener_filter.hpp"

#include <algorithm>
#include <cmath>
#include <complex>
#include <string>

#include "driftscan/core/apodisation_window.hpp"
#include "driftscan/core/error.hpp"

namespace driftscan {

namespace {

// Padding at least this wide on the right and bottom, for the blend below.
constexpr int kBlend = 12;

// The smallest n' >= n with no prime factor above 5: FFTW is several times
// faster there than on a size with a large prime factor (a grid 328 wide is
// 8 x 41), and 7 was slower still (330 x 300: 343 x 315 took 1.49 ms a
// filtering, 360 x 320 0.89 ms).
int fft_friendly(int n) {
  for (int m = std::max(1, n);; ++m) {
    int r = m;
    for (const int p : {2, 3, 5})
      while (r % p == 0) r /= p;
    if (r == 1) return m;
  }
}

double mean_of(const Frame& f) {
  double s = 0.0;
  for (const float v : f.pixels) s += v;
  return f.pixels.empty() ? 0.0 : s / static_cast<double>(f.pixels.size());
}

// f - mean in the top left corner of the transform's (larger) grid, zeros elsewhere.
void load(const RealFft2d<float>& fft, const Frame& f, float mean, FftBuffer<float>& in) {
  for (int y = 0; y < f.height; ++y) {
    const float* row = f.row(y);
    float* to = in.data() + static_cast<std::size_t>(y) * fft.width();
    for (int x = 0; x < f.width; ++x) to[x] = row[x] - mean;
  }
}

// |FFT(window * (f - mean))|^2 in the r2c layout. The Tukey window keeps
// the jump at the image's edges from leaking power to every frequency
// (measured: a gain of 0.47 at the corner frequency of smooth content
// without it); normalised to unit mean square, so noise power is unchanged.
std::vector<double> power_spectrum_of(const RealFft2d<float>& fft, const Frame& f) {
  FftBuffer<float> in(fft.real_size());
  load(fft, f, static_cast<float>(mean_of(f)), in);
  const std::vector<double> wx = tukey_window(static_cast<std::size_t>(f.width), 0.25);
  const std::vector<double> wy = tukey_window(static_cast<std::size_t>(f.height), 0.25);
  double square = 0.0;
  for (const double a : wy)
    for (const double b : wx) square += a * a * b * b;
  const double norm = 1.0 / std::sqrt(square / static_cast<double>(wx.size() * wy.size()));
  for (int y = 0; y < f.height; ++y) {
    float* row = in.data() + static_cast<std::size_t>(y) * fft.width();
    for (int x = 0; x < f.width; ++x)
      row[x] = static_cast<float>(row[x] * wx[static_cast<std::size_t>(x)] * wy[static_cast<std::size_t>(y)] * norm);
  }
  FftBuffer<std::complex<float>> out(fft.spectrum_size());
  fft.forward(in.data(), out.data());
  std::vector<double> p(out.size());
  for (std::size_t i = 0; i < p.size(); ++i) p[i] = std::norm(std::complex<double>(out[i]));
  return p;
}

// The mean of `p` over the (2r+1)^2 frequencies around each one. The r2c
// layout holds u = 0 .. w/2; the others are mirrored (P(-u, -v) = P(u, v)).
// Each output's sum runs over dv, then du, in that order; the columns whose
// window stays inside the layout are summed a row at a time for a whole run
// of outputs (the same additions in the same order per output, but
// independent of each other, so they vectorise; the index arithmetic of the
// mirror is left to the few columns near u = 0 and u = w/2).
// Row by row: `take(v, row)` receives output row v (sw values), so a
// caller that only compares rows holds no second spectrum (~70 MB at 4096²).
template <class Take>
void smoothed_rows(const std::vector<double>& p, int w, int h, int r, Take&& take) {
  const int sw = w / 2 + 1;
  std::vector<double> to(static_cast<std::size_t>(sw));
  const double count = (2.0 * r + 1) * (2.0 * r + 1);
  // Columns [inner0, inner1) need no mirror.
  const int inner0 = std::min(r, sw), inner1 = std::max(inner0, sw - r);
  std::vector<double> acc(static_cast<std::size_t>(sw));
  for (int v = 0; v < h; ++v) {
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int dv = -r; dv <= r; ++dv) {
      const int vv = ((v + dv) % h + h) % h;
      const double* row = p.data() + static_cast<std::size_t>(vv) * sw;
      for (int du = -r; du <= r; ++du)
        for (int u = inner0; u < inner1; ++u) acc[static_cast<std::size_t>(u)] += row[u + du];
    }
    auto edge = [&](int u) {
      double s = 0.0;
      for (int dv = -r; dv <= r; ++dv)
        for (int du = -r; du <= r; ++du) {
          int uu = u + du, vv = ((v + dv) % h + h) % h;
          if (uu < 0 || uu >= sw) {  // the mirror: (uu, vv) is (w - uu, -vv) or (-uu, -vv)
            uu = uu < 0 ? -uu : w - uu;
            vv = (h - vv) % h;
          }
          s += p[static_cast<std::size_t>(vv) * sw + std::clamp(uu, 0, sw - 1)];
        }
      return s;
    };
    for (int u = 0; u < inner0; ++u) to[static_cast<std::size_t>(u)] = edge(u) / count;
    for (int u = inner0; u < inner1; ++u) to[static_cast<std::size_t>(u)] = acc[static_cast<std::size_t>(u)] / count;
    for (int u = inner1; u < sw; ++u) to[static_cast<std::size_t>(u)] = edge(u) / count;
    take(v, to.data());
  }
}

std::vector<double> smoothed(const std::vector<double>& p, int w, int h, int r) {
  const std::size_t sw = static_cast<std::size_t>(w / 2) + 1;
  std::vector<double> out(p.size(), 0.0);
  smoothed_rows(p, w, h, r, [&](int v, const double* row) {
    std::copy(row, row + sw, out.data() + static_cast<std::size_t>(v) * sw);
  });
  return out;
}

// The windows' radii: the noise's and smooth content's (7 x 7
// frequencies), a reflection's (3 x 3).
constexpr int kWide = 3, kNarrow = 1;

// The average's power at each frequency, for the gain: the wide window's
// mean, except where the narrow window's differs from it by more than two
// of its standard errors (a reflection, or the dip between reflections:
// there the narrow one). Each frequency's power scatters like an
// exponential variable, so the 9 of the narrow window alone leave a third
// of the power in scatter; the gain 1 - N/P, convex in P, came out low on
// average wherever the content stands near the noise (broadband content's
// middle frequencies): on a revolving real-ABF dose-4 series the line fits'
// jitter error was 1.0-1.6% higher with the narrow window everywhere.
std::vector<double> average_power(const std::vector<double>& raw, int w, int h) {
  std::vector<double> power = smoothed(raw, w, h, kWide);
  const double count = (2.0 * kNarrow + 1) * (2.0 * kNarrow + 1);
  const double limit = 2.0 / std::sqrt(count);  // two standard errors, relative
  const std::size_t sw = static_cast<std::size_t>(w / 2) + 1;
  smoothed_rows(raw, w, h, kNarrow, [&](int v, const double* narrow) {
    double* wide = power.data() + static_cast<std::size_t>(v) * sw;
    for (std::size_t u = 0; u < sw; ++u)
      if (std::abs(narrow[u] - wide[u]) > limit * wide[u]) wide[u] = narrow[u];
  });
  return power;
}

}  // namespace

TemplateWienerFilter::TemplateWienerFilter(const Frame& average, const Frame& half_difference, std::size_t even,
                                           std::size_t odd, double noise_scale)
    : fft_(fft_friendly(average.width + kBlend), fft_friendly(average.height + kBlend)),
      width_(average.width),
      height_(average.height),
      spectrum_width_(fft_friendly(average.width + kBlend) / 2 + 1) {
  if (half_difference.width != average.width || half_difference.height != average.height)
    throw failure("template filter: the half difference is " + std::to_string(half_difference.width) + "x" +
                  std::to_string(half_difference.height) + ", the average " + std::to_string(average.width) + "x" +
                  std::to_string(average.height));
  if (even == 0 || odd == 0) throw failure("template filter: a half of the frames is empty");
  if (!(std::isfinite(noise_scale) && noise_scale > 0))
    throw failure("template filter: the noise scale must be > 0 (got " + std::to_string(noise_scale) + ")");
  const int w = fft_.width(), h = fft_.height();
  // The half difference's noise variance is (1/even + 1/odd) of one frame's,
  // the average's 1/(even + odd).
  const double n = static_cast<double>(even + odd);
  const double scale = (1.0 / n) / (1.0 / static_cast<double>(even) + 1.0 / static_cast<double>(odd));
  std::vector<double> noise = power_spectrum_of(fft_, half_difference);
  for (double& v : noise) v *= scale * noise_scale;
  // The noise spectrum is smooth: a wide window.
  noise = smoothed(noise, w, h, kWide);
  const std::vector<double> raw = power_spectrum_of(fft_, average);
  const std::vector<double> power = average_power(raw, w, h);
  gain_.assign(power.size(), 0.0f);
  double kept = 0.0, total = 0.0;
  for (std::size_t i = 0; i < power.size(); ++i) {
    const double g = power[i] > 0 ? std::max(0.0, power[i] - noise[i]) / power[i] : 0.0;
    gain_[i] = static_cast<float>(g);
    if (i != 0) kept += g * g * raw[i], total += raw[i];
  }
  gain_[0] = 1.0f;  // the mean is kept
  kept_power_ = total > 0 ? kept / total : 1.0;
}

void TemplateWienerFilter::check_size(const Frame& image) const {
  if (image.width != width_ || image.height != height_)
    throw failure("template filter: an image of " + std::to_string(image.width) + "x" + std::to_string(image.height) +
                  " for a filter of " + std::to_string(width_) + "x" + std::to_string(height_));
}

void TemplateWienerFilter::blend_padding(FftBuffer<float>& real) const {
  // The padding blends the last row (column) into the first, so the
  // transform's periodic copies meet without a jump: filtering a jump rings.
  const int tw = fft_.width(), th = fft_.height();
  for (int y = 0; y < height_; ++y) {
    float* row = real.data() + static_cast<std::size_t>(y) * tw;
    for (int x = width_; x < tw; ++x) {
      const float t = static_cast<float>(x - width_ + 1) / static_cast<float>(tw - width_ + 1);
      row[x] = (1 - t) * row[width_ - 1] + t * row[0];
    }
  }
  const float* last = real.data() + static_cast<std::size_t>(height_ - 1) * tw;
  for (int y = height_; y < th; ++y) {
    const float t = static_cast<float>(y - height_ + 1) / static_cast<float>(th - height_ + 1);
    float* row = real.data() + static_cast<std::size_t>(y) * tw;
    for (int x = 0; x < tw; ++x) row[x] = (1 - t) * last[x] + t * real[static_cast<std::size_t>(x)];
  }
}

void TemplateWienerFilter::apply(Frame& image) const {
  check_size(image);
  const float mean = static_cast<float>(mean_of(image));
  FftBuffer<float> real(fft_.real_size());
  load(fft_, image, mean, real);
  blend_padding(real);
  FftBuffer<std::complex<float>> spectrum(fft_.spectrum_size());
  fft_.forward(real.data(), spectrum.data());
  for (std::size_t i = 0; i < spectrum.size(); ++i) spectrum[i] *= gain_[i];
  fft_.inverse(spectrum.data(), real.data());
  const float norm = 1.0f / static_cast<float>(fft_.real_size());
  for (int y = 0; y < height_; ++y) {
    const float* from = real.data() + static_cast<std::size_t>(y) * fft_.width();
    float* row = image.row(y);
    for (int x = 0; x < width_; ++x) row[x] = from[x] * norm + mean;
  }
}

void TemplateWienerFilter::add_filtered_coefficients(Frame& difference, const Frame& base) const {
  check_size(difference);
  check_size(base);
  // No mean taken out: the blend is a convex combination and the gain at
  // frequency 0 is 1, so a constant passes unchanged either way.
  FftBuffer<float> real(fft_.real_size());
  load(fft_, difference, 0.0f, real);
  blend_padding(real);
  FftBuffer<std::complex<float>> spectrum(fft_.spectrum_size());
  fft_.forward(real.data(), spectrum.data());
  // The cubic B-spline's sampled kernel [1 4 1] / 6 per axis has the
  // spectrum (4 + 2 cos w) / 6; its inverse is the prefilter, periodic here.
  const int tw = fft_.width(), th = fft_.height(), sw = spectrum_width_;
  const double two_pi = 2.0 * std::acos(-1.0);
  std::vector<float> inverse_x(static_cast<std::size_t>(sw)), inverse_y(static_cast<std::size_t>(th));
  for (int u = 0; u < sw; ++u)
    inverse_x[static_cast<std::size_t>(u)] = static_cast<float>(6.0 / (4.0 + 2.0 * std::cos(two_pi * u / tw)));
  for (int v = 0; v < th; ++v)
    inverse_y[static_cast<std::size_t>(v)] = static_cast<float>(6.0 / (4.0 + 2.0 * std::cos(two_pi * v / th)));
  const float norm = 1.0f / static_cast<float>(fft_.real_size());
  for (int v = 0; v < th; ++v) {
    const std::size_t at = static_cast<std::size_t>(v) * static_cast<std::size_t>(sw);
    const float scale = inverse_y[static_cast<std::size_t>(v)] * norm;
    for (int u = 0; u < sw; ++u) spectrum[at + u] *= gain_[at + u] * inverse_x[static_cast<std::size_t>(u)] * scale;
  }
  fft_.inverse(spectrum.data(), real.data());
  for (int y = 0; y < height_; ++y) {
    const float* from = real.data() + static_cast<std::size_t>(y) * tw;
    const float* b = base.row(y);
    float* row = difference.row(y);
    for (int x = 0; x < width_; ++x) row[x] = b[x] + from[x];
  }
}

}  // namespace driftscan
