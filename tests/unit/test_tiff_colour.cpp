// Colour and indexed TIFFs, written with libtiff: YCbCr and CMYK become the
// BT.601 luminance of their RGB (through libtiff's RGBA conversion) with a
// warning; palette images give their indices, the colour map ignored (as
// ImageJ reads them; docs/tiff-support.md).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "driftscan/formats/tiff/tiff_series.hpp"
#include "tiff_test_files.hpp"

using namespace driftscan;

namespace {

constexpr std::uint32_t kWidth = 23, kHeight = 14;  // odd sizes catch stride mistakes

// One 8-bit contiguous page; `pixel(x, y, s)` gives sample s of (x, y);
// `extra` sets the photometric-specific tags.
bool write_page(const std::string& path, std::uint16_t photometric, std::uint16_t samples,
                const std::function<std::uint8_t(std::uint32_t, std::uint32_t, int)>& pixel,
                const std::function<void(TIFF*)>& extra = {}) {
  TIFF* tif = TIFFOpen(path.c_str(), "w");
  if (!tif) return false;
  TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, kWidth);
  TIFFSetField(tif, TIFFTAG_IMAGELENGTH, kHeight);
  TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, 8);
  TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, samples);
  TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, photometric);
  TIFFSetField(tif, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
  TIFFSetField(tif, TIFFTAG_COMPRESSION, COMPRESSION_NONE);
  TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, kHeight);
  if (extra) extra(tif);
  std::vector<std::uint8_t> data(std::size_t(kWidth) * kHeight * samples);
  for (std::uint32_t y = 0; y < kHeight; ++y)
    for (std::uint32_t x = 0; x < kWidth; ++x)
      for (int s = 0; s < samples; ++s) data[(std::size_t(y) * kWidth + x) * samples + std::size_t(s)] = pixel(x, y, s);
  bool ok = TIFFWriteEncodedStrip(tif, 0, data.data(), tmsize_t(data.size())) >= 0 && TIFFWriteDirectory(tif);
  TIFFClose(tif);
  return ok;
}

float luminance(double r, double g, double b) { return float(0.299 * r + 0.587 * g + 0.114 * b); }

void expect_luminance_warning(const TiffSeries& series) {
  ASSERT_FALSE(series.warnings().empty());
  EXPECT_NE(series.warnings().front().find("luminance"), std::string::npos) << series.warnings().front();
}

}  // namespace

TEST(TiffColour, YCbCrBecomesItsLuminanceWithAWarning) {
  tifftest::TempDir dir;
  // Y spans most of the range; Cb, Cr stay near neutral so no RGB channel clips.
  auto Y = [](std::uint32_t x, std::uint32_t y) { return std::uint8_t(40 + (x * 7 + y * 11) % 160); };
  auto Cb = [](std::uint32_t x, std::uint32_t y) { return std::uint8_t(108 + (x * 3 + y) % 40); };
  auto Cr = [](std::uint32_t x, std::uint32_t y) { return std::uint8_t(110 + (x + y * 5) % 36); };
  const std::string path = dir.file("ycbcr.tif");
  ASSERT_TRUE(write_page(
      path, PHOTOMETRIC_YCBCR, 3,
      [&](std::uint32_t x, std::uint32_t y, int s) { return s == 0   ? Y(x, y)
                                                            : s == 1 ? Cb(x, y)
                                                                     : Cr(x, y); },
      [](TIFF* tif) { TIFFSetField(tif, TIFFTAG_YCBCRSUBSAMPLING, 1, 1); }));
  auto series = TiffSeries::open(path);
  Frame f = series->frame(0);
  expect_luminance_warning(*series);
  // BT.601 luminance of the decoded RGB is Y again, up to the 8-bit rounding of R, G, B.
  float worst = 0.0f;
  for (std::uint32_t y = 0; y < kHeight; ++y)
    for (std::uint32_t x = 0; x < kWidth; ++x)
      worst = std::max(worst, std::fabs(f.at(int(x), int(y)) - float(Y(x, y))));
  EXPECT_LT(worst, 1.5f);
}

TEST(TiffColour, CmykBecomesTheLuminanceOfItsRgbWithAWarning) {
  tifftest::TempDir dir;
  auto ink = [](std::uint32_t x, std::uint32_t y, int s) {
    return std::uint8_t((x * 29 + y * 13 + std::uint32_t(s) * 61) % (s == 3 ? 90 : 256));
  };
  const std::string path = dir.file("cmyk.tif");
  ASSERT_TRUE(write_page(path, PHOTOMETRIC_SEPARATED, 4, ink,
                         [](TIFF* tif) { TIFFSetField(tif, TIFFTAG_INKSET, INKSET_CMYK); }));
  auto series = TiffSeries::open(path);
  Frame f = series->frame(0);
  expect_luminance_warning(*series);
  float worst = 0.0f;
  for (std::uint32_t y = 0; y < kHeight; ++y)
    for (std::uint32_t x = 0; x < kWidth; ++x) {
      // R = (255 - C)(255 - K) / 255, likewise G from M and B from Y.
      double k = 255.0 - ink(x, y, 3);
      float expected = luminance(k * (255 - ink(x, y, 0)) / 255.0, k * (255 - ink(x, y, 1)) / 255.0,
                                 k * (255 - ink(x, y, 2)) / 255.0);
      worst = std::max(worst, std::fabs(f.at(int(x), int(y)) - expected));
    }
  EXPECT_LT(worst, 1.0f);  // libtiff truncates each channel to an integer
}

TEST(TiffColour, PaletteImagesGiveTheirIndicesNotColours) {
  tifftest::TempDir dir;
  // A colour map that is far from the identity: luminance would not be the index.
  std::vector<std::uint16_t> red(256), green(256), blue(256);
  for (int i = 0; i < 256; ++i) {
    red[std::size_t(i)] = std::uint16_t((255 - i) * 257);
    green[std::size_t(i)] = std::uint16_t((i * 7 % 256) * 257);
    blue[std::size_t(i)] = 0;
  }
  auto index = [](std::uint32_t x, std::uint32_t y, int) { return std::uint8_t((x * 11 + y * 17) % 256); };
  const std::string path = dir.file("palette.tif");
  ASSERT_TRUE(write_page(path, PHOTOMETRIC_PALETTE, 1, index, [&](TIFF* tif) {
    TIFFSetField(tif, TIFFTAG_COLORMAP, red.data(), green.data(), blue.data());
  }));
  auto series = TiffSeries::open(path);
  EXPECT_EQ(series->info().pixel_type, PixelType::uint8);
  Frame f = series->frame(0);
  for (std::uint32_t y = 0; y < kHeight; ++y)
    for (std::uint32_t x = 0; x < kWidth; ++x) ASSERT_EQ(f.at(int(x), int(y)), float(index(x, y, 0))) << x << "," << y;
  for (const auto& w : series->warnings()) EXPECT_EQ(w.find("luminance"), std::string::npos) << w;
}
