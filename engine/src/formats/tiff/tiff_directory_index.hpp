#pragma once
// The offsets of every image directory (IFD) of a TIFF or BigTIFF file, found
// by walking the IFD chain once with plain reads of the few bytes involved.
// libtiff would read and parse every tag of every page to get there (and
// TIFFSetDirectory(k) re-walks the chain from the start: quadratic over a
// long series); with the offsets at hand, LibtiffFile::open_at(offset) reaches
// any page in O(1). While walking, the layout tags of each page are read too,
// so a series whose pages differ in size or type is refused at open.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace driftscan {

// The tags of one IFD that decide how its pixels are laid out.
struct TiffPageLayout {
  std::uint32_t width = 0;
  std::uint32_t height = 0;
  std::uint16_t bits_per_sample = 1;
  std::uint16_t samples_per_pixel = 1;
  std::uint16_t sample_format = 1;  // 1 uint, 2 int, 3 IEEE float
  std::uint16_t photometric = 1;
  std::uint16_t compression = 1;
  std::uint32_t new_subfile_type = 0;
  bool sub_ifds = false;  // has a SubIFDs tag (330): a pyramid, refused
  bool operator==(const TiffPageLayout& o) const {
    return width == o.width && height == o.height && bits_per_sample == o.bits_per_sample &&
           samples_per_pixel == o.samples_per_pixel && sample_format == o.sample_format;
  }
  bool operator!=(const TiffPageLayout& o) const { return !(*this == o); }
  bool reduced_resolution() const { return (new_subfile_type & 1u) != 0; }
  std::string describe() const;  // "512x512 uint16" / "512x512 3x8-bit RGB"
};

struct TiffDirectoryIndex {
  bool bigtiff = false;
  bool big_endian = false;  // "MM"
  std::uint64_t file_size = 0;
  std::vector<std::uint64_t> offsets;  // full-resolution pages, in file order
  TiffPageLayout layout;               // of the first page (all others equal it)
  std::size_t skipped_reduced = 0;     // thumbnails / pyramid levels left out
};

// The size in bytes of one value of TIFF field type `type` (BYTE 1 … IFD8 8);
// 0 for a type TIFF 6 / BigTIFF does not define.
std::size_t tiff_type_size(std::uint64_t type);

// Throws driftscan::Error (bad_input) naming `path` (and the page) when the
// file is not a TIFF, is truncated, has a corrupt or looping IFD chain, has no
// pages, has SubIFDs (a pyramid), or its pages differ in size or sample type.
// `first_frame` numbers the pages in messages (a file of a folder series
// starts at its frame number).
TiffDirectoryIndex index_tiff_directories(const std::string& path, std::size_t first_frame = 0);

}  // namespace driftscan
