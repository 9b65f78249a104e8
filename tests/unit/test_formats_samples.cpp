// The readers on the public vendor samples of the optional sample data
// (formats/ in $DRIFTSCAN_SAMPLE_DATA, sample_data.hpp; from the
// RosettaSciIO and openNCEM test suites): signals, sizes, types, calibration
// and pixel values (the values were checked against the files' bytes decoded
// independently with Python's struct and h5dump).
#include <gtest/gtest.h>

#include <filesystem>

#include "driftscan/core/error.hpp"
#include "driftscan/formats/format_reader.hpp"
#include "driftscan/formats/series_opener.hpp"
#include "sample_data.hpp"

using namespace driftscan;
namespace fs = std::filesystem;

namespace {

std::string sample(const std::string& name) { return test::sample_file("formats/" + name); }
std::string absent(const std::string& name) { return test::sample_absent("formats/" + name); }

}  // namespace

TEST(FormatSamples, Dm3StackOfTwoFrames) {
  const std::string path = sample("test-1.dm3");
  if (path.empty()) GTEST_SKIP() << absent("test-1.dm3");
  EXPECT_EQ(format_reader_for(path).name, "DigitalMicrograph");
  auto signals = list_signals(path);
  ASSERT_EQ(signals.size(), 1u);
  EXPECT_EQ(signals[0].format, "DM3");
  EXPECT_EQ(signals[0].name, "test");
  EXPECT_EQ(signals[0].frames, 2u);
  EXPECT_EQ(signals[0].width, 2);
  EXPECT_EQ(signals[0].pixel_type, "int16");
  auto s = open_series(path);
  const Frame f0 = s->frame(0);
  EXPECT_EQ(f0.pixels, (std::vector<float>{1, 2, 3, 4}));
}

TEST(FormatSamples, Dm4ReadsLikeTheDm3) {
  const std::string p3 = sample("test-1.dm3");
  if (p3.empty()) GTEST_SKIP() << absent("test-1.dm3");
  const std::string p4 = sample("test-1.dm4");
  if (p4.empty()) GTEST_SKIP() << absent("test-1.dm4");
  auto s3 = open_series(p3), s4 = open_series(p4);
  EXPECT_EQ(list_signals(p4)[0].format, "DM4");
  ASSERT_EQ(s4->frame_count(), s3->frame_count());
  for (std::size_t k = 0; k < s3->frame_count(); ++k) EXPECT_EQ(s4->frame(k).pixels, s3->frame(k).pixels);
}

TEST(FormatSamples, Dm3StemImageCalibrated) {
  const std::string path = sample("test_STEM_image.dm3");
  if (path.empty()) GTEST_SKIP() << absent("test_STEM_image.dm3");
  auto s = open_series(path);
  EXPECT_EQ(s->width(), 68);
  EXPECT_EQ(s->height(), 68);
  EXPECT_EQ(s->frame_count(), 1u);
  EXPECT_EQ(s->pixel_unit(), "nm");
  EXPECT_NEAR(s->pixel_size(), 0.248538, 1e-5);
  const Frame f = s->frame(0);
  EXPECT_EQ(f.pixels[0], 33121.0f);
  EXPECT_EQ(f.pixels.back(), 32683.0f);
  // DigiScan's clock: "Sample Time" 3.5 us, "Flyback" 400 us.
  const RecordedScan scan = s->recorded_scan();
  EXPECT_DOUBLE_EQ(scan.dwell, 3.5e-6);
  EXPECT_DOUBLE_EQ(scan.line_flyback, 400e-6);
  EXPECT_EQ(scan.frame_time, 0.0);
  EXPECT_EQ(scan.source, "DigiScan tags");
  // DigiScan's scan rotation: "Rotation" 0 degrees, one for the image.
  const RecordedRotations rotations = s->recorded_rotations();
  ASSERT_EQ(rotations.deg.size(), 1u);
  EXPECT_EQ(rotations.deg[0], 0.0);
  EXPECT_EQ(rotations.source, "DigiScan tags");
}

TEST(FormatSamples, SerFramesOrientationAndReciprocalCalibration) {
  const std::string path = sample("128x128x5-diffraction_preview_1.ser");
  if (path.empty()) GTEST_SKIP() << absent("128x128x5-diffraction_preview_1.ser");
  EXPECT_EQ(format_reader_for(path).name, "TIA SER/EMI");
  auto s = open_series(path);
  ASSERT_EQ(s->frame_count(), 5u);
  EXPECT_EQ(s->width(), 128);
  EXPECT_EQ(s->height(), 128);
  // The EMI beside it says "Reciprocal Space": 1/m, given in 1/nm.
  EXPECT_EQ(s->pixel_unit(), "1/nm");
  EXPECT_NEAR(s->pixel_size(), 0.0424641346, 1e-9);
  // Row orientation: row 0 of the frame is the first row stored in the file.
  const Frame f0 = s->frame(0), f4 = s->frame(4);
  EXPECT_EQ(f0.at(0, 0), 1180.0f);
  EXPECT_EQ(f0.at(1, 0), 118.0f);
  EXPECT_EQ(f0.at(2, 0), 120.0f);
  EXPECT_EQ(f0.at(0, 127), 128.0f);
  EXPECT_EQ(f0.at(127, 127), 341.0f);
  EXPECT_EQ(f4.at(0, 0), 186.0f);
  EXPECT_EQ(f4.at(127, 127), 409.0f);
}

TEST(FormatSamples, EmiOpensItsSer) {
  const std::string emi = sample("128x128x5-diffraction_preview.emi");
  if (emi.empty()) GTEST_SKIP() << absent("128x128x5-diffraction_preview.emi");
  const std::string ser = sample("128x128x5-diffraction_preview_1.ser");
  if (ser.empty()) GTEST_SKIP() << absent("128x128x5-diffraction_preview_1.ser");
  auto signals = list_signals(emi);
  ASSERT_EQ(signals.size(), 1u);
  EXPECT_EQ(signals[0].name, "128x128x5-diffraction_preview_1");
  EXPECT_EQ(open_series(emi)->frame(3).pixels, open_series(ser)->frame(3).pixels);
}

TEST(FormatSamples, MrcWithFeiExtendedHeader) {
  const std::string path = sample("HAADFscan.mrc");
  if (path.empty()) GTEST_SKIP() << absent("HAADFscan.mrc");
  EXPECT_EQ(format_reader_for(path).name, "MRC");
  auto s = open_series(path);
  EXPECT_EQ(s->width(), 16);
  EXPECT_EQ(s->height(), 16);
  EXPECT_EQ(s->frame_count(), 1u);
  EXPECT_EQ(list_signals(path)[0].pixel_type, "uint16");
  // cell 908.66 A over 16 samples
  EXPECT_EQ(s->pixel_unit(), "nm");
  EXPECT_NEAR(s->pixel_size(), 90.866 / 16, 1e-3);
  const Frame f = s->frame(0);
  EXPECT_EQ(f.at(0, 0), 5715.0f);
  EXPECT_EQ(f.at(7, 5), 6288.0f);
  EXPECT_EQ(f.at(15, 15), 5721.0f);
}

TEST(FormatSamples, BerkeleyEmd) {
  const std::string path = sample("example_image.emd");
  if (path.empty()) GTEST_SKIP() << absent("example_image.emd");
  EXPECT_EQ(format_reader_for(path).name, "EMD (HDF5)");
  auto signals = list_signals(path);
  ASSERT_EQ(signals.size(), 1u);
  EXPECT_EQ(signals[0].format, "Berkeley EMD");
  EXPECT_EQ(signals[0].name, "__unnamed__");
  EXPECT_EQ(signals[0].pixel_size, 0.0);  // its dims have no unit: uncalibrated
  auto s = open_series(path);
  EXPECT_EQ(s->frame(0).pixels, (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8}));
}

TEST(FormatSamples, VeloxFramesAlongTheLastAxis) {
  const std::string path = sample("fei_example_tem_stack.emd");
  if (path.empty()) GTEST_SKIP() << absent("fei_example_tem_stack.emd");
  auto signals = list_signals(path);
  ASSERT_EQ(signals.size(), 1u);
  EXPECT_EQ(signals[0].format, "Velox EMD");
  EXPECT_EQ(signals[0].name, "BM-Ceta");
  auto s = open_series(path, "BM-Ceta");
  ASSERT_EQ(s->frame_count(), 2u);
  EXPECT_EQ(s->width(), 3);
  EXPECT_EQ(s->pixel_unit(), "nm");
  EXPECT_NEAR(s->pixel_size(), 8.1728831922978511e-3, 1e-12);
  EXPECT_EQ(s->frame(0).pixels, (std::vector<float>{0, 2, 4, 6, 8, 10, 12, 14, 16}));
  EXPECT_EQ(s->frame(1).pixels, (std::vector<float>{1, 3, 5, 7, 9, 11, 13, 15, 17}));
}

TEST(FormatSamples, ChosenByContentNotExtension) {
  const std::string path = sample("test-1.dm3");
  if (path.empty()) GTEST_SKIP() << absent("test-1.dm3");
  const fs::path copy = fs::temp_directory_path() / "driftscan_dm_as.tif";
  fs::copy_file(path, copy, fs::copy_options::overwrite_existing);
  EXPECT_EQ(format_reader_for(copy.string()).name, "DigitalMicrograph");
  EXPECT_EQ(open_series(copy.string())->frame_count(), 2u);
  fs::remove(copy);
}
