#pragma once
// Synthetic EM series with ground truth: atom columns as Gaussians of varying
// intensity on a hexagonal or square lattice, vacancies, a grain boundary that
// breaks periodicity; drift = random walk + linear (subpixel), optional
// per-frame rotation and scan-line jitter; Poisson noise at a dose plus
// optional Gaussian read noise. Frames are drawn by evaluating the analytic
// model at shifted coordinates (no interpolation error) on demand, so a
// SyntheticSeries is itself a FrameSource of any length at no memory cost.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "driftscan/cancel_token.hpp"
#include "driftscan/frame_source.hpp"
#include "driftscan/progress.hpp"
#include "driftscan/transform.hpp"

namespace driftscan {

enum class Lattice { hex, square };

struct SynthOptions {
  std::size_t frames = 200;
  int width = 512;
  int height = 512;
  double period = 9.0;            // lattice period in pixels
  Lattice lattice = Lattice::hex;
  double drift_step = 0.3;        // random-walk step, pixels (std dev per axis per frame)
  double drift_linear_x = 0.2;    // linear drift per frame, pixels
  double drift_linear_y = 0.1;
  double rotation_step_deg = 0.0; // rotation drift per frame, degrees
  double jitter = 0.0;            // scan-line jitter, pixels (std dev per row)
  double dose = 6.0;              // mean counts at an atom column (Poisson); <= 0: no noise
  double read_noise = 0.0;        // Gaussian read noise, counts
  double vacancy_fraction = 0.02;
  bool grain_boundary = true;
  std::uint32_t seed = 1;
  // Finer controls (not command-line flags):
  double atom_sigma = 0.0;        // Gaussian std dev of a column, pixels (0: 0.12 * period)
  double intensity_spread = 0.15; // column intensities uniform in 1 +- spread
  double background = 0.05;       // constant background, as a fraction of a column peak
  double grain_angle_deg = 17.0;  // misorientation of the grain beyond the boundary
  // Custom columns in frame-0 pixels (intensity 1); when non-empty they
  // replace the lattice (no vacancies, no boundary): single-atom tests.
  std::vector<Point> atoms;
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
  // the registration and averaging are judged against.
  Frame ideal_frame(std::size_t k) const;
  // T_{0,k}: f_k(p) ~ f_0(T_{0,k}(p)). A rigid motion (rotation by angle(k)
  // about the frame centre c, then the shift): truth(k)(c) = c + drift(k).
  Transform truth(std::size_t k) const;
  Point drift(std::size_t k) const;           // (dx, dy) of the truth CSV: displacement at the frame centre
  double angle_deg(std::size_t k) const;      // rotation of frame k relative to frame 0
  Point centre() const;                       // ((width-1)/2, (height-1)/2)
  double counts_scale() const;                // counts of a unit-intensity column peak (dose, or 1)
  const SynthOptions& options() const;

 private:
  SynthOptions options_;
  std::vector<Transform> truth_;
  std::vector<Point> drift_;
  std::vector<double> angle_deg_;
  // lattice sites, intensities etc. live in the .cpp's private state
  struct Model;
  std::shared_ptr<const Model> model_;
};

// Writes OUT (a float32 TIFF stack), OUT_truth.csv (frame,dx,dy and
// angle_deg when rotating; OUT's extension dropped: series.tif ->
// series_truth.csv) and OUT_reference.tif (the ideal frame 0: no noise, no
// jitter). Every file appears under its name only when complete; the series
// is committed last. Returns the paths written.
struct SynthOutputs {
  std::string series, truth, reference;
};
SynthOutputs write_synthetic_series(const SynthOptions& options, const std::string& out_path,
                                    Progress* progress = nullptr, const CancelToken* cancel = nullptr);

}  // namespace driftscan
