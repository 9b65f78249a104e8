#pragma once
// Apodisation windows shared by the spectra and the registration: tapering a
// frame (or a stack along time) to zero-ish at its edges so the FFT's
// periodic wrap-around does not show as a bright cross.
#include <cstddef>
#include <vector>

namespace driftscan {

// Hann on sample indices: w[i] = 0.5 - 0.5 cos(2 pi i / (n - 1)), zero at
// both ends (the 2-D and 3-D spectra's window). n < 2: all ones.
std::vector<double> hann_window(std::size_t n);

// Tukey on sample centres u = (i + 0.5) / n: cosine ramps over the outer
// alpha/2 of each end, flat in between, never exactly zero. alpha is clamped
// to (0, 1]; alpha = 1 is a Hann on sample centres.
std::vector<double> tukey_window(std::size_t n, double alpha);

}  // namespace driftscan
