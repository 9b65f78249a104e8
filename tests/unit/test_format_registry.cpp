// The table of readers (format_reader.hpp): every format is in it (the
// readers are linked from the static engine library), the reader is chosen by
// content with the surer claim winning, and a 1-D signal (a spectrum) is
// listed but never opened as an image series.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "driftscan/core/error.hpp"
#include "driftscan/formats/format_reader.hpp"
#include "driftscan/formats/series_opener.hpp"
#include "driftscan/formats/tiff/tiff_writer.hpp"
#include "format_test_files.hpp"

using namespace driftscan;
using namespace format_test;
namespace fs = std::filesystem;

namespace {

std::string temp(const std::string& name) { return (fs::temp_directory_path() / ("driftscan_reg_" + name)).string(); }

// A DM4 holding an EELS spectrum of 2048 float32 channels, 0.5 eV each.
DmImageSpec spectrum(bool one_dimension) {
  DmImageSpec s;
  s.name = "EELS Spectrum";
  s.data_type = 2;
  s.elem_type = 6;
  s.elem_bytes = 4;
  s.width = 2048;
  s.height = 1;
  s.one_dimension = one_dimension;
  for (int k = 0; k < 2048; ++k) put_f32(s.data, static_cast<float>(k % 64), false);
  s.scale = 0.5f;
  s.unit = "eV";
  return s;
}

DmImageSpec image(const std::string& name) {
  DmImageSpec im;
  im.name = name;
  im.width = 4;
  im.height = 3;
  im.frames = 2;
  im.data = Bytes(std::size_t{4} * 3 * 2 * 2, 1);
  return im;
}

// Expects a one-line bad_input starting with `path` and containing `what`.
template <class F>
void expect_bad(const std::string& path, const std::string& what, F f) {
  try {
    f();
    FAIL() << path << ": accepted";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(e.kind(), ErrorKind::bad_input) << m;
    EXPECT_EQ(m.rfind(path, 0), 0u) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    EXPECT_NE(m.find(what), std::string::npos) << m;
  }
}

}  // namespace

TEST(FormatRegistry, EveryReaderIsInTheTable) {
  std::set<std::string> names;
  for (const auto& r : format_readers()) {
    EXPECT_TRUE(r.recognise && r.list_signals && r.open_signal) << r.name;
    EXPECT_FALSE(r.reads.empty()) << r.name;
    EXPECT_TRUE(names.insert(r.name).second) << "two readers named " << r.name;
  }
  for (const char* n : {"DigitalMicrograph", "EMD (HDF5)", "MRC", "TIA SER/EMI", "TIFF"})
    EXPECT_TRUE(names.count(n)) << n << " missing from the table";
  ASSERT_NE(find_format_reader("MRC"), nullptr);
  EXPECT_EQ(find_format_reader("MRC")->name, "MRC");
  EXPECT_EQ(find_format_reader("no such format"), nullptr);
}

TEST(FormatRegistry, OnlyDmAndEmdRecordTheScanClockCheaply) {
  for (const auto& r : format_readers())
    EXPECT_EQ(r.scan_clock_in_index, r.name == "DigitalMicrograph" || r.name == "EMD (HDF5)") << r.name;
}

TEST(FormatRegistry, UnsupportedFileNamesEveryFormat) {
  const std::string path = temp("text.dat");
  std::ofstream(path) << "hello, this is not an image\n";
  for (const auto& r : format_readers()) expect_bad(path, r.reads, [&] { format_reader_for(path); });
  expect_bad(path, "not a supported image file", [&] { list_signals(path); });
  fs::remove(path);
}

TEST(FormatRegistry, SignatureAtTheStartWinsOverOneInside) {
  // A TIFF whose bytes at 208 read "MAP " (MRC's signature) and whose bytes
  // at 512 are the HDF5 signature (after a user block) is still a TIFF.
  const std::string path = temp("map.tif");
  write_tiff(path, Frame(32, 32, 1.0f));
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(208);
    f.write("MAP ", 4);
    f.seekp(512);
    f.write("\x89HDF\r\n\x1a\n", 8);
  }
  EXPECT_EQ(format_reader_for(path).name, "TIFF");
  fs::remove(path);
  // Folders and globs are TIFF series.
  EXPECT_EQ(format_reader_for(fs::temp_directory_path().string()).name, "TIFF");
  EXPECT_EQ(format_reader_for(temp("*.tif")).name, "TIFF");
}

TEST(FormatSpectrum, DmSpectrumIsListedAsOneDimensional) {
  for (bool one_dimension : {false, true}) {
    const std::string path = temp("eels.dm4");
    write_file(path, DmWriter(4, true).file({spectrum(one_dimension)}));
    const auto signals = list_signals(path);
    ASSERT_EQ(signals.size(), 1u);
    EXPECT_EQ(signals[0].dimensions, 1);
    EXPECT_FALSE(signals[0].is_image());
    EXPECT_EQ(signals[0].width, 2048);
    EXPECT_EQ(signals[0].height, 1);
    EXPECT_EQ(signals[0].unit, "eV");
    EXPECT_DOUBLE_EQ(signals[0].pixel_size, 0.5);
    EXPECT_EQ(signals[0].one_d_summary(), "1-D spectrum, 2048 channels");
    fs::remove(path);
  }
}

TEST(FormatSpectrum, OpeningASpectrumIsBadInputNamingTheFile) {
  const std::string path = temp("eels.dm3");
  write_file(path, DmWriter(3, true).file({spectrum(false)}));
  const std::string what = "signal 'EELS Spectrum' is a 1-D spectrum, 2048 channels, not an image series";
  expect_bad(path, what, [&] { open_series(path); });
  expect_bad(path, what, [&] { open_series(path, "EELS Spectrum"); });
  expect_bad(path, what, [&] { open_series(path, "0"); });
  fs::remove(path);
}

TEST(FormatSpectrum, TheDefaultSignalIsTheFirstImage) {
  const std::string path = temp("mixed.dm4");
  write_file(path, DmWriter(4, true).file({spectrum(true), image("HAADF"), image("ABF")}));
  const auto signals = list_signals(path);
  ASSERT_EQ(signals.size(), 3u);
  EXPECT_EQ(find_signal(path, signals, ""), 1u);
  auto s = open_series(path);
  EXPECT_EQ(s->width(), 4);
  EXPECT_EQ(s->frame_count(), 2u);
  expect_bad(path, "not an image series", [&] { open_series(path, "EELS Spectrum"); });
  fs::remove(path);
}

TEST(FormatSpectrum, ImagesOneRowHighInOtherFormatsAreStillImages) {
  // Only a reader that knows a signal is a spectrum says so: a TIFF one row
  // high opens as before.
  const std::string path = temp("row.tif");
  write_tiff(path, Frame(16, 1, 2.0f));
  EXPECT_TRUE(list_signals(path)[0].is_image());
  EXPECT_EQ(open_series(path)->height(), 1);
  fs::remove(path);
}
