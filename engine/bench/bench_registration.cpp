// Registration accuracy and speed against the synthetic generator's truth.
// For each case a series is written to a temporary TIFF (not timed), then:
//   scan    — DriftScan's whole register run (read TIFF, pairs, scan with
//             refinement, average, write outputs) through register_series;
//   chain   — the sum of consecutive pair shifts (the pairs phase alone);
//   direct  — every frame registered against frame 0 by the same Fourier
//             pair registration (searching the whole frame, no lattice bound).
// Printed per method: RMS and max error of (dx, dy) at the frame centre,
// period jumps (frames off by more than half a lattice period), wall time.
//
//   bench_registration [--threads N] [--cases 1,2,3] [--keep DIR]
#include <omp.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

#include "driftscan/formats/tiff/tiff_series.hpp"
#include "driftscan/pipeline/register_pipeline.hpp"
#include "driftscan/pipeline/serial_register.hpp"
#include "driftscan/registration/pair_registration.hpp"
#include "driftscan/synthetic/synthetic_series.hpp"

using namespace driftscan;
using Clock = std::chrono::steady_clock;

namespace {

struct Case {
  std::string name;
  SynthOptions synth;
  MotionModel model;
};

struct Score {
  double rms = 0, max = 0, angle_rms = NAN;
  int jumps = 0;
};

Score score(const SyntheticSeries& s, const std::vector<Transform>& est) {
  Score sc;
  double se = 0, sa = 0;
  const Point c = s.centre();
  for (std::size_t k = 0; k < est.size(); ++k) {
    Point got = est[k].displacement(c), truth = s.drift(k);
    double e = std::hypot(got.x - truth.x, got.y - truth.y);
    se += e * e;
    sc.max = std::max(sc.max, e);
    if (e > s.options().period / 2) ++sc.jumps;
    double da = est[k].angle() * 180.0 / M_PI - s.angle_deg(k);
    sa += da * da;
  }
  sc.rms = std::sqrt(se / est.size());
  if (s.options().rotation_step_deg != 0) sc.angle_rms = std::sqrt(sa / est.size());
  return sc;
}

double seconds(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

void print(const std::string& cs, const char* method, const Score& sc, double wall, double cpu) {
  std::printf("%-34s %-7s rms %.4f px  max %.4f px  jumps %4d  wall %7.3f s  cpu %7.3f s", cs.c_str(), method, sc.rms,
              sc.max, sc.jumps, wall, cpu);
  if (!std::isnan(sc.angle_rms)) std::printf("  angle rms %.4f deg", sc.angle_rms);
  std::printf("\n");
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2;
  std::string cases_arg = "1,2,3", keep;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--cases")) cases_arg = argv[i + 1];
    else if (!std::strcmp(argv[i], "--keep")) keep = argv[i + 1];
  }

  std::vector<Case> cases;
  {
    SynthOptions o;  // hex, period 9, dose 6; drift 0.3 px random walk + (0.2, 0.1) px/frame: ~48 px in 200 frames
    o.frames = 200;
    o.width = o.height = 256;
    cases.push_back({"hex 200x256^2 p9 dose6", o, MotionModel::translation});
    SynthOptions l = o;  // 1,000 frames, drift scaled so the total stays ~50 px (frame 0 must overlap them all)
    l.frames = 1000;
    l.drift_linear_x = 0.04;
    l.drift_linear_y = 0.02;
    l.drift_step = 0.15;
    cases.push_back({"hex 1000x256^2 p9 dose6", l, MotionModel::translation});
    SynthOptions r = o;  // square lattice turning 0.2 deg per frame, rigid model
    r.lattice = Lattice::square;
    r.rotation_step_deg = 0.2;
    cases.push_back({"square 200x256^2 rot0.2deg rigid", r, MotionModel::rigid});
  }

  const std::string root =
      keep.empty()
          ? (std::filesystem::temp_directory_path() / ("bench_registration_" + std::to_string(::getpid()))).string()
          : keep;
  std::filesystem::create_directories(root);
  std::printf("bench_registration: %d threads, machine has %d cores; wall = elapsed, cpu = process CPU time\n", threads,
              omp_get_num_procs());

  for (std::size_t ci = 0; ci < cases.size(); ++ci) {
    if (cases_arg.find(std::to_string(ci + 1)) == std::string::npos) continue;
    const Case& cs = cases[ci];
    const std::string series_path = root + "/case" + std::to_string(ci + 1) + ".tif";
    write_synthetic_series(cs.synth, series_path);
    SyntheticSeries truth(cs.synth);
    Point last = truth.drift(cs.synth.frames - 1);
    std::printf("%-34s total drift %.1f px (%.1f, %.1f)%s\n", cs.name.c_str(), std::hypot(last.x, last.y), last.x,
                last.y,
                cs.synth.rotation_step_deg != 0
                    ? (", rotation " + std::to_string(truth.angle_deg(cs.synth.frames - 1)) + " deg").c_str()
                    : "");

    // DriftScan: the whole register run from the TIFF.
    RegistrationSettings rs;
    rs.model = cs.model;
    auto progress = make_silent_progress();
    CancelToken cancel;
    RegisterResult res;
    {
      auto t0 = Clock::now();
      std::clock_t c0 = std::clock();
      auto series = TiffSeries::open(series_path);
      res = register_series(*series, rs, AveragingOptions{}, root + "/out" + std::to_string(ci + 1), *progress, cancel,
                            threads);
      double wall = seconds(t0), cpu = double(std::clock() - c0) / CLOCKS_PER_SEC;
      std::vector<Transform> est;
      long its = 0;
      for (auto& r : res.registrations) est.push_back(r.transform), its += r.iterations;
      print(cs.name, "scan", score(truth, est), wall, cpu);
      std::printf(
          "%-34s         phases wall/cpu s: pairs %.3f/%.3f, scan %.3f/%.3f, average %.3f/%.3f, "
          "write %.3f/%.3f; iterations per operator %.2f; warnings %zu\n",
          "", res.seconds.pairs, res.cpu.pairs, res.seconds.scan, res.cpu.scan, res.seconds.average, res.cpu.average,
          res.seconds.write, res.cpu.write, double(its) / (res.registrations.size() - 1), res.warnings.size());
    }

    // Baseline 1: chain of consecutive pair shifts (the pairs phase on its own).
    {
      auto series = TiffSeries::open(series_path);
      RegistrationOperator op(*series, rs);
      auto t0 = Clock::now();
      std::clock_t c0 = std::clock();
      auto elements = compute_pair_elements(op, 0, series->frame_count(), threads, nullptr, nullptr);
      double wall = seconds(t0), cpu = double(std::clock() - c0) / CLOCKS_PER_SEC;
      std::vector<Transform> est;
      est.reserve(elements.size());
      Transform acc;
      for (auto& e : elements) est.push_back(acc = compose(acc, e.transform));
      print(cs.name, "chain", score(truth, est), wall, cpu);
    }

    // Baseline 2: every frame against frame 0 directly.
    {
      auto series = TiffSeries::open(series_path);
      // The same Fourier registration, smoothing included, but searching the
      // whole frame (no lattice bound): what registering against frame 0 needs.
      PairRegistrationOptions po;
      po.max_shift = series->width() / 2.0 - 2;
      po.lattice_bound = false;
      po.smooth_sigma = choose_smoothing_sigma(series->frame(0));
      PairRegistrationPlan plan(series->width(), series->height(), po);
      auto t0 = Clock::now();
      std::clock_t c0 = std::clock();
      Frame f0 = series->frame(0);
      std::vector<Transform> est(series->frame_count());
      const long n = static_cast<long>(series->frame_count());
#pragma omp parallel for schedule(dynamic, 4) num_threads(threads)
      for (long k = 0; k < n; ++k) est[static_cast<std::size_t>(k)] = plan.execute(f0, series->frame(k)).transform();
      double wall = seconds(t0), cpu = double(std::clock() - c0) / CLOCKS_PER_SEC;
      print(cs.name, "direct", score(truth, est), wall, cpu);
    }
  }
  if (keep.empty()) std::filesystem::remove_all(root);
  return 0;
}
