// Appending pages to a TIFF being read; see tiff_page_appender.hpp.
#include "driftscan/formats/tiff/tiff_page_appender.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

#include "driftscan/core/error.hpp"

namespace driftscan {
namespace {

void put16(std::vector<unsigned char>& b, std::size_t at, std::uint32_t v) {
  b[at] = static_cast<unsigned char>(v);
  b[at + 1] = static_cast<unsigned char>(v >> 8);
}
void put32(std::vector<unsigned char>& b, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + static_cast<std::size_t>(i)] = static_cast<unsigned char>(v >> (8 * i));
}
void put64(std::vector<unsigned char>& b, std::size_t at, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) b[at + static_cast<std::size_t>(i)] = static_cast<unsigned char>(v >> (8 * i));
}

}  // namespace

TiffPageAppender::TiffPageAppender(const std::string& path, SampleFormat format, bool bigtiff)
    : path_(path), format_(format), bigtiff_(bigtiff) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw failure(path + ": cannot create (" + std::strerror(errno) + ")");
  if (bigtiff_) {
    // 'II', 43, offset size 8, 0, then the 8-byte offset of the first IFD.
    const unsigned char header[16] = {'I', 'I', 43, 0, 8, 0, 0, 0};
    write_at(0, header, sizeof header);
    end_ = 16;
    pointer_at_ = 8;
  } else {
    const unsigned char header[8] = {'I', 'I', 42, 0, 0, 0, 0, 0};
    write_at(0, header, sizeof header);
  }
}

TiffPageAppender::~TiffPageAppender() {
  if (fd_ >= 0) ::close(fd_);
}

void TiffPageAppender::write_at(std::uint64_t at, const void* data, std::size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  std::size_t done = 0;
  while (done < n) {
    const ssize_t w = ::pwrite(fd_, p + done, n - done, static_cast<off_t>(at + done));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw failure(path_ + ": cannot write (" + std::strerror(errno) + ")");
    done += static_cast<std::size_t>(w);
  }
}

void TiffPageAppender::append(const Frame& frame, const AppendOrder& order) {
  const bool f32 = format_ == SampleFormat::float32;
  const std::size_t bytes_per = f32 ? 4 : 2;
  std::vector<unsigned char> data(frame.pixels.size() * bytes_per);
  for (std::size_t i = 0; i < frame.pixels.size(); ++i) {
    if (f32) {
      std::uint32_t bits = 0;
      std::memcpy(&bits, &frame.pixels[i], 4);
      put32(data, i * 4, bits);
    } else {
      const float v = std::round(std::clamp(frame.pixels[i], 0.0f, 65535.0f));
      put16(data, i * 2, static_cast<std::uint32_t>(v));
    }
  }
  constexpr std::uint32_t entries = 10;
  // Classic: 2-byte count, 12-byte entries, 4-byte offsets; BigTIFF: 8, 20, 8.
  const std::size_t count_bytes = bigtiff_ ? 8 : 2, entry_bytes = bigtiff_ ? 20 : 12, offset_bytes = bigtiff_ ? 8 : 4;
  std::vector<unsigned char> ifd(count_bytes + entries * entry_bytes + offset_bytes, 0);
  const std::uint64_t ifd_at = order.link_first ? end_ : end_ + data.size() + (data.size() & 1);
  const std::uint64_t data_at = order.link_first ? end_ + ifd.size() : end_;
  if (!bigtiff_ && std::max(ifd_at + ifd.size(), data_at + data.size()) > 0xFFFFFFFFull)
    throw failure(path_ + ": page " + std::to_string(pages_) +
                  " would end past 4 GiB, which a classic TIFF cannot address (write BigTIFF)");
  if (bigtiff_) put64(ifd, 0, entries);
  else put16(ifd, 0, entries);
  std::size_t e = count_bytes;
  // type 3 SHORT, 4 LONG, 16 LONG8 (BigTIFF offsets); one value each, inline.
  auto entry = [&](std::uint32_t tag, std::uint32_t type, std::uint64_t value) {
    put16(ifd, e, tag);
    put16(ifd, e + 2, type);
    if (bigtiff_) put64(ifd, e + 4, 1);
    else put32(ifd, e + 4, 1);
    const std::size_t v = e + (bigtiff_ ? 12 : 8);
    if (type == 3) put16(ifd, v, static_cast<std::uint32_t>(value));
    else if (type == 16) put64(ifd, v, value);
    else put32(ifd, v, static_cast<std::uint32_t>(value));
    e += entry_bytes;
  };
  const std::uint32_t offset_type = bigtiff_ ? 16 : 4;
  entry(256, 4, static_cast<std::uint32_t>(frame.width));
  entry(257, 4, static_cast<std::uint32_t>(frame.height));
  entry(258, 3, f32 ? 32 : 16);
  entry(259, 3, 1);  // no compression
  entry(262, 3, 1);  // min-is-black
  entry(273, offset_type, data_at);
  entry(277, 3, 1);
  entry(278, 4, static_cast<std::uint32_t>(frame.height));
  entry(279, offset_type, data.size());
  entry(339, 3, f32 ? 3 : 1);
  // next IFD: 0 (the last bytes, already zero)
  std::vector<unsigned char> link(offset_bytes, 0);
  if (bigtiff_) put64(link, 0, ifd_at);
  else put32(link, 0, static_cast<std::uint32_t>(ifd_at));
  if (order.link_first) {
    write_at(ifd_at, ifd.data(), ifd.size());
    write_at(pointer_at_, link.data(), link.size());
    const std::size_t half = data.size() / 2;
    write_at(data_at, data.data(), half);
    if (order.pause_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(order.pause_s));
    write_at(data_at + half, data.data() + half, data.size() - half);
    end_ = data_at + data.size() + (data.size() & 1);
  } else {
    write_at(data_at, data.data(), data.size());
    write_at(ifd_at, ifd.data(), ifd.size());
    write_at(pointer_at_, link.data(), link.size());
    end_ = ifd_at + ifd.size();
  }
  pointer_at_ = ifd_at + count_bytes + std::uint64_t(entries) * entry_bytes;
  ++pages_;
}

}  // namespace driftscan
