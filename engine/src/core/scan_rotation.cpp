#include "driftscan/core/scan_rotation.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "driftscan/core/cubic_bspline.hpp"
#include "driftscan/core/error.hpp"

namespace driftscan {
namespace {

constexpr double kPi = 3.14159265358979323846;

// Recorded pixel (column, row) a pixel (x, y) of frame 0's orientation comes
// from under `turns` quarter turns (square frames for odd turns).
void quarter_source(int turns, int x, int y, int w, int h, int& qx, int& qy) {
  switch (turns) {
    case 1: qx = y, qy = (w - 1) - x; return;  // q = c + R(-90°)(p - c)
    case 2: qx = (w - 1) - x, qy = (h - 1) - y; return;
    case 3: qx = (h - 1) - y, qy = x; return;
    default: qx = x, qy = y; return;
  }
}

std::string degrees_text(double deg) { return message_number(deg) + "°"; }

}  // namespace

double scan_rotation_of(const std::vector<double>& rotation_deg, std::size_t frame) {
  return rotation_deg.empty() ? 0.0 : rotation_deg[frame % rotation_deg.size()];
}

bool has_scan_rotation(const std::vector<double>& rotation_deg) {
  for (double d : rotation_deg)
    if (quarter_turns(d) != 0) return true;
  return false;
}

bool turns_off_grid(const std::vector<double>& rotation_deg) {
  for (double d : rotation_deg)
    if (std::isfinite(d) && quarter_turns(d) < 0) return true;
  return false;
}

double covered_half_side(const std::vector<double>& rotation_deg, int width, int height) {
  double half = (std::min(width, height) - 1) / 2.0;
  for (double d : rotation_deg) {
    if (!std::isfinite(d) || quarter_turns(d) >= 0) continue;
    const double t = d * kPi / 180.0;
    half = std::min(half, ((width - 1) / 2.0) / (std::fabs(std::cos(t)) + std::fabs(std::sin(t))));
  }
  return half;
}

Frame covered_by_every_turn(const std::vector<double>& rotation_deg, int width, int height, double margin) {
  const double cx = (width - 1) / 2.0, cy = (height - 1) / 2.0;
  const double hx = cx - margin, hy = cy - margin;
  std::vector<double> cs{1.0}, sn{0.0};  // frame 0 itself
  for (double d : rotation_deg) {
    if (!std::isfinite(d)) continue;
    const Transform t = scan_rotation_transform(d, 1, 1);  // exact entries for quarter turns
    cs.push_back(t.a), sn.push_back(t.c);
  }
  Frame m(width, height);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      bool covered = true;
      // The recorded point c + R(-θ)(p - c) inside every frame, margin to spare.
      for (std::size_t i = 0; i < cs.size() && covered; ++i) {
        const double u = cs[i] * (x - cx) + sn[i] * (y - cy), v = -sn[i] * (x - cx) + cs[i] * (y - cy);
        covered = std::fabs(u) <= hx && std::fabs(v) <= hy;
      }
      m.at(x, y) = covered ? 1.0f : 0.0f;
    }
  return m;
}

int quarter_turns(double deg) {
  if (!std::isfinite(deg)) return -1;
  const double m = deg / 90.0, r = std::round(m);
  if (std::fabs(m - r) > 1e-9 / 90.0) return -1;
  return static_cast<int>(std::fmod(std::fmod(r, 4.0) + 4.0, 4.0));
}

double relative_scan_rotation(double deg, double deg0) {
  constexpr double kQuarterTolerance_deg = 0.01;
  double r = std::fmod(deg - deg0, 360.0);
  if (r < 0) r += 360.0;
  const double q = std::round(r / 90.0) * 90.0;
  if (std::fabs(r - q) <= kQuarterTolerance_deg) r = q;
  return r >= 360.0 ? r - 360.0 : r;
}

std::vector<double> rotations_from_frame0(const std::vector<double>& rotation_deg) {
  std::vector<double> out = rotation_deg;
  if (out.empty() || !std::isfinite(out.front())) return out;
  for (double& d : out)
    if (std::isfinite(d)) d = relative_scan_rotation(d, rotation_deg.front());
  return out;
}

Transform scan_rotation_transform(double deg, int width, int height) {
  const Point c{(width - 1) / 2.0, (height - 1) / 2.0};
  const int turns = quarter_turns(deg);
  if (turns >= 0) {  // exact entries: multiples of 90° are pixel moves
    static const double cs[4] = {1, 0, -1, 0}, sn[4] = {0, 1, 0, -1};
    Transform t{cs[turns], -sn[turns], sn[turns], cs[turns], 0.0, 0.0};
    t.tx = c.x - (t.a * c.x + t.b * c.y);
    t.ty = c.y - (t.c * c.x + t.d * c.y);
    return t;
  }
  return Transform::rigid(deg * kPi / 180.0, 0.0, 0.0, c);
}

Point scan_fast_axis(double deg) {
  const Transform t = scan_rotation_transform(deg, 1, 1);
  return {t.a, t.c};
}

Frame derotate(const Frame& recorded, double deg, float outside) {
  const int w = recorded.width, h = recorded.height;
  const int turns = quarter_turns(deg);
  if (turns == 0) return recorded;
  if (turns > 0) {
    if (turns % 2 == 1 && w != h)
      throw bad_input("a scan rotation of " + degrees_text(deg) + " needs square frames (these are " +
                      std::to_string(w) + "x" + std::to_string(h) + ")");
    Frame out(w, h);
    for (int y = 0; y < h; ++y) {
      float* row = out.row(y);
      for (int x = 0; x < w; ++x) {
        int qx, qy;
        quarter_source(turns, x, y, w, h, qx, qy);
        row[x] = recorded.at(qx, qy);
      }
    }
    return out;
  }
  // Any other angle: the recorded frame sampled at q = c + R(-θ)(p - c).
  Frame coeff = recorded;
  bspline_prefilter(coeff);
  const Transform back = scan_rotation_transform(deg, w, h).inverse();
  Frame out(w, h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const Point q = back.apply(x, y);
      const bool inside = q.x >= -1e-6 && q.y >= -1e-6 && q.x <= w - 1 + 1e-6 && q.y <= h - 1 + 1e-6;
      out.at(x, y) = inside ? sample_bspline(coeff, q.x, q.y) : outside;
    }
  return out;
}

void check_scan_rotations(const std::vector<double>& rotation_deg, std::size_t frames, int width, int height,
                          const std::string& where) {
  for (std::size_t i = 0; i < rotation_deg.size(); ++i)
    if (!std::isfinite(rotation_deg[i]))
      throw bad_input(where + "scan.rotation: value " + std::to_string(i + 1) + " (frame " + std::to_string(i) +
                      ") is not a finite angle");
  if (rotation_deg.size() > frames)
    throw bad_input(where + "scan.rotation: " + std::to_string(rotation_deg.size()) + " rotations for " +
                    std::to_string(frames) + " frame(s); frame " + std::to_string(frames) +
                    " onwards do not exist (give at most one rotation per frame)");
  if (width == height) return;
  for (std::size_t k = 0; k < rotation_deg.size(); ++k) {
    const int turns = quarter_turns(rotation_deg[k]);
    if (turns == 0 || turns == 2) continue;
    throw bad_input(where + "frame " + std::to_string(k) + ": scan rotation " + degrees_text(rotation_deg[k]) +
                    " turns its " + std::to_string(width) + "x" + std::to_string(height) +
                    " raster off frame 0's grid (only 0° and 180° fit non-square frames)");
  }
}

std::string scan_rotation_text(const std::vector<double>& rotation_deg) {
  std::string s;
  for (double d : rotation_deg) s += (s.empty() ? "" : ",") + message_number(d);
  return s;
}

}  // namespace driftscan
