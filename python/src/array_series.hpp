#pragma once
// Frames of a numpy array (frames, height, width) of any real dtype and any
// strides, read in place: frame k is converted to float32 when the engine
// asks for it, so a memmap of 100,000 frames is never loaded whole and a
// C-contiguous array is never copied. The array is held (a reference) for the
// series' life; its memory is read without the GIL, which the engine's
// threads never take.
#include <cstddef>
#include <string>

#include <pybind11/numpy.h>

#include "driftscan/core/frame_source.hpp"

namespace driftscan::python {

class ArraySeries : public FrameSource {
 public:
  // Throws bad_input for an array that is not 3-D or not of a real dtype.
  ArraySeries(pybind11::array array, double pixel_size, std::string unit, std::string name);
  ~ArraySeries() override;  // drops the array's reference (takes the GIL)
  ArraySeries(const ArraySeries&) = delete;
  ArraySeries& operator=(const ArraySeries&) = delete;

  std::size_t frame_count() const override { return frames_; }
  int width() const override { return width_; }
  int height() const override { return height_; }
  Frame frame(std::size_t k) const override;
  double pixel_size() const override { return pixel_size_; }
  std::string pixel_unit() const override { return unit_; }
  std::string describe() const override;

 private:
  pybind11::array array_;
  const char* data_ = nullptr;
  std::size_t frames_ = 0;
  int height_ = 0, width_ = 0;
  pybind11::ssize_t stride_k_ = 0, stride_y_ = 0, stride_x_ = 0;
  char kind_ = 'f';  // numpy's dtype.kind: f, i, u, b
  int item_size_ = 4;
  double pixel_size_ = 0.0;
  std::string unit_, name_;
};

}  // namespace driftscan::python
