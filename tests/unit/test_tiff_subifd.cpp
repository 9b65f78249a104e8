// SubIFD pyramids (reduced-resolution levels linked from a page through tag
// 330, as OME-TIFF and slide scanners store them) are refused with a
// one-line error naming the file, as the README promises, instead of being
// read as if the main chain were all the file holds.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "driftscan/core/error.hpp"
#include "driftscan/formats/tiff/tiff_series.hpp"
#include "tiff_test_files.hpp"

using namespace driftscan;

namespace {

// `pages` full-size uint16 pages; page `with_pyramid` carries one SubIFD: a
// half-size level (NewSubfileType 1), which libtiff writes as the directory
// after it and links through the SubIFDs tag instead of the main chain.
bool write_with_subifd(const std::string& path, int pages, int with_pyramid) {
  TIFF* tif = TIFFOpen(path.c_str(), "w");
  if (!tif) return false;
  bool ok = true;
  auto page = [&](std::uint32_t w, std::uint32_t h, bool reduced, bool subifd) {
    TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, w);
    TIFFSetField(tif, TIFFTAG_IMAGELENGTH, h);
    TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, 16);
    TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, 1);
    TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
    TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, h);
    if (reduced) TIFFSetField(tif, TIFFTAG_SUBFILETYPE, FILETYPE_REDUCEDIMAGE);
    std::uint64_t offsets[1] = {0};  // filled in by libtiff when the level is written
    if (subifd) TIFFSetField(tif, TIFFTAG_SUBIFD, std::uint16_t(1), offsets);
    std::vector<std::uint16_t> data(std::size_t(w) * h);
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = std::uint16_t(i);
    ok = ok && TIFFWriteEncodedStrip(tif, 0, data.data(), tmsize_t(data.size() * 2)) >= 0 && TIFFWriteDirectory(tif);
  };
  for (int k = 0; k < pages; ++k) {
    page(32, 24, false, k == with_pyramid);
    if (k == with_pyramid) page(16, 12, true, false);
  }
  TIFFClose(tif);
  return ok;
}

}  // namespace

TEST(TiffSubIfd, APyramidIsRefusedWithOneLineNamingTheFile) {
  tifftest::TempDir dir;
  for (int with_pyramid : {0, 2}) {
    const std::string path = dir.file("pyramid" + std::to_string(with_pyramid) + ".tif");
    ASSERT_TRUE(write_with_subifd(path, 3, with_pyramid));
    testing::internal::CaptureStderr();
    std::string message;
    try {
      TiffSeries::open(path);
      ADD_FAILURE() << path << ": opened";
    } catch (const Error& e) {
      message = e.what();
      EXPECT_EQ(e.kind(), ErrorKind::bad_input) << message;
    }
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    EXPECT_EQ(message.rfind(path + ": ", 0), 0u) << message;
    EXPECT_NE(message.find("SubIFD"), std::string::npos) << message;
    EXPECT_NE(message.find("frame " + std::to_string(with_pyramid)), std::string::npos) << message;
  }
  // The same pages without the pyramid read as usual.
  const std::string plain = dir.file("plain.tif");
  ASSERT_TRUE(write_with_subifd(plain, 3, -1));
  EXPECT_EQ(TiffSeries::open(plain)->frame_count(), 3u);
}
