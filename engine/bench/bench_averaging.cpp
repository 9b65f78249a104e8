// Synthesis and averaging throughput, and what averaging buys: prints, for a
// synthetic series averaged with its true transforms, the wall time of each
// method and interpolation, the RMS error against the clean frame 0 where
// every frame contributes, and the lattice sharpness (power-spectrum peak
// over background) of the average against a single frame.
// Usage: bench_averaging [frames=200] [size=256]
#include <omp.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "driftscan/averaging.hpp"
#include "driftscan/power_spectrum.hpp"
#include "driftscan/synthetic_series.hpp"

using namespace driftscan;

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

int main(int argc, char** argv) {
  std::size_t frames = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 200;
  int size = argc > 2 ? std::atoi(argv[2]) : 256;
  SynthOptions o;
  o.frames = frames;
  o.width = o.height = size;
  o.period = 9;
  o.dose = 6;
  o.drift_step = 0.15;
  o.drift_linear_x = 40.0 / double(frames);
  o.drift_linear_y = 28.0 / double(frames);
  SyntheticSeries series(o);
  std::printf("threads %d; series: %s\n", omp_get_max_threads(), series.describe().c_str());

  auto t0 = std::chrono::steady_clock::now();
  FrameVector held;
  for (std::size_t k = 0; k < frames; ++k) held.push_back(series.frame(k));
  double synth_s = seconds_since(t0);
  std::printf("synthesize %zu frames of %dx%d: %.3f s (%.2f ms/frame)\n", frames, size, size, synth_s,
              1e3 * synth_s / double(frames));

  std::vector<Transform> truth;
  for (std::size_t k = 0; k < frames; ++k) truth.push_back(series.truth(k));
  Frame clean = series.ideal_frame(0);
  double single = lattice_sharpness(held.frames()[0]);
  std::printf("lattice sharpness of frame 0: %.1f\n", single);

  struct Case {
    const char* name;
    AverageMethod method;
    Interpolation interpolation;
  } cases[] = {{"mean/cubic", AverageMethod::mean, Interpolation::cubic},
               {"mean/fourier", AverageMethod::mean, Interpolation::fourier},
               {"median/cubic", AverageMethod::median, Interpolation::cubic},
               {"clipped/cubic", AverageMethod::clipped, Interpolation::cubic}};
  std::vector<char> full;  // pixels every frame covers (from the first case)
  for (const Case& c : cases) {
    AveragingOptions opt;
    opt.method = c.method;
    opt.interpolation = c.interpolation;
    t0 = std::chrono::steady_clock::now();
    AverageResult r = average_series(held, truth, opt);
    double s = seconds_since(t0);
    double ss = 0;
    long n = 0;
    if (full.empty())
      for (float v : r.coverage.pixels) full.push_back(v >= float(frames));
    for (std::size_t i = 0; i < clean.size(); ++i)
      if (full[i]) {
        double d = r.average.pixels[i] - clean.pixels[i];
        ss += d * d, ++n;
      }
    std::printf("%-14s %.3f s (%.2f ms/frame)  RMS vs clean %.4f counts over %ld full-coverage px  sharpness %.1f\n",
                c.name, s, 1e3 * s / double(frames), n ? std::sqrt(ss / double(n)) : NAN, n,
                lattice_sharpness(r.average));
  }
  return 0;
}
