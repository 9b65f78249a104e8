#include "formats/tiff/tiff_page_decoder.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "driftscan/core/error.hpp"

namespace driftscan {
namespace {

constexpr float kLuma[3] = {0.299f, 0.587f, 0.114f};

bool is_colour_photometric(std::uint16_t p) {
  return p == PHOTOMETRIC_RGB || p == PHOTOMETRIC_YCBCR || p == PHOTOMETRIC_SEPARATED || p == PHOTOMETRIC_CIELAB ||
         p == PHOTOMETRIC_ICCLAB || p == PHOTOMETRIC_ITULAB;
}

// Converts `count` samples, `stride` samples apart, starting at sample index
// `first` of a packed row, adding weight * value into dst (or storing when
// weight is 0: then dst = value).
template <class T>
void convert_bytes(const unsigned char* row, std::size_t first, std::size_t stride, std::size_t count, float weight,
                   float* dst) {
  const unsigned char* p = row + first * sizeof(T);
  for (std::size_t i = 0; i < count; ++i, p += stride * sizeof(T)) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    if (weight == 0.0f) dst[i] = static_cast<float>(v);
    else dst[i] += weight * static_cast<float>(v);
  }
}

void convert_bits(const unsigned char* row, std::size_t first, std::size_t stride, std::size_t count, int bits,
                  float weight, float* dst) {
  for (std::size_t i = 0; i < count; ++i) {
    std::size_t bit = (first + i * stride) * static_cast<std::size_t>(bits);
    unsigned byte = row[bit / 8];
    unsigned v = (byte >> (8 - bits - bit % 8)) & ((1u << bits) - 1u);
    if (weight == 0.0f) dst[i] = static_cast<float>(v);
    else dst[i] += weight * static_cast<float>(v);
  }
}

void convert(const unsigned char* row, std::size_t first, std::size_t stride, std::size_t count,
             const TiffPageLayout& l, float weight, float* dst) {
  const int bits = l.bits_per_sample;
  if (bits < 8) return convert_bits(row, first, stride, count, bits, weight, dst);
  if (l.sample_format == SAMPLEFORMAT_IEEEFP) {
    if (bits == 32) return convert_bytes<float>(row, first, stride, count, weight, dst);
    return convert_bytes<double>(row, first, stride, count, weight, dst);
  }
  if (l.sample_format == SAMPLEFORMAT_INT) {
    if (bits == 8) return convert_bytes<std::int8_t>(row, first, stride, count, weight, dst);
    if (bits == 16) return convert_bytes<std::int16_t>(row, first, stride, count, weight, dst);
    return convert_bytes<std::int32_t>(row, first, stride, count, weight, dst);
  }
  if (bits == 8) return convert_bytes<std::uint8_t>(row, first, stride, count, weight, dst);
  if (bits == 16) return convert_bytes<std::uint16_t>(row, first, stride, count, weight, dst);
  return convert_bytes<std::uint32_t>(row, first, stride, count, weight, dst);
}

[[noreturn]] void fail(const std::string& where, const std::string& what) { throw bad_input(where + ": " + what); }

// A strip or tile must lie inside the file, and uncompressed it must hold the
// rows it stands for: libtiff reads a chunk past the end of a memory-mapped
// file as nothing without an error, so a 400-byte file that claims a
// 7x2293765 frame would otherwise decode as megapixels of zeros.
void check_chunk(TIFF* tif, std::uint32_t chunk, std::uint64_t file_size, std::uint64_t raw_bytes,
                 const std::string& where, const char* kind) {
  int err = 0;
  const std::uint64_t offset = TIFFGetStrileOffsetWithErr(tif, chunk, &err);
  const std::uint64_t count = err ? 0 : TIFFGetStrileByteCountWithErr(tif, chunk, &err);
  if (err)
    fail(where, std::string("corrupt IFD (no offset or byte count for ") + kind + " " + std::to_string(chunk) + ")");
  if (file_size > 0 && (offset > file_size || count > file_size - offset))
    fail(where, std::string("truncated file: ") + kind + " " + std::to_string(chunk) + " (" + std::to_string(count) +
                    " bytes at " + std::to_string(offset) + ") lies beyond its end (" + std::to_string(file_size) +
                    " bytes)");
  std::uint16_t compression = COMPRESSION_NONE;
  TIFFGetFieldDefaulted(tif, TIFFTAG_COMPRESSION, &compression);
  if (compression == COMPRESSION_NONE && count < raw_bytes)
    fail(where, std::string("truncated or corrupt ") + kind + " " + std::to_string(chunk) + ": " +
                    std::to_string(count) + " bytes where " + std::to_string(raw_bytes) + " are needed");
}

// The size through libtiff's own I/O procedures: the same for a file opened
// by path and for one read through a client (VirtualFile), which has no fd.
std::uint64_t file_size_of(TIFF* tif) {
  TIFFSizeProc size = TIFFGetSizeProc(tif);
  return size ? static_cast<std::uint64_t>(size(TIFFClientdata(tif))) : 0;
}

// Copies one decoded chunk (strip or tile) of plane `plane` into the frame.
// The chunk covers columns [x0, x0 + cw) and rows [y0, y0 + ch) of the image.
struct ChunkCopier {
  const TiffPageLayout& layout;
  const PageFormat& format;
  bool separate;  // PLANARCONFIG_SEPARATE
  Frame& frame;

  void operator()(const unsigned char* data, std::size_t row_bytes, std::uint32_t x0, std::uint32_t y0,
                  std::uint32_t cw, std::uint32_t ch, int plane) const {
    const std::size_t spp = layout.samples_per_pixel;
    const std::size_t stride = separate ? 1 : spp;
    std::uint32_t w = std::min<std::uint32_t>(cw, layout.width - x0);
    std::uint32_t h = std::min<std::uint32_t>(ch, layout.height - y0);
    for (std::uint32_t r = 0; r < h; ++r) {
      const unsigned char* row = data + r * row_bytes;
      float* dst = frame.row(static_cast<int>(y0 + r)) + x0;
      if (format.colour == ColourHandling::rgb_luminance) {
        if (separate) {
          if (plane < 3) convert(row, 0, 1, w, layout, kLuma[plane], dst);
        } else {
          for (int c = 0; c < 3; ++c) convert(row, c, stride, w, layout, kLuma[c], dst);
        }
      } else if (plane == 0) {
        convert(row, 0, stride, w, layout, 0.0f, dst);
      }
    }
  }
};

std::size_t bits_to_bytes(std::uint64_t bits) { return static_cast<std::size_t>((bits + 7) / 8); }

void decode_rgba(LibtiffFile& file, const TiffPageLayout& layout, const std::string& where, Frame& frame) {
  TIFF* tif = file.get();
  char message[1024] = "";
  if (!TIFFRGBAImageOK(tif, message)) fail(where, std::string("unsupported colour image: ") + message);
  // libtiff's RGBA reader does its own strip reads: each must lie in the file
  // (decode_page has refused uncompressed pixels larger than the file).
  const bool tiled = TIFFIsTiled(tif) != 0;
  const std::uint32_t chunks = tiled ? TIFFNumberOfTiles(tif) : TIFFNumberOfStrips(tif);
  const std::uint64_t size = file_size_of(tif);
  for (std::uint32_t c = 0; c < chunks; ++c) check_chunk(tif, c, size, 0, where, tiled ? "tile" : "strip");
  std::vector<std::uint32_t> raster(static_cast<std::size_t>(layout.width) * layout.height);
  if (!TIFFReadRGBAImageOriented(tif, layout.width, layout.height, raster.data(), ORIENTATION_TOPLEFT, 0))
    fail(where, "cannot decode colour image: " + file.error_or("libtiff RGBA conversion failed"));
  for (std::size_t i = 0; i < raster.size(); ++i) {
    std::uint32_t p = raster[i];
    frame.pixels[i] = kLuma[0] * TIFFGetR(p) + kLuma[1] * TIFFGetG(p) + kLuma[2] * TIFFGetB(p);
  }
}

}  // namespace

// Applies WhiteIsZero inversion and zeroes non-finite samples.
static void finish(Frame& frame, const TiffPageLayout& layout, const PageFormat& format, std::size_t* non_finite);

PageFormat classify_page(const TiffPageLayout& l, const std::string& where) {
  PageFormat f;
  const int bits = l.bits_per_sample;
  const std::string what = "unsupported sample format (" + l.describe() + ")";
  // SampleFormat 4 ("undefined") is read as unsigned, as libtiff and ImageJ do.
  const int sf = l.sample_format == SAMPLEFORMAT_VOID ? SAMPLEFORMAT_UINT : l.sample_format;
  if (sf == SAMPLEFORMAT_UINT) {
    if (bits == 1 || bits == 2 || bits == 4 || bits == 8) f.pixel_type = PixelType::uint8;
    else if (bits == 16) f.pixel_type = PixelType::uint16;
    else if (bits == 32) f.pixel_type = PixelType::uint32;
    else fail(where, what);
  } else if (sf == SAMPLEFORMAT_INT) {
    if (bits == 8) f.pixel_type = PixelType::int8;
    else if (bits == 16) f.pixel_type = PixelType::int16;
    else if (bits == 32) f.pixel_type = PixelType::int32;
    else fail(where, what);
  } else if (sf == SAMPLEFORMAT_IEEEFP) {
    if (bits == 32) f.pixel_type = PixelType::float32;
    else if (bits == 64) f.pixel_type = PixelType::float64;
    else fail(where, what);
  } else {
    fail(where, what + ": complex samples");
  }
  if (l.samples_per_pixel == 0) fail(where, "corrupt IFD (SamplesPerPixel is 0)");
  if (is_colour_photometric(l.photometric)) {
    if (l.photometric == PHOTOMETRIC_RGB && l.samples_per_pixel >= 3 && sf == SAMPLEFORMAT_UINT &&
        (bits == 8 || bits == 16)) {
      f.colour = ColourHandling::rgb_luminance;
    } else if (l.photometric != PHOTOMETRIC_RGB && bits == 8) {
      f.colour = ColourHandling::rgba_luminance;
      f.pixel_type = PixelType::uint8;
    } else {
      fail(where, "unsupported colour image (" + l.describe() + ", photometric " + std::to_string(l.photometric) + ")");
    }
    f.warning = "colour image converted to luminance Y = 0.299 R + 0.587 G + 0.114 B";
  } else if (l.samples_per_pixel > 1) {
    f.colour = ColourHandling::first_sample;
    f.warning = std::to_string(l.samples_per_pixel) +
                " samples per pixel: only the first (the image) is used, extra samples ignored";
  }
  if (l.photometric == PHOTOMETRIC_MINISWHITE && sf == SAMPLEFORMAT_UINT && bits <= 16) {
    f.invert = true;
    f.warning = "WhiteIsZero image inverted so that bright means high signal";
  }
  return f;
}

Frame decode_page(LibtiffFile& file, const TiffPageLayout& layout, const PageFormat& format, const std::string& where,
                  std::size_t max_frame_bytes, std::size_t* non_finite) {
  TIFF* tif = file.get();
  // The handle's view must match what the index found at open.
  std::uint32_t w = 0, h = 0;
  std::uint16_t bits = 1, spp = 1, sf = SAMPLEFORMAT_UINT, planar = PLANARCONFIG_CONTIG;
  TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &w);
  TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &h);
  TIFFGetFieldDefaulted(tif, TIFFTAG_BITSPERSAMPLE, &bits);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &spp);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLEFORMAT, &sf);
  TIFFGetFieldDefaulted(tif, TIFFTAG_PLANARCONFIG, &planar);
  if (sf == SAMPLEFORMAT_VOID && layout.sample_format == SAMPLEFORMAT_UINT) sf = SAMPLEFORMAT_UINT;
  if (w != layout.width || h != layout.height || bits != layout.bits_per_sample || spp != layout.samples_per_pixel ||
      sf != layout.sample_format)
    fail(where, "corrupt IFD (libtiff reads it as " + std::to_string(w) + "x" + std::to_string(h) + ", expected " +
                    layout.describe() + ")");

  const std::uint64_t pixels = std::uint64_t(w) * h;
  if (pixels * sizeof(float) > max_frame_bytes || w > 0x7fffffffu || h > 0x7fffffffu)
    fail(where,
         "frame of " + std::to_string(w) + "x" + std::to_string(h) + " pixels exceeds the memory limit for one frame");
  Frame frame(static_cast<int>(w), static_cast<int>(h), 0.0f);

  {
    // Uncompressed pixels cannot be fewer bytes than the image: a file
    // smaller than that is truncated, whatever its strip table says (found by
    // fuzzing: libtiff "estimates" a broken byte-count table, and every strip
    // of a 200-byte file then pointed at its first bytes).
    std::uint16_t compression = COMPRESSION_NONE;
    TIFFGetFieldDefaulted(tif, TIFFTAG_COMPRESSION, &compression);
    const std::uint64_t image_bytes = (std::uint64_t(w) * spp * bits + 7) / 8 * h;
    const std::uint64_t size = file_size_of(tif);
    if (compression == COMPRESSION_NONE && size > 0 && image_bytes > size)
      fail(where, "truncated file: " + std::to_string(image_bytes) + " bytes of uncompressed pixels in a file of " +
                      std::to_string(size) + " bytes");
  }
  if (format.colour == ColourHandling::rgba_luminance) {
    decode_rgba(file, layout, where, frame);
    return frame;
  }

  const bool separate = planar == PLANARCONFIG_SEPARATE && spp > 1;
  const int planes = separate ? (format.colour == ColourHandling::rgb_luminance ? 3 : 1) : 1;
  const std::size_t samples_per_row_unit = separate ? 1 : spp;
  ChunkCopier copy{layout, format, separate, frame};
  const std::uint64_t chunk_limit = std::uint64_t(max_frame_bytes) * 2 + (1u << 20);

  if (TIFFIsTiled(tif)) {
    std::uint32_t tw = 0, th = 0;
    if (!TIFFGetField(tif, TIFFTAG_TILEWIDTH, &tw) || !TIFFGetField(tif, TIFFTAG_TILELENGTH, &th) || tw == 0 || th == 0)
      fail(where, "corrupt IFD (tile size missing or zero)");
    const std::size_t row_bytes = bits_to_bytes(std::uint64_t(tw) * samples_per_row_unit * bits);
    const std::uint64_t need = std::uint64_t(row_bytes) * th;
    const tmsize_t tile_size = TIFFTileSize(tif);
    if (tile_size <= 0 || std::uint64_t(tile_size) < need || need > chunk_limit)
      fail(where, "corrupt IFD (tile size " + std::to_string(tw) + "x" + std::to_string(th) + ")");
    std::vector<unsigned char> buffer(static_cast<std::size_t>(tile_size));
    const std::uint64_t size = file_size_of(tif);
    for (int plane = 0; plane < planes; ++plane)
      for (std::uint32_t y = 0; y < h; y += th)
        for (std::uint32_t x = 0; x < w; x += tw) {
          std::uint32_t tile = TIFFComputeTile(tif, x, y, 0, static_cast<std::uint16_t>(plane));
          check_chunk(tif, tile, size, need, where, "tile");
          file.messages().clear();
          if (TIFFReadEncodedTile(tif, tile, buffer.data(), tile_size) < 0)
            fail(where, "truncated or corrupt tile " + std::to_string(tile) + ": " +
                            file.error_or("libtiff could not decode it"));
          copy(buffer.data(), row_bytes, x, y, tw, th, plane);
        }
  } else {
    std::uint32_t rows_per_strip = h;
    TIFFGetFieldDefaulted(tif, TIFFTAG_ROWSPERSTRIP, &rows_per_strip);
    if (rows_per_strip == 0 || rows_per_strip > h) rows_per_strip = h;
    const std::size_t row_bytes = bits_to_bytes(std::uint64_t(w) * samples_per_row_unit * bits);
    const std::uint32_t strips_per_plane = (h + rows_per_strip - 1) / rows_per_strip;
    const tmsize_t strip_size = TIFFStripSize(tif);
    const std::uint64_t need = std::uint64_t(row_bytes) * rows_per_strip;
    if (strip_size <= 0 || std::uint64_t(strip_size) < need || need > chunk_limit)
      fail(where, "corrupt IFD (strip size)");
    if (TIFFNumberOfStrips(tif) < strips_per_plane * std::uint32_t(planes))
      fail(where,
           "corrupt IFD (" + std::to_string(TIFFNumberOfStrips(tif)) + " strips for " + std::to_string(h) + " rows)");
    std::vector<unsigned char> buffer(static_cast<std::size_t>(strip_size));
    const std::uint64_t size = file_size_of(tif);
    for (int plane = 0; plane < planes; ++plane)
      for (std::uint32_t s = 0; s < strips_per_plane; ++s) {
        std::uint32_t y = s * rows_per_strip;
        std::uint32_t rows = std::min(rows_per_strip, h - y);
        check_chunk(tif, plane * strips_per_plane + s, size, std::uint64_t(row_bytes) * rows, where, "strip");
        file.messages().clear();
        tmsize_t got = TIFFReadEncodedStrip(tif, plane * strips_per_plane + s, buffer.data(), strip_size);
        if (got < 0 || std::uint64_t(got) < std::uint64_t(row_bytes) * rows)
          fail(where,
               "truncated or corrupt strip " + std::to_string(s) + ": " + file.error_or("libtiff could not decode it"));
        copy(buffer.data(), row_bytes, 0, y, w, rows, plane);
      }
  }

  finish(frame, layout, format, non_finite);
  return frame;
}

Frame decode_contiguous(const unsigned char* data, const TiffPageLayout& layout, const PageFormat& format, bool swap,
                        std::size_t* non_finite) {
  Frame frame(static_cast<int>(layout.width), static_cast<int>(layout.height), 0.0f);
  const std::size_t bytes = layout.bits_per_sample / 8;
  const std::size_t row_bytes = std::size_t(layout.width) * bytes;
  std::vector<unsigned char> row(row_bytes);
  for (std::uint32_t y = 0; y < layout.height; ++y) {
    std::memcpy(row.data(), data + y * row_bytes, row_bytes);
    if (swap && bytes > 1)
      for (std::size_t i = 0; i < row_bytes; i += bytes)
        std::reverse(row.begin() + long(i), row.begin() + long(i + bytes));
    convert(row.data(), 0, 1, layout.width, layout, 0.0f, frame.row(static_cast<int>(y)));
  }
  finish(frame, layout, format, non_finite);
  return frame;
}

static void finish(Frame& frame, const TiffPageLayout& layout, const PageFormat& format, std::size_t* non_finite) {
  if (format.invert) {
    const float top = static_cast<float>((1u << layout.bits_per_sample) - 1u);
    for (float& v : frame.pixels) v = top - v;
  }
  if (layout.sample_format == SAMPLEFORMAT_IEEEFP) {
    std::size_t bad = 0;
    for (float& v : frame.pixels)
      if (!std::isfinite(v)) {
        v = 0.0f;
        ++bad;
      }
    if (non_finite) *non_finite = bad;
  }
}

}  // namespace driftscan
