#pragma once
// Scan-distortion correction (serial reference): the drift as a continuous
// function of time and each scan line's fast-axis jitter, estimated from a
// raster-scanned series, and the average in specimen coordinates.
//
// The model (docs/scan-distortion.md): pixel (x, y) of frame k
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
//   4. estimate each line's jitter by 1-D matching against the average: what
//      the new path does not explain of the line's offset, shrunk by its
//      noise (a prior whose spread is estimated from the frame),
// repeat until d moves by less than the tolerance.
//
// The steps are also offered one frame at a time (ScanDistortionSteps), so
// that mpi_backend runs steps 1, 2 and 4 on each rank's own frames and
// combines them (sums of the average, all band samples); step 3 is cheap and
// deterministic (sorted samples), so every rank fits the same path.
// estimate_scan_distortion() is the serial driver of the same steps.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "driftscan/core/frame.hpp"
#include "driftscan/core/frame_source.hpp"
#include "driftscan/core/scan_timing.hpp"
#include "driftscan/core/transform.hpp"
#include "driftscan/scan_distortion/contribution_spill.hpp"
#include "driftscan/scan_distortion/drift_path.hpp"
#include "driftscan/scan_distortion/line_field.hpp"
#include "driftscan/scan_distortion/template_wiener_filter.hpp"

namespace driftscan {

// Samples past a line field's extent that the template also leaves out:
// the reach of its cubic B-spline interpolation.
constexpr double kLineFieldTemplateMargin = 2.0;

struct ScanDistortionSettings {
  int band_lines = 16;           // scan lines per band (the last band of a frame takes the remainder)
  double max_band_offset = 2.0;  // px a band may move from the rigid/current model (keep < half a lattice period)
  // Rounds; 0: chosen by rounds_for(). Measured on bench_scan_distortion:
  // in one direction the first round gives the sharpest average and the
  // second the best path (later rounds let the template absorb the jitter
  // estimates' errors: the average gets worse). In several directions the
  // other directions pin each line's jitter, and rounds 3-4 still improve it
  // (real content revolving, dose 4: 0.2007 -> 0.1762 px) without a worse
  // average on any case.
  int max_rounds = 0;
  // The rounds a series of this timing gets: max_rounds, or when 0, 2 for
  // frames scanned in one direction and 4 for frames in several.
  int rounds_for(const ScanTiming& timing) const;
  double tolerance = 0.02;  // px: converged when d moves less than this between rounds
  // From this many samples per line, the first round runs on frames binned
  // 2x along the fast axis (FastAxisBinning; frames scanned along rows in one
  // direction, no line field, two rounds or more); 0: never.
  int binned_first_round_from = 1024;
  double smoothing = 0.0;  // DriftPathSettings::smoothing; 0: each axis's by cross-validation over the bands
  bool estimate_jitter = true;
  double jitter_prior = 0.5;  // px: upper bound of the jitter's std dev (the prior itself is estimated from the data)
  double max_jitter = 2.0;    // px: bound on a line's jitter
  // Fit against the template through its Wiener filter (TemplateWienerFilter:
  // the noise measured from the even and odd frames' averages).
  bool filter_template = true;
  // The filter's noise power times this (gain max(0, P - scale N) / P): 1 is
  // the Wiener filter. Measured on bench_scan_distortion (24 x 256^2, seeds
  // 1, 2, 3, 11): 0.5 took the revolving real-ABF series' jitter error 1-2.5%
  // lower (0.1775 -> 0.1731 px at seed 11) and the one-direction real-content
  // cases' 2-8%, but the lattice cases' 1-6% higher and the lone orthogonal
  // pair's 11-27%, with fewer cases' jitter sigmas calibrated; on the lattice
  // 1.25 was 1-4% lower. The best scale follows the content, so 1 stays the
  // default.
  double template_filter_noise_scale = 1.0;
  // Each frame's line field (LineFieldBasis): the displacement along the fast
  // axis by place in the line over its first samples (fly-back hysteresis),
  // this many cubic B-spline coefficients per frame (0: none; else >= 3)
  // over this fraction of the line.
  int line_field_knots = 0;
  double line_field_extent = 0.25;
  double line_field_prior = 0.25;  // px: the prior std dev of a frame's coefficients about the shared field
};

// The per-line model: what p(x, y, k) needs.
struct ScanModel {
  DriftPath path;                           // d(t), pixels; d(start of frame 0) = 0
  std::vector<std::vector<double>> jitter;  // [frame][line], pixels along the fast axis
  // [frame][knot]: each frame's LineFieldBasis coefficients, the displacement
  // along the fast axis by place in the line (empty: none).
  std::vector<std::vector<double>> field;
  LineFieldBasis field_basis;  // what `field`'s coefficients are of

  // The specimen point pixel (x, y) of frame k shows.
  Point probed(const ScanTiming& timing, std::size_t frame, double x, double y) const;
  // The pixel of frame k that shows specimen point q (the inverse of
  // probed(), by fixed-point steps: d changes by far less than a pixel per
  // pixel, so a few steps converge).
  Point pixel_showing(const ScanTiming& timing, std::size_t frame, Point q) const;
};

// Frame k's map from pixels to the specimen points they show, tabulated per
// line (d(t) is linear in time within one line to far below 1e-3 px: a line
// lasts a fraction of a millisecond to a few ms), so probed() and its
// inverse cost a few multiply-adds instead of a spline evaluation.
class FrameScanMap {
 public:
  FrameScanMap(const ScanTiming& timing, const ScanModel& model, std::size_t frame);
  // The same from the path, frame k's jitter and its line field at every
  // sample of a line (LineFieldBasis::tabulate; each empty: none).
  FrameScanMap(const ScanTiming& timing, const DriftPath& path, const std::vector<double>& jitter, std::size_t frame,
               const std::vector<double>& field = {});
  // A rigid frame: every pixel shows pixel + offset (drift.csv convention), to
  // average rigid results the same way as corrected ones.
  static FrameScanMap rigid(const ScanTiming& timing, Point offset, std::size_t frame = 0);
  // From a table of lines (lines.csv): d at each line's mid time and each
  // line's jitter; the drift within a line from the neighbouring lines.
  static FrameScanMap from_lines(const ScanTiming& timing, const std::vector<Point>& mid_drift,
                                 const std::vector<double>& jitter, const std::vector<double>& field = {},
                                 std::size_t frame = 0);
  // Inline: the averaging and the band fits call it for every pixel.
  Point probed(double x, double y) const {
    const double slow = rotated_ ? x : y, along = rotated_ ? y : x;
    const int l = nearest_line(slow);
    const double s = serpentine_ && (l & 1) ? last_sample_ - along : along;
    const Point a = start_[static_cast<std::size_t>(l)], v = per_sample_[static_cast<std::size_t>(l)];
    const double h = field_.empty() ? 0.0 : field_at(s);
    const Point r{x + a.x + s * v.x + (rotated_ ? 0.0 : h), y + a.y + s * v.y + (rotated_ ? h : 0.0)};
    return turned_ ? turn_.apply(r) : r;  // a turned frame's offsets are kept in its own (recorded) axes
  }
  // Where pixel (x, y) sits in frame 0's orientation with no drift: itself,
  // or turned by the frame's scan rotation; probed() minus this is the
  // displacement the pixel shows.
  Point unmoved(double x, double y) const { return turned_ ? turn_.apply(x, y) : Point{x, y}; }
  // The sample (acquisition order along its line) of frame pixel p.
  double sample_at(Point p) const {
    const double along = rotated_ ? p.y : p.x;
    return serpentine_ && (nearest_line(rotated_ ? p.x : p.y) & 1) ? last_sample_ - along : along;
  }
  // The inverse of probed() (fixed-point steps). pixel_showing_near() below
  // leaves the line field out: the averages sample through without_jitter(),
  // which has none.
  Point pixel_showing(Point q) const;
  // The same, solved on a line: within one line the map is affine, so the
  // pixel of `line` showing q is one division away; then the line that pixel
  // lies on is tried, until the two agree (a few tries from a far guess; a
  // point at a line boundary may go to either line, both are right). `line`
  // is the guess in and the returned pixel's line out — along an output row
  // it rarely changes, which makes this the averaging's inverse.
  Point pixel_showing_near(Point q, int& line) const {
    if (turned_) q = unturn_.apply(q);
    Point p = pixel_on_line(q, line);
    for (int attempt = 0; attempt < 8; ++attempt) {
      const int nearest = nearest_line(rotated_ ? p.x : p.y);
      if (nearest == line) break;
      line = nearest;
      p = pixel_on_line(q, line);
    }
    return p;
  }
  // pixel_showing_near() of the specimen points q0 + (i, 0), i < count, into
  // out: the averaging's inverse for a row of its grid. Within a line the
  // map is affine, so along a run of one line each pixel is the run's first
  // plus i times a constant step (no division); solved again where the
  // step's pixel lies nearer another line (the same test as
  // pixel_showing_near()'s).
  void pixels_showing_row(Point q0, int count, Point* out) const;
  // The offset of a line at its start and its change per sample (dwell); of
  // a turned frame, in its recorded axes.
  Point line_offset(int line) const { return start_[static_cast<std::size_t>(line)]; }

  // Whether some line has a jitter of its own, or the frame a line field.
  bool has_jitter() const { return !jitter_.empty() || !field_.empty(); }
  // The frame with each line moved by its jitter and line field along the
  // fast axis (1-D cubic B-spline along the line), to be sampled with
  // without_jitter(). A
  // 2-D interpolation of the raw frame under this map would mix each line
  // with its neighbours at the wrong fast-axis positions (one line's jitter
  // applied to four), blurring what the jitter estimate should sharpen.
  Frame lines_aligned(const Frame& frame) const;
  FrameScanMap without_jitter() const;

 private:
  const ScanTiming* timing_ = nullptr;
  std::vector<Point> start_, per_sample_;
  // The timing's geometry, copied for the inline probed().
  bool rotated_ = false, serpentine_ = false;
  // A frame scanned at a rotation (ScanTiming::turn): start_, per_sample_ and
  // mid_ are in its recorded axes, and probed() turns the result.
  bool turned_ = false;
  Transform turn_, unturn_;
  int lines_ = 1;
  double last_sample_ = 0.0;
  std::vector<double> jitter_;  // per line, px along the fast axis (empty: none); included in start_
  std::vector<double> field_;   // the line field at each sample, in acquisition order (empty: none)
  double field_at(double s) const {
    const double c = std::clamp(s, 0.0, last_sample_);
    const std::size_t i = std::min(static_cast<std::size_t>(c), field_.size() - 1);
    const double f = c - static_cast<double>(i);
    return i + 1 < field_.size() ? field_[i] + f * (field_[i + 1] - field_[i]) : field_[i];
  }
  void copy_geometry(const ScanTiming& timing, std::size_t frame);
  // A displacement in frame 0's orientation, in this frame's recorded axes.
  Point unturned(Point d) const {
    return turned_ ? Point{unturn_.a * d.x + unturn_.b * d.y, unturn_.c * d.x + unturn_.d * d.y} : d;
  }
  // The pixel of `line` (extended beyond the line) that shows q.
  Point pixel_on_line(Point q, int line) const {
    const Point a = start_[static_cast<std::size_t>(line)], v = per_sample_[static_cast<std::size_t>(line)];
    const bool reversed = serpentine_ && (line & 1);
    // Along the line: q_along = along + a_along + s * v_along, s = along or last - along.
    const double qa = rotated_ ? q.y - a.y : q.x - a.x, va = rotated_ ? v.y : v.x, vs = rotated_ ? v.x : v.y;
    const double along = reversed ? (qa - last_sample_ * va) / (1.0 - va) : qa / (1.0 + va);
    const double s = reversed ? last_sample_ - along : along;
    return rotated_ ? Point{q.x - a.x - s * vs, along} : Point{along, q.y - a.y - s * vs};
  }
  // The change of pixel_on_line(q, line) when q (unturned) changes by dq.
  Point pixel_step_on_line(Point dq, int line) const {
    const Point v = per_sample_[static_cast<std::size_t>(line)];
    const bool reversed = serpentine_ && (line & 1);
    const double dqa = rotated_ ? dq.y : dq.x, va = rotated_ ? v.y : v.x, vs = rotated_ ? v.x : v.y;
    const double along = reversed ? dqa / (1.0 - va) : dqa / (1.0 + va);
    const double s = reversed ? -along : along;
    return rotated_ ? Point{dq.x - s * vs, along} : Point{along, dq.y - s * vs};
  }
  // The line nearest a slow-axis coordinate, without llround (a libm call):
  // truncation, corrected below 0. A point exactly between two lines may go
  // to either: both are right.
  int nearest_line(double slow) const {
    int l = static_cast<int>(slow + 0.5);  // NOLINT(bugprone-incorrect-roundings)
    if (slow + 0.5 < static_cast<double>(l)) --l;
    return l < 0 ? 0 : (l >= lines_ ? lines_ - 1 : l);
  }
  Point mid_;  // the offset at the frame's mid time: the inverse's first guess
  FrameScanMap() = default;
};

// An image in specimen coordinates: pixel (i, j) is the specimen point
// origin + (i, j).
struct SpecimenImage {
  Frame image;
  Frame coverage;  // frames that contributed to each pixel
  Point origin;
  // The standard error of each pixel of image (sigma.tif; standard_error.hpp):
  // of the final averages only, empty otherwise.
  Frame sigma;
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
  // The RMS over the lines of the last round of a line's jitter-fit standard
  // deviation (the scatter the two halves of each line show, at least the
  // pixel noise, over the line's information): what no jitter estimate of
  // these frames can beat, whatever the path. 0 without jitter estimation.
  double jitter_precision_px = 0.0;
  // Frames left out of the average: those the caller left out and those
  // that could not be followed (fewer than half their bands registered).
  std::vector<std::size_t> left_out, not_followed;
  // The final model's standard errors (lines.csv's sigma columns): the path
  // relative to its mean over the lines, [frame][line] the jitter's.
  DriftPathUncertainty path_sigma;
  std::vector<std::vector<double>> jitter_sigma;
};

// The specimen region a set of frames covers: origin and size of the grid
// (integer specimen coordinates). Union of two extents by `merge`.
struct SpecimenExtent {
  double xmin = 1e300, xmax = -1e300, ymin = 1e300, ymax = -1e300;
  void add(Point q);
  void merge(const SpecimenExtent& other);
  bool empty() const { return xmin > xmax; }
};
SpecimenExtent frame_extent(const FrameScanMap& map, const ScanTiming& timing);

// The grid an average is accumulated on: pixel (i, j) is specimen point
// origin + (i, j). Throws a bad_input Error when the extent is absurdly
// larger than a frame (a rigid drift that is no usable start).
struct SpecimenGrid {
  Point origin;
  int width = 0, height = 0;
  static SpecimenGrid covering(const SpecimenExtent& extent, const ScanTiming& timing);
};

// One frame sampled on the specimen grid: the box of its footprint
// (grid pixels i0.., j0..), NaN where the frame does not cover.
struct FrameContribution {
  int i0 = 0, j0 = 0, width = 0, height = 0;
  std::vector<float> value;
  // Spilled by a ContributionBudget (value then empty): its width * height
  // values in this file at this offset.
  std::shared_ptr<const ContributionSpill> spill;
  std::uint64_t spill_offset = 0;
  std::size_t bytes() const { return value.size() * sizeof(float); }
  // A spilled contribution with its values read back (an empty one when it
  // is not spilled or the read failed: sample it again).
  FrameContribution read_back() const {
    FrameContribution c;
    if (!spill) return c;
    c.i0 = i0, c.j0 = j0, c.width = width, c.height = height;
    c.value.resize(static_cast<std::size_t>(width) * static_cast<std::size_t>(height));
    if (!spill->read(spill_offset, c.value.data(), c.value.size())) c.value = {};
    return c;
  }
};
// Step 1 for one frame: frame k sampled (cubic B-spline) at the pixel
// showing each specimen grid point of its footprint.
// Grid points shown by a line's samples before `from_sample` (acquisition
// order) are left out: the template of the line-field fits holds none of the
// samples a line field moves (ScanDistortionSteps::template_from_sample()).
FrameContribution sample_in_specimen_coordinates(const Frame& frame, const FrameScanMap& map, const SpecimenGrid& grid,
                                                 double from_sample = 0.0);
// Adds a contribution to `sum` and 1 to `coverage` where it covers. `sum`
// and `coverage` are grid-sized; doubles, so that partial sums from several
// ranks add up in any order to the same float after rounding.
void add_contribution(const FrameContribution& c, const SpecimenGrid& grid, std::vector<double>& sum,
                      std::vector<double>& coverage);
// Adds a contribution's squares (the standard error's sums) where it covers;
// kept apart from add_contribution, whose sums stay the ones they were.
void add_contribution_squares(const FrameContribution& c, const SpecimenGrid& grid, std::vector<double>& squares);
// The standard error of each pixel of the average of those sums (NaN where
// fewer than 2 frames covered).
Frame specimen_sigma(const SpecimenGrid& grid, const std::vector<double>& sum, const std::vector<double>& squares,
                     const std::vector<double>& coverage);
// Both at once.
void accumulate_in_specimen_coordinates(const Frame& frame, const FrameScanMap& map, const SpecimenGrid& grid,
                                        std::vector<double>& sum, std::vector<double>& coverage);

// Keeps the contributions of a template's averaging pass, in frame order,
// while they fit a memory budget; later ones are spilled to a temporary file
// (ContributionSpill; with `spill`), else kept empty and sampled again when a
// fit needs them: a frame's leave-one-out template subtracts exactly what
// the pass added for it, under the same model, so sampling it twice was two
// fifths of all the sampling.
class ContributionBudget {
 public:
  static constexpr std::size_t kDefaultBytes = std::size_t{512} << 20;
  explicit ContributionBudget(std::vector<FrameContribution>* kept, std::size_t bytes = kDefaultBytes,
                              bool spill = true)
      : kept_(kept), left_(bytes), may_spill_(spill) {}
  void keep(FrameContribution&& c) {
    if (!kept_) return;
    if (c.bytes() <= left_) {
      left_ -= c.bytes();
      kept_->push_back(std::move(c));
      return;
    }
    left_ = 0;  // in frame order: once one does not fit, none after it is kept in memory
    FrameContribution spilled;
    if (may_spill_ && !c.value.empty()) {
      if (!spill_) spill_ = ContributionSpill::open();
      if (spill_ && spill_->write(c.value.data(), c.value.size(), spilled.spill_offset)) {
        spilled.i0 = c.i0, spilled.j0 = c.j0, spilled.width = c.width, spilled.height = c.height;
        spilled.spill = spill_;
      }
      if (!spill_) may_spill_ = false;  // no file to be had: not tried again
    }
    kept_->push_back(std::move(spilled));
  }

 private:
  std::vector<FrameContribution>* kept_;
  std::size_t left_;
  bool may_spill_;
  std::shared_ptr<ContributionSpill> spill_;
};
// The image from the accumulated sums (uncovered pixels take the mean).
SpecimenImage finish_specimen_average(const SpecimenGrid& grid, const std::vector<double>& sum,
                                      const std::vector<double>& coverage);

// The noise of an average: the average of its even frames minus that of its
// odd ones (0 where either is missing). The specimen cancels; the noise and
// the frames' misplacements stay, with their spectrum.
struct AverageNoise {
  Frame half_difference;
  std::size_t even = 0, odd = 0;  // frames in each half
};
// The average from sums kept apart for the even [0] and odd [1] frames
// (`even` and `odd` of them), and its noise; the odd sums are added into
// the even ones.
SpecimenImage finish_split_average(const SpecimenGrid& grid, std::vector<double> sum[2],
                                   std::vector<double> coverage[2], std::size_t even, std::size_t odd,
                                   AverageNoise& noise);

// Steps 2 and 4 against one average, for one frame at a time.
class ScanDistortionSteps {
 public:
  // Validates the settings against the timing (one-line bad_input Error
  // naming the setting).
  ScanDistortionSteps(const ScanTiming& timing, const ScanDistortionSettings& settings, std::size_t frames);

  const ScanTiming& timing() const { return timing_; }
  const ScanDistortionSettings& settings() const { return settings_; }
  std::size_t frame_count() const { return frames_; }
  double t_end() const { return timing_.frame_start(frames_); }

  // The start: a path nearly through the rigid shifts at the frames' mid times
  // (drift.csv convention; frames left out are not used), in the gauge
  // (frame 0's mean position 0: the path's mean over frame 0's lines), and
  // zero jitter.
  ScanModel initial_model(const std::vector<Point>& rigid_drift) const;
  // Step 3: the path through all band samples (any order; the fit sorts
  // them), in the same gauge.
  DriftPath fit_path(std::vector<DriftSample> samples) const;

  // Whether a round's model is taken halfway from the one it started from
  // (halfway()): with two frames followed, each frame's template is the
  // other frame alone, so a round's fit of one frame carries the other's
  // error, and the two frames' errors swap from round to round without
  // converging (measured on bench_scan_distortion's 2-frame one-direction
  // pair, seed 11: per-line drift error 0.185, 0.191, 0.164, 0.178, 0.152 px
  // over rounds 1-5; halfway: 0.096, 0.098, 0.097, 0.096 px, converged in
  // round 4). Half a step takes the swapped part out at once; the fixed point
  // is the round's.
  bool halves_steps() const;
  // The path halfway between `fitted` and `previous` (fit on the round's
  // knots through their mean at every line's middle), in the gauge.
  DriftPath halfway(const DriftPath& fitted, const DriftPath& previous) const;

  // Frames left out: of every average, fit and band sample from now on (a
  // frame the caller leaves out, or one that could not be followed).
  void leave_out(std::size_t k) { left_out_.at(k) = 1; }
  bool left_out(std::size_t k) const { return k < left_out_.size() && left_out_[k]; }
  const std::vector<char>& left_out_frames() const { return left_out_; }

  // Makes `average`, built under a model with this path, the template of the
  // next steps (coverage threshold: a quarter of the frames). With its noise
  // (both halves non-empty) and settings().filter_template, the fits sample
  // it through a TemplateWienerFilter.
  // `own`: the contributions of frames own_first, own_first + 1, ... from
  // the pass that built `average` (ContributionBudget; spilled ones are read
  // back, empty ones sampled again). Taken by value: a caller that moves them in holds no
  // second copy of the grids while the round lasts.
  void set_template(SpecimenImage average, const DriftPath& built_with, AverageNoise noise = {},
                    std::vector<FrameContribution> own = {}, std::size_t own_first = 0);
  // Frees the template and the kept contributions once a round's fits are
  // done: the next average needs neither, and on big frames they would sit
  // beside its grids and its own kept contributions (one frame budget each).
  void drop_template() {
    template_.reset();
    own_ = {};
  }
  // Steps 2 and 4 for frame k against the template under `model`: its bands
  // registered, then (when jitter is estimated) each line's jitter by 1-D
  // matching, each line placed where its band's last step sampled the
  // template (and its first step taken from those samples; a line of a band
  // that did not register, between its neighbours'). Both fits use the one
  // template without frame k's own contribution: its own noise in the
  // template would pull every band and line toward where the model already
  // puts it (measured: jitter estimates 16-36% too small). Placing the lines
  // by their bands instead of by the path fitted from all frames lets one
  // pass over a frame do both steps (the template is built once a frame and
  // round, the frame read once). The lines' offsets are kept whole (their
  // band's share included): finish_jitter() makes the jitter of what the new
  // path does not explain of them, so a band's mean jitter, which the smooth
  // path cannot follow, is not lost (measured on bench_scan_distortion: the
  // jitter error 0.196 -> 0.169 px and 0.209 -> 0.181 px where the line's
  // fast part alone was kept).
  struct FrameFit {
    std::vector<DriftSample> bands;  // one sample per registered band (t, displacement, confidence)
    double band_count = 0.0;         // bands registered
    double explained_count = 0.0;    // of those, the bands the template explains part of
    // Per line (empty: jitter not estimated): its whole fast-axis offset
    // from the template's path, as fitted, and that fit's variance.
    std::vector<double> line_offset, line_variance;
    // The line field's normal equations at the frame's current coefficients
    // (empty: none): A (knots x knots, row-major) and b, the change c of the
    // coefficients the data alone ask for solving A c = b.
    std::vector<double> field_normal, field_rhs;
    double precision_sum = 0.0;    // the lines' fit variances, summed
    double precision_count = 0.0;  // and counted (ScanDistortionResult::jitter_precision_px)
  };
  // A frame left out gets an empty fit.
  FrameFit fit_frame(const Frame& frame, std::size_t k, const ScanModel& model) const;
  // Step 4's end, once the path is fitted: frame k's jitter for the next
  // model, what the path `after` does not explain of the lines' offsets from
  // `before` (the template's), shrunk by its noise.
  // `sigma` (when given): each line's standard error of that jitter, the
  // shrinkage's posterior one, sqrt(tau^2 v / (tau^2 + v)) with v the line
  // fit's variance and tau^2 the frame's jitter variance (its prior sd where a
  // line has no fit), plus the path `after`'s own error along the fast axis at
  // the line's time (`path_sigma`, the path's uncertainty from the same
  // samples: its fit's and the drift it leaves unresolved), which is in each
  // line's offset and shrunk with it (none when null).
  // `tau2` (when >= 0): the frame's jitter variance as pooled over the
  // series (pooled_jitter_variances); otherwise the frame's own estimate.
  std::vector<double> finish_jitter(const FrameFit& fit, std::size_t k, const DriftPath& before, const DriftPath& after,
                                    std::vector<double>* sigma = nullptr,
                                    const DriftPathUncertainty* path_sigma = nullptr, double tau2 = -1.0) const;
  // What frame k's fitted lines say of its jitter variance, once the path is
  // fitted (as finish_jitter): the sum of squares of the offsets the path
  // `after` leaves (frame mean removed), the sum of their fit variances, and
  // the lines counted. All 0 for a frame without line fits.
  struct JitterSpread {
    double spread = 0.0, noise = 0.0, count = 0.0;
  };
  JitterSpread jitter_spread(const FrameFit& fit, std::size_t k, const DriftPath& before, const DriftPath& after) const;
  // Each frame's jitter variance for finish_jitter, from every frame's
  // spread (in frame order; the same on every rank): the frame's own
  // estimate (spread - noise) / count drawn toward the series' pooled one by
  // how little the frames' estimates scatter beyond their sampling error
  // (empirical Bayes over frames: one frame's 256 lines read its variance to
  // ~13%; a series whose frames share the jitter's variance gets the pooled
  // one, a frame whose jitter differs keeps its own). Bounded by the prior.
  std::vector<double> pooled_jitter_variances(const std::vector<JitterSpread>& frames) const;
  // The standard error of the path fit_path() fits to these samples, relative
  // to its mean over every line of the series (lines.csv's sigma_dx, sigma_dy;
  // DriftPathUncertainty), and of that mean.
  DriftPathUncertainty path_uncertainty(const std::vector<DriftSample>& samples) const;
  // The same for finish_jitter's sigma; empty() if it cannot be had.
  DriftPathUncertainty path_uncertainty_if_any(const std::vector<DriftSample>& samples) const;
  // The next model's line fields of frames first, first + 1, ... (their
  // fits `fits`); the other frames' are left as they are. Each frame's field
  // is the series' shared field plus the frame's own deviation (prior std
  // dev line_field_prior): a hysteresis that repeats from frame to frame is
  // measured from all of them, and a frame whose line starts no other frame
  // saw clear of its own (nothing to measure it against) keeps the shared
  // one. The shared field's equations are summed over these frames, then
  // `sum_over_ranks` (when given) adds the other ranks' sums in place, so
  // every rank solves the same ones. No line field: nothing is done.
  void finish_fields(const std::vector<FrameFit>& fits, std::size_t first, ScanModel& model,
                     const std::function<void(std::vector<double>&)>& sum_over_ranks = {}) const;
  const LineFieldBasis& field_basis() const { return field_basis_; }
  // The first sample of a line the template is built from: with a line
  // field, past its extent (and the interpolation's reach). The template
  // then holds no fly-back hysteresis of any frame, and each frame's field
  // is measured against the specimen itself, not against the other frames'
  // fields (which would leave a smooth specimen warp free: see line_field.hpp).
  double template_from_sample() const {
    return field_basis_.empty() ? 0.0 : field_basis_.extent() + kLineFieldTemplateMargin;
  }
  // fit_frame() for frames first, first + 1, ... at once, one frame a thread
  // (a frame's own steps then run on one thread: per frame, the reads,
  // copies and transposes around them left a second thread mostly waiting).
  // The results are in frame order, so they combine the same for any thread
  // count; the first failure is rethrown after all threads have finished.
  // The frames are shared, not copied (a source that keeps its decoded
  // frames hands out the one it keeps); a left-out frame may be null.
  std::vector<FrameFit> fit_frames(const std::vector<std::shared_ptr<const Frame>>& frames, std::size_t first,
                                   const ScanModel& model) const;
  // Whether a frame's fit followed it: at least half its bands registered
  // against the average and explained by it in part (fewer, and its band
  // samples are more likely a featureless or damaged frame's chance matches
  // than its drift).
  bool followed(const FrameFit& fit) const { return 2.0 * fit.explained_count >= static_cast<double>(bands_.size()); }
  // A frame fitted but not followed is left out from now on and its fit
  // emptied (its few band samples would rather bend the path than follow
  // it); true if that happened.
  bool leave_out_unless_followed(std::size_t k, FrameFit& fit) {
    if (left_out(k) || followed(fit)) return false;
    leave_out(k);
    fit = {};
    return true;
  }

  // The largest change of d at any line's mid time between two paths.
  double path_change(const DriftPath& a, const DriftPath& b) const;

 private:
  struct Template;
  // The template without frame k's contribution (made with `jitter`, frame
  // k's jitter when the template was built).
  std::shared_ptr<const Template> template_without(const Frame& frame, std::size_t k, const std::vector<double>& jitter,
                                                   const std::vector<double>& field) const;
  // Each line's offset less what the path `after` moved from `before` along
  // frame k's fast axis.
  std::vector<double> unexplained_offsets(const FrameFit& fit, std::size_t k, const DriftPath& before,
                                          const DriftPath& after) const;
  // Whether the frames are scanned in more than one direction (a fast axis
  // differs from frame 0's).
  bool several_directions() const;
  // The drift path's knot spacing (fit_path, path_uncertainty, halfway).
  double path_knot_spacing() const;
  LineFieldBasis field_basis_;
  ScanTiming timing_;
  ScanDistortionSettings settings_;
  std::size_t frames_;
  std::vector<std::vector<std::pair<int, int>>> lines_, bands_;
  std::vector<std::pair<int, int>> band_lines_;  // each band's first line and one past its last
  // Each line's band and where its pixels start among the band's.
  std::vector<std::pair<std::size_t, std::size_t>> line_in_band_;
  std::vector<double> band_time_;  // each band's mean acquisition time from its frame's start
  std::shared_ptr<const Template> template_;
  std::vector<char> left_out_;
  std::vector<FrameContribution> own_;  // of frames own_first_, ... in the template's pass
  std::size_t own_first_ = 0;
};

// How many samples at the start of every line no frame's line field can be
// measured at (0 without a line field). A frame's sample s is measured where
// another frame saw the same specimen point past the template's first
// sample (ScanDistortionSteps::template_from_sample()), which takes a drift
// along the fast axis of that sample minus s between the two frames: the
// first samples go unmeasured when the series' drift along the fast axis
// (`rigid_drift`, the frames not left out) spans less than that.
int line_field_unseen_samples(const ScanTiming& timing, const ScanDistortionSettings& settings,
                              const std::vector<Point>& rigid_drift, const std::vector<std::size_t>& left_out = {});

// Averages the frames in specimen coordinates under `model`: for every
// specimen pixel, each frame is sampled (cubic B-spline) at the pixel that
// shows it. The image covers every frame's footprint. With `noise`, also the
// difference of the even and odd frames' averages; with `kept`, the frames'
// contributions (ContributionBudget).
// Frames with left_out[k] != 0 are not in it (an empty contribution is kept
// for them).
SpecimenImage average_in_specimen_coordinates(const FrameSource& frames, const ScanTiming& timing,
                                              const ScanModel& model, AverageNoise* noise = nullptr,
                                              std::vector<FrameContribution>* kept = nullptr,
                                              const std::vector<char>* left_out = nullptr, double from_sample = 0.0);

// Estimates the per-line model from `frames` scanned with `timing`, starting
// from the rigid drift of each frame (drift.csv convention: frame k at pixel
// p shows what frame 0 shows at p + rigid_drift[k]). Throws a bad_input
// Error (one line, naming the setting) for settings that cannot work (bands
// of fewer than 4 lines or more lines than a frame has, a rigid drift per
// frame missing, ...).
// Frames in `leave_out` (rigid registrations that failed, frames the user
// excluded) are in no average nor fit.
ScanDistortionResult estimate_scan_distortion(const FrameSource& frames, const ScanTiming& timing,
                                              const std::vector<Point>& rigid_drift,
                                              const ScanDistortionSettings& settings = {},
                                              const std::vector<std::size_t>& leave_out = {});

}  // namespace driftscan
