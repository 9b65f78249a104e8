#include "array_series.hpp"

#include <cstdint>
#include <cstring>
#include <utility>

#include "driftscan/core/error.hpp"

namespace py = pybind11;

namespace driftscan::python {
namespace {

template <class T>
void convert_plane(const char* base, py::ssize_t sy, py::ssize_t sx, int w, int h, float* out) {
  for (int y = 0; y < h; ++y) {
    const char* row = base + sy * y;
    float* o = out + static_cast<std::size_t>(y) * static_cast<std::size_t>(w);
    if (sx == static_cast<py::ssize_t>(sizeof(T))) {
      const T* r = reinterpret_cast<const T*>(row);  // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
      for (int x = 0; x < w; ++x) o[x] = static_cast<float>(r[x]);
    } else {
      for (int x = 0; x < w; ++x) {
        T v;
        std::memcpy(&v, row + sx * x, sizeof(T));  // any alignment, any stride
        o[x] = static_cast<float>(v);
      }
    }
  }
}

}  // namespace

ArraySeries::ArraySeries(py::array array, double pixel_size, std::string unit, std::string name)
    : array_(std::move(array)), pixel_size_(pixel_size), unit_(std::move(unit)), name_(std::move(name)) {
  if (array_.ndim() != 3)
    throw bad_input(name_ + ": an image series is an array (frames, height, width); this one has " +
                    std::to_string(array_.ndim()) + " dimension(s)");
  const py::dtype dt = array_.dtype();
  kind_ = dt.kind();
  item_size_ = static_cast<int>(dt.itemsize());
  const bool known =
      (kind_ == 'f' && (item_size_ == 4 || item_size_ == 8)) ||
      ((kind_ == 'i' || kind_ == 'u') && (item_size_ == 1 || item_size_ == 2 || item_size_ == 4 || item_size_ == 8)) ||
      (kind_ == 'b' && item_size_ == 1);
  if (!known)
    throw bad_input(name_ + ": pixels of dtype " + py::cast<std::string>(py::str(static_cast<const py::handle&>(dt))) +
                    " are not supported (integers, booleans, float32 or float64)");
  frames_ = static_cast<std::size_t>(array_.shape(0));
  height_ = static_cast<int>(array_.shape(1));
  width_ = static_cast<int>(array_.shape(2));
  if (height_ < 1 || width_ < 1)
    throw bad_input(name_ + ": frames of " + std::to_string(width_) + "x" + std::to_string(height_) +
                    " pixels hold no image");
  stride_k_ = array_.strides(0);
  stride_y_ = array_.strides(1);
  stride_x_ = array_.strides(2);
  data_ = static_cast<const char*>(array_.data());
}

ArraySeries::~ArraySeries() {
  // The engine may drop the series on a thread of its own: the reference
  // count is Python's, so it is released under the GIL.
  try {
    const py::gil_scoped_acquire gil;
    array_ = py::array();
  } catch (...) {  // nothing to do about a reference not dropped at exit
  }
}

Frame ArraySeries::frame(std::size_t k) const {
  if (k >= frames_)
    throw bad_input(name_ + ": frame " + std::to_string(k) + " is beyond the last (" + std::to_string(frames_) +
                    " frames)");
  Frame f(width_, height_);
  const char* base = data_ + stride_k_ * static_cast<py::ssize_t>(k);
  float* out = f.pixels.data();
  const py::ssize_t sy = stride_y_, sx = stride_x_;
  const int w = width_, h = height_;
  if (kind_ == 'f') {
    if (item_size_ == 4) convert_plane<float>(base, sy, sx, w, h, out);
    else convert_plane<double>(base, sy, sx, w, h, out);
  } else if (kind_ == 'i') {
    if (item_size_ == 1) convert_plane<std::int8_t>(base, sy, sx, w, h, out);
    else if (item_size_ == 2) convert_plane<std::int16_t>(base, sy, sx, w, h, out);
    else if (item_size_ == 4) convert_plane<std::int32_t>(base, sy, sx, w, h, out);
    else convert_plane<std::int64_t>(base, sy, sx, w, h, out);
  } else {  // unsigned and boolean
    if (item_size_ == 1) convert_plane<std::uint8_t>(base, sy, sx, w, h, out);
    else if (item_size_ == 2) convert_plane<std::uint16_t>(base, sy, sx, w, h, out);
    else if (item_size_ == 4) convert_plane<std::uint32_t>(base, sy, sx, w, h, out);
    else convert_plane<std::uint64_t>(base, sy, sx, w, h, out);
  }
  return f;
}

std::string ArraySeries::describe() const {
  return name_ + ": " + std::to_string(frames_) + " x " + std::to_string(width_) + "x" + std::to_string(height_) + " " +
         std::string(kind_ == 'f' ? "float" : (kind_ == 'i' ? "int" : (kind_ == 'b' ? "bool" : "uint"))) +
         std::to_string(8 * item_size_);
}

}  // namespace driftscan::python
