// Prints how far two TIFF images (or stacks) of one size differ: the largest
// |a - b| over every pixel, relative to the largest |b| (0 when both are 0).
// What the integration tests use to hold one average against another.
//   tiff_compare A.tif B.tif   -> "0.000000123"
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "driftscan/core/error.hpp"
#include "driftscan/formats/tiff/tiff_series.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: tiff_compare A.tif B.tif\n");
    return 2;
  }
  try {
    auto a = driftscan::TiffSeries::open(argv[1]);
    auto b = driftscan::TiffSeries::open(argv[2]);
    if (a->frame_count() != b->frame_count() || a->width() != b->width() || a->height() != b->height()) {
      std::fprintf(stderr, "tiff_compare: %s and %s differ in size\n", argv[1], argv[2]);
      return 1;
    }
    double diff = 0.0, scale = 0.0;
    for (std::size_t k = 0; k < a->frame_count(); ++k) {
      const driftscan::Frame fa = a->frame(k), fb = b->frame(k);
      for (std::size_t i = 0; i < fa.pixels.size(); ++i) {
        diff = std::max(diff, std::abs(double(fa.pixels[i]) - fb.pixels[i]));
        scale = std::max(scale, std::abs(double(fb.pixels[i])));
      }
    }
    std::printf("%.9g\n", scale > 0 ? diff / scale : diff);
  } catch (const driftscan::Error& e) {
    std::fprintf(stderr, "tiff_compare: %s\n", e.what());
    return e.exit_code();
  }
  return 0;
}
