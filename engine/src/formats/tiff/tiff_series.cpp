#include "driftscan/formats/tiff/tiff_series.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "driftscan/core/error.hpp"
#include "formats/series_file_list.hpp"
#include "formats/tiff/libtiff_diagnostics.hpp"
#include "formats/tiff/tiff_directory_index.hpp"
#include "formats/tiff/tiff_metadata.hpp"
#include "formats/tiff/tiff_page_decoder.hpp"

namespace driftscan {

const char* to_string(PixelType type) {
  switch (type) {
    case PixelType::uint8: return "uint8";
    case PixelType::uint16: return "uint16";
    case PixelType::uint32: return "uint32";
    case PixelType::int8: return "int8";
    case PixelType::int16: return "int16";
    case PixelType::int32: return "int32";
    case PixelType::float32: return "float32";
    case PixelType::float64: return "float64";
  }
  return "?";
}

namespace {

constexpr std::size_t kMaxWarnings = 16;

std::string compression_name(std::uint16_t c) {
  switch (c) {
    case COMPRESSION_NONE: return "none";
    case COMPRESSION_LZW: return "LZW";
    case COMPRESSION_ADOBE_DEFLATE:
    case COMPRESSION_DEFLATE: return "Deflate";
    case COMPRESSION_PACKBITS: return "PackBits";
    case COMPRESSION_JPEG: return "JPEG";
    case COMPRESSION_OJPEG: return "old JPEG";
    case COMPRESSION_CCITTRLE: return "CCITT RLE";
    case COMPRESSION_CCITTFAX3: return "CCITT G3";
    case COMPRESSION_CCITTFAX4: return "CCITT G4";
    case COMPRESSION_LZMA: return "LZMA";
    case COMPRESSION_ZSTD: return "Zstd";
    case COMPRESSION_WEBP: return "WebP";
    case COMPRESSION_JBIG: return "JBIG";
    case COMPRESSION_LERC: return "LERC";
    default: return "compression " + std::to_string(c);
  }
}

// An open file descriptor, closed on destruction.
class FileDescriptor {
 public:
  explicit FileDescriptor(const std::string& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    if (fd_ < 0) {
      int err = errno;
      throw bad_input(path +
                      (err == EACCES ? ": permission denied" : ": cannot open: " + std::string(std::strerror(err))));
    }
  }
  ~FileDescriptor() { ::close(fd_); }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

struct TiffSeries::Impl {
  SeriesInfo info;
  TiffReadOptions options;
  std::vector<std::string> files;
  std::vector<std::uint64_t> offsets;   // IFD offset of every frame
  std::vector<std::uint32_t> file_of;   // file index of every frame (multi-file only)
  std::vector<std::uint8_t> file_kind;  // per file: bit 0 BigTIFF, bit 1 big-endian
  TiffPageLayout layout;
  PageFormat format;
  std::uint64_t file_size = 0;             // of the single file
  std::unique_ptr<FileDescriptor> single;  // the file of a single-file series, shared by all reads
  bool big_endian = false;                 // of the single file
  // ImageJ's > 4 GB stacks: one IFD, `images=N` frames back to back from here.
  bool contiguous_stack = false;
  std::uint64_t stack_start = 0, stack_frame_bytes = 0;
  FrameCache cache;
  mutable std::mutex warnings_mutex;
  std::vector<std::string> warnings;

  explicit Impl(const TiffReadOptions& o) : options(o), cache(o.cache_bytes) {}

  std::size_t max_alloc() const { return options.max_frame_bytes * 2 + (std::size_t(64) << 20); }

  void warn(const std::string& message) {
    std::lock_guard<std::mutex> lock(warnings_mutex);
    if (warnings.size() < kMaxWarnings && std::find(warnings.begin(), warnings.end(), message) == warnings.end())
      warnings.push_back(message);
  }

  const std::string& file_of_frame(std::size_t k) const { return files[file_of.empty() ? 0 : file_of[k]]; }

  // A libtiff handle whose current directory is frame k's IFD.
  std::unique_ptr<LibtiffFile> handle_at(int fd, std::size_t k) const {
    const std::size_t f = file_of.empty() ? 0 : file_of[k];
    std::string why;
    auto file = LibtiffFile::open_at(fd, files[f], (file_kind[f] & 2) != 0, (file_kind[f] & 1) != 0, offsets[k],
                                     max_alloc(), &why);
    if (!file) throw bad_input(files[f] + ": frame " + std::to_string(k) + ": corrupt IFD: " + why);
    return file;
  }

  Frame read_contiguous(std::size_t k) {
    std::vector<unsigned char> bytes(static_cast<std::size_t>(stack_frame_bytes));
    std::uint64_t at = stack_start + k * stack_frame_bytes;
    std::size_t done = 0;
    while (done < bytes.size()) {
      ssize_t r = ::pread(single->get(), bytes.data() + done, bytes.size() - done, static_cast<off_t>(at + done));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) throw bad_input(files.front() + ": frame " + std::to_string(k) + ": truncated (read error)");
      done += static_cast<std::size_t>(r);
    }
    std::size_t non_finite = 0;
    Frame f = decode_contiguous(bytes.data(), layout, format, big_endian, &non_finite);
    if (non_finite > 0)
      warn(files.front() + ": frame " + std::to_string(k) + ": " + std::to_string(non_finite) +
           " non-finite pixels (NaN/Inf) set to 0");
    return f;
  }

  // ImageJ writes stacks too large for 32-bit offsets as a classic TIFF with
  // a single IFD whose description says images=N, the N frames stored
  // contiguously (ImageJ and tifffile read them so). Accept exactly that.
  void detect_contiguous_stack(TIFF* tif, const std::string& description) {
    if (info.multi_file || offsets.size() != 1 || description.compare(0, 7, "ImageJ=") != 0) return;
    const unsigned long long images = std::strtoull(imagej_field(description, "images").c_str(), nullptr, 10);
    std::uint16_t compression = COMPRESSION_NONE;
    TIFFGetFieldDefaulted(tif, TIFFTAG_COMPRESSION, &compression);
    if (images < 2 || compression != COMPRESSION_NONE || TIFFIsTiled(tif) || layout.samples_per_pixel != 1 ||
        layout.bits_per_sample % 8 != 0 || format.colour != ColourHandling::gray)
      return;
    const std::uint64_t frame_bytes = std::uint64_t(layout.width) * layout.height * (layout.bits_per_sample / 8);
    const std::uint32_t strips = TIFFNumberOfStrips(tif);
    std::uint64_t start = TIFFGetStrileOffset(tif, 0), end = start;
    for (std::uint32_t s = 0; s < strips; ++s) {
      if (TIFFGetStrileOffset(tif, s) != end) return;  // not back to back
      end += TIFFGetStrileByteCount(tif, s);
    }
    if (end - start != frame_bytes || frame_bytes == 0) return;
    const std::uint64_t present = (file_size - std::min(file_size, start)) / frame_bytes;
    if (present < images)
      throw bad_input(files.front() + ": frame " + std::to_string(present) + ": truncated file (ImageJ stack of " +
                      std::to_string(images) + " frames holds data for " + std::to_string(present) + ")");
    contiguous_stack = true;
    stack_start = start;
    stack_frame_bytes = frame_bytes;
    info.frames = static_cast<std::size_t>(images);
  }

  Frame read(std::size_t k) {
    if (contiguous_stack) return read_contiguous(k);
    const std::string& path = file_of_frame(k);
    std::unique_ptr<FileDescriptor> own;
    if (!single) own = std::make_unique<FileDescriptor>(path);
    auto file = handle_at(single ? single->get() : own->get(), k);
    LibtiffThreadMessages scope(file->messages());
    const std::string where = path + ": frame " + std::to_string(k);
    std::size_t non_finite = 0;
    Frame f = decode_page(*file, layout, format, where, options.max_frame_bytes, &non_finite);
    if (non_finite > 0) warn(where + ": " + std::to_string(non_finite) + " non-finite pixels (NaN/Inf) set to 0");
    return f;
  }

  // Calibration and compression from the first page of the first file.
  void read_first_page_metadata() {
    const std::string& path = files.front();
    std::unique_ptr<FileDescriptor> own;
    if (!single) own = std::make_unique<FileDescriptor>(path);
    auto file = handle_at(single ? single->get() : own->get(), 0);
    LibtiffThreadMessages scope(file->messages());
    TIFF* tif = file->get();
    std::string text;
    PixelCalibration cal = read_page_calibration(tif, &text);
    detect_contiguous_stack(tif, text);
    info.pixel_size = cal.size;
    info.unit = cal.size > 0 ? cal.unit : "";
    info.calibration_source = cal.source;
    for (const auto& w : cal.warnings) warn(path + ": " + w);
    std::uint16_t compression = COMPRESSION_NONE;
    TIFFGetFieldDefaulted(tif, TIFFTAG_COMPRESSION, &compression);
    info.compression = compression_name(compression);
    info.tiled = TIFFIsTiled(tif) != 0;
  }
};

namespace {

enum class PathKind { file, folder, glob };

PathKind classify_path(const std::string& path) {
  if (path.empty()) throw bad_input("(empty path): no input file given");
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    int err = errno;
    if (err == ENOENT && has_glob_characters(path)) return PathKind::glob;
    if (err == ENOENT) throw bad_input(path + ": no such file or folder");
    if (err == EACCES) throw bad_input(path + ": permission denied");
    throw bad_input(path + ": cannot access: " + std::strerror(err));
  }
  if (S_ISDIR(st.st_mode)) return PathKind::folder;
  if (!S_ISREG(st.st_mode)) throw bad_input(path + ": not a regular file or folder");
  return PathKind::file;
}

}  // namespace

std::unique_ptr<TiffSeries> TiffSeries::open(const std::string& path, std::size_t cache_bytes) {
  TiffReadOptions options;
  options.cache_bytes = cache_bytes;
  return open(path, options);
}

std::unique_ptr<TiffSeries> TiffSeries::open(const std::string& path, const TiffReadOptions& options) {
  install_libtiff_handlers();
  auto impl = std::make_unique<Impl>(options);
  SeriesInfo& info = impl->info;
  info.path = path;
  PathKind kind = classify_path(path);
  if (kind == PathKind::file) impl->files = {path};
  else if (kind == PathKind::folder) impl->files = tiff_files_in_folder(path);
  else impl->files = files_matching(path);
  info.multi_file = kind != PathKind::file;
  info.files = impl->files.size();

  for (std::size_t f = 0; f < impl->files.size(); ++f) {
    const std::string& file = impl->files[f];
    TiffDirectoryIndex index = index_tiff_directories(file, impl->offsets.size());
    impl->file_kind.push_back(static_cast<std::uint8_t>((index.bigtiff ? 1 : 0) | (index.big_endian ? 2 : 0)));
    if (f == 0) {
      impl->big_endian = index.big_endian;
      impl->file_size = index.file_size;
      impl->layout = index.layout;
      info.bigtiff = index.bigtiff;
    } else if (index.layout != impl->layout) {
      throw bad_input(file + ": frame " + std::to_string(impl->offsets.size()) + " is " + index.layout.describe() +
                      " but frame 0 (" + impl->files.front() + ") is " + impl->layout.describe() +
                      " (all frames must have one size and type)");
    }
    if (info.multi_file) impl->file_of.insert(impl->file_of.end(), index.offsets.size(), static_cast<std::uint32_t>(f));
    if (impl->offsets.empty()) impl->offsets = std::move(index.offsets);
    else impl->offsets.insert(impl->offsets.end(), index.offsets.begin(), index.offsets.end());
  }
  impl->offsets.shrink_to_fit();
  impl->file_of.shrink_to_fit();

  const std::string first = impl->files.front() + ": frame 0";
  impl->format = classify_page(impl->layout, first);
  if (!impl->format.warning.empty()) impl->warn(impl->files.front() + ": " + impl->format.warning);
  std::uint64_t frame_bytes = std::uint64_t(impl->layout.width) * impl->layout.height * 4;
  if (frame_bytes > options.max_frame_bytes)
    throw bad_input(first + ": a " + std::to_string(impl->layout.width) + "x" + std::to_string(impl->layout.height) +
                    " frame exceeds the memory limit for one frame (corrupt size?)");
  info.frames = impl->offsets.size();
  info.width = static_cast<int>(impl->layout.width);
  info.height = static_cast<int>(impl->layout.height);
  info.pixel_type = impl->format.pixel_type;
  if (!info.multi_file) impl->single = std::make_unique<FileDescriptor>(impl->files.front());
  impl->read_first_page_metadata();
  std::unique_ptr<TiffSeries> series(new TiffSeries(std::move(impl)));
  // Decoding frame 0 now reports an undecodable series at open, not mid-run.
  series->frame(0);
  return series;
}

TiffSeries::TiffSeries(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TiffSeries::~TiffSeries() = default;

const SeriesInfo& TiffSeries::info() const { return impl_->info; }
std::size_t TiffSeries::frame_count() const { return impl_->info.frames; }
int TiffSeries::width() const { return impl_->info.width; }
int TiffSeries::height() const { return impl_->info.height; }
double TiffSeries::pixel_size() const { return impl_->info.pixel_size; }
std::string TiffSeries::pixel_unit() const { return impl_->info.unit; }
const FrameCache& TiffSeries::cache() const { return impl_->cache; }

std::vector<std::string> TiffSeries::warnings() const {
  std::lock_guard<std::mutex> lock(impl_->warnings_mutex);
  return impl_->warnings;
}

std::string TiffSeries::describe() const {
  const SeriesInfo& i = impl_->info;
  std::string s = i.path + ": " + std::to_string(i.frames) + " x " + std::to_string(i.width) + "x" +
                  std::to_string(i.height) + " " + to_string(i.pixel_type);
  if (i.multi_file) s += " in " + std::to_string(i.files) + " files";
  if (i.bigtiff) s += ", BigTIFF";
  if (i.compression != "none") s += ", " + i.compression;
  if (i.pixel_size > 0) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, ", %.6g %s/pixel", i.pixel_size, i.unit.c_str());
    s += buffer;
  }
  return s;
}

Frame TiffSeries::frame(std::size_t k) const { return *shared_frame(k); }

std::shared_ptr<const Frame> TiffSeries::shared_frame(std::size_t k) const {
  if (k >= impl_->info.frames)
    throw bad_input(impl_->info.path + ": frame " + std::to_string(k) + " out of range (" +
                    std::to_string(impl_->info.frames) + " frames)");
  if (auto cached = impl_->cache.find(k)) return cached;
  auto decoded = std::make_shared<const Frame>(impl_->read(k));
  impl_->cache.insert(k, decoded);
  return decoded;
}

}  // namespace driftscan
