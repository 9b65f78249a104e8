// The readers on files the test writes from the format descriptions
// (format_test_files.hpp): every data type and layout claimed, both byte
// orders, DM3 and DM4, SER 0x210 and 0x220, several signals per file.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "driftscan/core/error.hpp"
#include "driftscan/formats/raw_pixels.hpp"
#include "driftscan/formats/series_opener.hpp"
#include "format_test_files.hpp"

using namespace driftscan;
using namespace format_test;
namespace fs = std::filesystem;

namespace {

std::string temp(const std::string& name) { return (fs::temp_directory_path() / ("driftscan_fmt_" + name)).string(); }

double pattern(int k, int x, int y) { return 10 * k + 3 * x + 7 * y + 1; }

// w x h x n pixels of `pattern`, encoded as `type` in the given byte order.
Bytes encode(RawType type, bool big, int w, int h, int n) {
  Bytes b;
  for (int k = 0; k < n; ++k)
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        const double v =
            pattern(k, x, y) *
            (type == RawType::int8 || type == RawType::int16 || type == RawType::int32 || type == RawType::int64 ? -1
                                                                                                                 : 1);
        switch (type) {
          case RawType::float32: put_f32(b, static_cast<float>(v) + 0.25f, big); break;
          case RawType::float64: put_f64(b, v + 0.25, big); break;
          case RawType::float16: {
            // v + 0.25 is exact in half precision for these small values
            const float f = static_cast<float>(v) + 0.25f;
            int e = 0;
            const float m = std::frexp(f, &e);  // f = m * 2^e, m in [0.5, 1)
            const auto mant = static_cast<unsigned>((m * 2 - 1) * 1024);
            put(b, static_cast<std::uint64_t>(((e - 1 + 15) << 10) | mant), 2, big);
            break;
          }
          case RawType::bgra8: b.insert(b.end(), {static_cast<unsigned char>(v), 0, 0, 255}); break;
          default:
            put(b, static_cast<std::uint64_t>(static_cast<std::int64_t>(v)), static_cast<int>(raw_type_bytes(type)),
                big);
        }
      }
  return b;
}

double expected(RawType type, int k, int x, int y) {
  const double v = pattern(k, x, y);
  switch (type) {
    case RawType::int8:
    case RawType::int16:
    case RawType::int32:
    case RawType::int64: return -v;
    case RawType::float16:
    case RawType::float32:
    case RawType::float64: return v + 0.25;
    case RawType::bgra8: return 0.114 * v;  // blue only
    default: return v;
  }
}

void expect_frames(FrameSource& s, RawType type, int w, int h, int n) {
  ASSERT_EQ(s.frame_count(), static_cast<std::size_t>(n));
  ASSERT_EQ(s.width(), w);
  ASSERT_EQ(s.height(), h);
  for (int k = n - 1; k >= 0; --k) {  // backwards: no frame needs its predecessor
    const Frame f = s.frame(static_cast<std::size_t>(k));
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x)
        ASSERT_NEAR(f.at(x, y), expected(type, k, x, y), 1e-3) << to_string(type) << " k" << k;
  }
}

struct DmType {
  int data_type, elem_type;
  RawType raw;
};

}  // namespace

TEST(FormatWritten, DmEveryDataTypeBothVersionsBothByteOrders) {
  const DmType types[] = {{1, 2, RawType::int16},   {2, 6, RawType::float32},  {6, 10, RawType::uint8},
                          {7, 3, RawType::int32},   {9, 9, RawType::int8},     {10, 4, RawType::uint16},
                          {11, 5, RawType::uint32}, {12, 7, RawType::float64}, {14, 10, RawType::uint8},
                          {39, 11, RawType::int64}, {40, 12, RawType::uint64}, {23, 5, RawType::bgra8}};
  for (int version : {3, 4})
    for (bool little : {true, false})
      for (const auto& t : types) {
        DmWriter w(version, little);
        DmImageSpec im;
        im.name = "HAADF";
        im.data_type = t.data_type;
        im.elem_type = t.elem_type;
        im.elem_bytes = static_cast<int>(t.raw == RawType::bgra8 ? 4 : raw_type_bytes(t.raw));
        im.width = 5;
        im.height = 3;
        im.frames = 4;
        im.data = encode(t.raw, !little, 5, 3, 4);
        im.scale = 0.125f;
        im.unit = "nm";
        const std::string path = temp("t.dm" + std::to_string(version));
        write_file(path, w.file({im}));
        auto signals = list_signals(path);
        ASSERT_EQ(signals.size(), 1u);
        EXPECT_EQ(signals[0].name, "HAADF");
        EXPECT_EQ(signals[0].format, version == 3 ? "DM3" : "DM4");
        EXPECT_EQ(signals[0].pixel_type, to_string(t.raw));
        auto s = open_series(path, "HAADF");
        EXPECT_DOUBLE_EQ(s->pixel_size(), 0.125);
        EXPECT_EQ(s->pixel_unit(), "nm");
        expect_frames(*s, t.raw, 5, 3, 4);
        fs::remove(path);
      }
}

TEST(FormatWritten, DmSeveralImagesAreSignalsAndMicronsAreKept) {
  DmWriter w(4, true);
  DmImageSpec a, b;
  a.name = "HAADF";
  a.data = encode(RawType::uint16, false, 4, 3, 2);
  a.frames = 2;
  b = a;
  b.name = "ABF";
  b.scale = 0.5f;
  b.unit = "\xc2\xb5m";
  const std::string path = temp("multi.dm4");
  write_file(path, w.file({a, b}));
  auto signals = list_signals(path);
  ASSERT_EQ(signals.size(), 2u);
  EXPECT_EQ(signals[0].name, "HAADF");
  EXPECT_EQ(signals[1].name, "ABF");
  EXPECT_EQ(signals[1].unit, "um");
  EXPECT_EQ(open_series(path, "1")->pixel_unit(), "um");
  expect_frames(*open_series(path, "ABF"), RawType::uint16, 4, 3, 2);
  fs::remove(path);
}

TEST(FormatWritten, DmComplexIsRefusedWithOneLine) {
  DmWriter w(3, true);
  DmImageSpec im;
  im.data_type = 3;
  im.elem_type = 6;
  im.elem_bytes = 4;
  im.width = 2;
  im.height = 2;
  im.data = Bytes(std::size_t{2} * 2 * 8, 0);
  const std::string path = temp("complex.dm3");
  write_file(path, w.file({im}));
  try {
    list_signals(path);
    FAIL() << "complex accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::bad_input);
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("complex"), std::string::npos);
  }
  fs::remove(path);
}

TEST(FormatWritten, MrcEveryModeBothByteOrdersExtendedHeaderSkipped) {
  const std::pair<int, RawType> modes[] = {
      {0, RawType::int8}, {1, RawType::int16}, {2, RawType::float32}, {6, RawType::uint16}, {12, RawType::float16}};
  for (bool big : {false, true})
    for (const auto& [mode, type] : modes) {
      const std::string path = temp("t.mrcs");
      write_file(path, mrc_file(6, 4, 3, mode, encode(type, big, 6, 4, 3), 12.0f, mode == 2 ? 128 : 0, big));
      auto s = open_series(path);
      EXPECT_EQ(list_signals(path)[0].pixel_type, to_string(type));
      EXPECT_DOUBLE_EQ(s->pixel_size(), 0.2);  // 12 A / 6 = 2 A = 0.2 nm
      EXPECT_EQ(s->pixel_unit(), "nm");
      expect_frames(*s, type, 6, 4, 3);
      fs::remove(path);
    }
}

TEST(FormatWritten, MrcComplexModeRefused) {
  const std::string path = temp("c.mrc");
  write_file(path, mrc_file(2, 2, 1, 4, Bytes(std::size_t{2} * 2 * 8, 0), 2.0f));
  EXPECT_THROW(open_series(path), Error);
  fs::remove(path);
}

TEST(FormatWritten, SerBothHeaderVersionsAndTypes) {
  const std::tuple<int, int, RawType> types[] = {{1, 1, RawType::uint8},   {2, 2, RawType::uint16},
                                                 {3, 4, RawType::uint32},  {6, 4, RawType::int32},
                                                 {7, 4, RawType::float32}, {8, 8, RawType::float64}};
  for (int version : {0x210, 0x220})
    for (const auto& [code, bytes, type] : types) {
      const std::string path = temp("t_1.ser");
      const RawType t = type;
      write_file(path, ser_file(version, 5, 4, 3, code, bytes, 2e-10,
                                [&](int k, int x, int y) { return expected(t, k, x, y); }));
      auto s = open_series(path);
      EXPECT_NEAR(s->pixel_size(), 0.2, 1e-12);  // 2e-10 m
      EXPECT_EQ(s->pixel_unit(), "nm");
      expect_frames(*s, type, 5, 4, 3);
      fs::remove(path);
    }
}

TEST(FormatWritten, EmiListsItsSerFilesAsSignals) {
  const std::string dir = temp("emi");
  fs::create_directories(dir);
  const Bytes emi = {'J', 'K', 0, 2, 0, 0, 0, 0};
  write_file(dir + "/scan.emi", emi);
  write_file(dir + "/scan_1.ser", ser_file(0x220, 4, 4, 2, 2, 2, 1e-9, pattern));
  write_file(dir + "/scan_2.ser",
             ser_file(0x220, 4, 4, 2, 2, 2, 1e-9, [](int k, int x, int y) { return 2 * pattern(k, x, y); }));
  auto signals = list_signals(dir + "/scan.emi");
  ASSERT_EQ(signals.size(), 2u);
  EXPECT_EQ(signals[1].name, "scan_2");
  EXPECT_EQ(open_series(dir + "/scan.emi", "scan_2")->frame(1).at(2, 3), 2 * pattern(1, 2, 3));
  fs::remove_all(dir);
}

TEST(FormatWritten, VeloxSeveralDetectorsFramesAlongLastAxis) {
  const std::string path = temp("velox.emd");
  hid_t f = velox_file(path);
  // HAADF with Velox's scan clock (numbers as strings, as Velox writes them):
  // 6 samples x 2 us + 3 us of fly-back per line, 100 us per frame.
  velox_image(f, "aaa", "HAADF", 2e-10, 6, 5, 4, pattern,
              R"("Scan":{"DwellTime":"2e-06","LineTime":"1.5e-05","FrameTime":"0.0001","ScanRotation":"0"})");
  velox_image(f, "bbb", "DF4", 2e-10, 6, 5, 4, [](int k, int x, int y) { return -pattern(k, x, y); });
  H5Fclose(f);
  auto signals = list_signals(path);
  ASSERT_EQ(signals.size(), 2u);
  EXPECT_EQ(signals[0].name, "HAADF");
  EXPECT_EQ(signals[1].name, "DF4");
  EXPECT_EQ(signals[0].frames, 4u);
  const RecordedScan scan = open_series(path, "HAADF")->recorded_scan();
  EXPECT_DOUBLE_EQ(scan.dwell, 2e-6);
  EXPECT_NEAR(scan.line_flyback, 3e-6, 1e-15);
  EXPECT_DOUBLE_EQ(scan.frame_time, 1e-4);
  EXPECT_EQ(scan.source, "Velox Scan metadata");
  EXPECT_FALSE(signals[1].scan.known());  // no Scan block: nothing made up
  auto s = open_series(path, "DF4");
  EXPECT_NEAR(s->pixel_size(), 0.2, 1e-12);
  expect_frames(*open_series(path, "HAADF"), RawType::uint16, 6, 5, 4);
  expect_frames(*s, RawType::int16, 6, 5, 4);
  fs::remove(path);
}

TEST(FormatWritten, BerkeleyStackAndImage) {
  const std::string path = temp("berkeley.emd");
  hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  H5Gclose(H5Gcreate2(f, "/data", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  berkeley_group(f, "/data/stack", 7, 5, 3, 0.5, "[n_m]", pattern);
  berkeley_group(f, "/data/still", 7, 5, 0, 2e-10, "m", pattern);
  H5Fclose(f);
  auto signals = list_signals(path);
  ASSERT_EQ(signals.size(), 2u);
  EXPECT_EQ(signals[0].name, "stack");
  auto s = open_series(path, "stack");
  EXPECT_DOUBLE_EQ(s->pixel_size(), 0.5);
  EXPECT_EQ(s->pixel_unit(), "nm");
  expect_frames(*s, RawType::uint16, 7, 5, 3);
  auto still = open_series(path, "still");
  EXPECT_NEAR(still->pixel_size(), 0.2, 1e-12);
  expect_frames(*still, RawType::uint16, 7, 5, 1);
  fs::remove(path);
}
