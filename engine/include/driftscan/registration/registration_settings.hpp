#pragma once
// What a user sets for registration (the `registration` block of a job file).
#include <string>

#include "driftscan/core/transform.hpp"

namespace driftscan {

// A rectangle in pixels of frame 0; w == 0 means "the whole frame".
struct Roi {
  int x = 0, y = 0, w = 0, h = 0;
  bool whole_frame() const { return w <= 0 || h <= 0; }
};

struct RegistrationSettings {
  MotionModel model = MotionModel::translation;
  Roi roi;
  std::string mask;            // path to a mask TIFF (non-zero = use), empty for none
  int pyramid_levels = 3;      // coarse-to-fine levels of the refinement
  int max_iterations = 100;    // per level
  double tolerance = 1e-3;     // stop when the update is below this (pixels)
  double bandpass_low = 0.0;   // keep spatial periods >= low px (0: off) ...
  double bandpass_high = 0.0;  // ... and <= high px (0: off)
  double max_shift = 0.0;      // bound on consecutive-pair shifts, pixels (0: none)
  // Share of the overlap's rows the drift's standard error is measured on
  // (RefineOptions::information_rows; 1: every row).
  double uncertainty_rows = 0.15;
};

const char* to_string(MotionModel model);
MotionModel motion_model_from_string(const std::string& name);  // throws bad_input

}  // namespace driftscan
