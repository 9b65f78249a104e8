#pragma once
// Test fixtures for the TIFF tests: a temporary folder, TIFF files written
// with libtiff directly (every pixel type and layout the reader must accept,
// including those the engine's writer never produces), and a byte-level
// writer for files libtiff refuses to write (corrupt IFDs, IFDs before data).
#include <tiffio.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "driftscan/core/frame.hpp"

namespace tifftest {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "driftscan-tiff-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The layout of the pages write_pages produces.
struct PageSpec {
  std::uint32_t width = 24, height = 17;  // odd sizes catch stride mistakes
  std::uint16_t bits = 16;
  std::uint16_t sample_format = SAMPLEFORMAT_UINT;
  std::uint16_t samples = 1;
  std::uint16_t photometric = PHOTOMETRIC_MINISBLACK;
  std::uint16_t planar = PLANARCONFIG_CONTIG;
  std::uint16_t compression = COMPRESSION_NONE;
  std::uint16_t predictor = 0;       // 0: none written
  std::uint32_t tile = 0;            // tile edge (multiple of 16), 0: strips
  std::uint32_t rows_per_strip = 5;  // several strips per page
  std::string description;           // page 0 only
  float xres = 0.0f;                 // written with resunit when > 0
  std::uint16_t resunit = RESUNIT_NONE;
};

// A value of sample `s` of pixel (x, y) of page k that fills each type's
// range with both signs, stored as the type's bytes, and its float value.
inline double pattern(const PageSpec& p, int k, std::uint32_t x, std::uint32_t y, int s) {
  double base = double(x) * 13.0 + double(y) * 101.0 + double(k) * 977.0 + s * 31.0;
  if (p.sample_format == SAMPLEFORMAT_IEEEFP) return std::sin(base * 0.01) * (p.bits == 64 ? 1e6 : 1e3) + k;
  double range = std::ldexp(1.0, p.bits);
  double v = std::fmod(base * (p.bits >= 16 ? 257.0 : 1.0), range);
  if (p.bits == 32) v = std::fmod(base * 4294967.0, range);  // large values too
  if (p.sample_format == SAMPLEFORMAT_INT) v -= range / 2;
  return v;
}

inline void put_sample(const PageSpec& p, double v, unsigned char* dst) {
  switch (p.sample_format) {
    case SAMPLEFORMAT_IEEEFP:
      if (p.bits == 32) {
        float f = float(v);
        std::memcpy(dst, &f, 4);
      } else {
        std::memcpy(dst, &v, 8);
      }
      return;
    case SAMPLEFORMAT_INT:
      if (p.bits == 8) {
        std::int8_t i = std::int8_t(v);
        std::memcpy(dst, &i, 1);
      } else if (p.bits == 16) {
        std::int16_t i = std::int16_t(v);
        std::memcpy(dst, &i, 2);
      } else {
        std::int32_t i = std::int32_t(v);
        std::memcpy(dst, &i, 4);
      }
      return;
    default:
      if (p.bits == 8) {
        std::uint8_t i = std::uint8_t(v);
        std::memcpy(dst, &i, 1);
      } else if (p.bits == 16) {
        std::uint16_t i = std::uint16_t(v);
        std::memcpy(dst, &i, 2);
      } else {
        std::uint32_t i = std::uint32_t(v);
        std::memcpy(dst, &i, 4);
      }
  }
}

// What the reader must return for page k (channel 0, or BT.601 luminance).
inline driftscan::Frame expected_frame(const PageSpec& p, int k) {
  driftscan::Frame f(int(p.width), int(p.height));
  for (std::uint32_t y = 0; y < p.height; ++y)
    for (std::uint32_t x = 0; x < p.width; ++x) {
      if (p.photometric == PHOTOMETRIC_RGB) {
        const float w[3] = {0.299f, 0.587f, 0.114f};
        float sum = 0.0f;
        for (int c = 0; c < 3; ++c) sum += w[c] * float(pattern(p, k, x, y, c));
        f.at(int(x), int(y)) = sum;
      } else {
        f.at(int(x), int(y)) = float(pattern(p, k, x, y, 0));
      }
    }
  return f;
}

// Writes `pages` pages with libtiff; returns false when libtiff refused
// (e.g. a codec that is not configured).
inline bool write_pages(const std::string& path, const PageSpec& p, int pages, bool bigtiff = false,
                        std::vector<PageSpec> per_page = {}, bool big_endian = false) {
  std::string mode = std::string("w") + (bigtiff ? "8" : "") + (big_endian ? "b" : "l");
  TIFF* tif = TIFFOpen(path.c_str(), mode.c_str());
  if (!tif) return false;
  bool ok = true;
  for (int k = 0; k < pages && ok; ++k) {
    const PageSpec& s = per_page.empty() ? p : per_page[std::size_t(k)];
    TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, s.width);
    TIFFSetField(tif, TIFFTAG_IMAGELENGTH, s.height);
    TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, s.bits);
    TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT, s.sample_format);
    TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, s.samples);
    TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, s.photometric);
    TIFFSetField(tif, TIFFTAG_PLANARCONFIG, s.planar);
    if (!TIFFSetField(tif, TIFFTAG_COMPRESSION, s.compression)) {
      ok = false;
      break;
    }
    if (s.predictor) TIFFSetField(tif, TIFFTAG_PREDICTOR, s.predictor);
    if (k == 0 && !s.description.empty()) TIFFSetField(tif, TIFFTAG_IMAGEDESCRIPTION, s.description.c_str());
    if (s.xres > 0) {
      TIFFSetField(tif, TIFFTAG_XRESOLUTION, s.xres);
      TIFFSetField(tif, TIFFTAG_YRESOLUTION, s.xres);
      TIFFSetField(tif, TIFFTAG_RESOLUTIONUNIT, s.resunit);
    }
    const std::size_t bytes = s.bits / 8;
    const bool separate = s.planar == PLANARCONFIG_SEPARATE;
    const int planes = separate ? s.samples : 1;
    const std::size_t spp = separate ? 1 : s.samples;
    // the whole page, plane by plane, rows packed
    std::vector<std::vector<unsigned char>> plane(
        std::size_t(planes), std::vector<unsigned char>(std::size_t(s.width) * s.height * spp * bytes));
    for (int pl = 0; pl < planes; ++pl)
      for (std::uint32_t y = 0; y < s.height; ++y)
        for (std::uint32_t x = 0; x < s.width; ++x)
          for (std::size_t c = 0; c < spp; ++c) {
            int sample = separate ? pl : int(c);
            put_sample(s, pattern(s, k, x, y, sample),
                       plane[std::size_t(pl)].data() + ((std::size_t(y) * s.width + x) * spp + c) * bytes);
          }
    if (s.tile) {
      TIFFSetField(tif, TIFFTAG_TILEWIDTH, s.tile);
      TIFFSetField(tif, TIFFTAG_TILELENGTH, s.tile);
      std::vector<unsigned char> tile(std::size_t(s.tile) * s.tile * spp * bytes);
      for (int pl = 0; pl < planes; ++pl)
        for (std::uint32_t ty = 0; ty < s.height; ty += s.tile)
          for (std::uint32_t tx = 0; tx < s.width; tx += s.tile) {
            std::fill(tile.begin(), tile.end(), 0);
            for (std::uint32_t y = 0; y < s.tile && ty + y < s.height; ++y)
              for (std::uint32_t x = 0; x < s.tile && tx + x < s.width; ++x)
                std::memcpy(tile.data() + (std::size_t(y) * s.tile + x) * spp * bytes,
                            plane[std::size_t(pl)].data() + ((std::size_t(ty + y) * s.width + tx + x) * spp) * bytes,
                            spp * bytes);
            ttile_t t = TIFFComputeTile(tif, tx, ty, 0, std::uint16_t(pl));
            if (TIFFWriteEncodedTile(tif, t, tile.data(), tmsize_t(tile.size())) < 0) ok = false;
          }
    } else {
      TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, s.rows_per_strip);
      const std::size_t row = std::size_t(s.width) * spp * bytes;
      const std::uint32_t strips = (s.height + s.rows_per_strip - 1) / s.rows_per_strip;
      for (int pl = 0; pl < planes; ++pl)
        for (std::uint32_t st = 0; st < strips; ++st) {
          std::uint32_t y0 = st * s.rows_per_strip;
          std::uint32_t rows = std::min(s.rows_per_strip, s.height - y0);
          if (TIFFWriteEncodedStrip(tif, pl * strips + st, plane[std::size_t(pl)].data() + y0 * row,
                                    tmsize_t(rows * row)) < 0)
            ok = false;
        }
    }
    if (!TIFFWriteDirectory(tif)) ok = false;
  }
  TIFFClose(tif);
  return ok;
}

// A classic little-endian TIFF assembled byte by byte: uint16 pages with one
// strip each, all IFDs first and pixel data after (as some acquisition
// software does), so truncating the file cuts pixel data but keeps IFDs.
// Hooks let a test corrupt single fields.
struct RawTiff {
  std::uint32_t width = 8, height = 6;
  int pages = 3;
  std::vector<unsigned char> bytes;

  static constexpr int kEntries = 8;
  static std::uint32_t ifd_offset(int k) { return 8 + std::uint32_t(k) * (2 + kEntries * 12 + 4); }

  void build() {
    bytes.assign(ifd_offset(pages), 0);
    bytes[0] = 'I';
    bytes[1] = 'I';
    put16(2, 42);
    put32(4, pages ? ifd_offset(0) : 0);
    std::uint32_t data = ifd_offset(pages);
    const std::uint32_t strip = width * height * 2;
    for (int k = 0; k < pages; ++k) {
      std::uint32_t at = ifd_offset(k);
      put16(at, kEntries);
      const std::uint32_t e[kEntries][3] = {{256, 4, width},  {257, 4, height},
                                            {258, 3, 16},     {259, 3, 1},
                                            {262, 3, 1},      {273, 4, data + std::uint32_t(k) * strip},
                                            {278, 4, height}, {279, 4, strip}};
      for (int i = 0; i < kEntries; ++i) {
        std::uint32_t p = at + 2 + std::uint32_t(i) * 12;
        put16(p, std::uint16_t(e[i][0]));
        put16(p + 2, std::uint16_t(e[i][1]));
        put32(p + 4, 1);
        if (e[i][1] == 3) put16(p + 8, std::uint16_t(e[i][2]));
        else put32(p + 8, e[i][2]);
      }
      put32(at + 2 + kEntries * 12, k + 1 < pages ? ifd_offset(k + 1) : 0);
    }
    for (int k = 0; k < pages; ++k)
      for (std::uint32_t i = 0; i < width * height; ++i) {
        std::uint16_t v = std::uint16_t(k * 1000 + i);
        bytes.push_back(std::uint8_t(v & 0xff));
        bytes.push_back(std::uint8_t(v >> 8));
      }
  }
  // The file offset of the value field of entry `i` of page k's IFD.
  static std::uint32_t entry_value(int k, int i) { return ifd_offset(k) + 2 + std::uint32_t(i) * 12 + 8; }
  static std::uint32_t next_pointer(int k) { return ifd_offset(k) + 2 + kEntries * 12; }

  void put16(std::size_t at, std::uint16_t v) {
    bytes[at] = std::uint8_t(v);
    bytes[at + 1] = std::uint8_t(v >> 8);
  }
  void put32(std::size_t at, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) bytes[at + std::size_t(i)] = std::uint8_t(v >> (8 * i));
  }
  void save(const std::string& path, std::size_t truncate_to = 0) const {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(truncate_to ? truncate_to : bytes.size()));
  }
};

}  // namespace tifftest
