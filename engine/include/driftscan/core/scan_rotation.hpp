#pragma once
// A frame's scan rotation: the angle θ (degrees) the scan coils turn the
// raster by. With x to the right and y down in frame 0's pixels, recorded
// pixel q = (column, row) of a frame scanned at θ shows the point
//     c + R(θ) (q - c)        R(θ) = [[cos θ, -sin θ], [sin θ, cos θ]]
// of frame 0's grid (plus the drift), c = ((W-1)/2, (H-1)/2) the frame's
// centre in pixel-centre coordinates (the centre (W/2, H/2) of the pixel-edge
// convention). So at 90° the fast axis runs down frame 0's columns and the
// recorded frame shows the specimen turned by 90°. A rotated frame is stored
// as recorded; DriftScan turns it back (derotate) before registering it, so
// drift.csv, the average and coverage stay in frame 0's grid and orientation.
//
// A series' rotations are given as n values (job field scan.rotation,
// --scan-rotation 0,90): frame k is scanned at value k mod n.
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include "driftscan/core/frame.hpp"
#include "driftscan/core/transform.hpp"

namespace driftscan {

// Frame k's scan rotation (degrees): rotation_deg[k mod n], 0 when empty.
double scan_rotation_of(const std::vector<double>& rotation_deg, std::size_t frame);
// Whether any value turns the scan (is not a multiple of 360°).
bool has_scan_rotation(const std::vector<double>& rotation_deg);
// Whether any value turns the raster off frame 0's pixel grid (is not a
// multiple of 90°): such frames turned back leave corners uncovered.
bool turns_off_grid(const std::vector<double>& rotation_deg);
// Half the side (px, about the frame's centre) of the centred square of frame
// 0's grid that every frame turned back covers: ((W-1)/2) / (|cos θ| + |sin θ|)
// at the worst θ (square frames; a turn off the grid needs them). Without such
// a turn, half the shorter side.
double covered_half_side(const std::vector<double>& rotation_deg, int width, int height);
// The pixels of frame 0's grid that every frame turned back covers with
// `margin` px to spare inside its own border: 1, else 0 (for 0° and 90°
// alone the frame less the margin; with 45° an octagon).
Frame covered_by_every_turn(const std::vector<double>& rotation_deg, int width, int height, double margin);
// The number of quarter turns (0..3) when `deg` is a multiple of 90° (within
// 1e-9°), else -1.
int quarter_turns(double deg);

// `deg` relative to frame 0's `deg0`, turned into [0, 360); within 0.01° of
// a multiple of 90° set to it (coils are set, and files write radians, to a
// few digits). Frame 0's grid is the output's, so only a frame's rotation
// relative to frame 0's matters to register and average.
double relative_scan_rotation(double deg, double deg0);
// Every value relative to the first (a series scanned at 37° and 127° is at
// 0° and 90° on frame 0's grid); non-finite values stay as they are.
std::vector<double> rotations_from_frame0(const std::vector<double>& rotation_deg);

// Maps a recorded pixel of a frame scanned at `deg` to the point of frame 0's
// orientation it shows: c + R(θ)(q - c) (no drift).
Transform scan_rotation_transform(double deg, int width, int height);
// The fast axis of a frame scanned at `deg`, in frame 0's orientation: R(θ)(1, 0).
Point scan_fast_axis(double deg);

// A recorded frame turned back into frame 0's orientation: out(p) =
// recorded(c + R(-θ)(p - c)). Multiples of 90° are exact pixel moves (a 90° or
// 270° turn needs a square frame); other angles are sampled with cubic
// B-splines and the pixels that fall outside the recorded frame are
// `outside` (NaN: missing data, as the average takes it).
Frame derotate(const Frame& recorded, double deg, float outside = std::numeric_limits<float>::quiet_NaN());

// The series' rotations checked against its frames; a bad one throws a
// bad_input Error with one line naming the frame (or the setting, prefixed
// `where`): a value that is not finite, more values than frames, a turn
// that does not map a non-square frame onto frame 0's grid (90°, 270° or
// any non-multiple of 180°).
void check_scan_rotations(const std::vector<double>& rotation_deg, std::size_t frames, int width, int height,
                          const std::string& where);

// "0,90,180,270": the values as --scan-rotation takes them.
std::string scan_rotation_text(const std::vector<double>& rotation_deg);

}  // namespace driftscan
