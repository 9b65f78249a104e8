#pragma once
// lines.csv: the scan-distortion result, one row per scan line of every
// frame — frame,line,t,dx,dy,jitter,weight — with t the line's mid time
// (seconds from the start of frame 0), (dx, dy) = d(t) the drift path there
// (pixels, specimen coordinates: d = 0 at the start of frame 0), jitter the
// line's offset along the fast axis (pixels) and weight the confidence of
// the band the line belongs to, relative to the series' mean (0: the band
// could not be registered; its drift is the path's interpolation).
#include <memory>
#include <string>
#include <vector>

#include "driftscan/core/scan_timing.hpp"
#include "driftscan/scan_distortion/drift_path.hpp"
#include "driftscan/scan_distortion/scan_distortion.hpp"

namespace driftscan {

// The standard errors lines.csv carries after its other columns: sigma_dx,
// sigma_dy of the path at each line relative to the series' common offset
// (its mean over the lines), sigma_jitter of each line's jitter.
struct LineSigmas {
  const DriftPathUncertainty* path = nullptr;
  const std::vector<std::vector<double>>* jitter = nullptr;  // [frame][line]; a missing row: nan (not estimated)
};

// Written atomically. `model.jitter` holds every frame's lines (empty rows
// are written as 0); band_samples are those of the last round. With
// `sigmas` the three sigma columns follow the others.
void write_line_drift_csv(const std::string& path, const ScanTiming& timing, std::size_t frames, const ScanModel& model,
                          const std::vector<DriftSample>& band_samples, int band_lines,
                          const LineSigmas* sigmas = nullptr);

// Reads lines.csv frame by frame (a long series' table is not held whole).
// Throws a bad_input Error naming the file and line for a missing column, a
// value that is not a finite number, frames or lines out of order, or a
// table whose times do not match `timing` (it was written with other scan
// settings).
class LineDriftReader {
 public:
  LineDriftReader(const std::string& path, const ScanTiming& timing);
  ~LineDriftReader();
  LineDriftReader(const LineDriftReader&) = delete;
  LineDriftReader& operator=(const LineDriftReader&) = delete;
  // The next frame's rows: d at each line's mid time and the jitter; false
  // at the end of the table. `registered` (if given): whether some band of
  // the frame registered (weight > 0); a frame with none was left out of
  // the run's average (ScanDistortionResult::left_out).
  bool next_frame(std::size_t& frame, std::vector<Point>& drift, std::vector<double>& jitter,
                  bool* registered = nullptr);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace driftscan
