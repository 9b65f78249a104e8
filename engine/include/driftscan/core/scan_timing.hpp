#pragma once
// When each pixel of a raster-scanned (STEM) frame was recorded.
//
// A frame is scanned line by line: the probe dwells T_dwell on each pixel of a
// line, flies back to the start of the next line (line fly-back), and after
// the last line flies back to the first (frame fly-back). Pixel (x, y) of
// frame k is therefore recorded at
//     t = t_k + line(x, y) * T_line + sample(x, y) * T_dwell,
// with T_line = samples per line * T_dwell + line fly-back and
// t_{k+1} - t_k = lines * T_line + frame fly-back. The drift the specimen
// makes in that time is what shears and bends a scanned frame (see
// docs/scan-distortion.md): within a line it is negligible (T_dwell
// is microseconds), along the slow axis it is all of it.
//
// Times are in seconds from the start of frame 0. Nothing here knows about
// drift; this is only the clock of the scan.
#include <cstddef>
#include <string>
#include <vector>

#include "driftscan/core/enum_names.hpp"
#include "driftscan/core/transform.hpp"

namespace driftscan {

// The order the probe visits the pixels.
//  - normal: lines are rows, each scanned left to right, top to bottom;
//  - serpentine: rows again, but odd rows are scanned right to left (no return
//    trip: the fly-back is the turn-around);
//  - rotated90: lines are columns, each scanned top to bottom, left to right
//    (the fast axis is y): the scan that Sang & LeBeau and Ophus et al. pair
//    with a normal one, since it sees the drift along the other axis.
enum class ScanDirection { normal, serpentine, rotated90 };

std::string to_string(ScanDirection direction);
// "normal", "serpentine", "rotated90" (also "rotated-90", "90"); throws a
// bad_input Error naming the setting otherwise.
ScanDirection scan_direction_from_string(const std::string& text);

// The settings as a user or a file's metadata gives them. A fly-back is given
// either as a time or as a fraction of the active time it follows (the line's
// samples * dwell, or the frame's lines * line time), not both; a zero time
// and a zero fraction mean no fly-back.
struct ScanTimingSettings {
  double dwell = 1e-6;                  // pixel dwell time, seconds
  double line_time = 0.0;               // seconds; 0: samples per line * dwell + line fly-back
  double line_flyback = 0.0;            // seconds
  double line_flyback_fraction = 0.0;   // of samples per line * dwell
  double frame_time = 0.0;              // seconds, start to start; 0: lines * line time + frame fly-back
  double frame_flyback = 0.0;           // seconds
  double frame_flyback_fraction = 0.0;  // of lines * line time
  ScanDirection direction = ScanDirection::normal;
  // Each frame's scan rotation, degrees (scan_rotation.hpp): frame k at
  // rotation_deg[k mod n]; empty: every frame at 0. The clock above is the
  // recorded frame's (its rows, its columns); only where a pixel lands in
  // frame 0's orientation turns.
  std::vector<double> rotation_deg;
};

// The scan's clock as a file's metadata records it (a STEM detector's
// DigiScan tags, Velox's Scan block); zeros where the file does not say.
struct RecordedScan {
  double dwell = 0.0;         // s per pixel
  double line_flyback = 0.0;  // s
  double frame_time = 0.0;    // s, start of a frame to start of the next
  std::string source;         // where it was read, e.g. "DigiScan tags"
  bool known() const { return dwell > 0.0; }
};

// A series' scan rotations as its file's metadata records them (Velox's
// per-frame Scan.ScanRotation, DigiScan's Rotation tag), in degrees as the
// file gives them (not yet relative to frame 0): one value per frame, or one
// for every frame; NaN for a frame whose metadata says nothing while other
// frames' do (pipeline/recorded_rotation.hpp refuses that).
struct RecordedRotations {
  std::vector<double> deg;
  std::string source;  // "Velox Scan metadata", "DigiScan tags"
  bool known() const { return !deg.empty(); }
};

class ScanTiming {
 public:
  // Validates the settings for frames of width x height; an impossible
  // combination (negative dwell, a fly-back as long as the line or frame, an
  // explicit line time shorter than its samples, ...) throws a bad_input
  // Error with one line naming the setting.
  ScanTiming(const ScanTimingSettings& settings, int width, int height);

  const ScanTimingSettings& settings() const { return settings_; }
  ScanDirection direction() const { return settings_.direction; }
  int width() const { return width_; }
  int height() const { return height_; }
  int lines() const { return lines_; }               // lines per frame (slow axis)
  int samples_per_line() const { return samples_; }  // pixels per line (fast axis)
  double dwell() const { return settings_.dwell; }
  double line_time() const { return line_time_; }  // start of a line to start of the next
  double line_flyback() const { return line_time_ - samples_ * settings_.dwell; }
  double frame_time() const { return frame_time_; }  // start of a frame to start of the next
  double frame_flyback() const { return frame_time_ - lines_ * line_time_; }

  // The unit vector of the fast axis in pixel coordinates: (1, 0) for row
  // scans, (0, 1) for rotated90. Line jitter displaces along it.
  Point fast_axis() const;
  // Frame k's scan rotation (degrees) and whether any frame is turned.
  double scan_rotation(std::size_t frame) const;
  bool turned() const { return turned_; }
  // Frame k's fast axis in frame 0's orientation (specimen coordinates):
  // fast_axis() turned by the frame's scan rotation.
  Point fast_axis(std::size_t frame) const;
  // Frame k's recorded pixel -> the point of frame 0's orientation it shows
  // (no drift): scan_rotation_transform(scan_rotation(k), width, height).
  Transform turn(std::size_t frame) const;

  // The line (slow-axis index) and the position along the line (the number of
  // dwells since the line started) of pixel (x, y).
  int line_of(int x, int y) const;
  double sample_of(double x, double y) const;

  double frame_start(std::size_t frame) const { return static_cast<double>(frame) * frame_time_; }
  double line_start(std::size_t frame, int line) const { return frame_start(frame) + line * line_time_; }
  // The time at the middle of a line (its centre pixel), and at the middle of
  // the frame's active scan: what one shift per line or per frame stands for.
  double line_mid_time(std::size_t frame, int line) const;
  double frame_mid_time(std::size_t frame) const;
  // When pixel (x, y) of frame k was recorded. x and y may be fractional
  // (the time along the line is continuous; the line is that of the nearest
  // pixel row or column).
  double time_of(std::size_t frame, double x, double y) const;

  std::string describe() const;  // one line: dwell, line and frame times, direction

 private:
  ScanTimingSettings settings_;
  int width_, height_, lines_, samples_;
  double line_time_, frame_time_;
  bool turned_ = false;
};

// How the enum is spelled (enum_names.hpp).
template <>
struct EnumNames<ScanDirection> {
  static constexpr EnumEntry<ScanDirection> table[] = {{ScanDirection::normal, "normal"},
                                                       {ScanDirection::serpentine, "serpentine"},
                                                       {ScanDirection::rotated90, "rotated90"}};
};

}  // namespace driftscan
