// A series still being written (growing_series.hpp): pages of a TIFF that is
// appended to are taken only once whole (a page linked before its pixels are
// on disk is waited for), a folder's files in name order with bad ones
// skipped and named, the followed file's deletion a failure naming it.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "driftscan/core/error.hpp"
#include "driftscan/formats/growing_series.hpp"
#include "driftscan/formats/tiff/tiff_page_appender.hpp"
#include "driftscan/formats/tiff/tiff_series.hpp"
#include "driftscan/formats/tiff/tiff_writer.hpp"
#include "scratch_folder.hpp"

using namespace driftscan;
namespace fs = std::filesystem;

namespace {

Frame ramp(int w, int h, float base) {
  Frame f(w, h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) f.at(x, y) = base + static_cast<float>(x + 3 * y);
  return f;
}

struct TempDir : driftscan::test::TestScratchFolder {
  TempDir() : TestScratchFolder("growing_series_", true) {}
};

}  // namespace

TEST(GrowingSeries, PagesOfAGrowingTiffAreTakenOnlyWhenWhole) {
  TempDir dir;
  const std::string path = (dir.path / "live.tif").string();
  TiffPageAppender writer(path, SampleFormat::float32);
  auto series = GrowingSeries::open(path);
  EXPECT_EQ(series->poll().added, 0u);  // a header, no page yet
  writer.append(ramp(32, 24, 0));
  writer.append(ramp(32, 24, 100));
  EXPECT_EQ(series->poll().added, 2u);
  EXPECT_EQ(series->width(), 32);
  EXPECT_EQ(series->height(), 24);
  EXPECT_EQ(series->frame(1).at(5, 2), 100.0f + 5 + 6);

  // Page 2 linked and its IFD written, half its pixels on disk for 0.4 s.
  std::thread slow([&] { writer.append(ramp(32, 24, 200), {true, 0.4}); });
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  EXPECT_EQ(series->poll().added, 0u);
  EXPECT_EQ(series->frame_count(), 2u);
  EXPECT_NE(series->pending().find("page 2"), std::string::npos) << series->pending();
  slow.join();
  EXPECT_EQ(series->poll().added, 1u);
  const Frame f2 = series->frame(2);
  EXPECT_EQ(f2.at(31, 23), 200.0f + 31 + 69);  // the last pixel: the second half was read too
  EXPECT_GE(series->incomplete_waits(), 1u);
}

// A series past 4 GiB is a BigTIFF (2,000 float32 frames of 1024²): its
// pages too are taken only when whole, and libtiff reads the file it makes.
TEST(GrowingSeries, PagesOfAGrowingBigTiffAreTakenOnlyWhenWhole) {
  TempDir dir;
  const std::string path = (dir.path / "live_big.tif").string();
  TiffPageAppender writer(path, SampleFormat::float32, true);
  auto series = GrowingSeries::open(path);
  EXPECT_EQ(series->poll().added, 0u);
  writer.append(ramp(32, 24, 0));
  writer.append(ramp(32, 24, 100));
  EXPECT_EQ(series->poll().added, 2u);
  EXPECT_EQ(series->frame(1).at(5, 2), 100.0f + 5 + 6);
  std::thread slow([&] { writer.append(ramp(32, 24, 200), {true, 0.4}); });
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  EXPECT_EQ(series->poll().added, 0u);
  slow.join();
  EXPECT_EQ(series->poll().added, 1u);
  EXPECT_EQ(series->frame(2).at(31, 23), 200.0f + 31 + 69);

  auto whole = TiffSeries::open(path);
  ASSERT_EQ(whole->frame_count(), 3u);
  for (std::size_t k = 0; k < 3; ++k) EXPECT_EQ(whole->frame(k).at(7, 9), 100.0f * k + 7 + 27) << "page " << k;
}

TEST(GrowingSeries, FolderFilesInNameOrderBadOnesSkippedAndNamed) {
  TempDir dir;
  GrowingSeriesOptions options;
  options.settle_s = 0.05;
  options.incomplete_timeout_s = 0.3;
  auto series = GrowingSeries::open(dir.path.string(), options);
  EXPECT_EQ(series->poll().added, 0u);
  write_tiff((dir.path / "f1.tif").string(), ramp(16, 16, 0));
  write_tiff((dir.path / "f2.tif").string(), ramp(16, 16, 10));
  write_tiff((dir.path / "f2_small.tif").string(), ramp(8, 8, 0));
  { std::ofstream((dir.path / "f3.tif").string()) << "not a TIFF"; }
  write_tiff((dir.path / "f4.tif").string(), ramp(16, 16, 40));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::vector<std::string> warnings;
  for (int i = 0; i < 20 && series->frame_count() < 3; ++i) {
    for (auto& w : series->poll().warnings) warnings.push_back(w);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(series->frame_count(), 3u);
  EXPECT_EQ(series->frame(2).at(0, 0), 40.0f);
  EXPECT_EQ(series->frame_origin(2), (dir.path / "f4.tif").string());
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("f2_small.tif is 8x8"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[1].find("f3.tif: not a TIFF"), std::string::npos) << warnings[1];
  // A file named before one already taken cannot join the series.
  write_tiff((dir.path / "f0.tif").string(), ramp(16, 16, 0));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const SeriesGrowth late = series->poll();
  EXPECT_EQ(late.added, 0u);
  ASSERT_EQ(late.warnings.size(), 1u);
  EXPECT_NE(late.warnings[0].find("f0.tif: appeared after"), std::string::npos) << late.warnings[0];
}

TEST(GrowingSeries, DeletingTheFollowedFileIsAFailureNamingIt) {
  TempDir dir;
  const std::string path = (dir.path / "live.tif").string();
  {
    TiffPageAppender writer(path, SampleFormat::uint16);
    writer.append(ramp(16, 16, 0));
  }
  auto series = GrowingSeries::open(path);
  EXPECT_EQ(series->poll().added, 1u);
  fs::remove(path);
  try {
    series->poll();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::failure);
    EXPECT_NE(std::string(e.what()).find(path + ": the followed file was deleted"), std::string::npos) << e.what();
  }
  EXPECT_EQ(series->frame(0).at(3, 1), 6.0f);  // frames taken stay readable
}

TEST(GrowingSeries, AFileNotCreatedYetIsWaitedFor) {
  TempDir dir;
  const std::string path = (dir.path / "later.tif").string();
  auto series = GrowingSeries::open(path);
  EXPECT_EQ(series->poll().added, 0u);
  EXPECT_NE(series->pending().find("does not exist yet"), std::string::npos);
  TiffPageAppender writer(path, SampleFormat::float32);
  writer.append(ramp(16, 16, 0));
  EXPECT_EQ(series->poll().added, 1u);
  EXPECT_THROW(GrowingSeries::open((dir.path / "no_such_folder").string()), Error);
}
