#pragma once
// Reading EM image series from TIFF (libtiff): a multi-page TIFF or BigTIFF,
// or a folder / glob of single-frame TIFFs in natural order (f2 before f10).
// Frames are decoded on demand into float32 and kept in a cache bounded in
// bytes, so a 100,000-frame series is streamed, never loaded whole. Random
// access is O(1): IFD offsets are indexed once at open.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "driftscan/core/frame_cache.hpp"
#include "driftscan/core/frame_source.hpp"

namespace driftscan {

enum class PixelType { uint8, uint16, uint32, int8, int16, int32, float32, float64 };
const char* to_string(PixelType type);

struct SeriesInfo {
  std::string path;  // as given
  std::size_t frames = 0;
  int width = 0;
  int height = 0;
  PixelType pixel_type = PixelType::uint16;
  double pixel_size = 0.0;  // physical size of a pixel, 0 when unknown
  std::string unit;         // unit of pixel_size ("nm", "pm", "um", ...)
  bool bigtiff = false;
  bool multi_file = false;         // a folder or glob of single-frame files
  std::size_t files = 1;           // number of files the frames come from
  std::string compression;         // of frame 0, e.g. "none", "LZW", "Deflate"
  bool tiled = false;              // frame 0 is stored in tiles (else strips)
  std::string calibration_source;  // "OME-XML", "ImageJ", "resolution tags" or ""
};

struct TiffReadOptions {
  std::size_t cache_bytes = std::size_t(256) << 20;  // frame cache budget (pixel bytes)
  // Frames whose float32 copy would exceed this are refused at open: a
  // corrupt 2-kB file must not make the reader allocate gigabytes.
  std::size_t max_frame_bytes = std::size_t(4) << 30;
};

class TiffSeries : public FrameSource {
 public:
  // Throws driftscan::Error (bad_input) with a one-line message naming the
  // file (and frame) for: missing path, permission denied, not a TIFF,
  // truncated or corrupt file, zero pages, frames of different size or type,
  // unsupported sample format.
  static std::unique_ptr<TiffSeries> open(const std::string& path, std::size_t cache_bytes = std::size_t(256) << 20);
  static std::unique_ptr<TiffSeries> open(const std::string& path, const TiffReadOptions& options);
  ~TiffSeries() override;

  const SeriesInfo& info() const;
  std::size_t frame_count() const override;
  int width() const override;
  int height() const override;
  // Thread-safe, and concurrent calls decode in parallel: each read gets its
  // own short-lived libtiff handle positioned directly at the frame's IFD.
  Frame frame(std::size_t k) const override;
  // The cache's own frame (no copy).
  std::shared_ptr<const Frame> shared_frame(std::size_t k) const override;
  double pixel_size() const override;
  std::string pixel_unit() const override;
  std::string describe() const override;

  // Conversions the reader made that the user should hear about (colour to
  // luminance, extra samples dropped, non-finite pixels zeroed, non-square
  // pixels). Grows as frames are decoded; thread-safe copy.
  std::vector<std::string> warnings() const;
  const FrameCache& cache() const;

  struct Impl;

 private:
  explicit TiffSeries(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace driftscan
