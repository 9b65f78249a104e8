#pragma once
// A frame's non-rigid residual along the fast axis: the displacement of its
// pixels as a smooth function of their place in the line, in acquisition
// order (sample 0 is the first one recorded after the fly-back). It models
// what drift and per-line jitter cannot: a scan coil that has not settled
// when a line starts (fly-back hysteresis), changing from frame to frame.
//
// A cubic B-spline of `knots` coefficients over the line's first `extent`
// samples, zero (with its slope) from there on. Why zero beyond: a field over
// the whole line could absorb any smooth warp of the specimen (frame k sees
// specimen x at x - d_k, so a warp u becomes the fields u(x + d_k)), and
// the average would take whatever warp the noise chose. A field held to the
// line's start leaves that freedom only where the drift never carried a
// specimen point out of every frame's first samples.
#include <string>
#include <vector>

namespace driftscan {

class LineFieldBasis {
 public:
  LineFieldBasis() = default;
  // knots >= 3 coefficients over samples [0, extent), extent <= samples,
  // at least 2 samples a knot; else a bad_input Error naming the setting.
  LineFieldBasis(int samples, int knots, double extent);
  int knots() const { return knots_; }
  int samples() const { return samples_; }
  double extent() const { return spacing_ * knots_; }
  bool empty() const { return knots_ == 0; }
  // Coefficient m's centre (samples; coefficient 0's is before the line).
  double centre(int m) const { return (m - 1) * spacing_; }

  // The coefficients' first index and 4 weights at sample s (fractional);
  // indices outside 0 .. knots() - 1 carry weight 0.
  int weights(double s, double w[4]) const;
  // The field at every sample (size samples()); empty coefficients: empty.
  std::vector<double> tabulate(const std::vector<double>& coefficients) const;

 private:
  int samples_ = 0, knots_ = 0;
  double spacing_ = 1.0;  // samples between knots
};

// line_field.csv, beside lines.csv: frame,knot,sample,dx — each frame's
// coefficients (pixels along the fast axis) in frame and knot order, with
// the knot's centre sample (which gives the basis back). Written atomically.
void write_line_field_csv(const std::string& path, const LineFieldBasis& basis,
                          const std::vector<std::vector<double>>& fields);
struct LineFieldTable {
  LineFieldBasis basis;
  std::vector<std::vector<double>> fields;  // [frame][knot]
};
// Reads it for `frames` frames of `samples` samples a line; throws a
// bad_input Error naming the file and row for a malformed row, frames or
// knots out of order or missing, or knots that do not fit the lines.
// frames 0: any number; samples 0: lines just past the field's extent
// (a viewer that knows neither).
LineFieldTable read_line_field_csv(const std::string& path, std::size_t frames, int samples);

}  // namespace driftscan
