// TIFF series I/O at scale: writes a 100,000-page TIFF of 64x64 uint16
// frames with TiffStackWriter, then reports the time to open it (IFD index
// build), the latency of random frame reads (cache off, so every read seeks
// and decodes), and peak memory (VmHWM). Targets (issue 2): open < 1 s,
// random read < 1 ms, memory independent of the page count beyond the index.
//
// Usage: bench_tiff_io [--pages 100000] [--reads 20000] [--tmp $TMPDIR]
// Writes only into a folder of its own under --tmp, removed when it ends.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "driftscan/formats/tiff/tiff_series.hpp"
#include "driftscan/formats/tiff/tiff_writer.hpp"

using namespace driftscan;
using Clock = std::chrono::steady_clock;

namespace {

// CPU seconds of this process (user + system): on a loaded shared machine
// the wall time of a phase also counts waiting for a core.
double cpu_seconds() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// kB from /proc/self/status ("VmHWM:", "VmRSS:").
long status_kb(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) return std::atol(line.c_str() + std::strlen(key));
  return -1;
}

// Resets VmHWM to the current RSS (Linux >= 4.0), so each phase's peak is its own.
void reset_peak() { std::ofstream("/proc/self/clear_refs") << "5"; }

}  // namespace

static int bench_main(int argc, char** argv) {
  std::size_t pages = 100000, reads = 20000;
  std::string base = std::filesystem::temp_directory_path().string();
  CLI::App app{"Writes a PAGES-page TIFF of 64x64 uint16 frames, then times opening it and random frame reads.",
               "bench_tiff_io"};
  app.add_option("--pages", pages, "Pages of the TIFF")->check(CLI::Range(1, 100000000))->capture_default_str();
  app.add_option("--reads", reads, "Random frame reads timed")->check(CLI::Range(1, 100000000))->capture_default_str();
  app.add_option("--tmp", base, "Folder in which its temporary folder is made ($TMPDIR, else /tmp)")
      ->check(CLI::ExistingDirectory)
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  const int w = 64, h = 64;
  const std::string folder = base + "/driftscan-bench-tiff-" + std::to_string(::getpid());
  std::filesystem::create_directories(folder);
  struct RemoveAtExit {  // also when a step throws
    std::string path;
    ~RemoveAtExit() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  } remove_at_exit{folder};
  const std::string path = folder + "/series.tif";

  std::printf("bench_tiff_io: %zu pages of %dx%d uint16 in %s\n", pages, w, h, path.c_str());
  auto t0 = Clock::now();
  {
    TiffWriteOptions options;
    options.format = SampleFormat::uint16;
    options.pixel_size = 0.01;
    options.unit = "nm";
    TiffStackWriter writer(path, w, h, pages, options);
    Frame f(w, h);
    for (std::size_t k = 0; k < pages; ++k) {
      for (int i = 0; i < w * h; ++i) f.pixels[std::size_t(i)] = float((k * 7 + std::size_t(i)) % 65536);
      writer.append(f);
    }
    writer.commit();
  }
  std::printf("write:        %.2f s, file %.1f MB\n", seconds_since(t0),
              double(std::filesystem::file_size(path)) / 1e6);

  const long rss_before_open = status_kb("VmRSS:");
  reset_peak();
  t0 = Clock::now();
  const double cpu0 = cpu_seconds();
  TiffReadOptions options;
  options.cache_bytes = 0;  // measure decoding, not the cache
  auto series = TiffSeries::open(path, options);
  const double open_s = seconds_since(t0), open_cpu = cpu_seconds() - cpu0;
  std::printf("open:         %.3f s wall, %.3f s CPU (index of %zu IFDs; target < 1 s)\n", open_s, open_cpu,
              series->frame_count());

  const double cpu1 = cpu_seconds();
  const auto r0 = Clock::now();
  std::mt19937_64 rng(1);
  std::vector<double> latency;
  latency.reserve(reads);
  bool correct = true;
  for (std::size_t i = 0; i < reads; ++i) {
    std::size_t k = rng() % pages;
    auto t = Clock::now();
    Frame f = series->frame(k);
    latency.push_back(seconds_since(t) * 1e3);
    correct = correct && f.pixels[5] == float((k * 7 + 5) % 65536);
  }
  const double read_wall = seconds_since(r0), read_cpu = cpu_seconds() - cpu1;
  std::sort(latency.begin(), latency.end());
  std::printf("random read:  median %.4f ms, p99 %.4f ms, max %.4f ms over %zu reads (target < 1 ms)%s\n",
              latency[latency.size() / 2], latency[latency.size() * 99 / 100], latency.back(), reads,
              correct ? "" : "  DATA MISMATCH");
  std::printf("random read:  mean %.4f ms wall, %.4f ms CPU per read\n", read_wall * 1e3 / double(reads),
              read_cpu * 1e3 / double(reads));
  std::printf("%s\n", series->describe().c_str());
  const long hwm = status_kb("VmHWM:");
  std::printf(
      "memory:       peak RSS while open+reading %ld kB (RSS before open %ld kB, +%ld kB; "
      "index %.0f kB = 8 B/page)\n",
      hwm, rss_before_open, hwm - rss_before_open, double(pages) * 8 / 1024);
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  std::printf("memory:       ru_maxrss over the whole run (incl. writing) %ld kB\n", ru.ru_maxrss);

  series.reset();
  return correct ? 0 : 1;
}

// Any exception (the option parser's set-up included) ends in one line, not an abort.
int main(int argc, char** argv) {
  try {
    return bench_main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", "bench_tiff_io", e.what());
  } catch (...) {
    std::fprintf(stderr, "%s: unknown error\n", "bench_tiff_io");
  }
  return 1;
}
