#include "formats/tiff/tiff_directory_index.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unordered_set>

#include "driftscan/core/error.hpp"

namespace driftscan {
namespace {

// pread through a window, so walking 100,000 IFDs costs few system calls.
class WindowedFile {
 public:
  WindowedFile(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) {
      if (errno == EACCES) throw bad_input(path + ": permission denied");
      throw bad_input(path + ": cannot open: " + std::strerror(errno));
    }
    struct stat st {};
    if (::fstat(fd_, &st) != 0) throw bad_input(path + ": cannot stat: " + std::strerror(errno));
    size_ = static_cast<std::uint64_t>(st.st_size);
  }
  ~WindowedFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  WindowedFile(const WindowedFile&) = delete;
  WindowedFile& operator=(const WindowedFile&) = delete;

  std::uint64_t size() const { return size_; }

  // Copies n bytes at `offset`; false when they are not all in the file.
  bool read(std::uint64_t offset, void* out, std::size_t n) {
    if (offset > size_ || n > size_ - offset) return false;
    if (offset < window_start_ || offset + n > window_start_ + window_.size()) {
      std::size_t want = std::max<std::size_t>(n, window_bytes_);
      window_.resize(static_cast<std::size_t>(std::min<std::uint64_t>(want, size_ - offset)));
      std::size_t got = 0;
      while (got < window_.size()) {
        ssize_t r = ::pread(fd_, window_.data() + got, window_.size() - got, static_cast<off_t>(offset + got));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) throw bad_input(path_ + ": read error at byte " + std::to_string(offset + got));
        got += static_cast<std::size_t>(r);
      }
      window_start_ = offset;
    }
    std::memcpy(out, window_.data() + (offset - window_start_), n);
    return true;
  }

 private:
  // Small: libtiff writes each IFD right after its frame's pixels, so larger
  // reads would mostly copy pixel data; IFDs stored together (ImageJ) still
  // share one read.
  std::size_t window_bytes_ = 1024;
  std::string path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
  std::vector<unsigned char> window_;
  std::uint64_t window_start_ = 0;
};

class IfdWalker {
 public:
  IfdWalker(const std::string& path, std::size_t first_frame) : path_(path), file_(path), first_frame_(first_frame) {}

  TiffDirectoryIndex run() {
    TiffDirectoryIndex index;
    index.file_size = file_.size();
    unsigned char header[16];
    if (!file_.read(0, header, 8)) fail("not a TIFF file (too short)");
    if (header[0] == 'I' && header[1] == 'I') {
      big_endian_ = false;
    } else if (header[0] == 'M' && header[1] == 'M') {
      big_endian_ = true;
    } else {
      fail("not a TIFF file");
    }
    std::uint16_t magic = u16(header + 2);
    std::uint64_t next = 0;
    if (magic == 42) {
      next = u32(header + 4);
    } else if (magic == 43) {
      bigtiff_ = true;
      if (!file_.read(0, header, 16)) fail("truncated BigTIFF header");
      if (u16(header + 4) != 8 || u16(header + 6) != 0) fail("corrupt BigTIFF header");
      next = u64(header + 8);
    } else {
      fail("not a TIFF file (bad magic number)");
    }
    index.bigtiff = bigtiff_;
    index.big_endian = big_endian_;

    std::unordered_set<std::uint64_t> seen;  // only once the chain steps backwards
    std::vector<std::uint64_t> reduced;      // offsets of skipped pages
    std::uint64_t highest = 0;
    bool have_layout = false;
    while (next != 0) {
      // Pages are named by the frame number they would get (thumbnails skipped).
      std::string where = "frame " + std::to_string(first_frame_ + index.offsets.size());
      if (next >= file_.size())
        fail(where + ": IFD offset " + std::to_string(next) + " lies beyond the end of the file (truncated file?)");
      if (next > highest) {
        // IFDs in increasing order (every common writer): cannot be a revisit.
        highest = next;
        if (!seen.empty()) seen.insert(next);
      } else {
        // A step backwards: from now on remember offsets to catch a loop.
        if (seen.empty()) {
          seen.insert(index.offsets.begin(), index.offsets.end());
          seen.insert(reduced.begin(), reduced.end());
        }
        if (!seen.insert(next).second) fail(where + ": IFD chain loops back (corrupt IFD)");
      }

      TiffPageLayout layout;
      std::uint64_t following = read_ifd(next, where, layout);
      // Pyramid levels stored as SubIFDs (OME-TIFF, some slide scanners) hang
      // off a page, outside the main chain: refused rather than silently
      // reading only part of what the file holds.
      if (layout.sub_ifds)
        fail(where +
             ": SubIFD pyramids (TIFF tag 330) are not supported; save the series without "
             "the pyramid (full-resolution pages only)");
      if (layout.reduced_resolution()) {
        ++index.skipped_reduced;
        reduced.push_back(next);
      } else {
        const std::string& frame = where;
        if (layout.width == 0 || layout.height == 0)
          fail(frame + ": corrupt IFD (image width or height missing or zero)");
        if (!have_layout) {
          index.layout = layout;
          have_layout = true;
        } else if (layout != index.layout) {
          fail(frame + " is " + layout.describe() + " but frame " + std::to_string(first_frame_) + " is " +
               index.layout.describe() + " (all frames must have one size and type)");
        }
        index.offsets.push_back(next);
      }
      next = following;
    }
    if (index.offsets.empty()) {
      if (index.skipped_reduced > 0) fail("only reduced-resolution pages, no full-size frame");
      fail("the TIFF has zero pages");
    }
    return index;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw bad_input(path_ + ": " + what); }

  std::uint16_t u16(const unsigned char* p) const {
    return big_endian_ ? static_cast<std::uint16_t>(p[0] << 8 | p[1]) : static_cast<std::uint16_t>(p[1] << 8 | p[0]);
  }
  std::uint32_t u32(const unsigned char* p) const {
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= std::uint32_t(p[big_endian_ ? i : 3 - i]) << (8 * (3 - i));
    return v;
  }
  std::uint64_t u64(const unsigned char* p) const {
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= std::uint64_t(p[big_endian_ ? i : 7 - i]) << (8 * (7 - i));
    return v;
  }

  // The first value of an integer-valued entry (inline or at its offset).
  bool first_value(const unsigned char* entry, const std::string& where, std::uint64_t& out) {
    std::uint16_t type = u16(entry + 2);
    std::uint64_t count = bigtiff_ ? u64(entry + 4) : u32(entry + 4);
    const unsigned char* value = entry + (bigtiff_ ? 12 : 8);
    std::size_t inline_bytes = bigtiff_ ? 8 : 4;
    std::size_t size = tiff_type_size(type);
    if (count == 0 || size == 0 || size > 8) return false;
    unsigned char buffer[8];
    const unsigned char* p = value;
    if (count > inline_bytes / size) {
      std::uint64_t at = bigtiff_ ? u64(value) : u32(value);
      if (!file_.read(at, buffer, size))
        fail(where + ": corrupt IFD (tag " + std::to_string(u16(entry)) + " points beyond the end of the file)");
      p = buffer;
    }
    switch (type) {
      case 1:
      case 6:
      case 7: out = p[0]; return true;
      case 3:
      case 8: out = u16(p); return true;
      case 4:
      case 9:
      case 13: out = u32(p); return true;
      case 16:
      case 17:
      case 18: out = u64(p); return true;
      default: return false;  // rationals, floats: not a layout integer
    }
  }

  std::uint64_t read_ifd(std::uint64_t at, const std::string& where, TiffPageLayout& layout) {
    const std::size_t count_bytes = bigtiff_ ? 8 : 2, entry_bytes = bigtiff_ ? 20 : 12, next_bytes = bigtiff_ ? 8 : 4;
    unsigned char buffer[20];
    if (!file_.read(at, buffer, count_bytes)) fail(where + ": truncated IFD");
    std::uint64_t entries = bigtiff_ ? u64(buffer) : u16(buffer);
    if (entries == 0 || entries > 65535) fail(where + ": corrupt IFD (" + std::to_string(entries) + " entries)");
    std::uint64_t end = at + count_bytes + entries * entry_bytes + next_bytes;
    if (end > file_.size()) fail(where + ": truncated IFD (ends beyond the end of the file)");
    bool width = false, height = false;
    for (std::uint64_t e = 0; e < entries; ++e) {
      file_.read(at + count_bytes + e * entry_bytes, buffer, entry_bytes);
      std::uint16_t tag = u16(buffer);
      std::uint64_t v = 0;
      switch (tag) {
        case 254:
          if (first_value(buffer, where, v)) layout.new_subfile_type = static_cast<std::uint32_t>(v);
          break;
        case 256:
          if ((width = first_value(buffer, where, v))) layout.width = clamp32(v);
          break;
        case 257:
          if ((height = first_value(buffer, where, v))) layout.height = clamp32(v);
          break;
        case 258:
          if (first_value(buffer, where, v)) layout.bits_per_sample = clamp16(v);
          break;
        case 259:
          if (first_value(buffer, where, v)) layout.compression = clamp16(v);
          break;
        case 262:
          if (first_value(buffer, where, v)) layout.photometric = clamp16(v);
          break;
        case 277:
          if (first_value(buffer, where, v)) layout.samples_per_pixel = clamp16(v);
          break;
        case 339:
          if (first_value(buffer, where, v)) layout.sample_format = clamp16(v);
          break;
        case 330: layout.sub_ifds = true; break;
        default: break;
      }
    }
    if (!width || !height) layout.width = layout.height = 0;
    file_.read(end - next_bytes, buffer, next_bytes);
    return bigtiff_ ? u64(buffer) : u32(buffer);
  }

  static std::uint32_t clamp32(std::uint64_t v) {
    return v > 0xffffffffu ? 0xffffffffu : static_cast<std::uint32_t>(v);
  }
  static std::uint16_t clamp16(std::uint64_t v) { return v > 0xffffu ? 0xffffu : static_cast<std::uint16_t>(v); }

  std::string path_;
  WindowedFile file_;
  std::size_t first_frame_;
  bool big_endian_ = false;
  bool bigtiff_ = false;
};

}  // namespace

std::string TiffPageLayout::describe() const {
  std::string type;
  switch (sample_format) {
    case 2: type = "int"; break;
    case 3: type = "float"; break;
    case 1: type = "uint"; break;
    default: type = "format" + std::to_string(sample_format) + "_"; break;
  }
  std::string s = std::to_string(width) + "x" + std::to_string(height) + " " + type + std::to_string(bits_per_sample);
  if (samples_per_pixel != 1) s += " x" + std::to_string(samples_per_pixel) + " samples";
  return s;
}

std::size_t tiff_type_size(std::uint64_t type) {
  switch (type) {
    case 1:
    case 2:
    case 6:
    case 7: return 1;
    case 3:
    case 8: return 2;
    case 4:
    case 9:
    case 11:
    case 13: return 4;
    case 5:
    case 10:
    case 12:
    case 16:
    case 17:
    case 18: return 8;
    default: return 0;
  }
}

TiffDirectoryIndex index_tiff_directories(const std::string& path, std::size_t first_frame) {
  return IfdWalker(path, first_frame).run();
}

}  // namespace driftscan
