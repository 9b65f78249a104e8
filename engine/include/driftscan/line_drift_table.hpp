#pragma once
// lines.csv: the scan-distortion result, one row per scan line of every
// frame — frame,line,t,dx,dy,jitter,weight — with t the line's mid time
// (seconds from the start of frame 0), (dx, dy) = d(t) the drift path there
// (pixels, specimen coordinates: d = 0 at the start of frame 0), jitter the
// line's offset along the fast axis (pixels) and weight the confidence of
// the band the line belongs to, relative to the series' mean (0: the band
// could not be registered; its drift is the path's interpolation).
#include <string>
#include <vector>

#include "driftscan/drift_path.hpp"
#include "driftscan/scan_distortion.hpp"
#include "driftscan/scan_timing.hpp"

namespace driftscan {

// Written atomically. `model.jitter` holds every frame's lines (empty rows
// are written as 0); band_samples are those of the last round.
void write_line_drift_csv(const std::string& path, const ScanTiming& timing, std::size_t frames, const ScanModel& model,
                          const std::vector<DriftSample>& band_samples, int band_lines);

}  // namespace driftscan
