#pragma once
// Appending frames to a multi-page TIFF while someone reads it, as a live
// acquisition writes its series: each page's pixels, then its IFD, then the
// link from the previous IFD (so a reader following the chain finds a page
// only once it is whole). Uncompressed, one strip a page, little-endian
// classic TIFF or BigTIFF (a series past 4 GiB: 2,000 float32 frames of
// 1024²), uint16 or float32 — what `register --follow`'s tests and benchmark
// write. `link_first` writes in the other order, with a pause
// inside the pixel data: a page that is linked but not yet on disk, which a
// reader must not take.
#include <cstdint>
#include <string>

#include "driftscan/core/frame.hpp"
#include "driftscan/formats/tiff/tiff_writer.hpp"

namespace driftscan {

struct AppendOrder {
  bool link_first = false;  // IFD and link first, then the pixels in two halves
  double pause_s = 0.0;     // link_first: the pause between the halves
};

class TiffPageAppender {
 public:
  // Creates (truncates) `path` with an empty TIFF header. Throws failure naming it.
  TiffPageAppender(const std::string& path, SampleFormat format, bool bigtiff = false);
  ~TiffPageAppender();
  TiffPageAppender(const TiffPageAppender&) = delete;
  TiffPageAppender& operator=(const TiffPageAppender&) = delete;

  // Throws failure naming the file when a classic TIFF would pass 4 GiB.
  void append(const Frame& frame, const AppendOrder& order = {});
  std::size_t pages() const { return pages_; }

 private:
  void write_at(std::uint64_t at, const void* data, std::size_t n);
  std::string path_;
  SampleFormat format_;
  bool bigtiff_ = false;
  int fd_ = -1;
  std::uint64_t end_ = 8;         // where the next bytes go
  std::uint64_t pointer_at_ = 4;  // where the offset of the next IFD is stored
  std::size_t pages_ = 0;
};

}  // namespace driftscan
