#pragma once
// Reading EM image series from TIFF (libtiff): a multi-page TIFF or BigTIFF,
// or a folder / glob of single-frame TIFFs in natural order (f2 before f10).
// Frames are decoded on demand into float32 and kept in a cache bounded in
// bytes, so a 100,000-frame series is streamed, never loaded whole. Random
// access is O(1): IFD offsets are indexed once at open.
#include <cstddef>
#include <memory>
#include <string>

#include "driftscan/frame_source.hpp"

namespace driftscan {

enum class PixelType { uint8, uint16, uint32, int8, int16, int32, float32, float64 };
const char* to_string(PixelType type);

struct SeriesInfo {
  std::string path;             // as given
  std::size_t frames = 0;
  int width = 0;
  int height = 0;
  PixelType pixel_type = PixelType::uint16;
  double pixel_size = 0.0;      // physical size of a pixel, 0 when unknown
  std::string unit;             // unit of pixel_size ("nm", "pm", "um", ...)
  bool bigtiff = false;
  bool multi_file = false;      // a folder or glob of single-frame files
};

class TiffSeries : public FrameSource {
 public:
  // Throws driftscan::Error (bad_input) with a one-line message naming the
  // file (and frame) for: missing path, permission denied, not a TIFF,
  // truncated or corrupt file, zero pages, frames of different size or type,
  // unsupported sample format.
  static std::unique_ptr<TiffSeries> open(const std::string& path,
                                          std::size_t cache_bytes = std::size_t(256) << 20);
  ~TiffSeries() override;

  const SeriesInfo& info() const;
  std::size_t frame_count() const override;
  int width() const override;
  int height() const override;
  Frame frame(std::size_t k) const override;  // thread-safe
  double pixel_size() const override;
  std::string pixel_unit() const override;
  std::string describe() const override;

  struct Impl;

 private:
  explicit TiffSeries(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace driftscan
