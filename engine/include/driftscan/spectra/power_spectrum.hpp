#pragma once
// The 2-D power spectrum of a frame: what a microscopist looks at to judge a
// lattice image (sharp Bragg spots over a flat noise floor). The frame's
// (window-weighted) mean is removed, an apodisation window suppresses the
// cross-shaped leakage of the frame edges, and the spectrum is centred: the
// zero frequency sits at pixel (width/2, height/2) and pixel (x, y) holds
// frequency ((x - width/2) / width, (y - height/2) / height) cycles per pixel.
// Power is the periodogram |F|^2 / sum(window^2): white noise of variance s^2
// has a flat spectrum of mean s^2, whatever the frame size.
#include <vector>

#include "driftscan/core/fftw_planner.hpp"
#include "driftscan/core/frame.hpp"

namespace driftscan {

enum class SpectrumWindow { none, hann };

struct SpectrumPeak {
  int x = 0, y = 0;       // in the centred spectrum
  double fx = 0, fy = 0;  // signed frequency, cycles per pixel
  double period = 0;      // 1 / |f|, pixels
  double power = 0;
  double background = 0;  // median power beyond the exclusion radius
  double sharpness = 0;   // power / background: the lattice figure of merit
};

// A plan object for one frame size; thread-safe once constructed.
class PowerSpectrum {
 public:
  PowerSpectrum(int width, int height, SpectrumWindow window = SpectrumWindow::hann);
  int width() const { return width_; }
  int height() const { return height_; }

  // Centred power, width * height values, row-major. Non-finite input
  // pixels count as the mean. Throws bad_input if the frame's size differs.
  std::vector<double> power(const Frame& f) const;
  // ln(1 + power) as float, for display.
  Frame log_power(const Frame& f) const;
  // The strongest frequency at least `min_radius` spectrum pixels from the
  // centre, and its ratio to the median power there: higher for a sharper
  // lattice over less noise (an average beats any single frame).
  SpectrumPeak strongest_peak(const Frame& f, double min_radius = 4.0) const;
  SpectrumPeak strongest_peak_of(const std::vector<double>& centred_power, double min_radius = 4.0) const;

 private:
  int width_, height_;
  std::vector<double> window_;
  double window_energy_ = 1.0;
  RealFft2d<double> fft_;
};

// Conveniences for one frame (the plan for a size is cached by fftw_planner).
Frame log_power_spectrum(const Frame& f, SpectrumWindow window = SpectrumWindow::hann);
double lattice_sharpness(const Frame& f, double min_radius = 4.0);

}  // namespace driftscan
