// A live acquisition for the `register --follow` tests: copies the frames of
// SOURCE, at a given rate, onto a multi-page TIFF it appends to or into a
// folder of single-frame TIFFs, and can put in the bad input a live folder
// sees (a frame of another size, a corrupt file, a file that never completes).
//
//   follow_writer SOURCE DEST [--frames N] [--rate FPS] [--folder] [--in-place]
//                 [--link-first-pause S] [--odd-size-after K] [--corrupt-after K]
//                 [--stall-after K]
//
// File mode: DEST is created and each page appended (pixels, IFD, then the
// link; --link-first-pause S: IFD and link first, the pixels in two halves S
// seconds apart). --folder: DEST/frame_NNNN.tif, each written under a hidden
// name and renamed into place (--in-place: written where it stays, slowly,
// as --link-first-pause says). The bad files are named after frame K's so
// they sort right after it.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "driftscan/core/error.hpp"
#include "driftscan/formats/tiff/tiff_page_appender.hpp"
#include "driftscan/formats/tiff/tiff_series.hpp"

namespace {

std::string frame_name(const std::string& folder, std::size_t k, const std::string& suffix = "") {
  char buf[64];
  std::snprintf(buf, sizeof buf, "/frame_%04zu%s.tif", k, suffix.c_str());
  return folder + buf;
}

void write_file(const std::string& path, const driftscan::Frame& f, const driftscan::AppendOrder& order,
                bool in_place) {
  namespace fs = std::filesystem;
  const std::string target =
      in_place ? path : (fs::path(path).parent_path() / ("." + fs::path(path).filename().string() + ".part")).string();
  {
    driftscan::TiffPageAppender out(target, driftscan::SampleFormat::float32);
    out.append(f, order);
  }
  if (!in_place) fs::rename(target, path);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: follow_writer SOURCE DEST [options] (see the source)\n");
    return 2;
  }
  const std::string source = argv[1], dest = argv[2];
  std::size_t frames = 0;
  double rate = 10.0;
  bool folder = false, in_place = false;
  driftscan::AppendOrder order;
  long odd_after = -1, corrupt_after = -1, stall_after = -1;
  for (int i = 3; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "follow_writer: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--frames") frames = std::strtoul(next(), nullptr, 10);
    else if (a == "--rate") rate = std::atof(next());
    else if (a == "--folder") folder = true;
    else if (a == "--in-place") in_place = true;
    else if (a == "--link-first-pause") order.link_first = true, order.pause_s = std::atof(next());
    else if (a == "--odd-size-after") odd_after = std::atol(next());
    else if (a == "--corrupt-after") corrupt_after = std::atol(next());
    else if (a == "--stall-after") stall_after = std::atol(next());
    else {
      std::fprintf(stderr, "follow_writer: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  try {
    auto series = driftscan::TiffSeries::open(source);
    if (frames == 0 || frames > series->frame_count()) frames = series->frame_count();
    std::unique_ptr<driftscan::TiffPageAppender> file;
    if (folder) std::filesystem::create_directories(dest);
    else file = std::make_unique<driftscan::TiffPageAppender>(dest, driftscan::SampleFormat::float32);
    const auto start = std::chrono::steady_clock::now();
    for (std::size_t k = 0; k < frames; ++k) {
      if (rate > 0) std::this_thread::sleep_until(start + std::chrono::duration<double>(k / rate));
      const driftscan::Frame f = series->frame(k);
      if (!folder) {
        file->append(f, order);
        continue;
      }
      write_file(frame_name(dest, k), f, order, in_place);
      const long kk = static_cast<long>(k);
      if (kk == odd_after) {
        driftscan::Frame half(f.width / 2, f.height / 2);
        for (int y = 0; y < half.height; ++y)
          for (int x = 0; x < half.width; ++x) half.at(x, y) = f.at(x, y);
        write_file(frame_name(dest, k, "_odd"), half, {}, false);
      }
      if (kk == corrupt_after) {
        std::ofstream bad(frame_name(dest, k, "_bad"), std::ios::binary);
        bad << "this is not a TIFF file, although its name says so\n";
      }
      if (kk == stall_after) {
        // A whole page written, then cut in half: a file that stays incomplete.
        const std::string stalled = frame_name(dest, k, "_stall"), part = dest + "/.stall.part";
        write_file(part, f, {}, true);
        if (::truncate(part.c_str(), static_cast<off_t>(f.pixels.size() * 2)) != 0) return 3;
        std::filesystem::rename(part, stalled);
      }
    }
    std::printf("follow_writer: wrote %zu frames to %s\n", frames, dest.c_str());
  } catch (const driftscan::Error& e) {
    std::fprintf(stderr, "follow_writer: %s\n", e.what());
    return e.exit_code();
  }
  return 0;
}
