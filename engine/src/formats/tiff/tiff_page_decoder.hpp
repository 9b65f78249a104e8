#pragma once
// Decoding one TIFF page (the current directory of a libtiff handle) into the
// engine's float32 Frame: strips or tiles, any compression libtiff decodes,
// 1/2/4/8/16/32-bit integers, 32/64-bit floats. Colour pages are reduced to
// luminance Y = 0.299 R + 0.587 G + 0.114 B (ITU-R BT.601 weights); the
// series reports a warning once. Raw RGB is read at full bit depth; YCbCr,
// CMYK and Lab pages go through libtiff's RGBA conversion (8 bits).
#include <cstddef>
#include <string>

#include "driftscan/core/frame.hpp"
#include "driftscan/formats/tiff/tiff_series.hpp"
#include "formats/tiff/libtiff_diagnostics.hpp"
#include "formats/tiff/tiff_directory_index.hpp"

namespace driftscan {

enum class ColourHandling { gray, first_sample, rgb_luminance, rgba_luminance };

// How pages of a given layout become frames.
struct PageFormat {
  PixelType pixel_type = PixelType::uint16;
  ColourHandling colour = ColourHandling::gray;
  bool invert = false;  // WhiteIsZero: bright = high signal, as ImageJ shows it
  std::string warning;  // once per series, empty when the conversion is lossless
};

// Throws bad_input naming `where` ("file: frame k") for unsupported layouts.
PageFormat classify_page(const TiffPageLayout& layout, const std::string& where);

// Decodes the handle's current directory, which must match `layout`.
// `max_frame_bytes` bounds what may be allocated (corrupt sizes in a small
// file must not exhaust memory). Non-finite samples become 0 and are counted.
Frame decode_page(LibtiffFile& file, const TiffPageLayout& layout, const PageFormat& format, const std::string& where,
                  std::size_t max_frame_bytes, std::size_t* non_finite = nullptr);

// Decodes one uncompressed single-sample frame from its raw bytes (ImageJ's
// > 4 GB stacks, which have one IFD and the frames back to back).
// `swap`: the file's byte order differs from the host's.
Frame decode_contiguous(const unsigned char* data, const TiffPageLayout& layout, const PageFormat& format, bool swap,
                        std::size_t* non_finite = nullptr);

}  // namespace driftscan
