// A series still being written; see growing_series.hpp.
#include "driftscan/formats/growing_series.hpp"

#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <unordered_set>

#include "driftscan/core/error.hpp"
#include "driftscan/core/frame_cache.hpp"
#include "driftscan/formats/tiff/tiff_series.hpp"
#include "formats/series_file_list.hpp"
#include "formats/tiff/libtiff_diagnostics.hpp"
#include "formats/tiff/tiff_directory_index.hpp"
#include "formats/tiff/tiff_metadata.hpp"
#include "formats/tiff/tiff_page_decoder.hpp"

namespace driftscan {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

constexpr std::size_t kMaxFrameBytes = std::size_t(4) << 30;

// An open descriptor, closed on destruction.
class Descriptor {
 public:
  explicit Descriptor(int fd) : fd_(fd) {}
  ~Descriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// n bytes at `at`, false when the file (as it is now) does not hold them all.
bool read_exact(int fd, std::uint64_t at, void* out, std::size_t n) {
  std::size_t done = 0;
  auto* p = static_cast<unsigned char*>(out);
  while (done < n) {
    ssize_t r = ::pread(fd, p + done, n - done, static_cast<off_t>(at + done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    done += static_cast<std::size_t>(r);
  }
  return true;
}

struct TiffHeader {
  bool big_endian = false, bigtiff = false;
  std::uint64_t first_pointer_at = 4;  // where the offset of the first IFD is stored
};

// The byte order of one file.
struct Endian {
  bool big = false;
  std::uint64_t get(const unsigned char* p, int bytes) const {
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= std::uint64_t(p[big ? bytes - 1 - i : i]) << (8 * i);
    return v;
  }
};

enum class HeaderState { complete, too_short, not_tiff };

HeaderState read_header(int fd, std::uint64_t size, TiffHeader& h) {
  unsigned char b[16];
  if (size < 8 || !read_exact(fd, 0, b, 8)) return HeaderState::too_short;
  if (b[0] == 'I' && b[1] == 'I') h.big_endian = false;
  else if (b[0] == 'M' && b[1] == 'M') h.big_endian = true;
  else return HeaderState::not_tiff;
  const Endian e{h.big_endian};
  const std::uint64_t magic = e.get(b + 2, 2);
  if (magic == 42) {
    h.bigtiff = false;
    h.first_pointer_at = 4;
  } else if (magic == 43) {
    if (size < 16 || !read_exact(fd, 0, b, 16)) return HeaderState::too_short;
    if (e.get(b + 4, 2) != 8) return HeaderState::not_tiff;
    h.bigtiff = true;
    h.first_pointer_at = 8;
  } else {
    return HeaderState::not_tiff;
  }
  return HeaderState::complete;
}

// One IFD as far as completeness and layout go.
struct PageProbe {
  enum State { complete, incomplete, corrupt } state = incomplete;
  std::string why;  // incomplete / corrupt: what is missing
  TiffPageLayout layout;
  std::uint64_t next_pointer_at = 0;  // where this IFD stores the offset of the next one
};

// Whether the IFD at `at` and everything it points to (out-of-line values,
// strip or tile data) lie within the first `size` bytes of the file.
PageProbe probe_page(int fd, std::uint64_t size, const TiffHeader& h, std::uint64_t at) {
  PageProbe p;
  const Endian e{h.big_endian};
  const std::size_t count_bytes = h.bigtiff ? 8 : 2, entry_bytes = h.bigtiff ? 20 : 12, next_bytes = h.bigtiff ? 8 : 4;
  const std::size_t inline_bytes = h.bigtiff ? 8 : 4;
  unsigned char b[20];
  if (at + count_bytes > size || !read_exact(fd, at, b, count_bytes)) {
    p.why = "its IFD lies beyond the file's end";
    return p;
  }
  const std::uint64_t entries = e.get(b, static_cast<int>(count_bytes));
  if (entries == 0 || entries > 65535) {
    p.state = PageProbe::corrupt;
    p.why = "corrupt IFD (" + std::to_string(entries) + " entries)";
    return p;
  }
  const std::uint64_t end = at + count_bytes + entries * entry_bytes + next_bytes;
  if (end > size) {
    p.why = "its IFD ends beyond the file's end";
    return p;
  }
  std::vector<unsigned char> ifd(static_cast<std::size_t>(end - at - count_bytes));
  if (!read_exact(fd, at + count_bytes, ifd.data(), ifd.size())) {
    p.why = "its IFD could not be read whole";
    return p;
  }
  // Integer values of an entry (inline or out of line), at most `limit`.
  auto values = [&](const unsigned char* entry, std::vector<std::uint64_t>& out) -> bool {
    const std::uint64_t type = e.get(entry + 2, 2);
    const std::uint64_t count = h.bigtiff ? e.get(entry + 4, 8) : e.get(entry + 4, 4);
    const std::size_t ts = tiff_type_size(type);
    if (ts == 0 || count == 0 || count > (std::uint64_t(1) << 24)) return false;
    std::vector<unsigned char> raw(static_cast<std::size_t>(count * ts));
    const unsigned char* value = entry + (h.bigtiff ? 12 : 8);
    if (raw.size() <= inline_bytes) {
      std::memcpy(raw.data(), value, raw.size());
    } else {
      const std::uint64_t off = e.get(value, static_cast<int>(inline_bytes));
      if (off + raw.size() > size || !read_exact(fd, off, raw.data(), raw.size())) return false;
    }
    out.resize(static_cast<std::size_t>(count));
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = e.get(raw.data() + i * ts, static_cast<int>(ts));
    return true;
  };
  std::vector<std::uint64_t> offsets, counts, v;
  bool have_width = false, have_height = false;
  for (std::uint64_t i = 0; i < entries; ++i) {
    const unsigned char* entry = ifd.data() + i * entry_bytes;
    const std::uint64_t tag = e.get(entry, 2), type = e.get(entry + 2, 2);
    const std::uint64_t count = h.bigtiff ? e.get(entry + 4, 8) : e.get(entry + 4, 4);
    const std::size_t ts = tiff_type_size(type);
    // Every out-of-line value (descriptions, colour maps...) must be there too.
    if (ts != 0 && count * ts > inline_bytes) {
      const std::uint64_t off = e.get(entry + (h.bigtiff ? 12 : 8), static_cast<int>(inline_bytes));
      if (count > size || off + count * ts > size) {
        p.why = "the values of its tag " + std::to_string(tag) + " lie beyond the file's end";
        return p;
      }
    }
    const bool integer = type == 1 || type == 3 || type == 4 || type == 16;
    switch (tag) {
      case 254:
      case 256:
      case 257:
      case 258:
      case 259:
      case 262:
      case 277:
      case 339:
        if (!integer || !values(entry, v) || v.empty()) break;
        if (tag == 254) p.layout.new_subfile_type = static_cast<std::uint32_t>(v[0]);
        if (tag == 256) p.layout.width = static_cast<std::uint32_t>(v[0]), have_width = true;
        if (tag == 257) p.layout.height = static_cast<std::uint32_t>(v[0]), have_height = true;
        if (tag == 258) p.layout.bits_per_sample = static_cast<std::uint16_t>(v[0]);
        if (tag == 259) p.layout.compression = static_cast<std::uint16_t>(v[0]);
        if (tag == 262) p.layout.photometric = static_cast<std::uint16_t>(v[0]);
        if (tag == 277) p.layout.samples_per_pixel = static_cast<std::uint16_t>(v[0]);
        if (tag == 339) p.layout.sample_format = static_cast<std::uint16_t>(v[0]);
        break;
      case 273:
      case 324:
        if (!values(entry, offsets)) {
          p.state = PageProbe::corrupt;
          p.why = "corrupt strip/tile offsets";
          return p;
        }
        break;
      case 279:
      case 325:
        if (!values(entry, counts)) {
          p.state = PageProbe::corrupt;
          p.why = "corrupt strip/tile byte counts";
          return p;
        }
        break;
      case 330: p.layout.sub_ifds = true; break;
      default: break;
    }
  }
  p.next_pointer_at = end - next_bytes;
  if (!have_width || !have_height || p.layout.width == 0 || p.layout.height == 0) {
    p.state = PageProbe::corrupt;
    p.why = "corrupt IFD (image width or height missing or zero)";
    return p;
  }
  if (offsets.empty() || offsets.size() != counts.size()) {
    p.state = PageProbe::corrupt;
    p.why = "corrupt IFD (strip or tile offsets and byte counts missing or of different lengths)";
    return p;
  }
  for (std::size_t i = 0; i < offsets.size(); ++i)
    if (offsets[i] + counts[i] > size) {
      p.why = "its pixel data end beyond the file's end";
      return p;
    }
  p.state = PageProbe::complete;
  return p;
}

// One full-resolution page the series may take.
struct Page {
  std::uint64_t ifd = 0;
  TiffPageLayout layout;
};

// A whole file's pages, when every one is complete.
struct FileProbe {
  PageProbe::State state = PageProbe::incomplete;
  std::string why;
  TiffHeader header;
  std::vector<Page> pages;
};

FileProbe probe_file(int fd, std::uint64_t size) {
  FileProbe f;
  switch (read_header(fd, size, f.header)) {
    case HeaderState::too_short: f.why = "its header is not written yet"; return f;
    case HeaderState::not_tiff:
      f.state = PageProbe::corrupt;
      f.why = "not a TIFF file";
      return f;
    case HeaderState::complete: break;
  }
  const Endian e{f.header.big_endian};
  const int pointer_bytes = f.header.bigtiff ? 8 : 4;
  std::uint64_t pointer_at = f.header.first_pointer_at;
  std::unordered_set<std::uint64_t> seen;
  for (;;) {
    unsigned char b[8];
    if (!read_exact(fd, pointer_at, b, static_cast<std::size_t>(pointer_bytes))) {
      f.why = "truncated";
      return f;
    }
    const std::uint64_t at = e.get(b, pointer_bytes);
    if (at == 0) break;
    if (!seen.insert(at).second) {
      f.state = PageProbe::corrupt;
      f.why = "its IFD chain loops back (corrupt IFD)";
      return f;
    }
    PageProbe p = probe_page(fd, size, f.header, at);
    if (p.state != PageProbe::complete) {
      f.state = p.state;
      f.why = "page " + std::to_string(seen.size() - 1) + ": " + p.why;
      return f;
    }
    if (!p.layout.reduced_resolution()) f.pages.push_back({at, p.layout});
    pointer_at = p.next_pointer_at;
  }
  if (f.pages.empty()) {
    f.why = "no complete page yet";
    return f;
  }
  f.state = PageProbe::complete;
  return f;
}

bool has_tiff_name(const std::string& path) {
  const std::size_t dot = path.rfind('.');
  if (dot == std::string::npos) return false;
  std::string ext = path.substr(dot + 1);
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext == "tif" || ext == "tiff";
}

std::uint64_t file_size_of(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
}

}  // namespace

struct GrowingSeries::Impl {
  std::string path;
  GrowingSeriesOptions options;
  bool folder_mode = false;  // a folder or a glob of files (else one growing file)
  bool glob = false;

  // Frames taken in.
  struct FrameAt {
    std::uint32_t file = 0;  // index in `files`
    std::uint32_t page = 0;  // page number within the file (for messages)
    std::uint64_t ifd = 0;
  };
  std::vector<FrameAt> frames;
  std::vector<std::string> files;
  std::vector<std::uint8_t> file_kind;  // bit 0 BigTIFF, bit 1 big-endian
  bool have_layout = false;
  TiffPageLayout layout;
  PageFormat format;
  double pixel_size = 0.0;
  std::string unit;
  std::unique_ptr<FrameCache> cache;  // made with frame 0: a few frames' worth
  // Guards frames, files and file_kind: poll() grows them while another
  // thread may read frames already taken.
  mutable std::mutex mu;
  std::string pending;
  std::size_t incomplete_waits = 0;

  // One growing file.
  std::unique_ptr<Descriptor> fd;
  dev_t dev = 0;
  ino_t ino = 0;
  bool header_read = false;
  TiffHeader header;
  std::uint64_t pointer_at = 0;  // where the offset of the next IFD to take will appear
  std::uint64_t last_size = 0;
  std::uint32_t pages_seen = 0;
  std::unordered_set<std::uint64_t> seen_ifds;

  // A folder or glob.
  std::string watch_folder;  // watched with inotify ("" when it cannot be)
  std::unique_ptr<Descriptor> inotify;
  struct FileState {
    std::uint64_t size = 0;
    std::int64_t mtime_ns = 0;
    Clock::time_point changed;
    bool closed = false;  // closed after writing or renamed into place (inotify)
    bool listed = false;  // seen by a listing (an event may come first)
  };
  std::map<std::string, FileState> watching;
  std::set<std::string> decided;  // taken or skipped
  std::string last_taken;

  explicit Impl(const GrowingSeriesOptions& o) : options(o) {}

  bool full() const { return options.max_frames > 0 && frames.size() >= options.max_frames; }

  // Where frame f lives, copied under the lock.
  struct Located {
    FrameAt at;
    std::string file, origin;
    std::uint8_t kind = 0;
  };
  Located locate(const FrameAt& f) const { return {f, files[f.file], origin(f), file_kind[f.file]}; }
  Located locate(std::size_t k) const {
    std::lock_guard<std::mutex> lock(mu);
    return locate(frames[k]);
  }

  static std::unique_ptr<LibtiffFile> handle(int file_fd, const Located& l) {
    std::string why;
    auto h = LibtiffFile::open_at(file_fd, l.file, (l.kind & 2) != 0, (l.kind & 1) != 0, l.at.ifd,
                                  kMaxFrameBytes * 2 + (std::size_t(64) << 20), &why);
    if (!h) throw bad_input(l.origin + ": corrupt IFD: " + why);
    return h;
  }

  std::string origin(const FrameAt& f) const {
    return folder_mode && f.page == 0 ? files[f.file] : files[f.file] + ": page " + std::to_string(f.page);
  }

  Frame decode(int file_fd, const Located& l) const {
    auto h = handle(file_fd, l);
    LibtiffThreadMessages scope(h->messages());
    return decode_page(*h, layout, format, l.origin, kMaxFrameBytes);
  }

  Frame read(std::size_t k) const {
    const Located l = locate(k);
    if (!folder_mode) return decode(fd->get(), l);
    Descriptor own(::open(l.file.c_str(), O_RDONLY | O_CLOEXEC));
    if (own.get() < 0) throw bad_input(l.file + ": cannot open: " + std::strerror(errno));
    return decode(own.get(), l);
  }

  // Frame 0's layout and calibration; bad_input when the page cannot be a frame 0.
  void adopt_first(int file_fd, const FrameAt& f, const TiffPageLayout& l) {
    if (l.sub_ifds) throw bad_input(origin(f) + ": SubIFD pyramids (TIFF tag 330) are not supported");
    format = classify_page(l, origin(f));
    if (std::uint64_t(l.width) * l.height * 4 > kMaxFrameBytes)
      throw bad_input(origin(f) + ": frame exceeds the memory limit for one frame (corrupt size?)");
    layout = l;
    have_layout = true;
    const std::size_t frame_bytes = std::size_t(l.width) * l.height * sizeof(float);
    cache = std::make_unique<FrameCache>(std::min(options.cache_bytes, options.cache_frames * frame_bytes));
    auto h = handle(file_fd, locate(f));
    LibtiffThreadMessages scope(h->messages());
    TIFF* tif = h->get();
    const PixelCalibration cal = read_page_calibration(tif);
    pixel_size = cal.size;
    unit = cal.size > 0 ? cal.unit : "";
  }

  // Takes page `f` (complete) into the series, or says why not.
  std::string take(int file_fd, const FrameAt& f, const TiffPageLayout& l) {
    if (l.reduced_resolution()) return "";  // thumbnails are not frames, as in a batch run
    if (!have_layout) {
      adopt_first(file_fd, f, l);
    } else if (l != layout) {
      return origin(f) + " is " + l.describe() + " but frame 0 is " + layout.describe() +
             ": skipped (all frames must have one size and type)";
    }
    Frame decoded;
    try {
      decoded = decode(file_fd, locate(f));
    } catch (const Error& e) {
      if (frames.empty()) throw;  // frame 0 is the reference of everything
      return std::string(e.what()) + ": skipped (cannot be decoded)";
    }
    cache->insert(frames.size(), std::make_shared<const Frame>(std::move(decoded)));
    std::lock_guard<std::mutex> lock(mu);
    frames.push_back(f);
    return "";
  }

  // Opens the followed file; false when it does not exist (yet).
  bool open_file() {
    const int file = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (file < 0) {
      if (errno == ENOENT) return false;
      throw bad_input(
          path + (errno == EACCES ? ": permission denied" : ": cannot open: " + std::string(std::strerror(errno))));
    }
    fd = std::make_unique<Descriptor>(file);
    struct stat st {};
    if (::fstat(file, &st) != 0) throw bad_input(path + ": cannot stat: " + std::strerror(errno));
    if (!S_ISREG(st.st_mode)) throw bad_input(path + ": not a regular file");
    dev = st.st_dev;
    ino = st.st_ino;
    return true;
  }

  void poll_file(SeriesGrowth& g) {
    if (!fd && !open_file()) {
      pending = path + " (the file does not exist yet)";
      return;
    }
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
      throw failure(path + ": the followed file was deleted or moved away (" + std::strerror(errno) + ")");
    if (st.st_dev != dev || st.st_ino != ino) throw failure(path + ": the followed file was replaced by another file");
    const std::uint64_t size = file_size_of(fd->get());
    if (size < last_size)
      throw failure(path + ": the followed file shrank from " + std::to_string(last_size) + " to " +
                    std::to_string(size) + " bytes (truncated or rewritten)");
    last_size = size;
    if (!header_read) {
      const HeaderState s = read_header(fd->get(), size, header);
      if (s == HeaderState::not_tiff) throw bad_input(path + ": not a TIFF file");
      if (s == HeaderState::too_short) {
        pending = path + ": its header is not written yet";
        return;
      }
      header_read = true;
      pointer_at = header.first_pointer_at;
      std::lock_guard<std::mutex> lock(mu);
      files = {path};
      file_kind = {static_cast<std::uint8_t>((header.bigtiff ? 1 : 0) | (header.big_endian ? 2 : 0))};
    }
    const Endian e{header.big_endian};
    const int pointer_bytes = header.bigtiff ? 8 : 4;
    pending.clear();
    while (!full()) {
      unsigned char b[8];
      if (pointer_at + static_cast<std::uint64_t>(pointer_bytes) > size ||
          !read_exact(fd->get(), pointer_at, b, static_cast<std::size_t>(pointer_bytes)))
        break;
      const std::uint64_t at = e.get(b, pointer_bytes);
      if (at == 0) break;  // no next page linked yet
      const std::string where = path + ": page " + std::to_string(pages_seen);
      if (seen_ifds.count(at)) throw bad_input(where + ": the IFD chain loops back (corrupt IFD)");
      const PageProbe p = probe_page(fd->get(), size, header, at);
      if (p.state == PageProbe::incomplete) {
        pending = where + " (" + p.why + ")";
        break;
      }
      if (p.state == PageProbe::corrupt)
        throw bad_input(where + ": " + p.why + " (the pages after it cannot be found)");
      seen_ifds.insert(at);
      const std::size_t before = frames.size();
      std::string skipped = take(fd->get(), {0, pages_seen, at}, p.layout);
      if (!skipped.empty()) g.warnings.push_back(std::move(skipped));
      g.added += frames.size() - before;
      ++pages_seen;
      pointer_at = p.next_pointer_at;
    }
  }

  // inotify's word on which files were closed after writing or renamed in.
  void drain_inotify() {
    if (!inotify) return;
    alignas(inotify_event) char buffer[16384];
    for (;;) {
      const ssize_t n = ::read(inotify->get(), buffer, sizeof buffer);
      if (n <= 0) break;
      for (ssize_t i = 0; i < n;) {
        const auto* ev = reinterpret_cast<const inotify_event*>(buffer + i);
        if (ev->len > 0) {
          const std::string name = watch_folder + ev->name;
          if (!decided.count(name)) watching[name].closed = true;
        }
        i += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
      }
    }
  }

  std::vector<std::string> list_files() const {
    try {
      return glob ? files_matching(path) : tiff_files_in_folder(path);
    } catch (const Error&) {
      return {};  // nothing there yet
    }
  }

  void poll_folder(SeriesGrowth& g) {
    struct stat st {};
    if (!glob && (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)))
      throw failure(path + ": the followed folder was deleted or moved away");
    drain_inotify();
    const auto now = Clock::now();
    const std::int64_t wall_now =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    pending.clear();
    for (const std::string& name : list_files()) {
      if (full()) break;
      if (decided.count(name)) continue;
      if (!last_taken.empty() && natural_less(name, last_taken)) {
        g.warnings.push_back(name + ": appeared after " + last_taken +
                             ", which comes after it in name order: skipped (files must arrive in name order)");
        decided.insert(name);
        watching.erase(name);
        continue;
      }
      Descriptor file(::open(name.c_str(), O_RDONLY | O_CLOEXEC));
      if (file.get() < 0 || ::fstat(file.get(), &st) != 0) continue;  // gone again
      const std::int64_t mtime = std::int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
      const auto size = static_cast<std::uint64_t>(st.st_size);
      // A close or rename event (drained above) came after the writes seen
      // here; the completeness test below guards against anything later.
      FileState& s = watching[name];
      if (!s.listed || s.size != size || s.mtime_ns != mtime) {
        s.listed = true;
        s.size = size;
        s.mtime_ns = mtime;
        s.changed = now;
      }
      const double quiet = std::max(seconds_between(s.changed, now), (wall_now - mtime) * 1e-9);
      const FileProbe f = probe_file(file.get(), size);
      if (f.state != PageProbe::complete) {
        if (quiet >= options.incomplete_timeout_s || (f.state == PageProbe::corrupt && quiet >= options.settle_s)) {
          g.warnings.push_back(
              name + ": " + f.why +
              (f.state == PageProbe::corrupt
                   ? ": skipped (corrupt)"
                   : ": skipped (it did not complete within " + message_number(options.incomplete_timeout_s) + " s)"));
          decided.insert(name);
          watching.erase(name);
          continue;
        }
        pending = name + " (" + f.why + ")";
        break;  // the frames after it wait: the series keeps name order
      }
      if (!s.closed && quiet < options.settle_s) {
        pending = name + " (complete; waiting " + message_number(options.settle_s) + " s for it to settle)";
        break;
      }
      // Taken whole or skipped whole.
      const auto index = static_cast<std::uint32_t>(files.size());
      {
        std::lock_guard<std::mutex> lock(mu);
        files.push_back(name);
        file_kind.push_back(static_cast<std::uint8_t>((f.header.bigtiff ? 1 : 0) | (f.header.big_endian ? 2 : 0)));
      }
      const std::size_t before = frames.size();
      std::string skipped;
      for (std::uint32_t p = 0; p < f.pages.size() && skipped.empty() && !full(); ++p)
        skipped = take(file.get(), {index, p, f.pages[p].ifd}, f.pages[p].layout);
      if (!skipped.empty()) {
        {
          std::lock_guard<std::mutex> lock(mu);
          frames.resize(before);
        }
        if (cache) cache->clear();  // it may hold pages of this file under frame numbers now free again
        g.warnings.push_back(std::move(skipped));
      } else {
        last_taken = name;
      }
      g.added += frames.size() - before;
      decided.insert(name);
      watching.erase(name);
    }
  }
};

std::unique_ptr<GrowingSeries> GrowingSeries::open(const std::string& path, const GrowingSeriesOptions& options) {
  install_libtiff_handlers();
  auto impl = std::make_unique<Impl>(options);
  impl->path = path;
  if (path.empty()) throw bad_input("(empty path): no input given");
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT && has_glob_characters(path)) {
      impl->folder_mode = impl->glob = true;
    } else if (err == ENOENT && has_tiff_name(path)) {
      // A file the acquisition has not created yet: waited for like its pages.
    } else {
      throw bad_input(
          path + (err == ENOENT ? ": no such file or folder" : ": cannot access: " + std::string(std::strerror(err))));
    }
  } else if (S_ISDIR(st.st_mode)) {
    impl->folder_mode = true;
  } else if (!S_ISREG(st.st_mode)) {
    throw bad_input(path + ": not a regular file or folder");
  }
  if (impl->folder_mode) {
    std::string folder =
        impl->glob ? path.substr(0, path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1) : path;
    if (folder.empty()) folder = "./";
    if (folder.back() != '/') folder += '/';
    // The glob's folder part, when it has no pattern itself, is watched.
    if (!has_glob_characters(folder)) {
      const int in = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
      if (in >= 0) {
        impl->inotify = std::make_unique<Descriptor>(in);
        if (::inotify_add_watch(in, folder.c_str(), IN_CLOSE_WRITE | IN_MOVED_TO) >= 0) impl->watch_folder = folder;
        else impl->inotify.reset();
      }
    }
  } else if (!impl->open_file()) {
    impl->pending = path + " (the file does not exist yet)";
  }
  return std::unique_ptr<GrowingSeries>(new GrowingSeries(std::move(impl)));
}

GrowingSeries::GrowingSeries(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GrowingSeries::~GrowingSeries() = default;

SeriesGrowth GrowingSeries::poll() {
  SeriesGrowth g;
  if (impl_->folder_mode) impl_->poll_folder(g);
  else impl_->poll_file(g);
  if (!impl_->pending.empty()) ++impl_->incomplete_waits;
  return g;
}

std::size_t GrowingSeries::frame_count() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->frames.size();
}
int GrowingSeries::width() const { return impl_->have_layout ? static_cast<int>(impl_->layout.width) : 0; }
int GrowingSeries::height() const { return impl_->have_layout ? static_cast<int>(impl_->layout.height) : 0; }
double GrowingSeries::pixel_size() const { return impl_->pixel_size; }
std::string GrowingSeries::pixel_unit() const { return impl_->unit; }
bool GrowingSeries::multi_file() const { return impl_->folder_mode; }
std::string GrowingSeries::pending() const { return impl_->pending; }
std::size_t GrowingSeries::incomplete_waits() const { return impl_->incomplete_waits; }

std::string GrowingSeries::frame_origin(std::size_t k) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (k >= impl_->frames.size()) return impl_->path + ": frame " + std::to_string(k);
  return impl_->origin(impl_->frames[k]);
}

std::string GrowingSeries::describe() const {
  std::string s = impl_->path + ": " + std::to_string(impl_->frames.size()) + " x " + std::to_string(width()) + "x" +
                  std::to_string(height());
  if (impl_->have_layout) s += std::string(" ") + to_string(impl_->format.pixel_type);
  if (impl_->folder_mode) s += " in " + std::to_string(impl_->files.size()) + " files";
  s += " (followed while written)";
  return s;
}

Frame GrowingSeries::frame(std::size_t k) const {
  const std::size_t n = frame_count();
  if (k >= n)
    throw bad_input(impl_->path + ": frame " + std::to_string(k) + " is not complete yet (" + std::to_string(n) +
                    " frames)");
  if (auto cached = impl_->cache->find(k)) return *cached;
  auto decoded = std::make_shared<const Frame>(impl_->read(k));
  impl_->cache->insert(k, decoded);
  return *decoded;
}

}  // namespace driftscan
