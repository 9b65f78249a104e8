#pragma once
// libtiff reports problems through callbacks that print to stderr by
// default. Every handle the engine opens routes them into a LibtiffFile's own
// message record (TIFFOpenExt with per-handle handlers, libtiff >= 4.5), and
// messages libtiff emits before a handle exists go to a thread-local record,
// so nothing reaches stderr and the caller turns the last error into a
// one-line driftscan::Error naming the file and frame.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <tiffio.h>

namespace driftscan {

// What libtiff said about one handle since the last clear().
struct LibtiffMessages {
  std::string last_error;
  std::vector<std::string> warnings;  // the first few only
  void clear() {
    last_error.clear();
    warnings.clear();
  }
};

// One open libtiff handle and the messages it produced.
class LibtiffFile {
 public:
  // `mode` as for TIFFOpen ("r", "rh", "w", "w8", ...). `max_alloc` bounds any
  // single allocation libtiff makes for this handle (corrupt tag counts).
  // Returns nullptr when libtiff refuses the file; `why` then holds its message.
  static std::unique_ptr<LibtiffFile> open(const std::string& path, const char* mode, std::size_t max_alloc,
                                           std::string* why);
  // A read-only handle on the open file `fd` (not owned, read with pread, so
  // any number of handles may share it across threads) whose first directory
  // is the IFD at `ifd_offset`: libtiff reads a virtual header pointing there.
  // This reaches any page in O(1): TIFFSetSubDirectory in libtiff 4.5 walks
  // the whole IFD chain on its first use per handle (TIFFNumberOfDirectories,
  // for IFD-loop checks) and keeps a map of every IFD offset, i.e. seconds
  // and ~100 bytes per page for each handle on a 100,000-page file.
  static std::unique_ptr<LibtiffFile> open_at(int fd, const std::string& name, bool big_endian, bool bigtiff,
                                              std::uint64_t ifd_offset, std::size_t max_alloc, std::string* why);
  ~LibtiffFile();
  LibtiffFile(const LibtiffFile&) = delete;
  LibtiffFile& operator=(const LibtiffFile&) = delete;

  TIFF* get() const { return tif_; }
  LibtiffMessages& messages() { return messages_; }
  // libtiff's last error, or `fallback` when it gave none.
  std::string error_or(const std::string& fallback) const;
  // Closes explicitly (the writer must know whether the final flush failed).
  bool close();

 private:
  LibtiffFile() = default;
  struct VirtualFile;
  LibtiffMessages messages_;
  std::unique_ptr<VirtualFile> virtual_;  // outlives tif_ (declared first, destroyed last)
  TIFF* tif_ = nullptr;
};

// Installs (once per process) global libtiff handlers that never print:
// messages without a handle go to the calling thread's current record.
void install_libtiff_handlers();

// While alive, handle-less libtiff messages on this thread land in `messages`.
class LibtiffThreadMessages {
 public:
  explicit LibtiffThreadMessages(LibtiffMessages& messages);
  ~LibtiffThreadMessages();
  LibtiffThreadMessages(const LibtiffThreadMessages&) = delete;
  LibtiffThreadMessages& operator=(const LibtiffThreadMessages&) = delete;

 private:
  LibtiffMessages* previous_;
};

}  // namespace driftscan
