#include "driftscan/formats/raw_frame_series.hpp"

#include <cmath>
#include <cstdio>

#include "driftscan/core/error.hpp"

namespace driftscan {

RawFrameLayout RawFrameLayout::contiguous(RawType type, ByteOrder order, std::uint64_t first, const SignalInfo& info) {
  const std::uint64_t frame_bytes =
      static_cast<std::uint64_t>(info.width) * static_cast<std::uint64_t>(info.height) * raw_type_bytes(type);
  RawFrameLayout layout;
  layout.type = type;
  layout.order = order;
  layout.offset = [first, frame_bytes](std::size_t k) { return first + frame_bytes * k; };
  return layout;
}

RawFrameSeries::RawFrameSeries(std::shared_ptr<const BinaryFile> file, SignalInfo info, RawFrameLayout layout,
                               std::size_t cache_bytes)
    : file_(std::move(file)), info_(std::move(info)), layout_(std::move(layout)), cache_(cache_bytes) {
  if (info_.width <= 0 || info_.height <= 0 || info_.frames == 0)
    file_->fail("signal '" + info_.name + "' has no pixels (" + std::to_string(info_.frames) + " x " +
                std::to_string(info_.width) + "x" + std::to_string(info_.height) + ")");
  // The whole signal must fit in the file: checked once from the claimed
  // sizes, so a header claiming gigabytes fails here, not at an allocation.
  const std::uint64_t frame_bytes =
      static_cast<std::uint64_t>(info_.width) * static_cast<std::uint64_t>(info_.height) * raw_type_bytes(layout_.type);
  if (frame_bytes > file_->size())
    file_->fail("signal '" + info_.name + "' claims frames of " + std::to_string(info_.width) + "x" +
                std::to_string(info_.height) + " " + to_string(layout_.type) + ", more than the file's " +
                std::to_string(file_->size()) + " bytes");
}

Frame RawFrameSeries::frame(std::size_t k) const {
  if (k >= info_.frames)
    throw bad_input(file_->path() + ": frame " + std::to_string(k) + " out of range (" + std::to_string(info_.frames) +
                    " frames)");
  if (auto cached = cache_.find(k)) return *cached;
  const std::size_t n = static_cast<std::size_t>(info_.width) * static_cast<std::size_t>(info_.height);
  const std::uint64_t offset = layout_.offset(k);
  const std::size_t bytes = n * raw_type_bytes(layout_.type);
  if (!file_->contains(offset, bytes))
    file_->fail("truncated: frame " + std::to_string(k) + " of signal '" + info_.name + "' needs bytes " +
                std::to_string(offset) + ".." + std::to_string(offset + bytes) + ", the file has " +
                std::to_string(file_->size()));
  std::vector<unsigned char> raw(bytes);
  file_->read(offset, bytes, raw.data(), "frame");
  auto f = std::make_shared<Frame>(info_.width, info_.height);
  convert_raw_pixels(raw.data(), layout_.type, layout_.order, n, f->pixels.data());
  // NaN/inf (float data, a dead pixel) would poison every FFT: zeroed, as the TIFF reader does.
  for (float& v : f->pixels)
    if (!std::isfinite(v)) v = 0.0f;
  cache_.insert(k, f);
  return *f;
}

std::string describe_signal(const std::string& path, const SignalInfo& i) {
  std::string s = path + ": " + std::to_string(i.frames) + " x " + std::to_string(i.width) + "x" +
                  std::to_string(i.height) + " " + i.pixel_type + " (" + i.format + ", signal '" + i.name + "')";
  if (i.pixel_size > 0) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, ", %.6g %s/pixel", i.pixel_size, i.unit.c_str());
    s += buffer;
  }
  return s;
}

std::string RawFrameSeries::describe() const { return describe_signal(file_->path(), info_); }

}  // namespace driftscan
