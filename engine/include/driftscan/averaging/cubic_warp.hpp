#pragma once
// The averaging's warp kernel: out(p) = f(T^{-1}(p)) with Keys' cubic kernel
// (interpolation.hpp), the same samples as sample_cubic() point by point but
// organised for speed. When T^{-1} keeps the axes (translation, or a scale
// along x and y: the drift of almost every series) the kernel is separable:
// the tap indices and weights are tabulated once per column and once per row,
// each output row is one vertical pass over 4 source rows and one horizontal
// pass — both plain loops over floats that the compiler vectorises, and for a
// translation the interior columns share one set of weights. Rigid and affine
// maps take a non-separable path that steps the source point along each row
// (two additions per sample). No allocation, no virtual call per sample; a
// plan for one frame geometry, thread-safe given each thread its own Scratch.
#include <cstddef>
#include <vector>

#include "driftscan/core/transform.hpp"

namespace driftscan {

class CubicWarp {
 public:
  struct Scratch {
    std::vector<float> vertical;  // one row of the vertical pass
    std::vector<int> col_tap;     // per output column: 4 clamped source columns
    std::vector<float> col_w;     // per output column: 4 weights
    std::vector<char> col_in;     // per output column: the source point lies inside the frame
  };

  // Frames of width x height pixels.
  CubicWarp(int width, int height);

  Scratch scratch() const;

  // Rows [y0, y1) of the warped frame into out ((y1 - y0) * width values),
  // NaN where T^{-1}(p) falls outside the frame (with the same 1e-6 px slack
  // as before, so exact integer shifts stay inside); a NaN among the 4x4 taps
  // gives NaN. `src` holds rows [src_y0, src_y0 + src_rows) of the frame
  // (row-major, `width` values a row): the rows that source_rows() names for
  // the band are enough.
  void warp(const float* src, int src_y0, int src_rows, const Transform& to_reference, int y0, int y1, float* out,
            Scratch& s) const;

  // The source rows [first, last) that rows [y0, y1) of the warped frame
  // read (taps included, clamped to the frame).
  void source_rows(const Transform& to_reference, int y0, int y1, int& first, int& last) const;

 private:
  void warp_separable(const float* src, int src_y0, int src_rows, const Transform& inv, int y0, int y1, float* out,
                      Scratch& s) const;
  void warp_affine(const float* src, int src_y0, int src_rows, const Transform& inv, int y0, int y1, float* out) const;

  int w_, h_;
};

}  // namespace driftscan
