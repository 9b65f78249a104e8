// The stack writer lays the file out the way ImageJ does, which is what
// ImageJ/Fiji (and tifffile) require of a file whose description says
// images=N: they read N frames *contiguously* from the first strip offset and
// ignore the other IFDs. libtiff always interleaves each frame's pixels with
// its IFD, so this layout is written directly:
//   header | frame 0 | frame 1 | ... | frame N-1 | description, values | IFD 0 ... IFD N-1
// Pixels stream to disk as frames are appended; the IFDs (fixed size, all
// known from the frame count) are streamed at commit(), then the header is
// patched to point at IFD 0. Every reader (libtiff, the engine's TiffSeries)
// sees an ordinary multi-page TIFF.
#include "driftscan/formats/tiff/tiff_writer.hpp"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "driftscan/core/atomic_file.hpp"
#include "driftscan/core/error.hpp"
#include "formats/tiff/tiff_metadata.hpp"

namespace driftscan {
namespace {

constexpr std::uint64_t kDataStart = 16;  // after either header, 8-byte aligned
// Pixels are copied as they are in memory into a file that declares "II".
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the TIFF writer assumes a little-endian host");

// ImageJ spells units its own way (Calibration.getUnit()).
std::string imagej_unit(const std::string& unit) {
  std::string u = normalise_length_unit(unit);
  if (u == "um") return "micron";
  if (u == "A") return "\\u00C5";
  return u;
}

// v as a TIFF RATIONAL with the largest denominator that keeps both in 32 bits.
void to_rational(double v, std::uint32_t& num, std::uint32_t& den) {
  const double max = 4294967295.0;
  double d = v > 1.0 ? std::floor(max / v) : max;
  double n = std::round(v * d);
  if (n < 1.0) n = 1.0;
  num = static_cast<std::uint32_t>(std::min(n, max));
  den = static_cast<std::uint32_t>(std::max(1.0, d));
}

// Little-endian bytes into a buffer.
struct Bytes {
  std::vector<unsigned char> data;
  void u16(std::uint16_t v) { put(v, 2); }
  void u32(std::uint32_t v) { put(v, 4); }
  void u64(std::uint64_t v) { put(v, 8); }
  void put(std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) data.push_back(static_cast<unsigned char>(v >> (8 * i)));
  }
  void text(const std::string& s) {
    data.insert(data.end(), s.begin(), s.end());
    data.push_back(0);
  }
  void pad_to(std::size_t multiple) {
    while (data.size() % multiple) data.push_back(0);
  }
};

}  // namespace

struct TiffStackWriter::Impl {
  std::string path;
  int width = 0, height = 0;
  std::size_t frames = 0, written = 0;
  TiffWriteOptions options;
  std::unique_ptr<AtomicFile> file;  // the temporary until commit()
  bool committed = false;
  bool bigtiff = false;
  std::uint64_t frame_bytes = 0;
  std::string description;
  std::vector<unsigned char> buffer;

  [[noreturn]] void fail(const std::string& what, int err) const {
    throw failure(path + ": " + what + ": " + std::strerror(err));
  }

  void write_all(const void* data, std::size_t n, std::uint64_t at, const std::string& what) {
    const auto* p = static_cast<const unsigned char*>(data);
    while (n > 0) {
      ssize_t r = ::pwrite(file->fd(), p, n, static_cast<off_t>(at));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) fail(what, r < 0 ? errno : ENOSPC);
      p += r;
      at += static_cast<std::uint64_t>(r);
      n -= static_cast<std::size_t>(r);
    }
  }

  std::string imagej_description() const {
    std::string d = "ImageJ=1.11a\n";
    if (frames > 1) {
      d += "images=" + std::to_string(frames) + "\n";
      // A drift series is a time series: ImageJ's T axis (as in the real
      // acquisition files), which Fiji shows as a hyperstack with a frame slider.
      d += "frames=" + std::to_string(frames) + "\nhyperstack=true\nmode=grayscale\n";
    }
    if (options.pixel_size > 0 && !options.unit.empty()) d += "unit=" + imagej_unit(options.unit) + "\n";
    if (frames > 1) d += "loop=false\n";
    return d;
  }

  bool calibrated() const { return options.pixel_size > 0; }
  int entries(bool first) const { return 11 + (calibrated() ? 3 : 0) + (first ? 2 : 0); }
  std::uint64_t ifd_bytes(bool first) const { return ifd_bytes(first, bigtiff); }
  std::uint64_t ifd_bytes(bool first, bool big) const {
    return big ? 8 + 20 * std::uint64_t(entries(first)) + 8 : 2 + 12 * std::uint64_t(entries(first)) + 4;
  }

  // The bytes between the pixel data and IFD 0: description, software name,
  // the resolution rational; offsets recorded for the IFD entries.
  struct Extras {
    Bytes bytes;
    std::uint64_t description = 0, software = 0, resolution = 0;
    std::uint64_t resolution_value = 0;  // numerator | denominator << 32
  };
  Extras extras(std::uint64_t at) const {
    Extras e;
    e.description = at;
    e.bytes.text(description);
    e.software = at + e.bytes.data.size();
    e.bytes.text(software());
    e.bytes.pad_to(8);
    e.resolution = at + e.bytes.data.size();
    std::uint32_t num = 1, den = 1;
    if (calibrated()) to_rational(1.0 / options.pixel_size, num, den);
    e.bytes.u32(num);
    e.bytes.u32(den);
    e.resolution_value = std::uint64_t(num) | std::uint64_t(den) << 32;
    return e;
  }
  static std::string software() { return "DriftScan " DRIFTSCAN_VERSION; }

  // The exact file size in either format (padding of the extras included).
  std::uint64_t total_size(bool big) const {
    std::uint64_t data_end = kDataStart + std::uint64_t(frames) * frame_bytes;
    return data_end + description.size() + software().size() + 2 + 8 + 8 + ifd_bytes(true, big) +
           std::uint64_t(frames - 1) * ifd_bytes(false, big);
  }

  // One IFD entry with an inline value or an offset.
  void entry(Bytes& b, std::uint16_t tag, std::uint16_t type, std::uint64_t count, std::uint64_t value) const {
    b.u16(tag);
    b.u16(type);
    if (bigtiff) {
      b.u64(count);
      b.u64(value);  // little-endian: a SHORT sits in the first bytes
    } else {
      b.u32(static_cast<std::uint32_t>(count));
      b.u32(static_cast<std::uint32_t>(value));
    }
  }

  void append_ifd(Bytes& b, std::size_t k, const Extras& e, std::uint64_t next) const {
    const bool first = k == 0;
    const bool u16 = options.format == SampleFormat::uint16;
    const std::uint16_t SHORT = 3, LONG = 4, ASCII = 2, RATIONAL = 5, LONG8 = 16;
    if (bigtiff) b.u64(std::uint64_t(entries(first)));
    else b.u16(static_cast<std::uint16_t>(entries(first)));
    entry(b, 254, LONG, 1, 0);
    entry(b, 256, LONG, 1, std::uint64_t(width));
    entry(b, 257, LONG, 1, std::uint64_t(height));
    entry(b, 258, SHORT, 1, u16 ? 16 : 32);
    entry(b, 259, SHORT, 1, 1);  // uncompressed: ImageJ/Fiji read it directly
    entry(b, 262, SHORT, 1, 1);  // BlackIsZero
    if (first) entry(b, 270, ASCII, description.size() + 1, e.description);
    entry(b, 273, bigtiff ? LONG8 : LONG, 1, kDataStart + std::uint64_t(k) * frame_bytes);
    entry(b, 277, SHORT, 1, 1);
    entry(b, 278, LONG, 1, std::uint64_t(height));
    entry(b, 279, bigtiff ? LONG8 : LONG, 1, frame_bytes);
    if (calibrated()) {
      // A RATIONAL (8 bytes) sits inline in a BigTIFF entry, at an offset in classic TIFF.
      std::uint64_t resolution = e.resolution;
      if (bigtiff) resolution = e.resolution_value;
      entry(b, 282, RATIONAL, 1, resolution);
      entry(b, 283, RATIONAL, 1, resolution);
      // ImageJ: pixels per unit in X/YResolution, the unit in the description;
      // ResolutionUnit says centimetre only when the unit is one.
      entry(b, 296, SHORT, 1, normalise_length_unit(options.unit) == "cm" ? 3 : 1);
    }
    if (first) entry(b, 305, ASCII, software().size() + 1, e.software);
    entry(b, 339, SHORT, 1, u16 ? 1 : 3);
    if (bigtiff) b.u64(next);
    else b.u32(static_cast<std::uint32_t>(next));
  }
};

TiffStackWriter::TiffStackWriter(const std::string& path, int width, int height, std::size_t frames,
                                 const TiffWriteOptions& options)
    : impl_(std::make_unique<Impl>()) {
  Impl& w = *impl_;
  w.path = path;
  w.width = width;
  w.height = height;
  w.frames = frames;
  w.options = options;
  if (width <= 0 || height <= 0)
    throw bad_input(path + ": cannot write a " + std::to_string(width) + "x" + std::to_string(height) + " frame");
  if (frames == 0) throw bad_input(path + ": nothing to write (0 frames)");
  if (options.pixel_size < 0 || !std::isfinite(options.pixel_size)) throw bad_input(path + ": invalid pixel size");
  w.frame_bytes = std::uint64_t(width) * std::uint64_t(height) * (options.format == SampleFormat::uint16 ? 2 : 4);
  w.description = w.imagej_description();
  w.bigtiff = options.force_bigtiff || w.total_size(false) > 0xFFFFFFFFull;
  w.file = std::make_unique<AtomicFile>(path, "TIFF file");
  w.buffer.resize(static_cast<std::size_t>(w.frame_bytes));
}

TiffStackWriter::~TiffStackWriter() = default;  // the AtomicFile removes an uncommitted temporary

const std::string& TiffStackWriter::path() const { return impl_->path; }
bool TiffStackWriter::bigtiff() const { return impl_->bigtiff; }
const std::string& TiffStackWriter::temporary_path() const { return impl_->file->temporary_path(); }

void TiffStackWriter::append(const Frame& frame) {
  Impl& w = *impl_;
  if (w.committed) throw failure(w.path + ": append after commit");
  if (w.written >= w.frames)
    throw failure(w.path + ": frame " + std::to_string(w.written) + " exceeds the " + std::to_string(w.frames) +
                  " frames declared");
  if (frame.width != w.width || frame.height != w.height ||
      frame.size() != std::size_t(w.width) * std::size_t(w.height))
    throw failure(w.path + ": frame " + std::to_string(w.written) + " is " + std::to_string(frame.width) + "x" +
                  std::to_string(frame.height) + ", expected " + std::to_string(w.width) + "x" +
                  std::to_string(w.height));
  if (w.options.format == SampleFormat::uint16) {
    auto* dst = reinterpret_cast<std::uint16_t*>(w.buffer.data());
    for (std::size_t i = 0; i < frame.size(); ++i) {
      float v = frame.pixels[i];
      // NaN -> 0; round half away from zero; clamp to the type's range
      float r = std::isnan(v) ? 0.0f : std::round(v);
      dst[i] = static_cast<std::uint16_t>(r <= 0.0f ? 0.0f : (r >= 65535.0f ? 65535.0f : r));
    }
  } else {
    std::memcpy(w.buffer.data(), frame.pixels.data(), w.buffer.size());
  }
  // TIFF data here are little-endian, as the header says ("II"): x86/ARM order.
  w.write_all(w.buffer.data(), w.buffer.size(), kDataStart + std::uint64_t(w.written) * w.frame_bytes,
              "cannot write frame " + std::to_string(w.written));
  ++w.written;
}

void TiffStackWriter::commit() {
  Impl& w = *impl_;
  if (w.committed) return;
  if (w.written != w.frames)
    throw failure(w.path + ": only " + std::to_string(w.written) + " of " + std::to_string(w.frames) +
                  " frames were written");
  std::uint64_t at = kDataStart + std::uint64_t(w.frames) * w.frame_bytes;
  Impl::Extras extras = w.extras(at);
  w.write_all(extras.bytes.data.data(), extras.bytes.data.size(), at, "cannot write metadata");
  at += extras.bytes.data.size();
  const std::uint64_t first_ifd = at;
  // IFDs in batches: bounded memory whatever the frame count.
  Bytes batch;
  std::uint64_t batch_at = at;
  for (std::size_t k = 0; k < w.frames; ++k) {
    std::uint64_t next = k + 1 < w.frames ? at + w.ifd_bytes(k == 0) : 0;
    w.append_ifd(batch, k, extras, next);
    at += w.ifd_bytes(k == 0);
    if (batch.data.size() >= (1u << 20) || k + 1 == w.frames) {
      w.write_all(batch.data.data(), batch.data.size(), batch_at, "cannot write the IFDs");
      batch_at = at;
      batch.data.clear();
    }
  }
  Bytes header;
  header.data = {'I', 'I'};
  if (w.bigtiff) {
    header.u16(43);
    header.u16(8);
    header.u16(0);
    header.u64(first_ifd);
  } else {
    header.u16(42);
    header.u32(static_cast<std::uint32_t>(first_ifd));
  }
  header.pad_to(static_cast<std::size_t>(kDataStart));
  w.write_all(header.data.data(), header.data.size(), 0, "cannot write the header");
  w.file->commit();
  w.committed = true;
}

void write_tiff(const std::string& path, const Frame& frame, const TiffWriteOptions& options) {
  TiffStackWriter writer(path, frame.width, frame.height, 1, options);
  writer.append(frame);
  writer.commit();
}

}  // namespace driftscan
