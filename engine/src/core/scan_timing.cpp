#include "driftscan/core/scan_timing.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "driftscan/core/enum_names.hpp"
#include "driftscan/core/error.hpp"
#include "driftscan/core/scan_rotation.hpp"

namespace driftscan {
namespace {

// A timing setting that must be a finite number >= 0 (or > 0).
void require(bool ok, const std::string& what) {
  if (!ok) throw bad_input("scan timing: " + what);
}
void require_non_negative(double v, const char* name) {
  require(std::isfinite(v) && v >= 0.0, std::string(name) + " must be >= 0 (got " + message_number(v) + ")");
}

}  // namespace

std::string to_string(ScanDirection direction) { return enum_name(direction); }

ScanDirection scan_direction_from_string(const std::string& text) {
  ScanDirection d;
  if (enum_from_name(text, d)) return d;
  if (text == "rotated-90" || text == "90") return ScanDirection::rotated90;
  throw bad_input("scan timing: scan direction '" + text + "' is not one of normal, serpentine, rotated90");
}

ScanTiming::ScanTiming(const ScanTimingSettings& settings, int width, int height)
    : settings_(settings), width_(width), height_(height) {
  const ScanTimingSettings& s = settings_;
  require(width >= 1 && height >= 1,
          "frame size " + std::to_string(width) + "x" + std::to_string(height) + " has no pixels");
  require(std::isfinite(s.dwell) && s.dwell > 0.0, "pixel dwell must be > 0 (got " + message_number(s.dwell) + ")");
  require_non_negative(s.line_time, "line time");
  require_non_negative(s.line_flyback, "line fly-back");
  require_non_negative(s.line_flyback_fraction, "line fly-back fraction");
  require_non_negative(s.frame_time, "frame time");
  require_non_negative(s.frame_flyback, "frame fly-back");
  require_non_negative(s.frame_flyback_fraction, "frame fly-back fraction");
  require(!(s.line_flyback > 0.0 && s.line_flyback_fraction > 0.0),
          "give the line fly-back as a time or as a fraction, not both");
  require(!(s.frame_flyback > 0.0 && s.frame_flyback_fraction > 0.0),
          "give the frame fly-back as a time or as a fraction, not both");
  // A fly-back of a whole line (or frame) or more is not a fly-back: it is a
  // setting in the wrong unit, which would silently stretch the time axis.
  require(s.line_flyback_fraction < 1.0,
          "line fly-back fraction must be < 1 (got " + message_number(s.line_flyback_fraction) + ")");
  require(s.frame_flyback_fraction < 1.0,
          "frame fly-back fraction must be < 1 (got " + message_number(s.frame_flyback_fraction) + ")");

  const bool columns = s.direction == ScanDirection::rotated90;
  lines_ = columns ? width : height;
  samples_ = columns ? height : width;

  const double active_line = samples_ * s.dwell;
  const double line_flyback = s.line_flyback > 0.0 ? s.line_flyback : s.line_flyback_fraction * active_line;
  if (s.line_time > 0.0) {
    require(s.line_time >= active_line, "line time " + message_number(s.line_time) + " s is shorter than its " +
                                            std::to_string(samples_) + " pixels x dwell (" +
                                            message_number(active_line) + " s)");
    require(line_flyback < s.line_time, "line fly-back " + message_number(line_flyback) +
                                            " s must be shorter than the line time " + message_number(s.line_time) +
                                            " s");
    require(line_flyback == 0.0 || std::fabs(active_line + line_flyback - s.line_time) <= 1e-9 * s.line_time,
            "line time " + message_number(s.line_time) + " s disagrees with pixels x dwell + line fly-back (" +
                message_number(active_line + line_flyback) + " s)");
    line_time_ = s.line_time;
  } else {
    line_time_ = active_line + line_flyback;
  }

  const double active_frame = lines_ * line_time_;
  const double frame_flyback = s.frame_flyback > 0.0 ? s.frame_flyback : s.frame_flyback_fraction * active_frame;
  if (s.frame_time > 0.0) {
    require(frame_flyback < s.frame_time, "frame fly-back " + message_number(frame_flyback) +
                                              " s must be shorter than the frame time " + message_number(s.frame_time) +
                                              " s");
    require(s.frame_time >= active_frame, "frame time " + message_number(s.frame_time) + " s is shorter than its " +
                                              std::to_string(lines_) + " lines x line time (" +
                                              message_number(active_frame) + " s)");
    require(frame_flyback == 0.0 || std::fabs(active_frame + frame_flyback - s.frame_time) <= 1e-9 * s.frame_time,
            "frame time " + message_number(s.frame_time) + " s disagrees with lines x line time + frame fly-back (" +
                message_number(active_frame + frame_flyback) + " s)");
    frame_time_ = s.frame_time;
  } else {
    frame_time_ = active_frame + frame_flyback;
  }
  require(std::isfinite(frame_time_) && frame_time_ > 0.0, "frame time is not a finite positive number");
  turned_ = has_scan_rotation(s.rotation_deg);
}

double ScanTiming::scan_rotation(std::size_t frame) const { return scan_rotation_of(settings_.rotation_deg, frame); }

Point ScanTiming::fast_axis(std::size_t frame) const {
  const Point f = fast_axis();
  if (!turned_) return f;
  const Transform t = turn(frame);
  return {t.a * f.x + t.b * f.y, t.c * f.x + t.d * f.y};
}

Transform ScanTiming::turn(std::size_t frame) const {
  return scan_rotation_transform(scan_rotation(frame), width_, height_);
}

Point ScanTiming::fast_axis() const {
  return settings_.direction == ScanDirection::rotated90 ? Point{0.0, 1.0} : Point{1.0, 0.0};
}

int ScanTiming::line_of(int x, int y) const {
  return std::clamp(settings_.direction == ScanDirection::rotated90 ? x : y, 0, lines_ - 1);
}

double ScanTiming::sample_of(double x, double y) const {
  switch (settings_.direction) {
    case ScanDirection::normal: return x;
    case ScanDirection::rotated90: return y;
    case ScanDirection::serpentine: {
      const int line = line_of(0, static_cast<int>(std::lround(y)));
      return line % 2 == 0 ? x : (samples_ - 1) - x;
    }
  }
  return x;
}

double ScanTiming::line_mid_time(std::size_t frame, int line) const {
  return line_start(frame, line) + 0.5 * (samples_ - 1) * settings_.dwell;
}

double ScanTiming::frame_mid_time(std::size_t frame) const {
  // Halfway between the first pixel of the first line and the last of the last.
  return frame_start(frame) + 0.5 * ((lines_ - 1) * line_time_ + (samples_ - 1) * settings_.dwell);
}

double ScanTiming::time_of(std::size_t frame, double x, double y) const {
  const int line = line_of(static_cast<int>(std::lround(x)), static_cast<int>(std::lround(y)));
  return line_start(frame, line) + sample_of(x, y) * settings_.dwell;
}

std::string ScanTiming::describe() const {
  std::ostringstream s;
  s << "scan " << to_string(settings_.direction) << ", dwell " << settings_.dwell << " s, line " << line_time_
    << " s (fly-back " << line_flyback() << " s), frame " << frame_time_ << " s (fly-back " << frame_flyback() << " s)";
  if (turned_) s << ", scan rotation " << scan_rotation_text(settings_.rotation_deg) << " deg";
  return s.str();
}

}  // namespace driftscan
