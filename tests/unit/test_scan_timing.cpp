// The raster-scan clock: when each pixel was recorded, for every scan
// direction, and one-line errors for timing that cannot be.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "driftscan/core/error.hpp"
#include "driftscan/core/scan_timing.hpp"
#include "driftscan/job/job.hpp"

using namespace driftscan;

namespace {

ScanTimingSettings dwell_only(double dwell) {
  ScanTimingSettings s;
  s.dwell = dwell;
  return s;
}

// The message of the bad_input Error the settings throw ("" if none).
std::string error_of(const ScanTimingSettings& s, int width = 64, int height = 32) {
  try {
    ScanTiming t(s, width, height);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::bad_input);
    return e.what();
  }
  return "";
}

}  // namespace

TEST(ScanTiming, DefaultsDeriveLineAndFrameTimeFromTheDwell) {
  ScanTiming t(dwell_only(2e-6), 64, 32);
  EXPECT_EQ(t.lines(), 32);
  EXPECT_EQ(t.samples_per_line(), 64);
  EXPECT_DOUBLE_EQ(t.line_time(), 64 * 2e-6);
  EXPECT_DOUBLE_EQ(t.line_flyback(), 0.0);
  EXPECT_DOUBLE_EQ(t.frame_time(), 32 * 64 * 2e-6);
  EXPECT_DOUBLE_EQ(t.frame_flyback(), 0.0);
}

TEST(ScanTiming, FlybackAsFractionOrTime) {
  ScanTimingSettings s = dwell_only(1e-6);
  s.line_flyback_fraction = 0.25;
  s.frame_flyback_fraction = 0.1;
  ScanTiming t(s, 100, 50);
  EXPECT_DOUBLE_EQ(t.line_time(), 100e-6 * 1.25);
  EXPECT_NEAR(t.line_flyback(), 25e-6, 1e-15);
  EXPECT_DOUBLE_EQ(t.frame_time(), 50 * 125e-6 * 1.1);
  EXPECT_NEAR(t.frame_flyback(), 0.1 * 50 * 125e-6, 1e-15);

  ScanTimingSettings u = dwell_only(1e-6);
  u.line_flyback = 20e-6;
  u.frame_flyback = 1e-3;
  ScanTiming v(u, 100, 50);
  EXPECT_DOUBLE_EQ(v.line_time(), 120e-6);
  EXPECT_DOUBLE_EQ(v.frame_time(), 50 * 120e-6 + 1e-3);

  ScanTimingSettings w = dwell_only(1e-6);
  w.line_time = 150e-6;  // an explicit line time implies its fly-back
  w.frame_time = 0.01;
  ScanTiming x(w, 100, 50);
  EXPECT_NEAR(x.line_flyback(), 50e-6, 1e-15);
  EXPECT_NEAR(x.frame_flyback(), 0.01 - 50 * 150e-6, 1e-15);
}

TEST(ScanTiming, NormalScanPixelTimes) {
  ScanTimingSettings s = dwell_only(1e-6);
  s.line_flyback_fraction = 0.5;
  s.frame_flyback_fraction = 0.2;
  ScanTiming t(s, 10, 4);
  const double line = 15e-6, frame = 4 * line * 1.2;
  EXPECT_DOUBLE_EQ(t.time_of(0, 0, 0), 0.0);
  EXPECT_DOUBLE_EQ(t.time_of(0, 3, 0), 3e-6);
  EXPECT_DOUBLE_EQ(t.time_of(0, 3, 2), 2 * line + 3e-6);
  EXPECT_DOUBLE_EQ(t.time_of(2, 9, 3), 2 * frame + 3 * line + 9e-6);
  EXPECT_DOUBLE_EQ(t.line_start(1, 2), frame + 2 * line);
  EXPECT_DOUBLE_EQ(t.line_mid_time(0, 1), line + 4.5e-6);
  EXPECT_DOUBLE_EQ(t.frame_mid_time(1), frame + 0.5 * (3 * line + 9e-6));
  EXPECT_EQ(t.line_of(7, 2), 2);
  EXPECT_DOUBLE_EQ(t.fast_axis().x, 1.0);
  EXPECT_DOUBLE_EQ(t.fast_axis().y, 0.0);
}

TEST(ScanTiming, SerpentineReversesOddLines) {
  ScanTimingSettings s = dwell_only(1e-6);
  s.direction = ScanDirection::serpentine;
  ScanTiming t(s, 10, 4);
  EXPECT_DOUBLE_EQ(t.time_of(0, 0, 0), 0.0);
  EXPECT_DOUBLE_EQ(t.time_of(0, 9, 1), 10e-6);         // line 1 starts at the right edge
  EXPECT_DOUBLE_EQ(t.time_of(0, 0, 1), 10e-6 + 9e-6);  // and ends at the left
  EXPECT_DOUBLE_EQ(t.time_of(0, 0, 2), 20e-6);
  // Within every line, consecutive samples are one dwell apart in scan order.
  for (int y = 0; y < 4; ++y) {
    double first = t.time_of(0, y % 2 ? 9 : 0, y), last = t.time_of(0, y % 2 ? 0 : 9, y);
    EXPECT_NEAR(last - first, 9e-6, 1e-15);
  }
}

TEST(ScanTiming, Rotated90ScansColumns) {
  ScanTimingSettings s = dwell_only(1e-6);
  s.direction = ScanDirection::rotated90;
  ScanTiming t(s, 10, 4);
  EXPECT_EQ(t.lines(), 10);
  EXPECT_EQ(t.samples_per_line(), 4);
  EXPECT_DOUBLE_EQ(t.line_time(), 4e-6);
  EXPECT_DOUBLE_EQ(t.time_of(0, 0, 3), 3e-6);
  EXPECT_DOUBLE_EQ(t.time_of(0, 2, 1), 2 * 4e-6 + 1e-6);
  EXPECT_EQ(t.line_of(2, 1), 2);
  EXPECT_DOUBLE_EQ(t.fast_axis().x, 0.0);
  EXPECT_DOUBLE_EQ(t.fast_axis().y, 1.0);
}

TEST(ScanTiming, EveryPixelHasItsOwnTimeWithinItsFrame) {
  for (ScanDirection d : {ScanDirection::normal, ScanDirection::serpentine, ScanDirection::rotated90}) {
    ScanTimingSettings s = dwell_only(1e-6);
    s.direction = d;
    s.line_flyback_fraction = 0.3;
    ScanTiming t(s, 7, 5);
    std::vector<double> times;
    for (int y = 0; y < 5; ++y)
      for (int x = 0; x < 7; ++x) {
        double at = t.time_of(1, x, y);
        EXPECT_GE(at, t.frame_start(1));
        EXPECT_LT(at, t.frame_start(2));
        times.push_back(at);
      }
    std::sort(times.begin(), times.end());
    for (std::size_t i = 1; i < times.size(); ++i) EXPECT_GT(times[i] - times[i - 1], 0.5e-6) << to_string(d);
  }
}

TEST(ScanTiming, DirectionNames) {
  for (ScanDirection d : {ScanDirection::normal, ScanDirection::serpentine, ScanDirection::rotated90})
    EXPECT_EQ(scan_direction_from_string(to_string(d)), d);
  EXPECT_THROW(scan_direction_from_string("diagonal"), Error);
}

TEST(ScanTiming, ImpossibleSettingsAreOneLineErrorsNamingTheSetting) {
  auto expect_error = [](const ScanTimingSettings& s, const std::string& name) {
    std::string message = error_of(s);
    EXPECT_NE(message.find(name), std::string::npos) << "'" << message << "' should name " << name;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  };
  expect_error(dwell_only(-1e-6), "pixel dwell");
  expect_error(dwell_only(0.0), "pixel dwell");
  {
    ScanTimingSettings s;
    s.line_flyback = -1;
    expect_error(s, "line fly-back");
  }
  {
    ScanTimingSettings s;
    s.line_flyback_fraction = 1.0;
    expect_error(s, "line fly-back fraction");
  }
  {
    ScanTimingSettings s;
    s.frame_flyback_fraction = 2.0;
    expect_error(s, "frame fly-back fraction");
  }
  {
    ScanTimingSettings s;
    s.line_flyback = 1e-6;
    s.line_flyback_fraction = 0.1;
    expect_error(s, "line fly-back as a time or as a fraction");
  }
  {
    ScanTimingSettings s;  // 64 px * 1 us = 64 us of samples
    s.line_time = 50e-6;
    expect_error(s, "line time");
  }
  {
    ScanTimingSettings s;
    s.line_time = 100e-6;
    s.line_flyback = 100e-6;
    expect_error(s, "line fly-back");
  }
  {
    ScanTimingSettings s;
    s.frame_time = 1e-3;
    s.frame_flyback = 2e-3;  // fly-back >= frame time
    expect_error(s, "frame fly-back");
  }
  {
    ScanTimingSettings s;
    s.frame_time = 1e-3;  // 32 lines * 64 us = 2.048 ms of lines
    expect_error(s, "frame time");
  }
  {
    ScanTimingSettings s;
    s.frame_time = std::nan("");
    expect_error(s, "frame time");
  }
  EXPECT_EQ(error_of(ScanTimingSettings{}), "");
}

// The job's timing completed from the file's metadata: what the file records
// fills what the job leaves unset; a value the job sets wins; a recorded frame
// time the frame's lines do not fit in is left out, and the note says so.
TEST(ScanTiming, RecordedTimingFillsWhatTheJobLeavesUnset) {
  RecordedScan file;
  file.dwell = 2e-6;
  file.line_flyback = 50e-6;
  file.frame_time = 0.05;
  file.source = "DigiScan tags";
  ScanSettings job;  // dwell 0 and fly-backs 0: unset
  std::string note;
  ScanTimingSettings t = job.timing(file, 100, 100, &note);
  ScanTiming timing(t, 100, 100);
  EXPECT_DOUBLE_EQ(timing.dwell(), 2e-6);
  EXPECT_NEAR(timing.line_time(), 100 * 2e-6 + 50e-6, 1e-15);
  EXPECT_DOUBLE_EQ(timing.frame_time(), 0.05);
  EXPECT_EQ(note, "scan timing from the file's DigiScan tags: dwell 2 us, line fly-back 50 us, frame time 0.05 s");

  job.dwell = 1e-6;  // set by the user: kept
  job.line_flyback = 0.1;
  t = job.timing(file, 100, 100, &note);
  EXPECT_DOUBLE_EQ(t.dwell, 1e-6);
  EXPECT_DOUBLE_EQ(ScanTiming(t, 100, 100).line_time(), 110e-6);
  EXPECT_EQ(note, "scan timing from the file's DigiScan tags: frame time 0.05 s");

  file.frame_time = 1e-3;  // shorter than 100 lines of 110 us
  t = job.timing(file, 100, 100, &note);
  EXPECT_NEAR(ScanTiming(t, 100, 100).frame_time(), 100 * 110e-6, 1e-15);
  EXPECT_NE(note.find("not its frame time of 0.001 s"), std::string::npos) << note;

  EXPECT_EQ((job.timing(RecordedScan{}, 100, 100, &note), note), "");  // nothing recorded: nothing said
}

TEST(ScanSettings, CorrectsDistortionWhenAskedOrWhenTheFileRecordsTheScanClock) {
  RecordedScan none, digiscan;
  digiscan.dwell = 3.5e-6;
  digiscan.source = "DigiScan tags";
  ScanSettings s;  // defaults: not asked, auto on
  EXPECT_TRUE(s.corrects_distortion(digiscan, 10));
  EXPECT_FALSE(s.corrects_distortion(digiscan, 1));  // one frame: nothing to average
  EXPECT_FALSE(s.corrects_distortion(none, 10));     // TIFF, MRC, SER: no clock recorded
  s.auto_distortion = false;
  EXPECT_FALSE(s.corrects_distortion(digiscan, 10));
  s.correct_distortion = true;  // asked: always
  EXPECT_TRUE(s.corrects_distortion(none, 10));
}
