#pragma once
// What every reader's libFuzzer target shares: the input handed to the reader
// as a file (a memfd rewritten for each input: no disk I/O), and reading its
// frames with the reader's promises checked. The only acceptable outcomes are
// frames or driftscan::Error; anything else (a crash, a sanitizer report,
// another exception type, a leak, a hang) is a bug, and a broken promise
// aborts so that libFuzzer keeps the input.
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "driftscan/formats/format_reader.hpp"

namespace driftscan::fuzz {

// The path of a file holding `data` (one memfd per target, named `name`).
inline std::string input_file(const char* name, const std::uint8_t* data, std::size_t size) {
  static int fd = [name] {
    int f = ::memfd_create(name, MFD_CLOEXEC);
    if (f < 0) std::abort();
    return f;
  }();
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) std::abort();
  return "/proc/self/fd/" + std::to_string(fd);
}

// Every frame (up to 64) of an opened series, in a scrambled order.
template <class Series>
void read_frames(const Series& series) {
  const std::size_t n = series.frame_count();
  if (n == 0 || series.width() <= 0 || series.height() <= 0) std::abort();  // open must refuse these
  for (std::size_t i = 0; i < n && i < 64; ++i) {
    const auto f = series.frame((i * 7919) % n);
    if (f.width != series.width() || f.height != series.height()) std::abort();
    for (float v : f.pixels)
      if (!std::isfinite(v)) std::abort();  // the readers promise finite pixels
  }
  (void)series.describe();
}

// A reader of the table (format_reader.hpp), by name: every signal listed
// (up to 8), each opened and read. The reader is asked directly, not chosen
// by content, so that every input reaches it.
inline void read_signals(const std::string& path, const char* reader_name) {
  const FormatReader* reader = find_format_reader(reader_name);
  if (!reader) std::abort();  // the target names a reader that is not in the table
  const auto signals = reader->list_signals(path);
  if (signals.empty()) std::abort();  // listing must refuse a file without signals
  for (std::size_t s = 0; s < signals.size() && s < 8; ++s) read_frames(*reader->open_signal(path, s, 1 << 20));
}

}  // namespace driftscan::fuzz
