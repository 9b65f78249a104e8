#pragma once
// A series whose frames are uncompressed pixel blocks in one file (DM, MRC,
// SER): frame k is decoded on demand from the offset the format gives for it
// (O(1): a computed offset or one entry of the file's offset table) into the
// same bounded frame cache the TIFF reader uses.
#include <cstdint>
#include <functional>
#include <memory>

#include "driftscan/core/frame_cache.hpp"
#include "driftscan/core/frame_source.hpp"
#include "driftscan/formats/binary_file.hpp"
#include "driftscan/formats/raw_pixels.hpp"
#include "driftscan/formats/series_signal.hpp"

namespace driftscan {

struct RawFrameLayout {
  RawType type = RawType::uint16;
  ByteOrder order = ByteOrder::little;
  // Byte offset of frame k's first pixel; may read the file (SER's table).
  std::function<std::uint64_t(std::size_t)> offset;

  // Frames stored back to back from byte `first` on (DM, MRC).
  static RawFrameLayout contiguous(RawType type, ByteOrder order, std::uint64_t first, const SignalInfo& info);
};

class RawFrameSeries : public FrameSource {
 public:
  // Throws Error(bad_input) when a frame is larger than max_frame_bytes
  // (a corrupt header must not make the reader allocate what it claims).
  RawFrameSeries(std::shared_ptr<const BinaryFile> file, SignalInfo info, RawFrameLayout layout,
                 std::size_t cache_bytes);
  std::size_t frame_count() const override { return info_.frames; }
  int width() const override { return info_.width; }
  int height() const override { return info_.height; }
  Frame frame(std::size_t k) const override;
  double pixel_size() const override { return info_.pixel_size; }
  std::string pixel_unit() const override { return info_.unit; }
  RecordedScan recorded_scan() const override { return info_.scan; }
  RecordedRotations recorded_rotations() const override { return info_.rotations; }
  std::string describe() const override;
  const SignalInfo& info() const { return info_; }
  const FrameCache& cache() const { return cache_; }

 private:
  std::shared_ptr<const BinaryFile> file_;
  SignalInfo info_;
  RawFrameLayout layout_;
  mutable FrameCache cache_;
};

// "PATH: N x WxH TYPE (FORMAT, signal NAME), S UNIT/pixel"
std::string describe_signal(const std::string& path, const SignalInfo& info);

}  // namespace driftscan
