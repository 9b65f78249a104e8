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
};

class SyntheticSeries : public FrameSource {
 public:
  explicit SyntheticSeries(const SynthOptions& options);
  std::size_t frame_count() const override;
  int width() const override;
  int height() const override;
  Frame frame(std::size_t k) const override;  // noisy, deterministic in (seed, k)
  std::string describe() const override;

  Frame clean_frame(std::size_t k) const;     // noise-free
  Transform truth(std::size_t k) const;       // T_{0,k}; translation part is (dx, dy)
  const SynthOptions& options() const;

 private:
  SynthOptions options_;
  std::vector<Transform> truth_;
  // lattice sites, intensities etc. live in the .cpp's private state
  struct Model;
  std::shared_ptr<const Model> model_;
};

// Writes OUT (a float32 TIFF stack), OUT_truth.csv (frame,dx,dy[,angle_deg])
// and OUT_reference.tif (noise-free frame 0). Returns the paths written.
struct SynthOutputs {
  std::string series, truth, reference;
};
SynthOutputs write_synthetic_series(const SynthOptions& options, const std::string& out_path,
                                    Progress* progress = nullptr);

}  // namespace driftscan
