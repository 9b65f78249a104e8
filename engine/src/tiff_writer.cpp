#include "driftscan/tiff_writer.hpp"

#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "driftscan/error.hpp"
#include "libtiff_diagnostics.hpp"
#include "tiff_metadata.hpp"

namespace driftscan {
namespace {

// Classic TIFF addresses 4 GiB; leave room for IFDs and the description.
constexpr std::uint64_t kClassicLimit = (std::uint64_t(1) << 32) - (std::uint64_t(64) << 20);
constexpr std::size_t kStripBytes = std::size_t(1) << 20;

std::string temporary_name(const std::string& path) {
  static std::atomic<unsigned> counter{0};
  std::size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  return dir + "." + base + ".tmp-" + std::to_string(::getpid()) + "-" +
         std::to_string(counter.fetch_add(1));
}

// ImageJ spells units its own way (Calibration.getUnit()).
std::string imagej_unit(const std::string& unit) {
  std::string u = normalise_length_unit(unit);
  if (u == "um") return "micron";
  if (u == "A") return "\\u00C5";
  return u;
}

}  // namespace

struct TiffStackWriter::Impl {
  std::string path, temp;
  int width = 0, height = 0;
  std::size_t frames = 0, written = 0;
  TiffWriteOptions options;
  std::unique_ptr<LibtiffFile> file;
  bool committed = false;
  bool bigtiff = false;
  std::vector<unsigned char> row;

  [[noreturn]] void fail_write(const std::string& what) {
    throw failure(path + ": " + what + ": " + file->error_or(std::strerror(errno)));
  }

  std::string imagej_description() const {
    std::string d = "ImageJ=1.11a\n";
    if (frames > 1) {
      d += "images=" + std::to_string(frames) + "\n";
      // A drift series is a time series: ImageJ's T axis (as in the real
      // acquisition files), shown by Fiji as a hyperstack with a frame slider.
      d += "frames=" + std::to_string(frames) + "\nhyperstack=true\nmode=grayscale\n";
    }
    if (options.pixel_size > 0 && !options.unit.empty()) d += "unit=" + imagej_unit(options.unit) + "\n";
    if (frames > 1) d += "loop=false\n";
    return d;
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
    throw bad_input(path + ": cannot write a " + std::to_string(width) + "x" +
                    std::to_string(height) + " frame");
  if (frames == 0) throw bad_input(path + ": nothing to write (0 frames)");
  if (options.pixel_size < 0 || !std::isfinite(options.pixel_size))
    throw bad_input(path + ": invalid pixel size");
  const std::uint64_t sample = options.format == SampleFormat::uint16 ? 2 : 4;
  const std::uint64_t estimate =
      std::uint64_t(frames) * (std::uint64_t(width) * std::uint64_t(height) * sample + 512) + 4096;
  const bool bigtiff = options.force_bigtiff || estimate > kClassicLimit;
  w.bigtiff = bigtiff;
  w.temp = temporary_name(path);
  std::string why;
  w.file = LibtiffFile::open(w.temp, bigtiff ? "w8" : "w", 0, &why);
  if (!w.file) throw failure(path + ": cannot create " + w.temp + ": " + why);
  w.row.resize(std::size_t(width) * sample);
}

TiffStackWriter::~TiffStackWriter() {
  if (!impl_ || impl_->committed) return;
  if (impl_->file) impl_->file->close();
  ::unlink(impl_->temp.c_str());
}

const std::string& TiffStackWriter::path() const { return impl_->path; }
bool TiffStackWriter::bigtiff() const { return impl_->bigtiff; }
const std::string& TiffStackWriter::temporary_path() const { return impl_->temp; }

void TiffStackWriter::append(const Frame& frame) {
  Impl& w = *impl_;
  if (w.committed || !w.file || !w.file->get())
    throw failure(w.path + ": append after commit");
  if (w.written >= w.frames)
    throw failure(w.path + ": frame " + std::to_string(w.written) + " exceeds the " +
                  std::to_string(w.frames) + " frames declared");
  if (frame.width != w.width || frame.height != w.height || frame.size() != std::size_t(w.width) * w.height)
    throw failure(w.path + ": frame " + std::to_string(w.written) + " is " +
                  std::to_string(frame.width) + "x" + std::to_string(frame.height) + ", expected " +
                  std::to_string(w.width) + "x" + std::to_string(w.height));
  TIFF* tif = w.file->get();
  LibtiffThreadMessages scope(w.file->messages());
  const bool u16 = w.options.format == SampleFormat::uint16;
  const std::size_t row_bytes = w.row.size();
  const std::uint32_t rows_per_strip = static_cast<std::uint32_t>(
      std::max<std::size_t>(1, std::min<std::size_t>(w.height, kStripBytes / row_bytes)));
  TIFFSetField(tif, TIFFTAG_SUBFILETYPE, 0);
  TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, static_cast<std::uint32_t>(w.width));
  TIFFSetField(tif, TIFFTAG_IMAGELENGTH, static_cast<std::uint32_t>(w.height));
  TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, u16 ? 16 : 32);
  TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT, u16 ? SAMPLEFORMAT_UINT : SAMPLEFORMAT_IEEEFP);
  TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, 1);
  TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
  TIFFSetField(tif, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
  TIFFSetField(tif, TIFFTAG_COMPRESSION, COMPRESSION_NONE);  // ImageJ/Fiji open it directly
  TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, rows_per_strip);
  if (w.written == 0) {
    TIFFSetField(tif, TIFFTAG_IMAGEDESCRIPTION, w.imagej_description().c_str());
    TIFFSetField(tif, TIFFTAG_SOFTWARE, "DriftScan " DRIFTSCAN_VERSION);
  }
  if (w.options.pixel_size > 0) {
    // ImageJ: pixels per unit in XResolution, the unit in the description;
    // ResolutionUnit says centimetre only when the unit is one.
    const float per_unit = static_cast<float>(1.0 / w.options.pixel_size);
    TIFFSetField(tif, TIFFTAG_XRESOLUTION, per_unit);
    TIFFSetField(tif, TIFFTAG_YRESOLUTION, per_unit);
    TIFFSetField(tif, TIFFTAG_RESOLUTIONUNIT,
                 normalise_length_unit(w.options.unit) == "cm" ? RESUNIT_CENTIMETER : RESUNIT_NONE);
  }
  for (int y = 0; y < w.height; ++y) {
    const float* src = frame.row(y);
    if (u16) {
      auto* dst = reinterpret_cast<std::uint16_t*>(w.row.data());
      for (int x = 0; x < w.width; ++x) {
        float v = src[x];
        // NaN -> 0; round half away from zero; clamp to the type's range
        float r = std::isnan(v) ? 0.0f : std::round(v);
        dst[x] = static_cast<std::uint16_t>(r <= 0.0f ? 0.0f : (r >= 65535.0f ? 65535.0f : r));
      }
    } else {
      std::memcpy(w.row.data(), src, row_bytes);
    }
    if (TIFFWriteScanline(tif, w.row.data(), static_cast<std::uint32_t>(y), 0) < 0)
      w.fail_write("cannot write frame " + std::to_string(w.written));
  }
  if (!TIFFWriteDirectory(tif)) w.fail_write("cannot write frame " + std::to_string(w.written));
  ++w.written;
}

void TiffStackWriter::commit() {
  Impl& w = *impl_;
  if (w.committed) return;
  if (w.written != w.frames)
    throw failure(w.path + ": only " + std::to_string(w.written) + " of " +
                  std::to_string(w.frames) + " frames were written");
  {
    LibtiffThreadMessages scope(w.file->messages());
    if (!TIFFFlush(w.file->get())) w.fail_write("cannot flush");
    if (::fsync(TIFFFileno(w.file->get())) != 0)
      throw failure(w.path + ": cannot sync " + w.temp + ": " + std::strerror(errno));
  }
  if (!w.file->close()) throw failure(w.path + ": cannot close: " + w.file->error_or("I/O error"));
  if (std::rename(w.temp.c_str(), w.path.c_str()) != 0)
    throw failure(w.path + ": cannot rename " + w.temp + " into place: " + std::strerror(errno));
  w.committed = true;
}

void write_tiff(const std::string& path, const Frame& frame, const TiffWriteOptions& options) {
  TiffStackWriter writer(path, frame.width, frame.height, 1, options);
  writer.append(frame);
  writer.commit();
}

}  // namespace driftscan
