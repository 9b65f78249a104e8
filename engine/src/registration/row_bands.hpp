#pragma once
// The rows the refinement's information pass measures (refinement.cpp:
// Refinement::information). Every term of the drift's covariance — A, the
// residual's lag sums M, the lag factor — is a sum over the overlap whose
// terms change over the frame only with the specimen, so a systematic sample
// of rows, scaled by the overlap's weight over the sample's, estimates the
// whole sum: bands of `inner` measured rows every `period` rows. Each band is
// computed with `margin` rows either side, so every lag sum and every column
// window at a measured row sees the rows it would see in the whole overlap
// (no truncation bias; the estimate's noise grows as 1 / sqrt(the measured
// share)). period 0: every row measured, as before the bands.

namespace driftscan {

struct RowBands {
  int period = 0, inner = 0, margin = 0, origin = 0;

  bool every_row() const { return period <= 0; }
  // Rows whose terms are summed.
  bool measured(int y) const {
    if (every_row()) return true;
    const int p = phase(y);
    return p >= margin && p < margin + inner;
  }
  // Rows whose values a measured row's windows read: measured rows and their margins.
  bool computed(int y) const { return every_row() || phase(y) < inner + 2 * margin; }

 private:
  int phase(int y) const {
    const int p = (y - origin) % period;
    return p < 0 ? p + period : p;
  }
};

}  // namespace driftscan
