// A raster-scanned synthetic series written as a Velox EMD file whose
// metadata records the scan clock (the "Scan" block Velox writes): what the
// tests of scan.auto_distortion need, since no public sample with several
// scanned frames is at hand. The frames are the synth generator's (drift
// during each frame, line jitter, Poisson noise), as int16 counts. With
// --scan-rotation the frames are scanned at those angles (frame k at value
// k mod n, as synth takes them) and each frame's metadata records its own
// ScanRotation (radians, on top of a base rotation of the whole session);
// --unknown-rotation K leaves frame K's out.
//
//   velox_scanned_series DEST.emd [--frames N] [--size N] [--no-scan-block]
//                        [--scan-rotation DEG[,DEG...]] [--unknown-rotation K]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "../unit/format_test_files.hpp"
#include "driftscan/synthetic/synthetic_series.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: velox_scanned_series DEST.emd [--frames N] [--size N] [--no-scan-block] "
                 "[--scan-rotation DEG[,DEG...]] [--unknown-rotation K]\n");
    return 2;
  }
  const std::string dest = argv[1];
  driftscan::SynthOptions o;
  o.frames = 8;
  o.width = o.height = 128;
  bool scan_block = true;
  long unknown_rotation = -1;
  for (int i = 2; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--frames") && i + 1 < argc) o.frames = static_cast<std::size_t>(std::atol(argv[++i]));
    else if (!std::strcmp(argv[i], "--size") && i + 1 < argc) o.width = o.height = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--no-scan-block")) scan_block = false;
    else if (!std::strcmp(argv[i], "--scan-rotation") && i + 1 < argc) {
      for (char* p = argv[++i]; *p;) {
        o.scan_rotation_deg.push_back(std::strtod(p, &p));
        if (*p == ',') ++p;
        else if (*p) return std::fprintf(stderr, "velox_scanned_series: bad --scan-rotation\n"), 2;
      }
    } else if (!std::strcmp(argv[i], "--unknown-rotation") && i + 1 < argc) unknown_rotation = std::atol(argv[++i]);
    else {
      std::fprintf(stderr, "velox_scanned_series: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  o.period = 9.0;
  o.dose = 20.0;
  o.drift_linear_x = 3.0;
  o.drift_linear_y = 1.5;
  o.jitter = 0.3;
  o.seed = 11;
  o.scan_dwell = 2e-6;
  o.scan_line_flyback = 0.25;
  const driftscan::SyntheticSeries s(o);
  std::vector<driftscan::Frame> frames;
  for (std::size_t k = 0; k < s.frame_count(); ++k) frames.push_back(s.frame(k));
  const double line_time = o.width * o.scan_dwell * (1.0 + o.scan_line_flyback);
  // The session's base rotation (17°): only the rotations relative to frame
  // 0 matter, which is what DriftScan takes from the file.
  constexpr double kBaseDeg = 17.0, kRadPerDeg = 3.14159265358979323846 / 180.0;
  auto scan_of = [&](int k) -> std::string {
    if (!scan_block) return "";
    char scan[320];
    char rotation[64] = "";
    if (k != unknown_rotation)
      std::snprintf(rotation, sizeof rotation, R"(,"ScanRotation":"%.9f")",
                    (kBaseDeg + s.scan_rotation_deg(static_cast<std::size_t>(k))) * kRadPerDeg);
    std::snprintf(scan, sizeof scan, R"("Scan":{"DwellTime":"%g","LineTime":"%g","FrameTime":"%g"%s})", o.scan_dwell,
                  line_time, o.height * line_time, rotation);
    return scan;
  };
  const hid_t file = format_test::velox_file(dest);
  format_test::velox_image_frames(
      file, "scanned", "HAADF", 1e-10, o.width, o.height, static_cast<int>(o.frames),
      [&](int k, int x, int y) { return frames[static_cast<std::size_t>(k)].at(x, y); }, scan_of);
  H5Fclose(file);
  std::printf("%s: %zu frames of %dx%d, scan clock %s\n", dest.c_str(), o.frames, o.width, o.height,
              scan_block ? "recorded" : "not recorded");
  return 0;
}
