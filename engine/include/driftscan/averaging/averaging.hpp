#pragma once
// Averaging a registered series in frame 0's coordinates. Every frame is
// warped with its T_{0,k} (cubic interpolation by default, Fourier shift for
// pure translations on request) and accumulated with per-pixel coverage
// weights, so pixels outside the overlap do not bias the result. Frames are
// streamed from the source; the median works tile by tile so memory stays
// bounded whatever the series length.
#include <cstddef>
#include <string>
#include <vector>

#include "driftscan/averaging/averaging_team.hpp"
#include "driftscan/core/cancel_token.hpp"
#include "driftscan/core/enum_names.hpp"
#include "driftscan/core/frame.hpp"
#include "driftscan/core/frame_source.hpp"
#include "driftscan/core/progress.hpp"
#include "driftscan/core/transform.hpp"
#include "driftscan/registration/frame_weights.hpp"

namespace driftscan {

enum class AverageMethod { mean, median, clipped };
enum class Interpolation { cubic, fourier };

struct AveragingOptions {
  AverageMethod method = AverageMethod::mean;
  double clip_sigma = 3.0;  // for `clipped`
  Interpolation interpolation = Interpolation::cubic;
  double min_quality = 0.0;                        // frames with quality below are excluded
  FrameWeighting weights = FrameWeighting::equal;  // how a register run / `average` fills frame_weights
  std::vector<double> frame_weights;               // per frame (mean only): weighted mean; empty: equal weights
  double max_sigma = 0.0;                          // frames whose drift sigma (px) is above are excluded; 0: no limit
  std::vector<std::size_t> exclude_frames;         // explicit rejections
  int median_tile = 128;                           // rows per tile band of the bounded-memory median
  std::string drift;                               // `average` command: drift table of an earlier run
  std::string lines;                               // `average` command: lines.csv of a --scan-distortion run
  double median_memory_mb = 512;                   // bound on the median's buffers; bands shrink to fit
};

struct AverageResult {
  Frame average;   // NaN-free; 0 where coverage is 0
  Frame coverage;  // number (or weight) of frames contributing per pixel
  // The standard error of each pixel of `average` (sigma.tif): from the
  // spread of the warped frames that made it, at that pixel (so the
  // interpolation's smoothing at each frame's sub-pixel phase is in it), for
  // the method and weights used; NaN where fewer than 2 frames contributed.
  // mean: s/sqrt(n); weighted: the weighted spread times sqrt(sum w^2)/sum w;
  // clipped: every sample's spread about the clipped mean over the kept count
  // (clipped_standard_error); median: sqrt(pi/2) s/sqrt(n)
  // (Gaussian noise).
  Frame sigma;
  std::vector<double> quality;  // per frame: NCC with the average/reference after warping
  std::vector<bool> used;       // per frame: contributed to the average
  std::vector<std::string> warnings;
};

// transforms[k] = T_{0,k} (maps frame-k coordinates to frame-0 coordinates).
//
// Passes over the frames (each read and warped again, never all held):
//  1. the mean of the candidate frames (not listed in exclude_frames, not
//     blank), with per-pixel sums of squares for `clipped`;
//  2. quality[k] = NCC of warped frame k with that first-pass mean over their
//     overlap (for every non-blank frame); frames below min_quality are taken
//     out of the sums again;
//  3. `median`: per band of rows, every used frame's warped band is held and
//     the per-pixel median taken; `clipped`: samples further than
//     clip_sigma standard deviations (of pass 1) from the mean are dropped.
// NaN/Inf input pixels are missing data (a warning names the frame); blank
// frames (no finite pixel, or constant) and frames that do not overlap frame
// 0 are excluded with a warning. Throws bad_input when the transforms do not
// match the frames, a frame's size differs, `fourier` meets a transform that
// is not a translation, or no frame is left. Results do not depend on the
// number of OpenMP threads.
AverageResult average_series(const FrameSource& frames, const std::vector<Transform>& transforms,
                             const AveragingOptions& options, Progress* progress = nullptr,
                             const CancelToken* cancel = nullptr);

// The same average shared by a team (averaging_team.hpp): collective over
// its members, each reading its own frames (the median: its own band of
// rows of every used frame); every member returns the whole result. Within
// 1e-6 relative of the serial average; a failure on one member (a frame it
// cannot read, memory) throws the same error on every member.
AverageResult average_series(const FrameSource& frames, const std::vector<Transform>& transforms,
                             const AveragingOptions& options, const AveragingTeam& team, Progress* progress = nullptr,
                             const CancelToken* cancel = nullptr);

// Warps one frame into the reference coordinates: out(p) = f(T^{-1}(p));
// pixels that fall outside f are NaN in `out` unless `outside` is given.
Frame warp_to_reference(const Frame& f, const Transform& to_reference, Interpolation interpolation, float outside);

// How the enum is spelled (enum_names.hpp).
template <>
struct EnumNames<AverageMethod> {
  static constexpr EnumEntry<AverageMethod> table[] = {
      {AverageMethod::mean, "mean"}, {AverageMethod::median, "median"}, {AverageMethod::clipped, "clipped"}};
};
template <>
struct EnumNames<Interpolation> {
  static constexpr EnumEntry<Interpolation> table[] = {{Interpolation::cubic, "cubic"},
                                                       {Interpolation::fourier, "fourier"}};
};
inline const char* to_string(AverageMethod m) { return enum_name(m); }
inline const char* to_string(Interpolation i) { return enum_name(i); }

}  // namespace driftscan
