// Scan rotations read from a file's metadata (Velox's per-frame
// Scan.ScanRotation) and taken as the job's scan.rotation, relative to
// frame 0 (pipeline/recorded_rotation.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "driftscan/core/error.hpp"
#include "driftscan/core/scan_rotation.hpp"
#include "driftscan/formats/series_opener.hpp"
#include "driftscan/job/job.hpp"
#include "driftscan/job/job_series.hpp"
#include "driftscan/pipeline/recorded_rotation.hpp"
#include "format_test_files.hpp"

using namespace driftscan;
using namespace format_test;
namespace fs = std::filesystem;

namespace {

constexpr double kRadPerDeg = 3.14159265358979323846 / 180.0;

std::string temp(const std::string& name) { return (fs::temp_directory_path() / ("ds_rot_" + name)).string(); }

int pattern(int k, int x, int y) { return 100 + 7 * x + 3 * y + k; }

// A Velox file of n square frames whose frame k's metadata gives ScanRotation
// `deg(k)` degrees (as radians text); NaN leaves it out of frame k's.
template <class Deg>
std::string velox_with_rotations(const std::string& name, int n, Deg deg) {
  std::string path = temp(name);
  hid_t f = velox_file(path);
  velox_image_frames(f, "img", "HAADF", 1e-10, 8, 8, n, pattern, [&](int k) {
    const double d = deg(k);
    if (!std::isfinite(d)) return std::string(R"("Scan":{"DwellTime":"1e-06"})");
    char text[128];
    std::snprintf(text, sizeof text, R"("Scan":{"DwellTime":"1e-06","ScanRotation":"%.12g"})", d * kRadPerDeg);
    return std::string(text);
  });
  H5Fclose(f);
  return path;
}

Job register_job(const std::string& path) {
  Job j;
  j.command = "register";
  j.input = path;
  j.signal = "HAADF";
  return j;
}

}  // namespace

TEST(RecordedRotation, VeloxRecordsEachFramesRotation) {
  // A session at 30° whose scan alternates with 30° + 90° (radians in the file).
  const std::string path = velox_with_rotations("pairs.emd", 5, [](int k) { return k % 2 ? 120.0 : 30.0; });
  const RecordedRotations r = open_series(path, "HAADF")->recorded_rotations();
  ASSERT_EQ(r.deg.size(), 5u);
  for (int k = 0; k < 5; ++k) EXPECT_NEAR(r.deg[static_cast<std::size_t>(k)], k % 2 ? 120.0 : 30.0, 1e-9);
  EXPECT_EQ(r.source, "Velox Scan metadata");
  // Relative to frame 0, shortened to its period: scan.rotation 0,90.
  EXPECT_EQ(relative_scan_rotations(r, path), (std::vector<double>{0.0, 90.0}));
  fs::remove(path);
}

TEST(RecordedRotation, RelativeRotationsAreTurnedSnappedAndShortened) {
  RecordedRotations r{{350.0, 80.0000004, 170.0, 259.996, 350.0, 80.0, 170.0, 260.0}, "test"};
  EXPECT_EQ(relative_scan_rotations(r, "f"), (std::vector<double>{0.0, 90.0, 180.0, 270.0}));
  // Every frame as frame 0: one direction, nothing to take.
  EXPECT_TRUE(relative_scan_rotations({{12.5, 12.5, 12.5}, "test"}, "f").empty());
  EXPECT_TRUE(relative_scan_rotations({{42.0}, "test"}, "f").empty());
  // A revolving cycle cut short keeps its period (frame k at value k mod 4).
  EXPECT_EQ(relative_scan_rotations({{0, 90, 180, 270, 0, 90}, "test"}, "f"),
            (std::vector<double>{0.0, 90.0, 180.0, 270.0}));
  // Other angles are kept as they are (the run turns them back, corners uncovered).
  EXPECT_EQ(relative_scan_rotations({{10.0, 55.0}, "test"}, "f"), (std::vector<double>{0.0, 45.0}));
}

TEST(RecordedRotation, RegisterJobTakesTheFilesRotationsUnlessItGivesItsOwn) {
  const std::string path = velox_with_rotations("revolving.emd", 8, [](int k) { return 17.0 + 90.0 * (k % 4); });
  std::string said;
  const Job decided = with_recorded_rotations(register_job(path), said);
  EXPECT_EQ(decided.scan.rotation, (std::vector<double>{0.0, 90.0, 180.0, 270.0}));
  EXPECT_NE(said.find("scan rotations from the file's Velox Scan metadata: 0,90,180,270"), std::string::npos) << said;
  // The frames come turned back into frame 0's orientation.
  const auto turned = open_job_series(decided);
  const auto recorded = open_series(path, "HAADF");
  const Frame expected = derotate(recorded->frame(1), 90.0);
  EXPECT_EQ(turned->frame(1).pixels, expected.pixels);
  // A job that gives scan.rotation keeps it, and says nothing.
  Job own = register_job(path);
  own.scan.rotation = {0.0};
  const Job kept = with_recorded_rotations(own, said);
  EXPECT_EQ(kept.scan.rotation, (std::vector<double>{0.0}));
  EXPECT_TRUE(said.empty());
  fs::remove(path);
}

TEST(RecordedRotation, GivenRotationsAreTakenRelativeToFrame0s) {
  // A series scanned at 37° and 127° is at 0° and 90° on frame 0's grid:
  // validated, and turned into those values (and said) before any run.
  Job job = register_job("any.tif");
  job.output = "out";
  job.scan.rotation = {37.0, 127.0, 217.0, 307.0};
  EXPECT_NO_THROW(validate(job));
  std::string said;
  const Job decided = with_recorded_rotations(job, said);
  EXPECT_EQ(decided.scan.rotation, (std::vector<double>{0.0, 90.0, 180.0, 270.0}));
  EXPECT_NE(said.find("relative to frame 0's: 0,90,180,270"), std::string::npos) << said;
  job.follow.enabled = true;  // a follow takes them the same way
  EXPECT_EQ(with_recorded_rotations(job, said).scan.rotation, (std::vector<double>{0.0, 90.0, 180.0, 270.0}));
  // Frames 63° apart run at 0° and 63° on frame 0's grid.
  job.scan.rotation = {37.0, 100.0};
  job.follow.enabled = false;
  EXPECT_NO_THROW(validate(job));
  EXPECT_EQ(with_recorded_rotations(job, said).scan.rotation, (std::vector<double>{0.0, 63.0}));
  // Synth draws the frames at the angles given, as they are.
  Job synth;
  synth.command = "synth";
  synth.output = "synth.tif";
  synth.scan.rotation = {37.0, 100.0};
  EXPECT_NO_THROW(validate(synth));
}

TEST(RecordedRotation, OneDirectionLeavesTheJobAsItIs) {
  const std::string path = velox_with_rotations("one.emd", 4, [](int) { return 17.0; });
  std::string said;
  EXPECT_TRUE(with_recorded_rotations(register_job(path), said).scan.rotation.empty());
  EXPECT_TRUE(said.empty());
  fs::remove(path);
}

namespace {

// The message of the bad_input Error a register job over `path` is refused
// with when its rotations are taken from the file ("" and a failure when it is taken).
std::string refusal(const std::string& path) {
  std::string said;
  try {
    (void)with_recorded_rotations(register_job(path), said);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::bad_input);
    return e.what();
  }
  ADD_FAILURE() << path << ": its rotations were taken";
  return "";
}

}  // namespace

TEST(RecordedRotation, AFrameOfUnknownDirectionAmongKnownOnesIsBadInput) {
  const std::string path = velox_with_rotations(
      "unknown.emd", 4, [](int k) { return k == 2 ? std::numeric_limits<double>::quiet_NaN() : 90.0 * k; });
  const std::string m = refusal(path);
  EXPECT_NE(m.find(path + ": frame 2: its scan rotation is unknown"), std::string::npos) << m;
  fs::remove(path);
}

TEST(RecordedRotation, AnAngleOffThePixelGridIsTakenAndTurnedBack) {
  const std::string path = velox_with_rotations("oblique.emd", 4, [](int k) { return 10.0 + 45.0 * k; });
  std::string said;
  const Job decided = with_recorded_rotations(register_job(path), said);
  ASSERT_EQ(decided.scan.rotation.size(), 4u);  // radians in the file: 45° to rounding
  for (std::size_t k = 0; k < 4; ++k) EXPECT_NEAR(decided.scan.rotation[k], 45.0 * k, 1e-9) << k;
  // Frame 1 turned back by 45°: the corners it does not reach are NaN
  // (missing to the average), its centre is the recorded frame's centre.
  const Frame f = open_job_series(decided)->frame(1);
  const Frame recorded = open_series(path, "HAADF")->frame(1);
  EXPECT_TRUE(std::isnan(f.at(0, 0)));
  EXPECT_TRUE(std::isnan(f.at(f.width - 1, f.height - 1)));
  if (f.width % 2 == 1) EXPECT_NEAR(f.at(f.width / 2, f.height / 2), recorded.at(f.width / 2, f.height / 2), 1e-3);
  EXPECT_TRUE(std::isfinite(f.at(f.width / 2, f.height / 2)));
  fs::remove(path);
}
