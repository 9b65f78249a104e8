// Reading TIFF series: every pixel type and layout, multi-page vs folder,
// random access, BigTIFF, compression, metadata, the cache bound, the real
// STEM series of the optional sample data (sample_data.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <thread>

#include "driftscan/core/error.hpp"
#include "driftscan/formats/tiff/tiff_series.hpp"
#include "driftscan/formats/tiff/tiff_writer.hpp"
#include "sample_data.hpp"
#include "tiff_test_files.hpp"

using namespace driftscan;
using tifftest::PageSpec;

namespace {

void expect_same(const Frame& a, const Frame& b, const std::string& what, float tol = 0.0f) {
  ASSERT_EQ(a.width, b.width) << what;
  ASSERT_EQ(a.height, b.height) << what;
  std::size_t bad = 0;
  float worst = 0.0f;
  for (std::size_t i = 0; i < a.size(); ++i) {
    float d = std::fabs(a.pixels[i] - b.pixels[i]);
    if (!(d <= tol)) ++bad;
    worst = std::max(worst, d);
  }
  EXPECT_EQ(bad, 0u) << what << ": largest difference " << worst;
}

void expect_pages(const std::string& path, const PageSpec& spec, int pages, PixelType type, const std::string& what,
                  float tol = 0.0f) {
  auto series = TiffSeries::open(path);
  ASSERT_EQ(series->frame_count(), std::size_t(pages)) << what;
  EXPECT_EQ(series->width(), int(spec.width)) << what;
  EXPECT_EQ(series->height(), int(spec.height)) << what;
  EXPECT_EQ(series->info().pixel_type, type) << what << ": " << to_string(series->info().pixel_type);
  for (int k = 0; k < pages; ++k)
    expect_same(series->frame(std::size_t(k)), tifftest::expected_frame(spec, k), what + " frame " + std::to_string(k),
                tol);
}

struct TypeCase {
  std::uint16_t bits, format;
  PixelType type;
};
const TypeCase kTypes[] = {
    {8, SAMPLEFORMAT_UINT, PixelType::uint8},      {16, SAMPLEFORMAT_UINT, PixelType::uint16},
    {32, SAMPLEFORMAT_UINT, PixelType::uint32},    {8, SAMPLEFORMAT_INT, PixelType::int8},
    {16, SAMPLEFORMAT_INT, PixelType::int16},      {32, SAMPLEFORMAT_INT, PixelType::int32},
    {32, SAMPLEFORMAT_IEEEFP, PixelType::float32}, {64, SAMPLEFORMAT_IEEEFP, PixelType::float64},
};

}  // namespace

TEST(TiffSeries, EveryPixelTypeInStripsAndTilesReadsBackExactly) {
  tifftest::TempDir dir;
  for (const TypeCase& t : kTypes) {
    for (std::uint32_t tile : {0u, 16u}) {
      PageSpec spec;
      spec.bits = t.bits;
      spec.sample_format = t.format;
      spec.tile = tile;
      std::string name = std::string(to_string(t.type)) + (tile ? "_tiled" : "_strips") + ".tif";
      ASSERT_TRUE(tifftest::write_pages(dir.file(name), spec, 3)) << name;
      expect_pages(dir.file(name), spec, 3, t.type, name);
    }
  }
}

TEST(TiffSeries, BigEndianFilesOfEveryTypeReadBack) {
  tifftest::TempDir dir;
  for (const TypeCase& t : kTypes) {
    PageSpec spec;
    spec.bits = t.bits;
    spec.sample_format = t.format;
    spec.compression = COMPRESSION_LZW;
    std::string name = std::string("be_") + to_string(t.type) + ".tif";
    ASSERT_TRUE(tifftest::write_pages(dir.file(name), spec, 2, false, {}, /*big_endian=*/true));
    expect_pages(dir.file(name), spec, 2, t.type, name);
  }
}

TEST(TiffSeries, CompressedStripsAndTilesWithEveryLosslessCodecMatch) {
  tifftest::TempDir dir;
  struct Codec {
    std::uint16_t id;
    const char* name;
    std::uint16_t predictor;
  };
  const Codec codecs[] = {{COMPRESSION_LZW, "lzw", 2},
                          {COMPRESSION_ADOBE_DEFLATE, "deflate", 2},
                          {COMPRESSION_PACKBITS, "packbits", 0},
                          {COMPRESSION_LZMA, "lzma", 0},
                          {COMPRESSION_ZSTD, "zstd", 2},
                          {COMPRESSION_LERC, "lerc", 0},
                          {COMPRESSION_ADOBE_DEFLATE, "deflate-nopred", 0}};
  int tested = 0;
  for (const Codec& c : codecs) {
    if (!TIFFIsCODECConfigured(c.id)) continue;
    for (std::uint32_t tile : {0u, 32u}) {
      for (const TypeCase& t : {kTypes[1], kTypes[6]}) {  // uint16, float32
        PageSpec spec;
        spec.width = 70;
        spec.height = 45;
        spec.bits = t.bits;
        spec.sample_format = t.format;
        spec.compression = c.id;
        spec.tile = tile;
        spec.predictor = c.predictor ? (t.format == SAMPLEFORMAT_IEEEFP ? 3 : c.predictor) : 0;
        std::string name = std::string(c.name) + "_" + to_string(t.type) + (tile ? "_tiled" : "") + ".tif";
        ASSERT_TRUE(tifftest::write_pages(dir.file(name), spec, 2)) << name;
        expect_pages(dir.file(name), spec, 2, t.type, name);
        ++tested;
      }
    }
  }
  EXPECT_GE(tested, 12);  // at least LZW, Deflate, PackBits in both layouts
}

TEST(TiffSeries, JpegCompressedGrayIsDecodedWithinJpegError) {
  if (!TIFFIsCODECConfigured(COMPRESSION_JPEG)) GTEST_SKIP() << "libtiff built without JPEG";
  tifftest::TempDir dir;
  PageSpec spec;
  spec.bits = 8;
  spec.width = 64;
  spec.height = 64;
  spec.rows_per_strip = 16;
  spec.compression = COMPRESSION_JPEG;
  ASSERT_TRUE(tifftest::write_pages(dir.file("jpeg.tif"), spec, 1));
  auto series = TiffSeries::open(dir.file("jpeg.tif"));
  Frame f = series->frame(0), e = tifftest::expected_frame(spec, 0);
  double err = 0;
  for (std::size_t i = 0; i < f.size(); ++i) err += std::fabs(f.pixels[i] - e.pixels[i]);
  EXPECT_LT(err / f.size(), 40.0);  // lossy, but the image is there (not zeros)
  EXPECT_EQ(series->info().compression, "JPEG");
}

TEST(TiffSeries, RgbBecomesLuminanceWithAWarning) {
  tifftest::TempDir dir;
  for (std::uint16_t planar : {PLANARCONFIG_CONTIG, PLANARCONFIG_SEPARATE}) {
    for (std::uint16_t bits : {8, 16}) {
      PageSpec spec;
      spec.bits = bits;
      spec.samples = 3;
      spec.photometric = PHOTOMETRIC_RGB;
      spec.planar = planar;
      std::string name = "rgb" + std::to_string(bits) + "_" + std::to_string(planar) + ".tif";
      ASSERT_TRUE(tifftest::write_pages(dir.file(name), spec, 2));
      auto series = TiffSeries::open(dir.file(name));
      for (int k = 0; k < 2; ++k)
        expect_same(series->frame(std::size_t(k)), tifftest::expected_frame(spec, k), name, 0.05f);
      auto warnings = series->warnings();
      ASSERT_FALSE(warnings.empty()) << name;
      EXPECT_NE(warnings.front().find("luminance"), std::string::npos) << warnings.front();
    }
  }
}

TEST(TiffSeries, MultiPageAndFolderAndGlobGiveTheSameFramesInNaturalOrder) {
  tifftest::TempDir dir;
  PageSpec spec;
  const int n = 12;
  ASSERT_TRUE(tifftest::write_pages(dir.file("stack.tif"), spec, n));
  std::filesystem::create_directory(dir.file("folder"));
  // one file per frame; lexicographic order would put f10 before f2
  for (int k = 0; k < n; ++k) {
    std::string single = dir.file("folder/f" + std::to_string(k) + ".tif");
    // page k's content as the only page of its file
    ASSERT_TRUE(tifftest::write_pages(dir.file("tmp.tif"), spec, k + 1));
    auto src = TiffSeries::open(dir.file("tmp.tif"));
    write_tiff(single, src->frame(std::size_t(k)), TiffWriteOptions{SampleFormat::uint16, 0.0, "", false});
  }
  std::ofstream(dir.file("folder/notes.txt")) << "not a frame";
  auto stack = TiffSeries::open(dir.file("stack.tif"));
  auto folder = TiffSeries::open(dir.file("folder"));
  auto glob = TiffSeries::open(dir.file("folder/f*.tif"));
  ASSERT_EQ(folder->frame_count(), std::size_t(n));
  ASSERT_EQ(glob->frame_count(), std::size_t(n));
  EXPECT_TRUE(folder->info().multi_file);
  EXPECT_EQ(folder->info().files, std::size_t(n));
  for (int k = 0; k < n; ++k) {
    Frame a = stack->frame(std::size_t(k));
    expect_same(a, folder->frame(std::size_t(k)), "folder frame " + std::to_string(k));
    expect_same(a, glob->frame(std::size_t(k)), "glob frame " + std::to_string(k));
  }
}

TEST(TiffSeries, RandomAccessOrderDoesNotChangeTheData) {
  tifftest::TempDir dir;
  PageSpec spec;
  spec.compression = COMPRESSION_LZW;
  const int n = 40;
  ASSERT_TRUE(tifftest::write_pages(dir.file("s.tif"), spec, n));
  std::vector<std::size_t> order(n);
  for (int k = 0; k < n; ++k) order[std::size_t(k)] = std::size_t(k);
  std::mt19937 rng(7);
  for (int round = 0; round < 3; ++round) {
    std::shuffle(order.begin(), order.end(), rng);
    auto series = TiffSeries::open(dir.file("s.tif"), 0);  // no cache: every read decodes
    for (std::size_t k : order)
      expect_same(series->frame(k), tifftest::expected_frame(spec, int(k)), "frame " + std::to_string(k));
  }
  // backwards, repeatedly
  auto series = TiffSeries::open(dir.file("s.tif"), 0);
  for (int rep = 0; rep < 2; ++rep)
    for (int k = n - 1; k >= 0; k -= 3)
      expect_same(series->frame(std::size_t(k)), tifftest::expected_frame(spec, k), "backwards");
}

TEST(TiffSeries, ConcurrentReadersGetTheRightFrames) {
  tifftest::TempDir dir;
  PageSpec spec;
  spec.compression = COMPRESSION_ADOBE_DEFLATE;
  const int n = 30;
  ASSERT_TRUE(tifftest::write_pages(dir.file("s.tif"), spec, n));
  TiffReadOptions options;
  options.cache_bytes = 4 * std::size_t(spec.width) * spec.height * sizeof(float);
  auto series = TiffSeries::open(dir.file("s.tif"), options);
  std::vector<Frame> expected;
  expected.reserve(n);
  for (int k = 0; k < n; ++k) expected.push_back(tifftest::expected_frame(spec, k));
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  threads.reserve(4);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      std::mt19937 rng{static_cast<unsigned>(t)};
      for (int i = 0; i < 200; ++i) {
        std::size_t k = rng() % n;
        if (series->frame(k).pixels != expected[k].pixels) ++wrong;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(TiffSeries, BigTiffFromLibtiffAndFromTheWriterReadsBack) {
  tifftest::TempDir dir;
  PageSpec spec;
  spec.tile = 16;
  spec.compression = COMPRESSION_ADOBE_DEFLATE;
  ASSERT_TRUE(tifftest::write_pages(dir.file("big.tif"), spec, 5, /*bigtiff=*/true));
  auto series = TiffSeries::open(dir.file("big.tif"));
  EXPECT_TRUE(series->info().bigtiff);
  for (int k = 4; k >= 0; --k) expect_same(series->frame(std::size_t(k)), tifftest::expected_frame(spec, k), "bigtiff");

  TiffWriteOptions options;
  options.force_bigtiff = true;
  options.pixel_size = 0.25;
  options.unit = "nm";
  {
    TiffStackWriter writer(dir.file("written_big.tif"), int(spec.width), int(spec.height), 5, options);
    for (int k = 0; k < 5; ++k) writer.append(tifftest::expected_frame(PageSpec{}, k));
    writer.commit();
  }
  auto written = TiffSeries::open(dir.file("written_big.tif"));
  EXPECT_TRUE(written->info().bigtiff);
  EXPECT_EQ(written->info().pixel_type, PixelType::float32);
  EXPECT_NEAR(written->pixel_size(), 0.25, 1e-6);
  for (int k = 0; k < 5; ++k)
    expect_same(written->frame(std::size_t(k)), tifftest::expected_frame(PageSpec{}, k), "written bigtiff");
}

TEST(TiffSeries, PixelSizeFromImageJOmeXmlAndResolutionTags) {
  tifftest::TempDir dir;
  PageSpec ij;
  ij.description = "ImageJ=1.54f\nimages=2\nslices=2\nunit=micron\nspacing=0.5\nloop=false\n";
  ij.xres = 4.0f;  // 4 pixels per micron
  ASSERT_TRUE(tifftest::write_pages(dir.file("ij.tif"), ij, 2));
  auto a = TiffSeries::open(dir.file("ij.tif"));
  EXPECT_NEAR(a->pixel_size(), 0.25, 1e-7);
  EXPECT_EQ(a->pixel_unit(), "um");
  EXPECT_EQ(a->info().calibration_source, "ImageJ");

  PageSpec ome;
  ome.description =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?><OME xmlns=\"http://www.openmicroscopy.org/Schemas/OME/2016-06\">"
      "<Image ID=\"Image:0\"><Pixels ID=\"Pixels:0\" DimensionOrder=\"XYZCT\" Type=\"uint16\" SizeX=\"24\" "
      "SizeY=\"17\" SizeZ=\"1\" SizeC=\"1\" SizeT=\"2\" PhysicalSizeX=\"0.0123\" PhysicalSizeXUnit=\"nm\" "
      "PhysicalSizeY=\"0.0123\" PhysicalSizeYUnit=\"nm\"></Pixels></Image></OME>";
  ome.xres = 99.0f;  // ignored: OME-XML is more specific
  ASSERT_TRUE(tifftest::write_pages(dir.file("ome.tif"), ome, 2));
  auto b = TiffSeries::open(dir.file("ome.tif"));
  EXPECT_NEAR(b->pixel_size(), 0.0123, 1e-9);
  EXPECT_EQ(b->pixel_unit(), "nm");
  EXPECT_EQ(b->info().calibration_source, "OME-XML");

  PageSpec ome_default_unit = ome;  // PhysicalSizeXUnit absent: micrometres
  ome_default_unit.description = "<OME><Image><Pixels PhysicalSizeX=\"0.5\" PhysicalSizeY=\"0.5\"/></Image></OME>";
  ASSERT_TRUE(tifftest::write_pages(dir.file("ome2.tif"), ome_default_unit, 1));
  auto b2 = TiffSeries::open(dir.file("ome2.tif"));
  EXPECT_NEAR(b2->pixel_size(), 0.5, 1e-9);
  EXPECT_EQ(b2->pixel_unit(), "um");

  PageSpec cm;
  cm.xres = 1.0e7f;  // 10^7 pixels per centimetre = 1 nm pixels
  cm.resunit = RESUNIT_CENTIMETER;
  ASSERT_TRUE(tifftest::write_pages(dir.file("cm.tif"), cm, 1));
  auto c = TiffSeries::open(dir.file("cm.tif"));
  EXPECT_NEAR(c->pixel_size(), 1.0, 1e-5);
  EXPECT_EQ(c->pixel_unit(), "nm");
  EXPECT_EQ(c->info().calibration_source, "resolution tags");

  PageSpec none;
  ASSERT_TRUE(tifftest::write_pages(dir.file("none.tif"), none, 1));
  auto d = TiffSeries::open(dir.file("none.tif"));
  EXPECT_EQ(d->pixel_size(), 0.0);
  EXPECT_EQ(d->pixel_unit(), "");
}

TEST(TiffSeries, FrameCacheStaysWithinItsByteBound) {
  tifftest::TempDir dir;
  PageSpec spec;
  const int n = 25;
  ASSERT_TRUE(tifftest::write_pages(dir.file("s.tif"), spec, n));
  const std::size_t frame_bytes = std::size_t(spec.width) * spec.height * sizeof(float);
  auto series = TiffSeries::open(dir.file("s.tif"), 3 * frame_bytes + frame_bytes / 2);
  for (int k = 0; k < n; ++k) {
    series->frame(std::size_t(k));
    EXPECT_LE(series->cache().size_bytes(), series->cache().capacity_bytes());
  }
  EXPECT_EQ(series->cache().count(), 3u);
  std::size_t hits = series->cache().hits();
  series->frame(n - 1);  // recent: served from the cache
  EXPECT_EQ(series->cache().hits(), hits + 1);
  std::size_t misses = series->cache().misses();
  series->frame(0);  // evicted long ago: decoded again, still right
  EXPECT_EQ(series->cache().misses(), misses + 1);
  expect_same(series->frame(0), tifftest::expected_frame(spec, 0), "frame 0 after eviction");

  FrameCache tiny(100);  // a frame larger than the budget is not kept
  tiny.insert(1, std::make_shared<const Frame>(Frame(10, 10)));
  EXPECT_EQ(tiny.count(), 0u);
  EXPECT_EQ(tiny.size_bytes(), 0u);
}

// shared_frame hands out the cache's own frame (no copy) while it is kept,
// the right frame whatever the cache holds, and one that outlives its eviction.
TEST(TiffSeries, SharedFramesAreTheCachesOwnAndOutliveEviction) {
  tifftest::TempDir dir;
  PageSpec spec;
  const int n = 6;
  ASSERT_TRUE(tifftest::write_pages(dir.file("s.tif"), spec, n));
  const std::size_t frame_bytes = std::size_t(spec.width) * spec.height * sizeof(float);
  auto series = TiffSeries::open(dir.file("s.tif"), 2 * frame_bytes);
  const std::shared_ptr<const Frame> first = series->shared_frame(1);
  EXPECT_EQ(series->shared_frame(1).get(), first.get());  // kept: the same frame, not a copy
  for (int k = 0; k < n; ++k) {
    const std::shared_ptr<const Frame> f = series->shared_frame(std::size_t(k));
    expect_same(*f, tifftest::expected_frame(spec, k), "shared frame " + std::to_string(k));
  }
  EXPECT_NE(series->shared_frame(1).get(), first.get());  // evicted, decoded again
  expect_same(*first, tifftest::expected_frame(spec, 1), "frame 1 held through its eviction");
  const TiffSeries& as_source = *series;
  expect_same(*static_cast<const FrameSource&>(as_source).shared_frame(4), series->frame(4), "through FrameSource");
  // A source without a cache: the default, a copy of frame(k).
  FrameVector v({tifftest::expected_frame(spec, 0), tifftest::expected_frame(spec, 1)});
  expect_same(*v.shared_frame(1), tifftest::expected_frame(spec, 1), "FrameVector");
}

TEST(TiffSeries, RealStemSeriesFromSampleData) {
  const std::string path = test::sample_file("stem_abf_series.tif");
  if (path.empty()) GTEST_SKIP() << test::sample_absent("stem_abf_series.tif");
  auto series = TiffSeries::open(path);
  EXPECT_EQ(series->frame_count(), 5u);
  EXPECT_EQ(series->width(), 512);
  EXPECT_EQ(series->height(), 512);
  EXPECT_EQ(series->info().pixel_type, PixelType::uint16);
  EXPECT_EQ(series->pixel_unit(), "nm");
  EXPECT_NEAR(series->pixel_size(), 0.0092, 1e-6);  // 9.20 pm
  EXPECT_EQ(series->info().calibration_source, "ImageJ");
  for (std::size_t k = 0; k < 5; ++k) {
    Frame f = series->frame(k);
    auto [lo, hi] = std::minmax_element(f.pixels.begin(), f.pixels.end());
    EXPECT_LT(*lo, *hi) << "frame " << k << " is flat";
    EXPECT_GE(*lo, 0.0f);
    EXPECT_LE(*hi, 65535.0f);
  }
  EXPECT_NE(series->describe().find("5 x 512x512 uint16"), std::string::npos) << series->describe();
}

TEST(TiffSeries, BilevelAndFourBitPagesUnpackIncludingCcittFax4) {
  tifftest::TempDir dir;
  struct Case {
    std::uint16_t bits, compression;
    const char* name;
  };
  const Case cases[] = {
      {1, COMPRESSION_NONE, "b1.tif"}, {1, COMPRESSION_CCITTFAX4, "g4.tif"}, {4, COMPRESSION_PACKBITS, "b4.tif"}};
  const std::uint32_t w = 21, h = 9;  // rows end mid-byte
  auto value = [](std::uint32_t x, std::uint32_t y, int bits) {
    return bits == 1 ? ((x * 3 + y) % 5 == 0 ? 1u : 0u) : (x + 2 * y) % 16u;
  };
  for (const Case& c : cases) {
    if (!TIFFIsCODECConfigured(c.compression)) continue;
    std::string path = dir.file(c.name);
    TIFF* tif = TIFFOpen(path.c_str(), "w");
    ASSERT_NE(tif, nullptr);
    TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, w);
    TIFFSetField(tif, TIFFTAG_IMAGELENGTH, h);
    TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, c.bits);
    TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, 1);
    TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
    TIFFSetField(tif, TIFFTAG_COMPRESSION, c.compression);
    TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, h);
    const std::size_t row = (w * c.bits + 7) / 8;
    std::vector<unsigned char> data(row * h, 0);
    for (std::uint32_t y = 0; y < h; ++y)
      for (std::uint32_t x = 0; x < w; ++x) {
        std::size_t bit = std::size_t(x) * c.bits;
        data[y * row + bit / 8] |= static_cast<unsigned char>(value(x, y, c.bits) << (8 - c.bits - bit % 8));
      }
    ASSERT_GE(TIFFWriteEncodedStrip(tif, 0, data.data(), tmsize_t(data.size())), 0) << c.name;
    TIFFWriteDirectory(tif);
    TIFFClose(tif);
    auto series = TiffSeries::open(path);
    EXPECT_EQ(series->info().pixel_type, PixelType::uint8) << c.name;
    Frame f = series->frame(0);
    for (std::uint32_t y = 0; y < h; ++y)
      for (std::uint32_t x = 0; x < w; ++x)
        ASSERT_EQ(f.at(int(x), int(y)), float(value(x, y, c.bits))) << c.name << " at " << x << "," << y;
  }
}

TEST(TiffSeries, IfdChainOutOfFileOrderIsFollowedInChainOrder) {
  tifftest::TempDir dir;
  tifftest::RawTiff raw;  // chain: IFD 0 -> IFD 2 -> IFD 1 (a backward step, no loop)
  raw.build();
  raw.put32(tifftest::RawTiff::next_pointer(0), tifftest::RawTiff::ifd_offset(2));
  raw.put32(tifftest::RawTiff::next_pointer(2), tifftest::RawTiff::ifd_offset(1));
  raw.put32(tifftest::RawTiff::next_pointer(1), 0);
  raw.save(dir.file("order.tif"));
  auto series = TiffSeries::open(dir.file("order.tif"));
  ASSERT_EQ(series->frame_count(), 3u);
  EXPECT_EQ(series->frame(0).at(0, 0), 0.0f);
  EXPECT_EQ(series->frame(1).at(0, 0), 2000.0f);
  EXPECT_EQ(series->frame(2).at(0, 0), 1000.0f);
}

TEST(TiffSeries, ImageJLargeStackWithASingleIfdReadsAllFrames) {
  // ImageJ saves stacks past 4 GB as one IFD + "images=N" + N frames back to
  // back. Made here from the writer's (same) layout by cutting the IFD chain.
  tifftest::TempDir dir;
  TiffWriteOptions options;
  options.format = SampleFormat::uint16;
  options.pixel_size = 0.5;
  options.unit = "nm";
  {
    TiffStackWriter writer(dir.file("full.tif"), 9, 5, 4, options);
    for (int k = 0; k < 4; ++k) writer.append(Frame(9, 5, float(100 * k + 7)));
    writer.commit();
  }
  std::vector<char> bytes;
  {
    std::ifstream in(dir.file("full.tif"), std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  auto u32 = [&](std::size_t at) {
    std::uint32_t v;
    std::memcpy(&v, bytes.data() + at, 4);
    return v;
  };
  const std::uint32_t ifd0 = u32(4);
  std::uint16_t entries;
  std::memcpy(&entries, bytes.data() + ifd0, 2);
  std::memset(bytes.data() + ifd0 + 2 + std::size_t(12) * entries, 0, 4);  // IFD 0 is the last
  std::ofstream(dir.file("one_ifd.tif"), std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
  auto series = TiffSeries::open(dir.file("one_ifd.tif"));
  ASSERT_EQ(series->frame_count(), 4u);
  for (int k = 3; k >= 0; --k) EXPECT_EQ(series->frame(std::size_t(k)).at(8, 4), float(100 * k + 7));
  EXPECT_NEAR(series->pixel_size(), 0.5, 1e-6);

  // a description claiming far more frames than the file holds
  const std::string d = "images=4\nframes=4\n", more = "images=999999\nf=4\n";  // same length
  auto at = std::search(bytes.begin(), bytes.end(), d.begin(), d.end());
  ASSERT_NE(at, bytes.end());
  std::copy(more.begin(), more.end(), at);
  std::ofstream(dir.file("short.tif"), std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
  try {
    TiffSeries::open(dir.file("short.tif"));
    ADD_FAILURE() << "a stack claiming 999999 frames with data for 4 opened";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(dir.file("short.tif")), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
}
