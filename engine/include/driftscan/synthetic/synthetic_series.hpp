#pragma once
// Synthetic EM series with ground truth: atom columns as Gaussians of varying
// intensity on a hexagonal or square lattice, vacancies, a grain boundary that
// breaks periodicity; drift = random walk + linear (subpixel), optional
// per-frame rotation and scan-line jitter; Poisson noise at a dose plus
// optional Gaussian read noise. Frames are drawn by evaluating the analytic
// model at shifted coordinates (no interpolation error) on demand, so a
// SyntheticSeries is itself a FrameSource of any length at no memory cost.
//
// With raster timing (scan_dwell > 0) a frame is not drawn at one instant but
// scanned: pixel (x, y) of frame k is recorded at ScanTiming::time_of(k, x, y)
// and shows the specimen at p = (x, y) + d(t) + j_{k,line} * fast axis, with
// d(t) a continuous drift path (linear + slow wobble + random walk in time,
// d = 0 at the start of frame 0) and j the line's jitter. Drift during a
// frame then shears and bends it as in a real STEM scan
// (docs/scan-distortion.md); the per-line truth is written beside
// the series.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "driftscan/core/cancel_token.hpp"
#include "driftscan/core/enum_names.hpp"
#include "driftscan/core/frame_source.hpp"
#include "driftscan/core/progress.hpp"
#include "driftscan/core/scan_timing.hpp"
#include "driftscan/core/transform.hpp"

namespace driftscan {

enum class Lattice { hex, square };

struct SynthOptions {
  std::size_t frames = 200;
  int width = 512;
  int height = 512;
  double period = 9.0;  // lattice period in pixels
  Lattice lattice = Lattice::hex;
  double drift_step = 0.3;      // random-walk step, pixels (std dev per axis per frame)
  double drift_linear_x = 0.2;  // linear drift per frame, pixels
  double drift_linear_y = 0.1;
  double rotation_step_deg = 0.0;  // rotation drift per frame, degrees
  double jitter = 0.0;             // scan-line jitter, pixels (std dev per line, along the fast axis)
  double dose = 6.0;               // mean counts at an atom column (Poisson); <= 0: no noise
  double read_noise = 0.0;         // Gaussian read noise, counts
  double vacancy_fraction = 0.02;
  bool grain_boundary = true;
  std::uint32_t seed = 1;
  // Finer controls (not command-line flags):
  double atom_sigma = 0.0;         // Gaussian std dev of a column, pixels (0: 0.12 * period)
  double intensity_spread = 0.15;  // column intensities uniform in 1 +- spread
  double background = 0.05;        // constant background, as a fraction of a column peak
  double grain_angle_deg = 17.0;   // misorientation of the grain beyond the boundary
  // Custom columns in frame-0 pixels (intensity 1); when non-empty they
  // replace the lattice (no vacancies, no boundary): single-atom tests.
  std::vector<Point> atoms;
  // A real-content specimen: when set, this image (any size, e.g. a frame of
  // a real HAADF series) replaces the lattice; it is normalised to [0, 1]
  // (0.5th to 99.5th percentile), sampled with cubic B-splines, and the
  // frames' footprints are centred in it. The scale of its pixels is the
  // series'; drift that leaves it is clamped at its edges.
  std::shared_ptr<const Frame> content;

  // Raster-scan timing. scan_dwell = 0 (the default) draws every frame at one
  // instant, exactly as without these fields; > 0 scans it (see above).
  // Then the drift is a path in time measured in frame times (start to
  // start): drift_linear_x/y is its velocity per frame time, drift_step the
  // std dev per axis of its random walk over one frame time (stepped once per
  // line time and interpolated linearly), and drift_wobble adds a sinusoid.
  // Rotation drift is not modelled with raster timing.
  double scan_dwell = 0.0;          // seconds per pixel; 0: frames drawn at one instant
  double scan_line_flyback = 0.0;   // fraction of a line's pixels x dwell
  double scan_frame_flyback = 0.0;  // fraction of a frame's lines x line time
  ScanDirection scan_direction = ScanDirection::normal;
  double drift_wobble = 0.0;         // amplitude per axis, pixels
  double drift_wobble_period = 8.0;  // in frame times
  // Fly-back hysteresis (raster timing only): sample s of every line (in
  // acquisition order) is displaced along the fast axis by
  // a_k exp(-s / scan_hysteresis_length), a_k drawn per frame uniformly in
  // [0.5, 1.5] x scan_hysteresis: a scan coil that has not settled when a
  // line starts, and settles differently from frame to frame.
  double scan_hysteresis = 0.0;          // pixels
  double scan_hysteresis_length = 30.0;  // samples
  // Scan rotation per frame (degrees; core/scan_rotation.hpp): frame k is
  // scanned at scan_rotation_deg[k mod n] and stored as recorded, so it shows
  // the specimen turned by that angle and its lines (and their jitter) run
  // along its own fast axis. Empty: every frame at 0, as without the field.
  std::vector<double> scan_rotation_deg;
};

class SyntheticSeries : public FrameSource {
 public:
  explicit SyntheticSeries(const SynthOptions& options);
  std::size_t frame_count() const override;
  int width() const override;
  int height() const override;
  Frame frame(std::size_t k) const override;  // noisy, deterministic in (seed, k)
  std::string describe() const override;

  // Noise-free frame k as drawn (with scan-line jitter when enabled):
  // frame(k) is Poisson/read noise applied to exactly this.
  Frame clean_frame(std::size_t k) const;
  // The sample in frame k's coordinates without jitter or noise: the ideal
  // the registration and averaging are judged against. A frame scanned at a
  // rotation is shown turned back into frame 0's orientation (what
  // DerotatedSource makes of it).
  Frame ideal_frame(std::size_t k) const;
  // Frame k's scan rotation (degrees): scan_rotation_deg[k mod n], or 0.
  double scan_rotation_deg(std::size_t k) const;
  // T_{0,k}: f_k(p) ~ f_0(T_{0,k}(p)), f_k in frame 0's orientation (a
  // frame scanned at a rotation turned back first: the drift alone). A rigid motion (rotation by angle(k)
  // about the frame centre c, then the shift): truth(k)(c) = c + drift(k).
  // With raster timing, the best rigid description of a scanned frame: the
  // shift d(mid time of frame k) - d(mid time of frame 0), and ideal_frame(k)
  // is the specimen as an instant scan at frame k's mid time would show it.
  Transform truth(std::size_t k) const;
  Point drift(std::size_t k) const;       // (dx, dy) of the truth CSV: displacement at the frame centre
  double angle_deg(std::size_t k) const;  // rotation of frame k relative to frame 0
  Point centre() const;                   // ((width-1)/2, (height-1)/2)
  double counts_scale() const;            // counts of a unit-intensity column peak (dose, or 1)
  const SynthOptions& options() const;

  // Raster timing (scan_dwell > 0) only; the others throw std::logic_error
  // on a series drawn at instants.
  bool scanned() const { return timing_ != nullptr; }
  const ScanTiming& scan_timing() const;
  Point drift_at(double t) const;                     // d(t), specimen-coordinate pixels; d(0) = 0
  double line_jitter(std::size_t k, int line) const;  // j_{k,line}, pixels along the fast axis (0 without jitter)
  // Frame k's hysteresis at sample s of a line (acquisition order), pixels
  // along the fast axis (0 without).
  double line_field(std::size_t k, double s) const;
  // The specimen point pixel (x, y) of frame k shows (noise-free, with jitter):
  // (x, y) + d(time_of(k, x, y)) + j_{k,line} * fast axis; at a scan rotation
  // θ: c + R(θ)((x, y) + j * fast axis - c) + d(time_of(k, x, y)).
  Point probed(std::size_t k, double x, double y) const;

  // The noise-free specimen (counts scale, with the background) at the given
  // specimen points, as a width x height frame (points row by row): what a
  // perfect instant scan would show there. Specimen coordinates are frame
  // 0's pixels at d = 0 (with raster timing: the start of frame 0).
  Frame specimen(const std::vector<Point>& points, int width, int height) const;

 private:
  SynthOptions options_;
  std::vector<Transform> truth_;
  std::vector<Point> drift_;
  std::vector<double> angle_deg_;
  std::shared_ptr<const ScanTiming> timing_;  // null: frames drawn at one instant
  std::vector<Point> walk_;                   // random walk of the drift path, one node per line time
  double wobble_phase_x_ = 0.0, wobble_phase_y_ = 0.0;
  // lattice sites, intensities etc. live in the .cpp's private state
  struct Model;
  std::shared_ptr<const Model> model_;
};

// Writes OUT (a float32 TIFF stack), OUT_truth.csv (frame,dx,dy and
// angle_deg when rotating; OUT's extension dropped: series.tif ->
// series_truth.csv) and OUT_reference.tif (the ideal frame 0: no noise, no
// jitter). With raster timing also OUT_lines_truth.csv: one row per scan line,
// frame,line,t,dx,dy,jitter with t the line's mid time (seconds from the start
// of frame 0), (dx, dy) = d(t) and the line's jitter along the fast axis.
// With scan rotations the truth gains a column scan_rotation_deg and the
// lines' truth a column angle_deg (the frame's scan rotation; its jitter is
// along that frame's own fast axis).
// With fly-back hysteresis also OUT_hysteresis_truth.csv: frame,amplitude,
// decay — sample s of every line of the frame (acquisition order) displaced
// along the fast axis by amplitude * exp(-s / decay) pixels.
// Every file appears under its name only when complete; the series is
// committed last. Returns the paths written (lines_truth empty when instant,
// hysteresis_truth without hysteresis).
struct SynthOutputs {
  std::string series, truth, reference, lines_truth, hysteresis_truth;
};
SynthOutputs write_synthetic_series(const SynthOptions& options, const std::string& out_path,
                                    Progress* progress = nullptr, const CancelToken* cancel = nullptr);

// How the enum is spelled (enum_names.hpp).
template <>
struct EnumNames<Lattice> {
  static constexpr EnumEntry<Lattice> table[] = {{Lattice::hex, "hex"}, {Lattice::square, "square"}};
};
inline const char* to_string(Lattice l) { return enum_name(l); }

}  // namespace driftscan
