// libFuzzer target for the DigitalMicrograph DM3/DM4 reader (the tag-tree parser): every input is a file handed to
// open_dm_signal through a memfd (no disk I/O), every signal listed,
// then every frame (up to 64) of each read in a scrambled order. The only
// acceptable outcomes are frames or driftscan::Error; anything else (a crash,
// a sanitizer report, another exception type, a leak, a hang) is a bug.
// Built with -DDRIFTSCAN_FUZZ=ON and clang; run by scripts/fuzz.
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "driftscan/dm_series.hpp"
#include "driftscan/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static int fd = [] {
    int f = ::memfd_create("fuzz-dm", MFD_CLOEXEC);
    if (f < 0) std::abort();
    return f;
  }();
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) std::abort();
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  try {
    const auto signals = driftscan::list_dm_signals(path);
    if (signals.empty()) std::abort();  // listing must refuse a file without signals
    for (std::size_t s = 0; s < signals.size() && s < 8; ++s) {
      auto series = driftscan::open_dm_signal(path, s, 1 << 20);
      const std::size_t n = series->frame_count();
      if (n == 0 || series->width() <= 0 || series->height() <= 0) std::abort();  // open must refuse these
      for (std::size_t i = 0; i < n && i < 64; ++i) {
        driftscan::Frame f = series->frame((i * 7919) % n);
        if (f.width != series->width() || f.height != series->height()) std::abort();
        for (float v : f.pixels)
          if (!std::isfinite(v)) std::abort();  // the reader promises finite pixels
      }
      (void)series->describe();
    }
  } catch (const driftscan::Error&) {
    // refused with a message: the expected outcome for most inputs
  }
  return 0;
}
