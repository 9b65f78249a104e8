#pragma once
// Scan-distortion correction (serial reference): the drift as a continuous
// function of time and each scan line's fast-axis jitter, estimated from a
// raster-scanned series, and the average in specimen coordinates.
//
// The model (../shared/notes/scan-distortion.md): pixel (x, y) of frame k
// shows the specimen point
//     p(x, y, k) = (x, y) + d(t) + j_{k,line} * fast axis,   t = time_of(k, x, y),
// with d a DriftPath and j the line jitter. Starting from the rigid result
// (one shift per frame, already in the right lattice basin), rounds of
//   1. average the frames in specimen coordinates under the current model,
//   2. register bands of lines of every frame against that average, each
//      bounded to max_band_offset around the current model (so no band can
//      jump a lattice period), with a confidence from the fit's curvature and
//      residual,
//   3. fit d(t) through all band samples of all frames at once,
//   4. estimate each line's jitter by 1-D matching against the average, with
//      a prior that keeps it small,
// repeat until d moves by less than the tolerance.
//
// Serial and in memory: every frame is held (as cubic B-spline coefficients)
// for the whole estimation. The distributed version will run steps 1, 2 and 4
// per frame on ranks x threads; step 3 is cheap and deterministic.
#include <cstddef>
#include <vector>

#include "driftscan/drift_path.hpp"
#include "driftscan/frame.hpp"
#include "driftscan/frame_source.hpp"
#include "driftscan/scan_timing.hpp"
#include "driftscan/transform.hpp"

namespace driftscan {

struct ScanDistortionSettings {
  int band_lines = 16;           // scan lines per band (the last band of a frame takes the remainder)
  double max_band_offset = 2.0;  // px a band may move from the rigid/current model (keep < half a lattice period)
  int max_rounds = 6;
  double tolerance = 0.005;  // px: converged when d moves less than this between rounds
  double smoothing = 0.05;   // DriftPathSettings::smoothing (a wobble over a few frames needs < 0.1)
  bool estimate_jitter = true;
  double jitter_prior = 0.5;  // px: the jitter's expected std dev (prior of the 1-D matching)
  double max_jitter = 2.0;    // px: bound on a line's jitter
};

// The per-line model: what p(x, y, k) needs.
struct ScanModel {
  DriftPath path;                           // d(t), pixels; d(start of frame 0) = 0
  std::vector<std::vector<double>> jitter;  // [frame][line], pixels along the fast axis

  // The specimen point pixel (x, y) of frame k shows.
  Point probed(const ScanTiming& timing, std::size_t frame, double x, double y) const;
  // The pixel of frame k that shows specimen point q (the inverse of
  // probed(), by fixed-point steps: d changes by far less than a pixel per
  // pixel, so a few steps converge).
  Point pixel_showing(const ScanTiming& timing, std::size_t frame, Point q) const;
};

// An image in specimen coordinates: pixel (i, j) is the specimen point
// origin + (i, j).
struct SpecimenImage {
  Frame image;
  Frame coverage;  // frames that contributed to each pixel
  Point origin;
};

struct ScanDistortionRound {
  double path_change = 0.0;  // px, largest change of d at a line's mid time
  double seconds = 0.0;
};

struct ScanDistortionResult {
  ScanModel model;
  SpecimenImage average;                  // under the final model
  std::vector<DriftSample> band_samples;  // of the last round (t, d at the band, confidence)
  std::vector<ScanDistortionRound> rounds;
  bool converged = false;
};

// Averages the frames in specimen coordinates under `model`: for every
// specimen pixel, each frame is sampled (cubic B-spline) at the pixel that
// shows it. The image covers every frame's footprint.
SpecimenImage average_in_specimen_coordinates(const FrameSource& frames, const ScanTiming& timing,
                                              const ScanModel& model);

// Estimates the per-line model from `frames` scanned with `timing`, starting
// from the rigid drift of each frame (drift.csv convention: frame k at pixel
// p shows what frame 0 shows at p + rigid_drift[k]). Throws a bad_input
// Error (one line, naming the setting) for settings that cannot work (bands
// of fewer than 4 lines or more lines than a frame has, a rigid drift per
// frame missing, ...).
ScanDistortionResult estimate_scan_distortion(const FrameSource& frames, const ScanTiming& timing,
                                              const std::vector<Point>& rigid_drift,
                                              const ScanDistortionSettings& settings = {});

}  // namespace driftscan
