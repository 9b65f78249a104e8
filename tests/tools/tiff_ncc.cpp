// Prints how alike two images of one size are: the normalised cross-
// correlation of A and B over the pixels where COVERAGE.tif is at least
// MIN, and the fraction of the frame those pixels are. What the integration
// tests use to hold an average against a noise-free reference.
//   tiff_ncc A.tif B.tif COVERAGE.tif MIN   -> "0.987654 0.81"
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "driftscan/core/error.hpp"
#include "driftscan/formats/tiff/tiff_series.hpp"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: tiff_ncc A.tif B.tif COVERAGE.tif MIN\n");
    return 2;
  }
  try {
    const driftscan::Frame a = driftscan::TiffSeries::open(argv[1])->frame(0);
    const driftscan::Frame b = driftscan::TiffSeries::open(argv[2])->frame(0);
    const driftscan::Frame c = driftscan::TiffSeries::open(argv[3])->frame(0);
    const double min = std::atof(argv[4]);
    if (a.size() != b.size() || a.size() != c.size()) {
      std::fprintf(stderr, "tiff_ncc: the images differ in size\n");
      return 1;
    }
    double n = 0, sa = 0, sb = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (c.pixels[i] >= min) n += 1, sa += a.pixels[i], sb += b.pixels[i];
    if (n == 0) {
      std::printf("0 0\n");
      return 0;
    }
    const double ma = sa / n, mb = sb / n;
    double ab = 0, aa = 0, bb = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (c.pixels[i] >= min) {
        const double u = a.pixels[i] - ma, v = b.pixels[i] - mb;
        ab += u * v, aa += u * u, bb += v * v;
      }
    std::printf("%.6f %.4f\n", aa > 0 && bb > 0 ? ab / std::sqrt(aa * bb) : 0.0, n / static_cast<double>(a.size()));
  } catch (const driftscan::Error& e) {
    std::fprintf(stderr, "tiff_ncc: %s\n", e.what());
    return e.exit_code();
  }
  return 0;
}
