// The TIFF writer: ImageJ-compatible stacks (checked with libtiff directly,
// then read back through TiffSeries), uint16 rounding and clamping, the
// temporary-name-then-rename protocol, BigTIFF past 4 GB.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "driftscan/core/error.hpp"
#include "driftscan/formats/tiff/tiff_series.hpp"
#include "driftscan/formats/tiff/tiff_writer.hpp"
#include "tiff_test_files.hpp"

using namespace driftscan;

namespace {

Frame ramp(int w, int h, float offset) {
  Frame f(w, h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) f.at(x, y) = offset + 0.37f * float(x) - 1.5f * float(y);
  return f;
}

std::vector<std::string> folder_entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  return names;
}

}  // namespace

TEST(TiffWriter, Float32StackWithImageJHyperstackMetadata) {
  tifftest::TempDir dir;
  const std::string path = dir.file("stack.tif");
  TiffWriteOptions options;
  options.pixel_size = 0.0092;
  options.unit = "nm";
  {
    TiffStackWriter writer(path, 33, 21, 5, options);
    EXPECT_FALSE(writer.bigtiff());
    for (int k = 0; k < 5; ++k) writer.append(ramp(33, 21, float(k) * 100.0f - 250.0f));
    writer.commit();
  }
  // What Fiji looks at, read with libtiff itself.
  TIFF* tif = TIFFOpen(path.c_str(), "r");
  ASSERT_NE(tif, nullptr);
  EXPECT_EQ(TIFFNumberOfDirectories(tif), 5);
  const char* description = nullptr;
  ASSERT_TRUE(TIFFGetField(tif, TIFFTAG_IMAGEDESCRIPTION, &description));
  std::string d = description;
  EXPECT_EQ(d.rfind("ImageJ=", 0), 0u) << d;
  for (const char* line : {"\nimages=5\n", "\nframes=5\n", "\nhyperstack=true\n", "\nunit=nm\n"})
    EXPECT_NE(d.find(line), std::string::npos) << line << " missing from " << d;
  float xres = 0, yres = 0;
  std::uint16_t unit = 0, format = 0, bits = 0;
  ASSERT_TRUE(TIFFGetField(tif, TIFFTAG_XRESOLUTION, &xres));
  ASSERT_TRUE(TIFFGetField(tif, TIFFTAG_YRESOLUTION, &yres));
  TIFFGetField(tif, TIFFTAG_RESOLUTIONUNIT, &unit);
  TIFFGetField(tif, TIFFTAG_SAMPLEFORMAT, &format);
  TIFFGetField(tif, TIFFTAG_BITSPERSAMPLE, &bits);
  EXPECT_NEAR(1.0 / xres, 0.0092, 1e-7);
  EXPECT_NEAR(1.0 / yres, 0.0092, 1e-7);
  EXPECT_EQ(unit, RESUNIT_NONE);
  EXPECT_EQ(format, SAMPLEFORMAT_IEEEFP);
  EXPECT_EQ(bits, 32);
  TIFFClose(tif);

  auto series = TiffSeries::open(path);
  EXPECT_EQ(series->frame_count(), 5u);
  EXPECT_EQ(series->info().pixel_type, PixelType::float32);
  EXPECT_NEAR(series->pixel_size(), 0.0092, 1e-7);
  EXPECT_EQ(series->pixel_unit(), "nm");
  for (int k = 0; k < 5; ++k)
    EXPECT_EQ(series->frame(std::size_t(k)).pixels, ramp(33, 21, float(k) * 100.0f - 250.0f).pixels);
  EXPECT_EQ(folder_entries(dir.path()), std::vector<std::string>{"stack.tif"});  // no temp left
}

TEST(TiffWriter, Uint16RoundsAndClamps) {
  tifftest::TempDir dir;
  Frame f(6, 1);
  f.pixels = {-5.0f, 2.5f, 2.49f, 70000.0f, std::numeric_limits<float>::quiet_NaN(), 65535.0f};
  TiffWriteOptions options;
  options.format = SampleFormat::uint16;
  options.pixel_size = 0.5;
  options.unit = "micron";
  write_tiff(dir.file("u16.tif"), f, options);
  auto series = TiffSeries::open(dir.file("u16.tif"));
  EXPECT_EQ(series->info().pixel_type, PixelType::uint16);
  EXPECT_EQ(series->frame(0).pixels, (std::vector<float>{0.0f, 3.0f, 2.0f, 65535.0f, 0.0f, 65535.0f}));
  EXPECT_EQ(series->pixel_unit(), "um");
  EXPECT_NEAR(series->pixel_size(), 0.5, 1e-7);
}

TEST(TiffWriter, WritesUnderATemporaryNameAndRemovesItUnlessCommitted) {
  tifftest::TempDir dir;
  const std::string path = dir.file("out.tif");
  {
    TiffStackWriter writer(path, 8, 8, 3);
    writer.append(ramp(8, 8, 0));
    EXPECT_FALSE(std::filesystem::exists(path));
    EXPECT_TRUE(std::filesystem::exists(writer.temporary_path()));
    EXPECT_EQ(std::filesystem::path(writer.temporary_path()).parent_path(), std::filesystem::path(dir.path()));
    // interrupted: destroyed without commit
  }
  EXPECT_TRUE(folder_entries(dir.path()).empty());
  {
    TiffStackWriter writer(path, 8, 8, 3);
    writer.append(ramp(8, 8, 0));
    writer.append(ramp(8, 8, 1));
    try {
      writer.commit();  // one frame short
      ADD_FAILURE() << "commit of 2 of 3 frames succeeded";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::failure);
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
    EXPECT_THROW(writer.append(ramp(9, 8, 0)), Error);  // wrong size
  }
  EXPECT_TRUE(folder_entries(dir.path()).empty());
  EXPECT_THROW(TiffStackWriter(dir.file("missing/folder/x.tif"), 8, 8, 1), Error);
  EXPECT_THROW(TiffStackWriter(path, 0, 8, 1), Error);
}

TEST(TiffWriter, BigTiffIsChosenPastFourGigabytes) {
  tifftest::TempDir dir;
  // 1100 float32 frames of 1024x1024 = 4.6 GB: BigTIFF. Nothing is appended,
  // so nothing that size is written.
  TiffStackWriter big(dir.file("big.tif"), 1024, 1024, 1100);
  EXPECT_TRUE(big.bigtiff());
  TiffStackWriter small(dir.file("small.tif"), 1024, 1024, 900);  // 3.8 GB
  EXPECT_FALSE(small.bigtiff());
  TiffWriteOptions u16;
  u16.format = SampleFormat::uint16;
  TiffStackWriter small16(dir.file("small16.tif"), 1024, 1024, 1100, u16);  // 2.3 GB
  EXPECT_FALSE(small16.bigtiff());
}

TEST(TiffWriter, FramesAreStoredContiguouslyAsImageJExpects) {
  // ImageJ and tifffile read an ImageJ stack (images=N) as N frames back to
  // back from the first strip offset, ignoring the other IFDs.
  tifftest::TempDir dir;
  for (bool big : {false, true}) {
    const std::string path = dir.file(big ? "big.tif" : "classic.tif");
    TiffWriteOptions options;
    options.format = SampleFormat::uint16;
    options.force_bigtiff = big;
    options.pixel_size = 1.5;
    options.unit = "A";
    {
      TiffStackWriter writer(path, 10, 7, 4, options);
      for (int k = 0; k < 4; ++k) writer.append(ramp(10, 7, 100.0f * float(k + 1)));
      writer.commit();
    }
    TIFF* tif = TIFFOpen(path.c_str(), "r");
    ASSERT_NE(tif, nullptr);
    EXPECT_EQ(TIFFIsBigEndian(tif), 0);
    std::uint64_t first = 0;
    for (int k = 0; k < 4; ++k) {
      ASSERT_TRUE(TIFFSetDirectory(tif, tdir_t(k)));
      EXPECT_EQ(TIFFNumberOfStrips(tif), 1u);
      std::uint64_t offset = TIFFGetStrileOffset(tif, 0);
      if (k == 0) first = offset;
      EXPECT_EQ(offset, first + std::uint64_t(k) * 10 * 7 * 2) << "frame " << k;
      EXPECT_EQ(TIFFGetStrileByteCount(tif, 0), 140u);
    }
    TIFFClose(tif);
    // the bytes at those offsets are the frames
    std::ifstream in(path, std::ios::binary);
    in.seekg(std::streamoff(first) + 3 * std::streamoff(140));
    std::uint16_t v = 0;
    in.read(reinterpret_cast<char*>(&v), 2);
    EXPECT_EQ(v, 400);
    auto series = TiffSeries::open(path);
    EXPECT_EQ(series->info().bigtiff, big);
    EXPECT_EQ(series->pixel_unit(), "A");
    EXPECT_NEAR(series->pixel_size(), 1.5, 1e-6);
  }
}
