// Every kind of bad TIFF input ends in driftscan::Error(bad_input) whose
// one-line message names the file (and the frame where one is concerned),
// with nothing printed to stderr by libtiff and no crash.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <fstream>

#include "driftscan/core/error.hpp"
#include "driftscan/formats/tiff/tiff_series.hpp"
#include "tiff_test_files.hpp"

using namespace driftscan;
using tifftest::PageSpec;
using tifftest::RawTiff;

namespace {

// Opens `path` (and reads every frame), expecting bad_input whose message
// contains each of `needles`; returns the message.
std::string expect_bad_input(const std::string& path, const std::vector<std::string>& needles) {
  testing::internal::CaptureStderr();
  std::string message;
  try {
    auto series = TiffSeries::open(path, 0);
    for (std::size_t k = 0; k < series->frame_count(); ++k) series->frame(k);
    ADD_FAILURE() << path << ": no error";
  } catch (const Error& e) {
    message = e.what();
    EXPECT_EQ(e.kind(), ErrorKind::bad_input) << message;
  }
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(err, "") << "stray stderr output for " << path;
  EXPECT_EQ(message.find('\n'), std::string::npos) << "not one line: " << message;
  for (const auto& n : needles) EXPECT_NE(message.find(n), std::string::npos) << "'" << n << "' not in: " << message;
  return message;
}

// Writes a fuzz-found input, kept as bytes in the test, to `path`.
template <std::size_t N>
void write_bytes(const std::string& path, const unsigned char (&bytes)[N]) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes), N);
}

}  // namespace

TEST(TiffBadInput, MissingPathEmptyPathAndUnmatchedGlob) {
  tifftest::TempDir dir;
  expect_bad_input(dir.file("nope.tif"), {dir.file("nope.tif"), "no such file"});
  expect_bad_input(dir.file("nope*.tif"), {dir.file("nope*.tif"), "no file matches"});
  expect_bad_input("", {"empty path"});
  expect_bad_input(dir.path(), {dir.path(), "no .tif"});  // empty folder: zero pages
}

TEST(TiffBadInput, PathThroughARegularFileIsRefused) {
  tifftest::TempDir dir;
  std::ofstream(dir.file("plain")) << "x";
  expect_bad_input(dir.file("plain/frame.tif"), {dir.file("plain/frame.tif")});
}

TEST(TiffBadInput, PermissionDenied) {
  tifftest::TempDir dir;
  PageSpec spec;
  ASSERT_TRUE(tifftest::write_pages(dir.file("secret.tif"), spec, 1));
  ::chmod(dir.file("secret.tif").c_str(), 0);
  ::chmod(dir.path().c_str(), 0755);
  if (::geteuid() != 0) {
    expect_bad_input(dir.file("secret.tif"), {dir.file("secret.tif"), "permission denied"});
    return;
  }
  // Root reads anything: drop to an unprivileged user in a child process,
  // so the check runs against the real kernel permission, not a simulation.
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(3);
    try {
      TiffSeries::open(dir.file("secret.tif"));
    } catch (const Error& e) {
      std::string m = e.what();
      bool ok = e.kind() == ErrorKind::bad_input && m.find(dir.file("secret.tif")) != std::string::npos &&
                m.find("permission denied") != std::string::npos;
      ::_exit(ok ? 0 : 1);
    } catch (...) {
      ::_exit(2);
    }
    ::_exit(4);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 3) GTEST_SKIP() << "cannot drop privileges to uid 65534 here";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: wrong message, 2: wrong exception, 4: no error";
}

TEST(TiffBadInput, NotATiff) {
  tifftest::TempDir dir;
  std::ofstream(dir.file("text.tif")) << "hello, this is not an image\n";
  expect_bad_input(dir.file("text.tif"), {dir.file("text.tif"), "not a TIFF"});
  { std::ofstream empty(dir.file("empty.tif")); }  // a file of 0 bytes
  expect_bad_input(dir.file("empty.tif"), {dir.file("empty.tif")});
}

TEST(TiffBadInput, TruncatedFiles) {
  tifftest::TempDir dir;
  // libtiff layout (data, then its IFD): cutting the file loses later IFDs.
  PageSpec spec;
  ASSERT_TRUE(tifftest::write_pages(dir.file("full.tif"), spec, 5));
  auto size = std::filesystem::file_size(dir.file("full.tif"));
  std::filesystem::copy_file(dir.file("full.tif"), dir.file("cut.tif"));
  std::filesystem::resize_file(dir.file("cut.tif"), size * 6 / 10);
  expect_bad_input(dir.file("cut.tif"), {dir.file("cut.tif"), "frame", "truncated"});

  // IFDs first, data after: the index is intact, frame 2's pixels are cut.
  RawTiff raw;
  raw.build();
  raw.save(dir.file("raw_ok.tif"));
  auto ok = TiffSeries::open(dir.file("raw_ok.tif"));
  EXPECT_EQ(ok->frame(2).at(3, 1), float(2 * 1000 + 8 + 3));
  raw.save(dir.file("raw_cut.tif"), raw.bytes.size() - 10);
  testing::internal::CaptureStderr();
  auto cut = TiffSeries::open(dir.file("raw_cut.tif"));  // frames 0 and 1 are whole
  EXPECT_EQ(cut->frame(1).at(0, 0), 1000.0f);
  try {
    cut->frame(2);
    ADD_FAILURE() << "truncated frame 2 read without error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_EQ(e.kind(), ErrorKind::bad_input);
    EXPECT_NE(m.find(dir.file("raw_cut.tif")), std::string::npos) << m;
    EXPECT_NE(m.find("frame 2"), std::string::npos) << m;
  }
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

// Found by fuzz_tiff_reader: a 439-byte file whose IFD claims a 7x2293765
// frame in strips of 5 rows, with one strip (70 bytes) recorded. libtiff read
// the missing strips as nothing, so the file decoded as 16 million zeros
// (and took seconds). Every strip must lie inside the file and hold its rows.
TEST(TiffBadInput, FuzzFoundStripsPastTheEndOfTheFile) {
  tifftest::TempDir dir;
  const unsigned char bytes[] = {
      0x49, 0x49, 0x2a, 0x00, 0x95, 0x00, 0x00, 0x00, 0x00, 0x25, 0x4a, 0x6f, 0x94, 0xb9, 0xde, 0x03, 0x28, 0x4d, 0x72,
      0x97, 0xbc, 0xe1, 0x06, 0x2b, 0x50, 0x75, 0x9a, 0xbf, 0xe4, 0x09, 0x2e, 0x53, 0x78, 0x9d, 0xc2, 0xe7, 0x0c, 0x31,
      0x56, 0x7b, 0xa0, 0xc5, 0xea, 0x0f, 0x34, 0x59, 0x7e, 0xa3, 0xc8, 0xed, 0x12, 0x37, 0x5c, 0x81, 0xa6, 0xcb, 0xf0,
      0x15, 0x3a, 0x5f, 0x84, 0xa9, 0xce, 0xf3, 0x18, 0x3d, 0x62, 0x87, 0xac, 0xd1, 0xf6, 0x1b, 0x40, 0x65, 0x8a, 0xaf,
      0xd4, 0xf9, 0x01, 0x26, 0x4b, 0x70, 0x95, 0xba, 0xdf, 0x04, 0x29, 0x4e, 0x73, 0x98, 0xbd, 0xe2, 0x07, 0x2c, 0x51,
      0x76, 0x9b, 0xc0, 0xe5, 0x0a, 0x2f, 0x54, 0x79, 0x9e, 0xc3, 0xe8, 0x0d, 0x32, 0x57, 0x7c, 0xa1, 0xc6, 0xeb, 0x10,
      0x35, 0x5a, 0x7f, 0xa4, 0xc9, 0xee, 0x13, 0x38, 0x5d, 0x82, 0xa7, 0xcc, 0xf1, 0x16, 0x3b, 0x60, 0x85, 0xaa, 0xcf,
      0xf4, 0x19, 0x3e, 0x63, 0x88, 0xad, 0xd2, 0xf7, 0x1c, 0x41, 0x66, 0x8b, 0xb0, 0xd5, 0xfa, 0x00, 0x0a, 0x00, 0x00,
      0x01, 0x04, 0x00, 0x01, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0x01, 0x01, 0x04, 0x00, 0x01, 0x00, 0x00, 0x00,
      0x05, 0x00, 0x23, 0x00, 0x02, 0x01, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x03, 0x01, 0x03,
      0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x06, 0x01, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00,
      0x00, 0x00, 0x11, 0x01, 0x04, 0x00, 0x01, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x15, 0x01, 0x03, 0x00, 0x01,
      0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x16, 0x01, 0x04, 0x00, 0x01, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00,
      0x17, 0x01, 0x04, 0x00, 0x01, 0x00, 0x00, 0x00, 0x46, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x53, 0x01, 0x03, 0x00, 0x01, 0x00, 0x00,
      0x00, 0x02, 0x00, 0x00, 0x00, 0x13, 0x01, 0x00, 0x00, 0x0a, 0x00, 0x00, 0x01, 0x04, 0x00, 0x01, 0x00, 0x00, 0x00,
      0x07, 0x00, 0x00, 0x00, 0x01, 0x01, 0x04, 0x00, 0x01, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x02, 0x01, 0x07,
      0x00, 0x01, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x03, 0x01, 0x03, 0x00, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x16, 0x01, 0x04, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x06, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x17, 0x01, 0x04, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x60, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x17, 0x01, 0x04, 0x00, 0x01, 0x00, 0x00,
      0x00, 0x46, 0x00, 0x00, 0x00, 0x53, 0x01, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00};
  write_bytes(dir.file("fuzz.tif"), bytes);
  expect_bad_input(dir.file("fuzz.tif"), {dir.file("fuzz.tif"), "frame 0", "truncated"});
}

// Found by fuzz_tiff_reader too: a 200-byte bilevel file (BitsPerSample
// missing) claiming 138x66301 pixels, decoded through libtiff's RGBA reader,
// which did its own strip reads past the end of the file.
TEST(TiffBadInput, FuzzFoundBilevelImagePastTheEndOfTheFile) {
  tifftest::TempDir dir;
  const unsigned char bytes[] = {
      0x49, 0x49, 0x2a, 0x00, 0x4a, 0x00, 0x00, 0x00, 0x3f, 0x00, 0x25, 0x4a, 0x6f, 0x94, 0xb9, 0xde, 0x07, 0x28, 0x4d,
      0x72, 0x75, 0x97, 0xbc, 0xe1, 0x06, 0x2b, 0x50, 0x21, 0x9a, 0xbf, 0xe4, 0x09, 0x2e, 0x53, 0x78, 0x9d, 0xc2, 0xe7,
      0x0c, 0x31, 0x56, 0x7b, 0xa0, 0xc4, 0xea, 0x0f, 0x34, 0x59, 0x7e, 0xa3, 0xc8, 0xed, 0x81, 0x5c, 0x37, 0x12, 0xa6,
      0xcb, 0xf0, 0x15, 0x3a, 0x5f, 0x84, 0xa9, 0xce, 0xf3, 0x18, 0x3d, 0x62, 0xac, 0xd1, 0xb6, 0x1b, 0x00, 0x0a, 0x00,
      0x00, 0x01, 0x04, 0x00, 0x01, 0x00, 0x00, 0x00, 0x8a, 0x00, 0x00, 0x00, 0x01, 0x01, 0x04, 0x00, 0x01, 0x00, 0x00,
      0x00, 0xfd, 0x02, 0x01, 0x00, 0x00, 0x0a, 0x60, 0x00, 0x00, 0x00, 0x53, 0x01, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00,
      0x01, 0x00, 0x01, 0xa1, 0x0a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x06, 0x01, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01,
      0x02, 0x00, 0x00, 0x11, 0x01, 0x04, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x16, 0x01, 0x04, 0x00, 0x01, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00,
      0x00, 0x17, 0x01, 0x04, 0x00, 0x11, 0x00, 0x00, 0x00, 0x41, 0x00, 0x00, 0x00, 0x43, 0x01, 0x03, 0x00, 0x01, 0x00,
      0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
  write_bytes(dir.file("fuzz2.tif"), bytes);
  expect_bad_input(dir.file("fuzz2.tif"), {dir.file("fuzz2.tif"), "frame 0", "truncated"});
}

TEST(TiffBadInput, CorruptIfds) {
  tifftest::TempDir dir;
  {
    RawTiff raw;  // frame 2's next pointer loops back to frame 1
    raw.build();
    raw.put32(RawTiff::next_pointer(2), RawTiff::ifd_offset(1));
    raw.save(dir.file("loop.tif"));
    expect_bad_input(dir.file("loop.tif"), {dir.file("loop.tif"), "loops"});
  }
  {
    RawTiff raw;  // frame 1's IFD claims no entries
    raw.build();
    raw.put16(RawTiff::ifd_offset(1), 0);
    raw.save(dir.file("zero_entries.tif"));
    expect_bad_input(dir.file("zero_entries.tif"), {dir.file("zero_entries.tif"), "frame 1", "corrupt IFD"});
  }
  {
    RawTiff raw;  // frame 1's next IFD lies beyond the file
    raw.build();
    raw.put32(RawTiff::next_pointer(1), 0x7fffff00u);
    raw.save(dir.file("far.tif"));
    expect_bad_input(dir.file("far.tif"), {dir.file("far.tif"), "frame 2"});
  }
  {
    RawTiff raw;  // frame 2 has a zero width
    raw.build();
    raw.put32(RawTiff::entry_value(2, 0), 0);
    raw.save(dir.file("nowidth.tif"));
    expect_bad_input(dir.file("nowidth.tif"), {dir.file("nowidth.tif"), "frame 2", "corrupt IFD"});
  }
  {
    RawTiff raw;  // frame 1's strip offset points far beyond the end
    raw.build();
    raw.put32(RawTiff::entry_value(1, 5), 0x7ff00000u);
    raw.save(dir.file("strip.tif"));
    expect_bad_input(dir.file("strip.tif"), {dir.file("strip.tif"), "frame 1"});
  }
  {
    RawTiff raw;  // a huge width in a tiny file must not allocate gigabytes
    raw.build();
    raw.put32(RawTiff::entry_value(0, 0), 0x7fffffffu);
    raw.put32(RawTiff::entry_value(1, 0), 0x7fffffffu);
    raw.put32(RawTiff::entry_value(2, 0), 0x7fffffffu);
    raw.save(dir.file("huge.tif"));
    expect_bad_input(dir.file("huge.tif"), {dir.file("huge.tif"), "frame 0"});
  }
}

TEST(TiffBadInput, ZeroPages) {
  tifftest::TempDir dir;
  RawTiff raw;
  raw.pages = 0;
  raw.build();
  raw.save(dir.file("zero.tif"));
  expect_bad_input(dir.file("zero.tif"), {dir.file("zero.tif"), "zero pages"});
}

TEST(TiffBadInput, FramesOfDifferentSizeOrTypeInOneSeries) {
  tifftest::TempDir dir;
  PageSpec a, b, c;
  b.width = 30;
  c.bits = 32;
  c.sample_format = SAMPLEFORMAT_IEEEFP;
  ASSERT_TRUE(tifftest::write_pages(dir.file("sizes.tif"), a, 3, false, {a, a, b}));
  expect_bad_input(dir.file("sizes.tif"), {dir.file("sizes.tif"), "frame 2", "30x17", "24x17"});
  ASSERT_TRUE(tifftest::write_pages(dir.file("types.tif"), a, 2, false, {a, c}));
  expect_bad_input(dir.file("types.tif"), {dir.file("types.tif"), "frame 1", "float32", "uint16"});

  std::filesystem::create_directory(dir.file("folder"));
  ASSERT_TRUE(tifftest::write_pages(dir.file("folder/f1.tif"), a, 1));
  ASSERT_TRUE(tifftest::write_pages(dir.file("folder/f2.tif"), a, 1));
  ASSERT_TRUE(tifftest::write_pages(dir.file("folder/f10.tif"), b, 1));
  expect_bad_input(dir.file("folder"), {dir.file("folder/f10.tif"), "frame 2", "30x17"});
}

TEST(TiffBadInput, UnsupportedSampleFormats) {
  tifftest::TempDir dir;
  struct Case {
    std::uint16_t bits, format;
    const char* name;
  };
  const Case cases[] = {{16, SAMPLEFORMAT_IEEEFP, "half.tif"},
                        {12, SAMPLEFORMAT_UINT, "twelve.tif"},
                        {64, SAMPLEFORMAT_COMPLEXIEEEFP, "complex.tif"},
                        {64, SAMPLEFORMAT_INT, "int64.tif"}};
  for (const Case& c : cases) {
    PageSpec spec;
    spec.bits = c.bits;
    spec.sample_format = c.format;
    spec.width = 16;  // whole bytes per row for the 12-bit case
    // the pattern writer only knows whole-byte types: write raw bytes
    std::string path = dir.file(c.name);
    TIFF* tif = TIFFOpen(path.c_str(), "w");
    ASSERT_NE(tif, nullptr);
    TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, 16u);
    TIFFSetField(tif, TIFFTAG_IMAGELENGTH, 4u);
    TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, c.bits);
    TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT, c.format);
    TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, 1);
    TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
    TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, 4u);
    std::vector<unsigned char> data(16u * 4u * c.bits / 8u, 1);
    ASSERT_GE(TIFFWriteEncodedStrip(tif, 0, data.data(), tmsize_t(data.size())), 0);
    TIFFWriteDirectory(tif);
    TIFFClose(tif);
    expect_bad_input(path, {path, "frame 0", "unsupported sample format"});
  }
}
