// The 3-D spectrum of an image stack on MPI ranks (each reading its slab of
// frames) against what it must be: a plane wave in (x, y, t) is two voxels at
// the right centred positions; random stacks match a serial FFTW 3-D r2c of
// the same tapered data on every voxel; registration moves a drifting
// lattice's energy to kt = 0; the spectrum command on a synthetic series
// writes the three TIFFs with the lattice peaks where the period puts them.
// 3 ranks do not divide the 7- or 9-frame stacks (uneven slabs).
// mpi-ranks: 1 2 3
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include <fftw3.h>

#include "driftscan/core/error.hpp"
#include "driftscan/core/frame_source.hpp"
#include "driftscan/core/progress.hpp"
#include "driftscan/formats/tiff/tiff_series.hpp"
#include "driftscan/job/job.hpp"
#include "driftscan/mpi/dft/stack_spectrum.hpp"
#include "driftscan/mpi/jobs/job_runner.hpp"
#include "hash_unit.hpp"
#include "mpi_world.hpp"

using namespace driftscan;
using namespace driftscan::mpi;
namespace fs = std::filesystem;

namespace {

constexpr double kPi = 3.14159265358979323846;

// A temporary folder shared by the ranks (rank 0 makes it, everyone learns its name).
struct SharedTempDir {
  std::string path;
  SharedTempDir() {
    char buf[256] = {0};
    if (world_rank() == 0) {
      std::string tmpl = (fs::temp_directory_path() / "stack_spectrum_XXXXXX").string();
      std::snprintf(buf, sizeof buf, "%s", tmpl.c_str());
      if (!mkdtemp(buf)) buf[0] = 0;
    }
    MPI_Bcast(buf, sizeof buf, MPI_CHAR, 0, MPI_COMM_WORLD);
    path = buf;
  }
  ~SharedTempDir() {
    MPI_Barrier(MPI_COMM_WORLD);
    if (world_rank() == 0 && !path.empty()) fs::remove_all(path);
  }
};

struct Harness {
  CancelToken cancel;
  std::unique_ptr<Progress> progress = make_silent_progress();
  RunContext ctx{MPI_COMM_WORLD, world_rank(), world_size(), *progress, cancel};
};

// The volume as written: planes (t) of n1 x n2.
std::vector<Frame> read_volume(const std::string& path) {
  auto s = TiffSeries::open(path);
  std::vector<Frame> v;
  for (std::size_t k = 0; k < s->frame_count(); ++k) v.push_back(s->frame(k));
  return v;
}

// Every rank computes; rank 0 reads the volume back (the only rank that may).
std::vector<Frame> spectrum_volume(const FrameSource& frames, StackSpectrumOptions o, const std::string& dir,
                                   StackSpectrumResult* result = nullptr) {
  Harness h;
  o.volume_path = dir + "/spectrum3d.tif";
  StackSpectrumResult r = compute_stack_spectrum(frames, o, h.ctx);
  if (result) *result = r;
  MPI_Barrier(MPI_COMM_WORLD);
  return world_rank() == 0 ? read_volume(o.volume_path) : std::vector<Frame>{};
}

std::int64_t wrap(std::int64_t i, std::int64_t n) { return ((i % n) + n) % n; }

TEST(StackSpectrum, PlaneWaveIsTwoVoxelsAtTheCentredFrequency) {
  SharedTempDir dir;
  const int n0 = 7, n1 = 10, n2 = 12, a = 2, b = -3, c = 4;
  FrameVector stack;
  for (int t = 0; t < n0; ++t) {
    Frame f(n2, n1);
    for (int y = 0; y < n1; ++y)
      for (int x = 0; x < n2; ++x)
        f.at(x, y) = float(std::cos(2 * kPi * (double(a) * t / n0 + double(b) * y / n1 + double(c) * x / n2)));
    stack.push_back(f);
  }
  StackSpectrumOptions o;
  o.taper = false;  // no windows: the wave's energy stays in exactly two voxels
  StackSpectrumResult r;
  std::vector<Frame> v = spectrum_volume(stack, o, dir.path, &r);
  EXPECT_EQ(r.size[0], std::size_t(n0));
  if (world_rank() != 0) return;
  ASSERT_EQ(v.size(), std::size_t(n0));
  ASSERT_EQ(v[0].width, n2);
  ASSERT_EQ(v[0].height, n1);
  // |F| = N/2 at +-(a,b,c); power |F|^2 / N.
  const double N = double(n0) * n1 * n2, peak = std::log1p(N / 4);
  int bright = 0;
  for (int t = 0; t < n0; ++t)
    for (int y = 0; y < n1; ++y)
      for (int x = 0; x < n2; ++x) {
        const bool at_plus = t == n0 / 2 + a && y == n1 / 2 + b && x == n2 / 2 + c;
        const bool at_minus = t == n0 / 2 - a && y == n1 / 2 - b && x == n2 / 2 - c;
        const double got = v[std::size_t(t)].at(x, y);
        if (at_plus || at_minus) {
          EXPECT_NEAR(got, peak, 1e-4 * peak) << "t " << t << " y " << y << " x " << x;
          ++bright;
        } else {
          EXPECT_LT(got, 1e-6) << "t " << t << " y " << y << " x " << x;
        }
      }
  EXPECT_EQ(bright, 2);
}

// Random stacks of odd and even sizes against a serial FFTW r2c of the same
// tapered, mean-removed data, completed and centred here independently.
TEST(StackSpectrum, MatchesSerialFftwOnEveryVoxel) {
  for (auto n : {std::array<int, 3>{9, 10, 14}, std::array<int, 3>{5, 7, 9}}) {
    SharedTempDir dir;
    const int n0 = n[0], n1 = n[1], n2 = n[2];
    FrameVector stack;
    for (int t = 0; t < n0; ++t) {
      Frame f(n2, n1);
      for (std::size_t i = 0; i < f.size(); ++i) f.pixels[i] = float(3.0 + hash_unit(std::uint64_t(t) * 1000 + i));
      stack.push_back(f);
    }
    StackSpectrumOptions o;
    o.threads = 2;
    std::vector<Frame> v = spectrum_volume(stack, o, dir.path);
    if (world_rank() != 0) continue;
    ASSERT_EQ(v.size(), std::size_t(n0));

    const StackTaper w = stack_taper(n0, n1, n2, true);
    std::vector<double> g(std::size_t(n0) * n1 * n2);
    double energy = 0;
    for (int t = 0; t < n0; ++t) {
      const Frame& f = stack.frames()[std::size_t(t)];
      double sw = 0, swf = 0;
      for (int y = 0; y < n1; ++y)
        for (int x = 0; x < n2; ++x) sw += w.y[y] * w.x[x], swf += w.y[y] * w.x[x] * f.at(x, y);
      for (int y = 0; y < n1; ++y)
        for (int x = 0; x < n2; ++x) {
          const double wt = w.t[t] * w.y[y] * w.x[x];
          g[(std::size_t(t) * n1 + y) * n2 + x] = wt * (f.at(x, y) - swf / sw);
          energy += wt * wt;
        }
    }
    const int n2h = n2 / 2 + 1;
    std::vector<std::complex<double>> F(std::size_t(n0) * n1 * n2h);
    fftw_plan p = fftw_plan_dft_r2c_3d(n0, n1, n2, g.data(), reinterpret_cast<fftw_complex*>(F.data()), FFTW_ESTIMATE);
    fftw_execute(p);
    fftw_destroy_plan(p);
    auto full = [&](std::int64_t k0, std::int64_t k1, std::int64_t k2) {
      if (k2 < 0) k0 = -k0, k1 = -k1, k2 = -k2;  // Hermitian: F(-k) = conj F(k)
      return F[std::size_t((wrap(k0, n0) * n1 + wrap(k1, n1)) * n2h + k2)];
    };
    double worst = 0;
    for (int t = 0; t < n0; ++t)
      for (int y = 0; y < n1; ++y)
        for (int x = 0; x < n2; ++x) {
          const double want = std::log1p(std::norm(full(t - n0 / 2, y - n1 / 2, x - n2 / 2)) / energy);
          const double got = v[std::size_t(t)].at(x, y);
          worst = std::max(worst, std::abs(got - want) / (std::abs(want) + 1e-3));
          ASSERT_NEAR(got, want, 1e-4 * std::abs(want) + 1e-6)
              << n0 << "x" << n1 << "x" << n2 << " at t " << t << " y " << y << " x " << x;
        }
    std::printf("[ info ] %dx%dx%d on %d ranks: worst relative difference %.2e\n", n0, n1, n2, world_size(), worst);
  }
}

// A lattice drifting 2 px per frame along x: in the raw stack its energy sits
// at kt = +-2 (the phase turns by 2 cycles over the series); registered with
// the drift, at kt = 0.
TEST(StackSpectrum, RegistrationMovesADriftingLatticeToZeroTemporalFrequency) {
  const int n0 = 8, n1 = 24, n2 = 32, c = 4, dx = 2;
  FrameVector stack;
  std::vector<Transform> to_frame0;
  for (int t = 0; t < n0; ++t) {
    Frame f(n2, n1);
    // frame t at x shows what frame 0 shows at x + dx * t
    for (int y = 0; y < n1; ++y)
      for (int x = 0; x < n2; ++x) f.at(x, y) = float(std::cos(2 * kPi * c * double(x + dx * t) / n2));
    stack.push_back(f);
    to_frame0.push_back(Transform::translation(dx * t, 0));
  }
  auto brightest_plane = [&](const std::vector<Frame>& v) {
    int best_t = -1;
    double best = -1;
    for (int t = 0; t < n0; ++t)
      for (int y = 0; y < n1; ++y)
        for (int x = 0; x < n2; ++x)
          if (v[std::size_t(t)].at(x, y) > best) best = v[std::size_t(t)].at(x, y), best_t = t;
    return best_t - n0 / 2;
  };
  StackSpectrumOptions o;
  {
    SharedTempDir dir;
    std::vector<Frame> raw = spectrum_volume(stack, o, dir.path);
    if (world_rank() == 0) {
      EXPECT_EQ(std::abs(brightest_plane(raw)), c * dx * n0 / n2);
    }
  }
  {
    SharedTempDir dir;
    o.to_frame0 = to_frame0;
    StackSpectrumResult r;
    std::vector<Frame> reg = spectrum_volume(stack, o, dir.path, &r);
    if (world_rank() == 0) {
      EXPECT_EQ(brightest_plane(reg), 0);
      // The average is frame 0 where every frame covers it: frame t shows
      // frame-0 pixel x at x - 2t, so x >= 2 * 7.
      for (int x = dx * (n0 - 1) + 1; x < n2 - 1; ++x)
        EXPECT_NEAR(r.average.at(x, n1 / 2), stack.frames()[0].at(x, n1 / 2), 1e-3) << "x " << x;
    }
  }
}

TEST(StackSpectrum, TimeAxisIsBinnedUnderMaxFrames) {
  EXPECT_EQ(time_binning(100, 0).planes, 100u);
  EXPECT_EQ(time_binning(100, 100).bin, 1u);
  TimeBinning b = time_binning(101, 50);
  EXPECT_EQ(b.bin, 3u);
  EXPECT_EQ(b.planes, 33u);
  SharedTempDir dir;
  FrameVector stack;
  for (int t = 0; t < 9; ++t) stack.push_back(Frame(8, 8, float(t % 3)));
  StackSpectrumOptions o;
  o.max_frames = 4;  // 9 frames -> bins of 3 -> 3 planes
  StackSpectrumResult r;
  std::vector<Frame> v = spectrum_volume(stack, o, dir.path, &r);
  EXPECT_EQ(r.bin, 3u);
  EXPECT_EQ(r.size[0], 3u);
  if (world_rank() == 0) {
    EXPECT_EQ(v.size(), 3u);
    EXPECT_NEAR(r.average.at(3, 3), 1.0, 1e-6);  // mean of 0,1,2,0,1,2,...
  }
}

// A source that records which frames this rank asked for.
class RecordingSource : public FrameSource {
 public:
  explicit RecordingSource(const FrameVector& frames) : frames_(frames) {}
  std::size_t frame_count() const override { return frames_.frame_count(); }
  int width() const override { return frames_.width(); }
  int height() const override { return frames_.height(); }
  Frame frame(std::size_t k) const override {
    std::lock_guard<std::mutex> lock(mutex_);
    read_.push_back(k);
    return frames_.frame(k);
  }
  std::vector<std::size_t> read() const {
    std::vector<std::size_t> r = read_;
    std::sort(r.begin(), r.end());
    return r;
  }

 private:
  const FrameVector& frames_;
  mutable std::mutex mutex_;
  mutable std::vector<std::size_t> read_;
};

// Every rank reads one contiguous run of frames (whole bins), each frame is
// read once over all ranks, and with more than one rank no rank reads them all.
TEST(StackSpectrum, EachRankReadsOnlyTheFramesOfItsSlab) {
  for (std::size_t max_frames : {std::size_t(0), std::size_t(4)}) {
    SharedTempDir dir;
    FrameVector stack;
    for (int t = 0; t < 13; ++t) stack.push_back(Frame(16, 12, float(t)));
    RecordingSource source(stack);
    StackSpectrumOptions o;
    o.max_frames = max_frames;  // 4: bins of 4 frames, 3 planes, frame 12 left out
    o.threads = 2;
    spectrum_volume(source, o, dir.path);
    const std::vector<std::size_t> mine = source.read();
    for (std::size_t i = 1; i < mine.size(); ++i) EXPECT_EQ(mine[i], mine[i - 1] + 1) << "not one run of frames";
    long run[2] = {mine.empty() ? 0 : long(mine.front()), mine.empty() ? 0 : long(mine.back()) + 1};
    std::vector<long> all(2 * std::size_t(world_size()));
    MPI_Allgather(run, 2, MPI_LONG, all.data(), 2, MPI_LONG, MPI_COMM_WORLD);
    long next = 0;
    for (std::size_t r = 0; r < std::size_t(world_size()); ++r) {
      if (all[2 * r] == all[2 * r + 1]) continue;  // a rank without planes
      EXPECT_EQ(all[2 * r], next) << "rank " << r << " max_frames " << max_frames;
      next = all[2 * r + 1];
    }
    EXPECT_EQ(next, max_frames ? 12 : 13);
    if (world_size() > 1) {
      EXPECT_LT(mine.size(), 12u);
    }
  }
}

TEST(StackSpectrum, TransformsThatDoNotMatchTheFramesAreBadInputOnEveryRank) {
  SharedTempDir dir;
  FrameVector stack;
  for (int t = 0; t < 5; ++t) stack.push_back(Frame(8, 8, 1.0f));
  StackSpectrumOptions o;
  o.to_frame0.assign(4, Transform::identity());
  try {
    spectrum_volume(stack, o, dir.path);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::bad_input);
    EXPECT_NE(std::string(e.what()).find("4 transforms given for 5 frames"), std::string::npos) << e.what();
  }
}

// The spectrum command end to end (in process, on these ranks): a square
// lattice of period 8 on 64x64 frames has peaks at (ky, kx) = (0, +-8) and
// (+-8, 0) in the kt = 0 plane of the registered stack's spectrum.
TEST(SpectrumCommand, WritesTheThreeSpectraWithTheLatticePeaks) {
  SharedTempDir dir;
  Harness h;
  Job synth;
  synth.command = "synth";
  synth.output = dir.path + "/s.tif";
  synth.synth.frames = 11;
  synth.synth.width = synth.synth.height = 64;
  synth.synth.period = 8;
  synth.synth.lattice = Lattice::square;
  synth.synth.grain_boundary = false;
  synth.synth.drift_step = 0.2;
  synth.synth.dose = 20;
  run_job(synth, h.ctx);

  Job job;
  job.command = "spectrum";
  job.input = synth.output;
  job.output = dir.path + "/out";
  job.averaging.drift = dir.path + "/s_truth.csv";
  job.spectrum.frame = 3;
  job.execution.threads = 1;
  run_job(job, h.ctx);
  if (world_rank() != 0) return;
  for (const char* name : {"spectrum.tif", "spectrum_average.tif", "spectrum3d.tif"})
    EXPECT_TRUE(fs::exists(job.output + "/" + name)) << name;
  for (const auto& e : fs::directory_iterator(job.output))
    EXPECT_EQ(e.path().filename().string().find("tmp"), std::string::npos) << "temporary file left: " << e.path();
  std::vector<Frame> v = read_volume(job.output + "/spectrum3d.tif");
  ASSERT_EQ(v.size(), 11u);
  ASSERT_EQ(v[0].width, 64);
  ASSERT_EQ(v[0].height, 64);
  const Frame& k0 = v[11 / 2];
  // The four brightest voxels of the kt = 0 plane away from the centre are the lattice peaks.
  auto value = [&](int ky, int kx) { return k0.at(32 + kx, 32 + ky); };
  double weakest_peak = std::min({value(0, 8), value(0, -8), value(8, 0), value(-8, 0)});
  double strongest_other = 0;
  for (int y = 0; y < 64; ++y)
    for (int x = 0; x < 64; ++x) {
      const int ky = y - 32, kx = x - 32;
      if (std::abs(ky) + std::abs(kx) <= 2) continue;  // the centre's leakage
      // within a bin (the Hann's main lobe) of any lattice vector: the peaks, their sums and harmonics
      auto near_multiple = [](int k) { return std::abs(k - 8 * int(std::lround(k / 8.0))) <= 1; };
      const bool harmonic = near_multiple(ky) && near_multiple(kx);
      if (!harmonic) strongest_other = std::max(strongest_other, double(k0.at(x, y)));
    }
  std::printf("[ info ] kt = 0 plane: weakest lattice peak %.2f, strongest other voxel %.2f\n", weakest_peak,
              strongest_other);
  EXPECT_GT(weakest_peak, strongest_other + 2.0) << "peaks " << weakest_peak << ", others " << strongest_other;
  auto avg = TiffSeries::open(job.output + "/spectrum_average.tif");
  EXPECT_EQ(avg->frame_count(), 1u);
  EXPECT_EQ(avg->width(), 64);
}

}  // namespace
