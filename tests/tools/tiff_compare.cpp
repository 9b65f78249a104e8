// Prints how far two TIFF images (or stacks) of one size differ: the largest
// |a - b| over every pixel, relative to the largest |b| (0 when both are 0).
// What the integration tests use to hold one average against another.
//   tiff_compare A.tif B.tif   -> "0.000000123"
// With the two averages' coverages, only the pixels both cover with the
// same number of frames are compared, and the pixels whose coverage differs
// are counted (two maps of one model can put a frame's footprint edge a
// hair apart, so a point on it may be inside one and outside the other):
//   tiff_compare A.tif B.tif COVERAGE_A.tif COVERAGE_B.tif   -> "0.000000123 1"
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include "driftscan/core/error.hpp"
#include "driftscan/formats/tiff/tiff_series.hpp"

int main(int argc, char** argv) {
  if (argc != 3 && argc != 5) {
    std::fprintf(stderr, "usage: tiff_compare A.tif B.tif [COVERAGE_A.tif COVERAGE_B.tif]\n");
    return 2;
  }
  try {
    auto a = driftscan::TiffSeries::open(argv[1]);
    auto b = driftscan::TiffSeries::open(argv[2]);
    if (a->frame_count() != b->frame_count() || a->width() != b->width() || a->height() != b->height()) {
      std::fprintf(stderr, "tiff_compare: %s and %s differ in size\n", argv[1], argv[2]);
      return 1;
    }
    std::shared_ptr<const driftscan::FrameSource> ca, cb;
    if (argc == 5) {
      ca = driftscan::TiffSeries::open(argv[3]), cb = driftscan::TiffSeries::open(argv[4]);
      if (ca->frame_count() != a->frame_count() || cb->frame_count() != a->frame_count() || ca->width() != a->width() ||
          cb->width() != a->width() || ca->height() != a->height() || cb->height() != a->height()) {
        std::fprintf(stderr, "tiff_compare: the coverages differ in size from the images\n");
        return 1;
      }
    }
    double diff = 0.0, scale = 0.0;
    long differing = 0;
    for (std::size_t k = 0; k < a->frame_count(); ++k) {
      const driftscan::Frame fa = a->frame(k), fb = b->frame(k);
      const driftscan::Frame fca = ca ? ca->frame(k) : driftscan::Frame(), fcb = cb ? cb->frame(k) : driftscan::Frame();
      for (std::size_t i = 0; i < fa.pixels.size(); ++i) {
        scale = std::max(scale, std::abs(double(fb.pixels[i])));
        if (ca && fca.pixels[i] != fcb.pixels[i]) {
          ++differing;
          continue;
        }
        diff = std::max(diff, std::abs(double(fa.pixels[i]) - fb.pixels[i]));
      }
    }
    if (ca) std::printf("%.9g %ld\n", scale > 0 ? diff / scale : diff, differing);
    else std::printf("%.9g\n", scale > 0 ? diff / scale : diff);
  } catch (const driftscan::Error& e) {
    std::fprintf(stderr, "tiff_compare: %s\n", e.what());
    return e.exit_code();
  }
  return 0;
}
