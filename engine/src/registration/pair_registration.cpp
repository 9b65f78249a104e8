// Pair registration by Fourier cross-correlation; see pair_registration.hpp.
#include "driftscan/registration/pair_registration.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <complex>
#include <cstdint>
#include <string>
#include <vector>

#include "driftscan/core/apodisation_window.hpp"
#include "driftscan/core/error.hpp"
#include "driftscan/core/fftw_planner.hpp"

namespace driftscan {

namespace {

constexpr double kPi = 3.14159265358979323846;

// Sample-centre windows (never exactly zero at the edges); Hann is the
// Tukey window with alpha = 1.
std::vector<float> window_1d(int n, Apodisation kind, double alpha) {
  if (kind == Apodisation::none || n < 3) return std::vector<float>(static_cast<std::size_t>(n), 1.0f);
  const std::vector<double> w = tukey_window(static_cast<std::size_t>(n), kind == Apodisation::hann ? 1.0 : alpha);
  return std::vector<float>(w.begin(), w.end());
}

int signed_index(int i, int n) { return i <= n / 2 ? i : i - n; }

// Length (px) of the shortest strong lattice vector in an autocorrelation
// `ac` (w x h, wrapped, zero mean), searched within +-reach; 0 when the
// frame does not look periodic. The central peak's basin (the connected
// region around 0 where ac > 0) is excluded; a lattice shows as local maxima
// beyond it of at least `min_ratio` times ac(0).
double shortest_lattice_vector(const float* ac, int w, int h, int reach_x, int reach_y, double min_ratio) {
  const double ac0 = ac[0];
  if (!(ac0 > 0)) return 0.0;
  const int bw = 2 * reach_x + 1, bh = 2 * reach_y + 1;
  auto at = [&](int sx, int sy) { return ac[static_cast<std::size_t>((sy % h + h) % h) * w + (sx % w + w) % w]; };
  std::vector<unsigned char> basin(static_cast<std::size_t>(bw) * bh, 0);
  auto idx = [&](int sx, int sy) { return static_cast<std::size_t>(sy + reach_y) * bw + (sx + reach_x); };
  std::vector<std::pair<int, int>> stack{{0, 0}};
  basin[idx(0, 0)] = 1;
  while (!stack.empty()) {
    auto [x, y] = stack.back();
    stack.pop_back();
    const int nb[4][2] = {{x + 1, y}, {x - 1, y}, {x, y + 1}, {x, y - 1}};
    for (const auto& n : nb) {
      if (std::abs(n[0]) > reach_x || std::abs(n[1]) > reach_y) continue;
      auto i = idx(n[0], n[1]);
      if (basin[i] || !(at(n[0], n[1]) > 0)) continue;
      basin[i] = 1;
      stack.push_back({n[0], n[1]});
    }
  }
  struct Peak {
    double value, radius;
  };
  std::vector<Peak> peaks;
  double strongest = 0;
  for (int sy = -reach_y; sy <= reach_y; ++sy)
    for (int sx = -reach_x; sx <= reach_x; ++sx) {
      if (basin[idx(sx, sy)]) continue;
      const float v = at(sx, sy);
      if (!(v > 0)) continue;
      bool local_max = true;
      for (int dy = -1; dy <= 1 && local_max; ++dy)
        for (int dx = -1; dx <= 1; ++dx)
          if ((dx || dy) && at(sx + dx, sy + dy) > v) {
            local_max = false;
            break;
          }
      if (!local_max) continue;
      peaks.push_back({v, std::hypot(sx, sy)});
      strongest = std::max(strongest, static_cast<double>(v));
    }
  if (strongest < min_ratio * ac0) return 0.0;
  double shortest = 0;
  for (const Peak& p : peaks)
    if (p.value >= 0.5 * strongest && (shortest == 0 || p.radius < shortest)) shortest = p.radius;
  return shortest;
}

}  // namespace

PairRegistrationOptions PairRegistrationOptions::from(const RegistrationSettings& settings) {
  PairRegistrationOptions o;
  o.bandpass_low = settings.bandpass_low;
  o.bandpass_high = settings.bandpass_high;
  o.max_shift = settings.max_shift;
  o.roi = settings.roi;
  return o;
}

struct PairRegistrationPlan::State {
  int x0 = 0, y0 = 0, w = 0, h = 0;  // the ROI
  std::vector<float> wx, wy;         // separable apodisation
  std::vector<float> weight;         // band-pass weight per spectrum element (empty: none)
  RealFft2d<float> fft;
  int max_sx = 0, max_sy = 0;  // integer search bound
  double window_samples = 0;   // (sum w^2)^2 / sum w^4: the window's effective number of pixels
  std::uint64_t serial;        // tells plans apart in the threads' kept spectra (an address may be reused)
  State(int w_, int h_) : w(w_), h(h_), fft(w_, h_), serial(next_serial()) {}
  static std::uint64_t next_serial() {
    static std::atomic<std::uint64_t> n{0};
    return ++n;
  }
};

PairRegistrationPlan::PairRegistrationPlan(int width, int height, const PairRegistrationOptions& options)
    : width_(width), height_(height), options_(options) {
  if (width < 8 || height < 8)
    throw bad_input("frames of " + std::to_string(width) + "x" + std::to_string(height) +
                    " are too small to register (at least 8x8)");
  Roi r = options.roi;
  if (r.whole_frame()) r = Roi{0, 0, width, height};
  if (r.x < 0 || r.y < 0 || r.x + r.w > width || r.y + r.h > height)
    throw bad_input("ROI " + std::to_string(r.x) + "," + std::to_string(r.y) + "," + std::to_string(r.w) + "," +
                    std::to_string(r.h) + " lies outside the " + std::to_string(width) + "x" + std::to_string(height) +
                    " frame");
  if (r.w < 8 || r.h < 8) throw bad_input("ROI smaller than 8x8 pixels cannot be registered");
  if (options.bandpass_low < 0 || options.bandpass_high < 0 ||
      (options.bandpass_high > 0 && options.bandpass_low > 0 && options.bandpass_high <= options.bandpass_low))
    throw bad_input("band-pass: need 0 <= low < high (spatial periods in px)");

  auto st = std::make_shared<State>(r.w, r.h);
  st->x0 = r.x;
  st->y0 = r.y;
  st->wx = window_1d(r.w, options.window, options.tukey_alpha);
  st->wy = window_1d(r.h, options.window, options.tukey_alpha);
  {
    double x2 = 0, x4 = 0, y2 = 0, y4 = 0;
    for (float v : st->wx) x2 += double(v) * v, x4 += double(v) * v * v * v;
    for (float v : st->wy) y2 += double(v) * v, y4 += double(v) * v * v * v;
    st->window_samples = (x2 * x2 / x4) * (y2 * y2 / y4);
  }
  if (options.bandpass_low > 0 || options.bandpass_high > 0 || options.smooth_sigma > 0) {
    // Gaussian roll-offs: periods shorter than `low` (noise) and longer than
    // `high` (background) are attenuated to 1/e^0.5 at the cut-off.
    int sw = st->fft.spectrum_width();
    st->weight.assign(st->fft.spectrum_size(), 1.0f);
    for (int ky = 0; ky < r.h; ++ky)
      for (int kx = 0; kx < sw; ++kx) {
        double fy = static_cast<double>(signed_index(ky, r.h)) / r.h, fx = static_cast<double>(kx) / r.w;
        double f = std::hypot(fx, fy);  // cycles per pixel
        double g = 1.0;
        if (options.bandpass_low > 0) g *= std::exp(-0.5 * std::pow(f * options.bandpass_low, 2));
        if (options.bandpass_high > 0) g *= 1.0 - std::exp(-0.5 * std::pow(f * options.bandpass_high, 2));
        // both frames smoothed by sigma: |G(f)|^2 on the cross-power
        if (options.smooth_sigma > 0)
          g *= std::exp(-4.0 * kPi * kPi * options.smooth_sigma * options.smooth_sigma * f * f);
        st->weight[static_cast<std::size_t>(ky) * sw + kx] = static_cast<float>(g);
      }
  }
  int qx = std::max(1, r.w / 4), qy = std::max(1, r.h / 4);
  if (options.max_shift > 0) {
    qx = std::min(r.w / 2 - 1, static_cast<int>(std::ceil(options.max_shift)));
    qy = std::min(r.h / 2 - 1, static_cast<int>(std::ceil(options.max_shift)));
  }
  st->max_sx = std::max(1, qx);
  st->max_sy = std::max(1, qy);
  state_ = std::move(st);
}

namespace {

using State = PairRegistrationPlan::State;

// Per-thread scratch, reused across calls (allocation and page faults
// would otherwise cost as much as the transforms). B keeps the last moving
// spectrum, of frame `kept` of plan `kept_plan` (0: none).
struct Scratch {
  FftBuffer<float> a, b;
  FftBuffer<std::complex<float>> A, B;
  std::vector<std::complex<float>> R;
  std::uint64_t kept_plan = 0;
  PairFrameKey kept;
};

Scratch& this_thread_scratch() {
  thread_local Scratch scratch;
  return scratch;
}

Scratch& thread_scratch(const State& s) {
  Scratch& scratch = this_thread_scratch();
  const std::size_t n = s.fft.real_size(), ns = s.fft.spectrum_size();
  if (scratch.a.size() != n || scratch.A.size() != ns) {
    scratch.a = FftBuffer<float>(n);
    scratch.b = FftBuffer<float>(n);
    scratch.A = FftBuffer<std::complex<float>>(ns);
    scratch.B = FftBuffer<std::complex<float>>(ns);
    scratch.R.resize(ns);
    scratch.kept_plan = 0;
  }
  return scratch;
}

void check_frame_size(const Frame& f, int width, int height) {
  if (f.width != width || f.height != height || f.size() != static_cast<std::size_t>(width) * height)
    throw bad_input("pair registration: frame is " + std::to_string(f.width) + "x" + std::to_string(f.height) +
                    ", expected " + std::to_string(width) + "x" + std::to_string(height));
}

// Mean removal and apodisation of the ROI into `out`; the mean of the
// windowed ROI is removed so the DC term (and the window's own spectrum)
// does not dominate.
void prepare(const State& s, const Frame& f, float* out, const char* which) {
  const std::size_t n = s.fft.real_size();
  double sum = 0.0, sum2 = 0.0;
  for (int y = 0; y < s.h; ++y) {
    const float* row = f.row(s.y0 + y) + s.x0;
    for (int x = 0; x < s.w; ++x) {
      double v = row[x];
      if (!std::isfinite(v))
        throw bad_input(std::string("pair registration: ") + which + " frame has a non-finite pixel at (" +
                        std::to_string(s.x0 + x) + ", " + std::to_string(s.y0 + y) + ")");
      sum += v;
      sum2 += v * v;
    }
  }
  double mean = sum / static_cast<double>(n);
  double var = sum2 / static_cast<double>(n) - mean * mean;
  if (!(var > 1e-12 * std::max(1.0, mean * mean)))
    throw bad_input(std::string("pair registration: ") + which + " frame is blank (no contrast in the region)");
  for (int y = 0; y < s.h; ++y) {
    const float* row = f.row(s.y0 + y) + s.x0;
    float* o = out + static_cast<std::size_t>(y) * s.w;
    for (int x = 0; x < s.w; ++x) o[x] = static_cast<float>((row[x] - mean) * s.wy[y] * s.wx[x]);
  }
}

// Cross-power spectrum R = A conj(B) (band-pass weighted, whitened);
// IFFT(R)[s] = sum_p a(p+s) b(p). Returns sqrt(sum g|A|^2 sum g|B|^2) over
// the whole spectrum without DC (g: the band-pass weight): the IFFT divided
// by it is the correlation coefficient of the weighted frames.
double cross_power(const State& s, const std::complex<float>* A, const std::complex<float>* B, double whitening,
                   std::complex<float>* R) {
  const std::size_t ns = s.fft.spectrum_size();
  const int sw = s.fft.spectrum_width();
  const double wexp = std::clamp(whitening, 0.0, 1.0);
  double ea = 0, eb = 0;
  for (std::size_t i = 0; i < ns; ++i) {
    std::complex<float> r = A[i] * std::conj(B[i]);
    const int kx = static_cast<int>(i % static_cast<std::size_t>(sw));
    const double m = (kx == 0 || (s.w % 2 == 0 && kx == s.w / 2)) ? 1.0 : 2.0;  // Hermitian half
    const double g = s.weight.empty() ? 1.0 : s.weight[i];
    ea += m * g * std::norm(A[i]);
    eb += m * g * std::norm(B[i]);
    if (!s.weight.empty()) r *= s.weight[i];
    if (wexp > 0) r /= static_cast<float>(std::pow(std::abs(r) + 1e-20, wexp));
    R[i] = r;
  }
  ea -= std::norm(A[0]) * (s.weight.empty() ? 1.0 : s.weight[0]);
  eb -= std::norm(B[0]) * (s.weight.empty() ? 1.0 : s.weight[0]);
  R[0] = 0.0f;  // no DC: the correlation has zero mean
  return std::sqrt(std::max(0.0, ea) * std::max(0.0, eb));
}

// The reference's shortest lattice vector (0: not periodic) from its
// autocorrelation, the inverse transform of |A|^2 (made in A, which it
// destroys; B keeps the moving spectrum); b is scratch.
double reference_lattice_vector(const State& s, std::complex<float>* A, float* b) {
  const std::size_t ns = s.fft.spectrum_size();
  for (std::size_t i = 0; i < ns; ++i) A[i] = std::norm(A[i]);
  A[0] = 0.0f;
  s.fft.inverse(A, b);
  return shortest_lattice_vector(b, s.w, s.h, s.max_sx, s.max_sy, 0.15);
}

// The correlation surface, indexed by wrapped shifts.
struct Correlation {
  const float* c;
  int w, h;
  float at(int sx, int sy) const {
    int ix = (sx % w + w) % w, iy = (sy % h + h) % h;
    return c[static_cast<std::size_t>(iy) * w + ix];
  }
};

struct IntegerPeak {
  int x = 0, y = 0;
  float value = -INFINITY;
};

// Integer peak within the max-shift bound and the lattice circle of
// `radius`: row by row, the allowed columns of each row as wrapped
// contiguous runs.
IntegerPeak find_integer_peak(const State& s, const Correlation& corr, double radius) {
  IntegerPeak p;
  for (int sy = -s.max_sy; sy <= s.max_sy; ++sy) {
    int reach = s.max_sx;
    if (std::isfinite(radius)) {
      double r2 = radius * radius - static_cast<double>(sy) * sy;
      if (r2 <= 0) continue;
      reach = std::min(reach, static_cast<int>(std::ceil(std::sqrt(r2))) - 1);
      while (reach >= 0 && static_cast<double>(reach) * reach + static_cast<double>(sy) * sy >= radius * radius)
        --reach;
      if (reach < 0) continue;
    }
    const float* row = corr.c + static_cast<std::size_t>((sy + s.h) % s.h) * s.w;
    for (int sx = 0; sx <= reach; ++sx)
      if (row[sx] > p.value) p.value = row[sx], p.x = sx, p.y = sy;
    for (int sx = 1; sx <= reach; ++sx)
      if (row[s.w - sx] > p.value) p.value = row[s.w - sx], p.x = -sx, p.y = sy;
  }
  return p;
}

// Integer peak within the max-shift bound and the circle of `radius` about
// the integer shift (cx, cy): the search about a predicted shift
// (execute_about). The circle about (0, 0) is find_integer_peak's.
IntegerPeak find_integer_peak_about(const State& s, const Correlation& corr, double radius, int cx, int cy) {
  IntegerPeak p;
  const int reach = static_cast<int>(std::ceil(radius));
  for (int sy = std::max(-s.max_sy, cy - reach); sy <= std::min(s.max_sy, cy + reach); ++sy)
    for (int sx = std::max(-s.max_sx, cx - reach); sx <= std::min(s.max_sx, cx + reach); ++sx) {
      const double ddx = sx - cx, ddy = sy - cy;
      if (ddx * ddx + ddy * ddy >= radius * radius) continue;
      const float v = corr.at(sx, sy);
      if (v > p.value) p.value = v, p.x = sx, p.y = sy;
    }
  return p;
}

// Peak-to-sidelobe ratio over the surface without the 5x5 around the
// peak; second peak: the highest other local maximum.
void sidelobe_measures(const Correlation& corr, const IntegerPeak& peak, PairShift& out) {
  const float* c = corr.c;
  const int w = corr.w, h = corr.h, px = peak.x, py = peak.y;
  const float best = peak.value;
  const std::size_t n = static_cast<std::size_t>(w) * h;
  double sum = 0.0, sum2 = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    sum += c[i];
    sum2 += static_cast<double>(c[i]) * c[i];
  }
  std::size_t cnt = n;
  for (int dy = -2; dy <= 2; ++dy)
    for (int dx = -2; dx <= 2; ++dx) {
      if (std::abs(dx) * 2 >= w || std::abs(dy) * 2 >= h) continue;
      double v = corr.at(px + dx, py + dy);
      sum -= v;
      sum2 -= v * v;
      --cnt;
    }
  float second = -INFINITY;
  for (int iy = 0; iy < h; ++iy) {
    const float* row = c + static_cast<std::size_t>(iy) * w;
    for (int ix = 0; ix < w; ++ix) {
      const float v = row[ix];
      if (!(v > second)) continue;  // the common case: one compare per pixel
      const int sx = signed_index(ix, w), sy = signed_index(iy, h);
      int ddx = std::abs(sx - px), ddy = std::abs(sy - py);
      ddx = std::min(ddx, w - ddx);
      ddy = std::min(ddy, h - ddy);
      if (ddx <= 2 && ddy <= 2) continue;
      if (v >= corr.at(sx - 1, sy) && v >= corr.at(sx + 1, sy) && v >= corr.at(sx, sy - 1) && v >= corr.at(sx, sy + 1))
        second = v;
    }
  }
  double mean = cnt ? sum / cnt : 0.0;
  double sd = cnt ? std::sqrt(std::max(0.0, sum2 / cnt - mean * mean)) : 0.0;
  out.psr = sd > 0 ? (best - mean) / sd : 0.0;
  out.second_peak = best > mean && std::isfinite(second) ? std::max(0.0, (second - mean) / (best - mean)) : 0.0;
}

// The peak's central lobe: sum of (c / c_peak)^2 over the connected region
// around it where c >= c_peak / 2 (within +-32 px), x 4/3 — a Gaussian
// lobe holds 3/4 of its sum of squares inside its half maximum.
double peak_lobe_area(const Correlation& corr, const IntegerPeak& peak) {
  if (!(peak.value > 0)) return 0.0;
  constexpr int reach = 32;
  const int rx = std::min(reach, (corr.w - 1) / 2), ry = std::min(reach, (corr.h - 1) / 2);
  const int bw = 2 * rx + 1;
  std::vector<unsigned char> seen(static_cast<std::size_t>(bw) * (2 * ry + 1), 0);
  auto idx = [&](int dx, int dy) { return static_cast<std::size_t>(dy + ry) * bw + (dx + rx); };
  std::vector<std::pair<int, int>> stack{{0, 0}};
  seen[idx(0, 0)] = 1;
  double sum = 0.0;
  const double half = 0.5 * peak.value;
  while (!stack.empty()) {
    auto [x, y] = stack.back();
    stack.pop_back();
    const double v = corr.at(peak.x + x, peak.y + y) / static_cast<double>(peak.value);
    sum += v * v;
    const int nb[4][2] = {{x + 1, y}, {x - 1, y}, {x, y + 1}, {x, y - 1}};
    for (const auto& n : nb) {
      if (std::abs(n[0]) > rx || std::abs(n[1]) > ry) continue;
      const std::size_t i = idx(n[0], n[1]);
      if (seen[i] || !(corr.at(peak.x + n[0], peak.y + n[1]) >= half)) continue;
      seen[i] = 1;
      stack.push_back({n[0], n[1]});
    }
  }
  return sum * 4.0 / 3.0;
}

// Sub-pixel offset of a parabola's vertex through three samples, within
// half a pixel; 0 when they are not a cap.
double parabola(double l, double m, double r) {
  double den = l - 2 * m + r;
  return den < 0 ? std::clamp(0.5 * (l - r) / den, -0.5, 0.5) : 0.0;
}

// Newton steps from (ex, ey) to the maximum of the correlation evaluated
// exactly from the cross-power spectrum R (band-limited interpolation: the
// peak of the DFT-upsampled surface without computing the surface). Stays
// put where the start is not on a maximum's cap; goes back to the start
// when a step wanders more than a pixel away.
void refine_on_spectrum(const State& s, const std::complex<float>* R, double& ex, double& ey) {
  const int sw = s.fft.spectrum_width();
  std::vector<double> mult(static_cast<std::size_t>(sw)), wxk(static_cast<std::size_t>(sw));
  for (int kx = 0; kx < sw; ++kx) {
    mult[static_cast<std::size_t>(kx)] = (kx == 0 || (s.w % 2 == 0 && kx == s.w / 2)) ? 1.0 : 2.0;  // Hermitian half
    wxk[static_cast<std::size_t>(kx)] = 2 * kPi * kx / s.w;
  }
  // Split, single-precision arrays: the row sums below vectorise.
  std::vector<float> pr(static_cast<std::size_t>(sw)), pi(static_cast<std::size_t>(sw));
  std::vector<float> m0(static_cast<std::size_t>(sw)), m1(static_cast<std::size_t>(sw)),
      m2(static_cast<std::size_t>(sw));
  for (int kx = 0; kx < sw; ++kx) {
    auto i = static_cast<std::size_t>(kx);
    m0[i] = static_cast<float>(mult[i]);
    m1[i] = static_cast<float>(mult[i] * wxk[i]);
    m2[i] = static_cast<float>(mult[i] * wxk[i] * wxk[i]);
  }
  const double start_x = ex, start_y = ey;
  // c(s) = sum m Re(R e^{i w.s}); gradient and Hessian follow from the
  // three row sums T_n = sum_kx m wx^n R e^{i wx sx}.
  for (int it = 0; it < 5; ++it) {
    for (int kx = 0; kx < sw; ++kx) {
      auto i = static_cast<std::size_t>(kx);
      pr[i] = static_cast<float>(std::cos(wxk[i] * ex));
      pi[i] = static_cast<float>(std::sin(wxk[i] * ex));
    }
    double gx = 0, gy = 0, hxx = 0, hxy = 0, hyy = 0;
    for (int ky = 0; ky < s.h; ++ky) {
      const float* row = reinterpret_cast<const float*>(R + static_cast<std::size_t>(ky) * sw);
      float t0r = 0, t0i = 0, t1r = 0, t1i = 0, t2r = 0, t2i = 0;
      for (int kx = 0; kx < sw; ++kx) {
        const float rr = row[2 * static_cast<std::size_t>(kx)], ri = row[2 * static_cast<std::size_t>(kx) + 1];
        const float zr = rr * pr[static_cast<std::size_t>(kx)] - ri * pi[static_cast<std::size_t>(kx)];
        const float zi = rr * pi[static_cast<std::size_t>(kx)] + ri * pr[static_cast<std::size_t>(kx)];
        t0r += m0[static_cast<std::size_t>(kx)] * zr, t0i += m0[static_cast<std::size_t>(kx)] * zi;
        t1r += m1[static_cast<std::size_t>(kx)] * zr, t1i += m1[static_cast<std::size_t>(kx)] * zi;
        t2r += m2[static_cast<std::size_t>(kx)] * zr, t2i += m2[static_cast<std::size_t>(kx)] * zi;
      }
      double wy = 2 * kPi * signed_index(ky, s.h) / s.h;
      double cr = std::cos(wy * ey), ci = std::sin(wy * ey);
      double z0r = t0r * cr - t0i * ci, z0i = t0r * ci + t0i * cr;
      double z1r = t1r * cr - t1i * ci, z1i = t1r * ci + t1i * cr;
      double z2r = t2r * cr - t2i * ci;
      gx -= z1i;
      gy -= wy * z0i;
      hxx -= z2r;
      hxy -= wy * z1r;
      hyy -= wy * wy * z0r;
    }
    double det = hxx * hyy - hxy * hxy;
    if (!(hxx < 0 && det > 0)) break;  // not at a maximum's cap: keep what we have
    double sx = -(hyy * gx - hxy * gy) / det, sy = -(hxx * gy - hxy * gx) / det;
    double len = std::hypot(sx, sy);
    if (len > 0.25) sx *= 0.25 / len, sy *= 0.25 / len;  // trust region
    ex += sx;
    ey += sy;
    if (std::abs(ex - start_x) > 1.0 || std::abs(ey - start_y) > 1.0) {  // wandered off: undo
      ex = start_x;
      ey = start_y;
      break;
    }
    if (len < 1e-4) break;
  }
}

}  // namespace

double PairRegistrationPlan::significance_threshold(double samples) {
  const double m = std::sqrt(2.0 * std::log(std::max(samples, 3.0)));
  return m + 9.2 / m;
}

double PairRegistrationPlan::correlation_significance(double ncc, double samples) {
  // Fisher's z: atanh(r) sqrt(n - 3) is a standard normal for unrelated
  // frames at every n; r sqrt(n) is only for large n and small r, and where
  // a frame holds few samples (a 74 px square of 29 px fringes: n ~ 30) it
  // stays below the threshold even at r = 1.
  const double r = std::clamp(ncc, -1.0 + 1e-12, 1.0 - 1e-12);
  return std::atanh(r) * std::sqrt(std::max(samples - 3.0, 0.0));
}

void PairRegistrationPlan::release_thread_buffers() { this_thread_scratch() = Scratch{}; }

PairShift PairRegistrationPlan::execute(const Frame& fi, const Frame& fk) const {
  return search(fi, fk, nullptr, nullptr);
}

PairShift PairRegistrationPlan::execute(const Frame& fi, const Frame& fk, PairFrameKey ki, PairFrameKey kk) const {
  const PairFrameKey keys[2] = {ki, kk};
  return search(fi, fk, nullptr, keys);
}

PairShift PairRegistrationPlan::execute_about(const Frame& fi, const Frame& fk, Point predicted) const {
  return search(fi, fk, &predicted, nullptr);
}

PairShift PairRegistrationPlan::search(const Frame& fi, const Frame& fk, const Point* about,
                                       const PairFrameKey* keys) const {
  const State& s = *state_;
  for (const Frame* f : {&fi, &fk}) check_frame_size(*f, width_, height_);
  Scratch& scratch = thread_scratch(s);
  FftBuffer<float>&a = scratch.a, &b = scratch.b;
  FftBuffer<std::complex<float>>&A = scratch.A, &B = scratch.B;
  std::vector<std::complex<float>>& R = scratch.R;

  // Prepare (mean removal, apodisation) and forward FFTs; the reference's
  // spectrum is the last call's moving one when the keys say so.
  const bool reuse = keys && keys[0].series && scratch.kept_plan == s.serial && scratch.kept.series == keys[0].series &&
                     scratch.kept.index == keys[0].index;
  scratch.kept_plan = 0;  // B is overwritten below
  if (reuse) {
    std::swap(A, B);
  } else {
    prepare(s, fi, a.data(), "reference");
    s.fft.forward(a.data(), A.data());
  }
  prepare(s, fk, b.data(), "moving");
  s.fft.forward(b.data(), B.data());
  if (keys && keys[1].series) scratch.kept_plan = s.serial, scratch.kept = keys[1];

  // Cross-power spectrum; then A and b are free: the reference's
  // autocorrelation goes there when the lattice bound needs it.
  const double energy = cross_power(s, A.data(), B.data(), options_.whitening, R.data());
  double lattice = options_.lattice_bound ? options_.lattice_vector : 0.0;
  if (options_.lattice_bound && !(lattice > 0)) lattice = reference_lattice_vector(s, A.data(), b.data());
  // Periodic frame: consecutive shifts are below half a period (docs/method.md),
  // so the peak is searched inside that circle, where it is unambiguous.
  const double radius = lattice > 0 ? 0.5 * lattice : INFINITY;

  // Correlation surface (into a), its integer peak within the bounds, and
  // how distinct that peak is.
  std::copy(R.begin(), R.end(), A.data());
  s.fft.inverse(A.data(), a.data());
  const Correlation corr{a.data(), s.w, s.h};
  const bool about_prediction = about && std::isfinite(radius);  // not periodic: the whole bound, as execute()
  const int cx = about_prediction ? static_cast<int>(std::lround(about->x)) : 0;
  const int cy = about_prediction ? static_cast<int>(std::lround(about->y)) : 0;
  const IntegerPeak peak =
      about_prediction ? find_integer_peak_about(s, corr, radius, cx, cy) : find_integer_peak(s, corr, radius);
  if (!(peak.value > -INFINITY)) {  // the circle lies outside the max-shift bound: nothing searched
    PairShift none;
    none.lattice_vector = lattice;
    none.at_bound = true;
    none.significant = false;
    return none;
  }
  const int px = peak.x, py = peak.y;
  PairShift out;
  out.lattice_vector = lattice;
  out.at_bound = std::abs(px) == s.max_sx || std::abs(py) == s.max_sy || std::hypot(px - cx, py - cy) > radius - 1.5;
  sidelobe_measures(corr, peak, out);
  // Significance: the peak's correlation coefficient against the standard
  // deviation of frames sharing no content, for the number of independent
  // shifts searched (the circle or rectangle above, in sample areas).
  out.lobe_area = peak_lobe_area(corr, peak);
  out.ncc = energy > 0 ? peak.value / energy : 0.0;
  const double sample_area = std::max(1.0, options_.sample_area > 0 ? options_.sample_area : out.lobe_area);
  out.significance = correlation_significance(out.ncc, s.window_samples / sample_area);
  const double box = static_cast<double>(2 * s.max_sx + 1) * (2 * s.max_sy + 1);
  const double searched = std::isfinite(radius) ? std::min(box, kPi * radius * radius) : box;
  out.significant = out.significance >= significance_threshold(searched / sample_area);

  // Sub-pixel: a parabola through the integer neighbours, then Newton steps
  // on the correlation interpolated from the cross-power spectrum.
  double ex = px + parabola(corr.at(px - 1, py), peak.value, corr.at(px + 1, py));
  double ey = py + parabola(corr.at(px, py - 1), peak.value, corr.at(px, py + 1));
  if (options_.dft_subpixel) refine_on_spectrum(s, R.data(), ex, ey);
  out.dx = ex;
  out.dy = ey;
  return out;
}

}  // namespace driftscan
