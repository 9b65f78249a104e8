// Registration that knows when it has failed (registration_failure.hpp): a
// pure-noise series and a series of unrelated images end with
// Error(registration_failed), drift.csv and report.json saying which frames
// failed and no average; blank and noise frames inside a real series are
// flagged and excluded while the others register as before; low-dose and
// real series raise no flag at all.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "csv_test_file.hpp"
#include "driftscan/core/error.hpp"
#include "driftscan/formats/tiff/tiff_series.hpp"
#include "driftscan/pipeline/register_pipeline.hpp"
#include "driftscan/pipeline/serial_register.hpp"
#include "driftscan/registration/pair_registration.hpp"
#include "driftscan/registration/refinement.hpp"
#include "driftscan/registration/registration_failure.hpp"
#include "driftscan/synthetic/synthetic_series.hpp"
#include "sample_data.hpp"
#include "scratch_folder.hpp"

using namespace driftscan;
namespace fs = std::filesystem;

namespace {

using driftscan::test::read_csv;

struct TempDir : driftscan::test::TestScratchFolder {
  TempDir() : TestScratchFolder("driftscan_failure_") {}
};

// The synth's low-dose default: hex lattice, 1 count at a column, 128^2.
SynthOptions low_dose(std::size_t frames, std::uint32_t seed = 3) {
  SynthOptions o;
  o.frames = frames;
  o.width = 128;
  o.height = 128;
  o.dose = 1;
  o.seed = seed;
  return o;
}

FrameVector materialise(const FrameSource& s) {
  FrameVector v;
  for (std::size_t k = 0; k < s.frame_count(); ++k) v.push_back(s.frame(k));
  return v;
}

Frame poisson_noise(int w, int h, double mean, std::mt19937& rng) {
  Frame f(w, h);
  std::poisson_distribution<int> p(mean);
  for (float& v : f.pixels) v = static_cast<float>(p(rng));
  return f;
}

struct RunOutcome {
  RegisterResult result;
  std::string error;
  ErrorKind kind = ErrorKind::failure;
  bool threw = false;
};

RunOutcome register_into(const FrameSource& frames, const fs::path& out) {
  RunOutcome run;
  auto progress = make_silent_progress();
  CancelToken cancel;
  try {
    run.result =
        register_series(frames, RegistrationSettings{}, AveragingOptions{}, out.string(), *progress, cancel, 2);
  } catch (const Error& e) {
    run.threw = true;
    run.kind = e.kind();
    run.error = e.what();
  }
  return run;
}

// drift.csv's column `name` for every frame ("" where the cell is empty).
std::vector<std::string> column(const fs::path& drift, const std::string& name) {
  const auto rows = read_csv(drift.string());
  std::size_t c = 0;
  while (c < rows.at(0).size() && rows[0][c] != name) ++c;
  EXPECT_LT(c, rows[0].size()) << name;
  std::vector<std::string> out;
  for (std::size_t r = 1; r < rows.size(); ++r) out.push_back(c < rows[r].size() ? rows[r][c] : "");
  return out;
}

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

// A series that fails as a whole: exit code 5's error naming the input and
// the counts, drift.csv flagging every frame, report.json with the status,
// no average left (not even an earlier run's).
void expect_failed_series(const FrameSource& frames, const fs::path& out) {
  fs::create_directories(out);
  std::ofstream(out / "average.tif") << "an earlier run's";
  const RunOutcome run = register_into(frames, out);
  ASSERT_TRUE(run.threw);
  EXPECT_EQ(run.kind, ErrorKind::registration_failed);
  EXPECT_EQ(Error(run.kind, "").exit_code(), 5);
  EXPECT_NE(run.error.find("registration failed"), std::string::npos) << run.error;
  EXPECT_EQ(run.error.find('\n'), std::string::npos);
  EXPECT_FALSE(fs::exists(out / "average.tif"));
  EXPECT_FALSE(fs::exists(out / "coverage.tif"));
  ASSERT_TRUE(fs::exists(out / "drift.csv"));
  const auto used = column(out / "drift.csv", "used");
  const auto flags = column(out / "drift.csv", "flags");
  ASSERT_EQ(used.size(), frames.frame_count());
  std::size_t failed = 0;
  for (std::size_t k = 1; k < used.size(); ++k) {
    const bool flagged =
        flags[k].find("no_peak") != std::string::npos || flags[k].find("no_match") != std::string::npos;
    failed += flagged;
    if (flagged) {
      EXPECT_EQ(used[k], "0") << k;
    }
  }
  EXPECT_GT(2 * failed, frames.frame_count() - 1);
  const nlohmann::json report = read_json(out / "report.json");
  EXPECT_EQ(report.at("status"), "registration_failed");
  EXPECT_TRUE(report.at("registration").at("most_frames_failed").get<bool>());
  EXPECT_EQ(report.at("registration").at("frames_failed").get<std::size_t>(), failed);
  EXPECT_FALSE(report.at("files").contains("average"));
}

}  // namespace

TEST(RegistrationFailure, CompactFrameList) {
  EXPECT_EQ(compact_frame_list({}), "");
  EXPECT_EQ(compact_frame_list({3}), "3");
  EXPECT_EQ(compact_frame_list({3, 4}), "3, 4");
  EXPECT_EQ(compact_frame_list({1, 2, 3, 7, 9, 10, 11, 12}), "1-3, 7, 9-12");
  std::vector<std::size_t> many;
  for (std::size_t k = 0; k < 100; ++k) many.push_back(2 * k);
  const std::string s = compact_frame_list(many, 5);
  EXPECT_EQ(s, "0, 2, 4, 6, 8, ... (100 in all)");
}

TEST(RegistrationFailure, MostFailedIsMoreThanHalfOfTheRegisteredFrames) {
  std::vector<Registration> r(5);
  for (std::size_t k = 0; k < r.size(); ++k) r[k].to = k;
  r[1].flags = kNoPeak;
  r[2].flags = kNoMatch | kNoPeak;
  EXPECT_FALSE(classify_failures(r).most_failed());  // 2 of 4
  r[3].flags = kBadFrame;
  const RegistrationFailures f = classify_failures(r);
  EXPECT_TRUE(f.most_failed());  // 3 of 4
  EXPECT_EQ(f.failed(), (std::vector<std::size_t>{1, 2, 3}));
  EXPECT_EQ(f.no_peak, (std::vector<std::size_t>{1, 2}));  // each frame under its first reason
  EXPECT_EQ(f.unusable, (std::vector<std::size_t>{3}));
  r[4].flags = kNotConverged;  // a warning, not a failure
  EXPECT_EQ(classify_failures(r).failed().size(), 3u);
  // Frames that drifted out of frame 0's field are excluded, but they do not
  // make a series "noise": 1 of the 2 frames that still overlap failed.
  r[1].flags = kRefineFailed;
  r[2].flags = kRefineFailed;
  r[3].flags = kNoMatch;
  EXPECT_EQ(classify_failures(r).failed().size(), 3u);
  EXPECT_FALSE(classify_failures(r).most_failed());
  r[4].flags = kNoPeak;
  EXPECT_TRUE(classify_failures(r).most_failed());
}

// Noise pairs of several sizes: the peak is never significant (the threshold
// sits ~9 / sqrt(2 ln M) above the expected maximum), while a low-dose
// lattice pair is far above it.
TEST(RegistrationFailure, NoisePairsHaveNoSignificantPeak) {
  std::mt19937 rng(11);
  PairRegistrationOptions options;
  options.smooth_sigma = 1.0;  // what the operator chooses for frames without a lattice
  for (int size : {64, 128}) {
    PairRegistrationPlan plan(size, size, options);
    double worst = 0;
    for (int i = 0; i < 30; ++i) {
      const PairShift s = plan.execute(poisson_noise(size, size, 3.0, rng), poisson_noise(size, size, 3.0, rng));
      EXPECT_FALSE(s.significant) << size << " pair " << i << ": significance " << s.significance;
      worst = std::max(worst, s.significance);
    }
    std::printf("%dx%d noise pairs: highest significance %.2f\n", size, size, worst);
  }
  SyntheticSeries lattice(low_dose(2));
  const RegistrationOperator op(lattice, RegistrationSettings{});
  const PairShift s = op.pair_plan().execute(lattice.frame(0), lattice.frame(1));
  EXPECT_TRUE(s.significant);
  EXPECT_GT(s.significance, 10.0);
}

// Few independent samples (a small window of coarse structure, as the
// square every frame of a 0/30 degree series covers at 128^2): a clear
// match must still count, and unrelated frames of the same texture must
// not. The significance is Fisher's z of the NCC: ncc sqrt(n) stays below
// the threshold at any ncc when n ~ 30.
TEST(RegistrationFailure, FewSamplesStillDecide) {
  std::mt19937 rng(17);
  std::normal_distribution<float> g(0.0f, 1.0f);
  auto texture = [&] {  // coarse: sigma 5 px
    Frame f(96, 96);
    for (float& v : f.pixels) v = g(rng);
    return gaussian_smooth(f, 5.0);
  };
  auto crop = [](const Frame& f, int x0, int y0, double noise, std::mt19937& r) {
    std::normal_distribution<float> n(0.0f, static_cast<float>(noise));
    Frame out(80, 80);
    for (int y = 0; y < 80; ++y)
      for (int x = 0; x < 80; ++x) out.at(x, y) = f.at(x0 + x, y0 + y) + n(r);
    return out;
  };
  PairRegistrationOptions options;
  options.smooth_sigma = 0.0;
  options.lattice_bound = false;
  const PairRegistrationPlan plan(80, 80, options);
  double worst = 0;
  for (int i = 0; i < 30; ++i) {
    const Frame a = texture(), b = texture();
    const PairShift s = plan.execute(crop(a, 8, 8, 0.01, rng), crop(b, 8, 8, 0.01, rng));
    EXPECT_FALSE(s.significant) << "unrelated pair " << i << ": ncc " << s.ncc << " significance " << s.significance;
    worst = std::max(worst, s.significance);
  }
  const Frame a = texture();
  const PairShift same = plan.execute(crop(a, 8, 8, 0.01, rng), crop(a, 10, 9, 0.01, rng));
  std::printf(
      "80x80 coarse texture: unrelated pairs' highest significance %.2f; the shifted pair ncc %.3f "
      "significance %.2f over %.0f px^2 a sample\n",
      worst, same.ncc, same.significance, same.lobe_area);
  const double n = std::pow(same.significance / std::atanh(same.ncc), 2) + 3.0;
  std::printf("ncc sqrt(n) would be %.2f over n %.1f samples\n", same.ncc * std::sqrt(n), n);
  EXPECT_TRUE(same.significant) << "ncc " << same.ncc << " significance " << same.significance;
  EXPECT_NEAR(same.dx, 2.0, 0.3);  // the pair search is the refinement's start
  EXPECT_NEAR(same.dy, 1.0, 0.3);
  EXPECT_GT(same.ncc, 0.9);
}

TEST(RegistrationFailure, PureNoiseSeriesFails) {
  TempDir dir;
  std::mt19937 rng(5);
  FrameVector noise;
  for (int k = 0; k < 10; ++k) noise.push_back(poisson_noise(128, 128, 3.0, rng));
  expect_failed_series(noise, dir.path);
  const auto dx = column(dir.path / "drift.csv", "dx");
  // No confident drift out of noise: the chained guesses stay where frame 0 is.
  for (const auto& v : dx) EXPECT_LT(std::abs(std::stod(v)), 3.0);
}

// Unrelated images: each frame a different crystal (period, lattice, seed).
TEST(RegistrationFailure, UnrelatedImagesFail) {
  TempDir dir;
  FrameVector frames;
  for (int k = 0; k < 10; ++k) {
    SynthOptions o = low_dose(1, 20 + k);
    o.dose = 6;
    o.period = 7.0 + 0.6 * k;
    o.lattice = k % 2 ? Lattice::square : Lattice::hex;
    frames.push_back(SyntheticSeries(o).frame(0));
  }
  expect_failed_series(frames, dir.path);
}

// A real low-dose series: no frame flagged, every frame used.
TEST(RegistrationFailure, LowDoseSeriesHasNoFalseFlags) {
  TempDir dir;
  SyntheticSeries series(low_dose(24));
  const RunOutcome run = register_into(series, dir.path);
  ASSERT_FALSE(run.threw) << run.error;
  for (std::size_t k = 0; k < run.result.registrations.size(); ++k)
    EXPECT_EQ(run.result.registrations[k].flags & kFrameFailed, 0u) << k;
  for (const auto& u : column(dir.path / "drift.csv", "used")) EXPECT_EQ(u, "1");
  const nlohmann::json report = read_json(dir.path / "report.json");
  EXPECT_EQ(report.at("status"), "done");
  EXPECT_EQ(report.at("registration").at("frames_failed"), 0);
}

// The real ABF series (the optional sample data): no flag either.
TEST(RegistrationFailure, RealSeriesHasNoFalseFlags) {
  const fs::path data = test::sample_file("stem_abf_series.tif");
  if (data.empty()) GTEST_SKIP() << test::sample_absent("stem_abf_series.tif");
  TempDir dir;
  auto series = TiffSeries::open(data.string());
  const RunOutcome run = register_into(*series, dir.path);
  ASSERT_FALSE(run.threw) << run.error;
  for (std::size_t k = 0; k < run.result.registrations.size(); ++k)
    EXPECT_EQ(run.result.registrations[k].flags & kFrameFailed, 0u) << k;
}

// Blank frames inside a series: flagged bad_frame and left out, named in one
// warning line; the other frames' drift is what the series without them gives.
TEST(RegistrationFailure, BlankFramesInsideAreExcludedAndTheRestUnchanged) {
  TempDir dir;
  SyntheticSeries series(low_dose(16));
  FrameVector clean = materialise(series);
  FrameVector blanked;
  const std::vector<std::size_t> blank{5, 6, 11};
  for (std::size_t k = 0; k < clean.frame_count(); ++k) {
    Frame f = clean.frame(k);
    if (std::find(blank.begin(), blank.end(), k) != blank.end()) std::fill(f.pixels.begin(), f.pixels.end(), 0.0f);
    blanked.push_back(std::move(f));
  }
  const RunOutcome a = register_into(clean, dir.path / "clean");
  const RunOutcome b = register_into(blanked, dir.path / "blanked");
  ASSERT_FALSE(a.threw) << a.error;
  ASSERT_FALSE(b.threw) << b.error;
  const Point c = series.centre();
  for (std::size_t k = 0; k < clean.frame_count(); ++k) {
    const bool is_blank = std::find(blank.begin(), blank.end(), k) != blank.end();
    const std::uint32_t flags = b.result.registrations[k].flags;
    EXPECT_EQ(static_cast<bool>(flags & kBadFrame), is_blank) << k;
    EXPECT_EQ(static_cast<bool>(b.result.average.used[k]), !is_blank) << k;
    if (is_blank) continue;
    EXPECT_EQ(flags & kFrameFailed, 0u) << k;
    const Point da = a.result.registrations[k].transform.displacement(c);
    const Point db = b.result.registrations[k].transform.displacement(c);
    EXPECT_LT(std::hypot(da.x - db.x, da.y - db.y), 0.05) << "frame " << k;
  }
  std::size_t naming = 0;
  for (const std::string& w : b.result.warnings)
    if (w.find("unusable") != std::string::npos) {
      ++naming;
      EXPECT_NE(w.find("(frames 5, 6, 11)"), std::string::npos) << w;
    }
  EXPECT_EQ(naming, 1u);
  const auto used = column(dir.path / "blanked" / "drift.csv", "used");
  for (std::size_t k : blank) EXPECT_EQ(used[k], "0");
}

// Noise frames inside a real series (the beam blanked, the detector still
// counting): flagged and excluded; the chain re-links past them, so frames
// further on register against frame 0 as before.
TEST(RegistrationFailure, NoiseFramesInsideAreExcluded) {
  TempDir dir;
  SyntheticSeries series(low_dose(16));
  std::mt19937 rng(9);
  FrameVector frames = materialise(series);
  FrameVector noisy;
  for (std::size_t k = 0; k < frames.frame_count(); ++k)
    noisy.push_back(k == 6 ? poisson_noise(128, 128, 0.15, rng) : frames.frame(k));
  const RunOutcome run = register_into(noisy, dir.path);
  ASSERT_FALSE(run.threw) << run.error;
  const Point c = series.centre();
  EXPECT_NE(run.result.registrations[6].flags & kFrameFailed, 0u);
  EXPECT_FALSE(run.result.average.used[6]);
  // Frame 7's pair is against the noise frame: no peak, so it goes too.
  EXPECT_NE(run.result.registrations[7].flags & kNoPeak, 0u);
  EXPECT_FALSE(run.result.average.used[7]);
  for (std::size_t k = 8; k < frames.frame_count(); ++k) {
    EXPECT_EQ(run.result.registrations[k].flags & kFrameFailed, 0u) << k;
    const Point d = run.result.registrations[k].transform.displacement(c), t = series.drift(k);
    EXPECT_LT(std::hypot(d.x - t.x, d.y - t.y), 0.3) << "frame " << k;
  }
}
