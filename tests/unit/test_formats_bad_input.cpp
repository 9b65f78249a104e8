// Bad microscope files: truncated, a tag tree nested without end or claiming
// sizes past the end of the file, HDF5 without the expected groups, an EMI
// without its SER, an unknown signal name. Each is one line naming the file,
// ErrorKind::bad_input (exit 2), never a crash or a huge allocation.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "driftscan/core/error.hpp"
#include "driftscan/formats/series_opener.hpp"
#include "format_test_files.hpp"

using namespace driftscan;
using namespace format_test;
namespace fs = std::filesystem;

namespace {

std::string temp(const std::string& name) { return (fs::temp_directory_path() / ("driftscan_bad_" + name)).string(); }

// Opens `path` and reads every frame; expects a one-line bad_input naming `path`
// containing `what`.
void expect_bad(const std::string& path, const std::string& what, const std::string& signal = "") {
  try {
    auto s = open_series(path, signal);
    for (std::size_t k = 0; k < s->frame_count(); ++k) s->frame(k);
    FAIL() << path << ": accepted";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(e.kind(), ErrorKind::bad_input) << m;
    EXPECT_EQ(m.rfind(path, 0), 0u) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    EXPECT_NE(m.find(what), std::string::npos) << m;
  }
}

Bytes dm_one_image(int version) {
  DmWriter w(version, true);
  DmImageSpec im;
  im.name = "HAADF";
  im.width = 16;
  im.height = 16;
  im.frames = 4;
  im.data = Bytes(std::size_t{16} * 16 * 4 * 2, 7);
  return w.file({im});
}

}  // namespace

TEST(FormatBadInput, TruncatedFilesOfEveryFormat) {
  for (int version : {3, 4}) {
    Bytes b = dm_one_image(version);
    for (std::size_t cut : {std::size_t(10), std::size_t(40), b.size() / 2, b.size() - 1}) {
      const std::string path = temp("cut.dm" + std::to_string(version));
      write_file(path, Bytes(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(cut)));
      expect_bad(path, cut == 10 ? "" : "");
      fs::remove(path);
    }
  }
  const Bytes mrc = mrc_file(8, 8, 4, 1, Bytes(std::size_t{8} * 8 * 4 * 2, 1), 8.0f);
  const std::string mpath = temp("cut.mrc");
  write_file(mpath, Bytes(mrc.begin(), mrc.end() - 3));
  expect_bad(mpath, "truncated");
  write_file(mpath, Bytes(mrc.begin(), mrc.begin() + 500));
  expect_bad(mpath, "");
  fs::remove(mpath);
  const Bytes ser = ser_file(0x220, 8, 8, 3, 2, 2, 1e-9, [](int, int, int) { return 1; });
  const std::string spath = temp("cut_1.ser");
  write_file(spath, Bytes(ser.begin(), ser.end() - 40));
  expect_bad(spath, "");
  write_file(spath, Bytes(ser.begin(), ser.begin() + 300));
  expect_bad(spath, "");
  fs::remove(spath);
}

TEST(FormatBadInput, DmTagCountAndArraySizePastTheEnd) {
  // A group claiming 2^31 tags in a small file.
  Bytes b = {0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0x7f, 0xff, 0xff, 0xff};
  b.resize(200, 0);
  const std::string path = temp("claims.dm3");
  write_file(path, b);
  expect_bad(path, "past the end");
  // An array claiming 2^40 elements (DM4's 64-bit counts).
  DmWriter w4(4, true);
  Bytes tag = w4.data_tag("Data", {20, 4, std::uint64_t(1) << 40}, Bytes(8, 0));
  Bytes f4;
  put(f4, 4, 4, true);  // version
  put(f4, 0, 8, true);  // file size
  put(f4, 1, 4, true);  // little-endian data
  f4.insert(f4.end(), {0, 1});
  put(f4, 1, 8, true);  // one tag
  f4.insert(f4.end(), tag.begin(), tag.end());
  write_file(path, f4);
  expect_bad(path, "past the end");
  fs::remove(path);
}

TEST(FormatBadInput, DmTagTreeNestedWithoutEnd) {
  // Groups inside groups, each claiming one child, 10,000 deep: the kind of
  // tree a loop would produce. The parser stops at its depth limit.
  Bytes b = {0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1};
  for (int i = 0; i < 10000; ++i) b.insert(b.end(), {20, 0, 0, 0, 0, 0, 0, 0, 1});
  const std::string path = temp("deep.dm3");
  write_file(path, b);
  expect_bad(path, "nested deeper");
  fs::remove(path);
}

TEST(FormatBadInput, MrcHeaderClaimsHugeImage) {
  Bytes b = mrc_file(8, 8, 1, 2, Bytes(std::size_t{8} * 8 * 4, 0), 1.0f);
  b[0] = 0xff;
  b[1] = 0xff;
  b[2] = 0xff;
  b[3] = 0x3f;  // nx = 1 G
  const std::string path = temp("huge.mrc");
  write_file(path, b);
  expect_bad(path, "truncated");
  fs::remove(path);
}

TEST(FormatBadInput, HdfWithoutTheExpectedGroups) {
  const std::string path = temp("plain.h5");
  hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  H5Gclose(H5Gcreate2(f, "/something", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  H5Fclose(f);
  expect_bad(path, "neither Velox EMD");
  f = velox_file(path);
  H5Fclose(f);
  expect_bad(path, "without any image dataset");
  // A truncated HDF5 file.
  f = velox_file(path);
  velox_image(f, "a", "HAADF", 1e-9, 64, 64, 8, [](int k, int x, int y) { return k + x + y; });
  H5Fclose(f);
  fs::resize_file(path, fs::file_size(path) / 3);
  expect_bad(path, "");
  fs::remove(path);
}

TEST(FormatBadInput, EmiWithoutItsSer) {
  const std::string path = temp("alone.emi");
  write_file(path, Bytes{'J', 'K', 0, 2, 0, 0, 0, 0});
  expect_bad(path, "alone_1.ser");
  fs::remove(path);
}

TEST(FormatBadInput, UnknownSignalNameListsTheSignals) {
  const std::string path = temp("sig.dm4");
  write_file(path, dm_one_image(4));
  expect_bad(path, "no signal 'ABF' (the file holds 'HAADF')", "ABF");
  fs::remove(path);
}

TEST(FormatBadInput, NotAnImageFile) {
  const std::string path = temp("text.dat");
  std::ofstream(path) << "hello, this is not an image\n";
  expect_bad(path, "not a supported image file");
  fs::remove(path);
  expect_bad(temp("missing.dm3"), "");
}

TEST(FormatBadInput, DmCorruptThumbnailIndexAndNanDimensions) {
  // Found by fuzz_dm_reader: a negative thumbnail index (and NaN sizes, a
  // float tag where a long belongs) were cast to integers (undefined).
  DmWriter w(3, true);
  DmImageSpec im;
  im.name = "HAADF";
  im.data = Bytes(std::size_t{4} * 3 * 2, 1);
  Bytes nan;
  put_f32(nan, std::nanf(""), false);
  Bytes minus_one;
  put(minus_one, 0xffffffffu, 4, false);
  const Bytes thumbs = w.group_tag("Thumbnails", {w.group_tag("", {w.data_tag("ImageIndex", {3}, minus_one)})});
  const Bytes nan_image = w.group_tag(
      "",
      {w.group_tag("ImageData", {w.data_tag("Data", {20, 4, 12}, Bytes(24, 1)), w.data_tag("DataType", {6}, nan),
                                 w.group_tag("Dimensions", {w.data_tag("", {6}, nan), w.data_tag("", {6}, nan)})})});
  Bytes b = {0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 2};
  const Bytes list = w.group_tag("ImageList", {nan_image, w.image(im)});
  b.insert(b.end(), list.begin(), list.end());
  b.insert(b.end(), thumbs.begin(), thumbs.end());
  const std::string path = temp("thumb.dm3");
  write_file(path, b);
  auto signals = list_signals(path);  // the NaN image is skipped, the thumbnail index ignored
  ASSERT_EQ(signals.size(), 1u);
  EXPECT_EQ(signals[0].name, "HAADF");
  fs::remove(path);
}
