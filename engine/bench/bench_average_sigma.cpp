// Calibration of the average's standard-error map (sigma.tif,
// AverageResult::sigma, SpecimenImage::sigma) by the odd/even split: the
// series is registered once, then averaged twice with the same drift, once
// from its even frames and once from its odd ones. Where both halves are
// the same specimen the difference of the two averages is their noise, so
// z = (A_even - A_odd) / sqrt(sigma_even^2 + sigma_odd^2) has RMS 1 when the
// maps are right (target 0.9-1.1), over the pixels that at least 90% of each
// half's frames cover. Per case: mean, clipped, weighted (inverse-variance
// weights made unequal on purpose: x1, x2, x3 in turn) and median (not a
// target: the median of low counts moves in steps) for the rigid average;
// the scan-distortion average of a raster-scanned series (its model fitted
// from all frames, the halves averaged under it) and that series' rigid
// average. Also the time the map adds: the mean with and without the
// standard error's sums is not separable here, so the figure printed is the
// averaging's wall time against the registration's.
// Usage: bench_average_sigma [--frames N=40] [--size N=256] [--threads N=2]
//   The real-content case needs DRIFTSCAN_SAMPLE_DATA (stem_abf_series.tif).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "driftscan/averaging/averaging.hpp"
#include "driftscan/core/omp_threads.hpp"
#include "driftscan/formats/tiff/tiff_series.hpp"
#include "driftscan/registration/drift_uncertainty.hpp"
#include "driftscan/registration/registration_operator.hpp"
#include "driftscan/registration/sequential_scan.hpp"
#include "driftscan/scan_distortion/scan_distortion.hpp"
#include "driftscan/synthetic/synthetic_series.hpp"

using namespace driftscan;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// z over the pixels both halves cover with >= 90% of their frames; `shift`
// places the odd half's pixel (i, j) at the even half's (i + sx, j + sy).
struct Split {
  double z_rms = 0, sigma_median = 0;
  std::size_t pixels = 0;
};

Split compare_halves(const Frame& a0, const Frame& c0, const Frame& s0, double n0, const Frame& a1, const Frame& c1,
                     const Frame& s1, double n1, int sx = 0, int sy = 0) {
  Split out;
  double z2 = 0;
  std::vector<float> sig;
  for (int j = 0; j < a1.height; ++j)
    for (int i = 0; i < a1.width; ++i) {
      const int x = i + sx, y = j + sy;
      if (x < 0 || y < 0 || x >= a0.width || y >= a0.height) continue;
      if (c0.at(x, y) < 0.9 * n0 || c1.at(i, j) < 0.9 * n1) continue;
      const double v = double(s0.at(x, y)) * s0.at(x, y) + double(s1.at(i, j)) * s1.at(i, j);
      if (!(v > 0)) continue;
      const double z = (a0.at(x, y) - a1.at(i, j)) / std::sqrt(v);
      z2 += z * z;
      sig.push_back(s0.at(x, y));
      ++out.pixels;
    }
  if (out.pixels == 0) return out;
  out.z_rms = std::sqrt(z2 / static_cast<double>(out.pixels));
  std::nth_element(sig.begin(), sig.begin() + static_cast<long>(sig.size() / 2), sig.end());
  out.sigma_median = sig[sig.size() / 2];
  return out;
}

void print(const std::string& name, const char* method, const Split& s, double extra = -1) {
  std::printf("%-44s %-9s z-RMS %.3f  %s  over %7zu px, sigma median %.4g", name.c_str(), method, s.z_rms,
              s.z_rms >= 0.9 && s.z_rms <= 1.1 ? "in 0.9-1.1" : "MISSES 0.9-1.1", s.pixels, s.sigma_median);
  if (extra >= 0) std::printf(", average %.2f s", extra);
  std::printf("\n");
  std::fflush(stdout);
}

std::vector<std::size_t> frames_of_parity(std::size_t n, std::size_t parity) {
  std::vector<std::size_t> out;
  for (std::size_t k = parity; k < n; k += 2) out.push_back(k);
  return out;
}

// The registered drift of a series (the serial scan, as a one-rank register).
struct Registered {
  std::vector<Transform> transforms;
  std::vector<double> weights;
  double seconds = 0;
};

Registered register_frames(const FrameSource& frames, MotionModel model) {
  const auto t0 = Clock::now();
  RegistrationSettings settings;
  settings.model = model;
  RegistrationOperator op(frames, settings);
  std::vector<Registration> elements;
  for (std::size_t k = 0; k < frames.frame_count(); ++k) elements.push_back(op.element(k));
  auto regs =
      sequential_inclusive_scan(elements, [&](const Registration& a, const Registration& b) { return op(a, b); });
  Registered r;
  r.seconds = seconds_since(t0);
  const auto u = estimate_drift_uncertainty(op, regs, 0, regs.size(), 1, nullptr, nullptr);
  r.weights = uncertainty_weights(u);
  for (std::size_t k = 0; k < r.weights.size(); ++k) r.weights[k] *= 1.0 + static_cast<double>(k % 3);
  for (const Registration& g : regs) r.transforms.push_back(g.transform);
  return r;
}

void rigid_case(const std::string& name, const SynthOptions& o, MotionModel model) {
  SyntheticSeries s(o);
  std::vector<Frame> held;
  for (std::size_t k = 0; k < s.frame_count(); ++k) held.push_back(s.frame(k));
  const FrameVector frames(held);
  const Registered reg = register_frames(frames, model);
  const std::size_t n = frames.frame_count();
  const std::size_t evens = (n + 1) / 2, odds = n / 2;  // frames in each half
  const double n_even = static_cast<double>(evens), n_odd = static_cast<double>(odds);
  struct Method {
    const char* name;
    AverageMethod method;
    bool weighted;
  };
  for (const Method& m :
       {Method{"mean", AverageMethod::mean, false}, Method{"clipped", AverageMethod::clipped, false},
        Method{"weighted", AverageMethod::mean, true}, Method{"median", AverageMethod::median, false}}) {
    AveragingOptions opt;
    opt.method = m.method;
    if (m.weighted) opt.frame_weights = reg.weights;
    const auto t0 = Clock::now();
    opt.exclude_frames = frames_of_parity(n, 1);
    const AverageResult even = average_series(frames, reg.transforms, opt);
    const double avg_seconds = seconds_since(t0);
    opt.exclude_frames = frames_of_parity(n, 0);
    const AverageResult odd = average_series(frames, reg.transforms, opt);
    print(name, m.name,
          compare_halves(even.average, even.coverage, even.sigma, n_even, odd.average, odd.coverage, odd.sigma, n_odd),
          avg_seconds);
  }
  std::printf("%-44s registration %.2f s (one half's mean above: its share of a run)\n", name.c_str(), reg.seconds);
}

// The scan-distortion average and the rigid one of a raster-scanned series.
void scanned_case(const std::string& name, const SynthOptions& o) {
  SyntheticSeries s(o);
  std::vector<Frame> held;
  for (std::size_t k = 0; k < s.frame_count(); ++k) held.push_back(s.frame(k));
  const FrameVector frames(held);
  const Registered reg = register_frames(frames, MotionModel::translation);
  std::vector<Point> rigid;
  for (const Transform& t : reg.transforms) rigid.push_back({t.tx, t.ty});
  const ScanTiming& timing = s.scan_timing();
  const ScanDistortionResult est = estimate_scan_distortion(frames, timing, rigid);
  const std::size_t n = frames.frame_count();
  const std::size_t evens = (n + 1) / 2, odds = n / 2;  // frames in each half
  const double n_even = static_cast<double>(evens), n_odd = static_cast<double>(odds);
  SpecimenImage half[2];
  for (std::size_t parity = 0; parity < 2; ++parity) {
    std::vector<char> left_out(n, 0);
    for (std::size_t k : frames_of_parity(n, 1 - parity)) left_out[k] = 1;
    for (std::size_t k : est.left_out) left_out[k] = 1;
    half[parity] = average_in_specimen_coordinates(frames, timing, est.model, nullptr, nullptr, &left_out);
  }
  const int sx = static_cast<int>(std::lround(half[1].origin.x - half[0].origin.x));
  const int sy = static_cast<int>(std::lround(half[1].origin.y - half[0].origin.y));
  print(name + " scan-distortion", "mean",
        compare_halves(half[0].image, half[0].coverage, half[0].sigma, n_even, half[1].image, half[1].coverage,
                       half[1].sigma, n_odd, sx, sy));
  AveragingOptions opt;
  opt.exclude_frames = frames_of_parity(n, 1);
  const AverageResult even = average_series(frames, reg.transforms, opt);
  opt.exclude_frames = frames_of_parity(n, 0);
  const AverageResult odd = average_series(frames, reg.transforms, opt);
  print(name + " rigid", "mean",
        compare_halves(even.average, even.coverage, even.sigma, n_even, odd.average, odd.coverage, odd.sigma, n_odd));
}

std::shared_ptr<const Frame> real_content() {
  const char* data = std::getenv("DRIFTSCAN_SAMPLE_DATA");
  const fs::path p = fs::path(data && *data ? data : "../shared/data") / "stem_abf_series.tif";
  if (!fs::exists(p)) {
    std::printf("# real-content case left out: %s is absent (set DRIFTSCAN_SAMPLE_DATA)\n", p.c_str());
    return nullptr;
  }
  return std::make_shared<const Frame>(TiffSeries::open(p.string())->frame(0));
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t frames = 40;
  int size = 256, threads = 2;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--frames") && i + 1 < argc) frames = static_cast<std::size_t>(std::atol(argv[++i]));
    else if (!std::strcmp(argv[i], "--size") && i + 1 < argc) size = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: bench_average_sigma [--frames N] [--size N] [--threads N]\n");
      return 2;
    }
  }
  const OmpThreadCount guard(threads);
  std::printf("# %zu frames of %dx%d; z = (even - odd) / sqrt(sigma_even^2 + sigma_odd^2), target RMS 0.9-1.1\n",
              frames, size, size);
  SynthOptions base;
  base.frames = frames;
  base.width = base.height = size;
  base.drift_step = 0.3;
  for (double dose : {6.0, 2.0}) {
    SynthOptions o = base;
    o.dose = dose;
    rigid_case("lattice " + std::to_string(size) + " dose " + std::to_string(static_cast<int>(dose)), o,
               MotionModel::translation);
  }
  {
    SynthOptions o = base;
    o.dose = 8;
    o.rotation_step_deg = 0.05;
    rigid_case("rotating lattice dose 8, model rigid", o, MotionModel::rigid);
  }
  if (auto content = real_content()) {
    SynthOptions o = base;
    o.dose = 6;
    o.content = content;
    rigid_case("real content dose 6", o, MotionModel::translation);
  }
  {
    SynthOptions o = base;
    o.frames = std::max<std::size_t>(frames / 2, 8);
    o.dose = 8;
    o.scan_dwell = 2e-6;
    o.scan_line_flyback = 0.25;
    o.drift_linear_x = 3, o.drift_linear_y = 1.5;
    o.drift_wobble = 1.5;
    o.jitter = 0.5;
    o.seed = 5;
    scanned_case("scanned dose 8", o);
  }
  return 0;
}
