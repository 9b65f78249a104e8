#pragma once
// The scanned series the scan-distortion unit tests share (a lattice drifting
// with a wobble and a step, lines with jitter) and its rigid drift, the
// correction's starting point.
#include <string>
#include <vector>

#include "driftscan/core/frame_source.hpp"
#include "driftscan/core/progress.hpp"
#include "driftscan/pipeline/register_pipeline.hpp"
#include "driftscan/pipeline/serial_register.hpp"
#include "driftscan/synthetic/synthetic_series.hpp"
#include "scratch_folder.hpp"

namespace driftscan::test {

inline SynthOptions scanned_series() {
  SynthOptions o;
  o.frames = 16;
  o.width = 128;
  o.height = 128;
  o.period = 9.0;
  o.dose = 20.0;
  o.drift_linear_x = 3.0;  // pixels per frame time
  o.drift_linear_y = 1.5;
  o.drift_wobble = 1.5;
  o.drift_wobble_period = 3.0;
  o.drift_step = 0.3;
  o.jitter = 0.3;
  o.scan_dwell = 1e-6;
  o.scan_line_flyback = 0.2;
  o.scan_frame_flyback = 0.1;
  o.seed = 5;
  return o;
}

// Each frame's rigid drift from a default registration (2 threads).
inline std::vector<Point> rigid_drift(const FrameSource& frames) {
  const TestScratchFolder dir("driftscan_rigid_drift_", true);
  auto progress = make_silent_progress();
  CancelToken cancel;
  RegisterResult r =
      register_series(frames, RegistrationSettings{}, AveragingOptions{}, dir.path.string(), *progress, cancel, 2);
  std::vector<Point> out;
  for (const Registration& reg : r.registrations) out.push_back({reg.transform.tx, reg.transform.ty});
  return out;
}

}  // namespace driftscan::test
