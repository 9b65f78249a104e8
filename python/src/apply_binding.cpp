// A drift applied to another signal recorded with the same frames — a
// spectrum image (frames, y, x, channels), a 4-D STEM scan (frames, y, x,
// ky, kx) seen as (frames, y, x, ky * kx) — handed over chunk by chunk: the
// caller passes frame k's channels [c0, c0 + n) as an (y, x, n) array, each
// channel plane is warped into frame 0's grid with the engine's warp
// (CubicWarp, the averaging's kernel) and summed. Memory: the sums (one float64 per
// output value) and the chunk in hand, whatever the number of frames.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "driftscan/averaging/cubic_warp.hpp"
#include "driftscan/core/error.hpp"
#include "driftscan/core/omp_threads.hpp"
#include "driftscan/registration/drift_table.hpp"
#include "exceptions.hpp"

namespace py = pybind11;

namespace driftscan::python {
namespace {

class SignalAccumulator {
 public:
  SignalAccumulator(const std::string& drift_csv, int height, int width, std::size_t channels, int threads)
      : h_(height), w_(width), channels_(channels), threads_(std::max(1, threads)) {
    if (height < 1 || width < 1 || channels < 1) throw bad_input("apply: an empty signal");
    drift_ = reading_file([&] {
               return read_drift_table(drift_csv, Point{(width - 1) / 2.0, (height - 1) / 2.0});
             }).to_frame0;
    sum_.assign(plane() * channels_, 0.0);
    coverage_.assign(plane(), 0.0);
  }

  std::size_t frames() const { return drift_.size(); }

  // The rows of frame k that output rows [y0, y1) read (taps included).
  std::pair<int, int> source_rows(std::size_t k, int y0, int y1) const {
    int first = 0, last = h_;
    CubicWarp(w_, h_).source_rows(drift_.at(k), y0, y1, first, last);
    return {first, last};
  }

  // Output rows [y0, y1) of frame k's channels [c0, c0 + chunk.shape[2]),
  // from `chunk`: rows [src_y0, src_y0 + chunk.shape[0]) of the frame
  // (float32, C order, (rows, width, channels)) — at least source_rows().
  void add(std::size_t k, const py::array_t<float, py::array::c_style | py::array::forcecast>& chunk, std::size_t c0,
           int src_y0, int y0, int y1) {
    if (k >= drift_.size())
      throw bad_input("apply: frame " + std::to_string(k) + " is not in the drift table (" +
                      std::to_string(drift_.size()) + " frames)");
    if (chunk.ndim() != 3 || chunk.shape(1) != w_ || c0 + static_cast<std::size_t>(chunk.shape(2)) > channels_ ||
        y0 < 0 || y1 > h_ || y0 >= y1 || src_y0 < 0 || src_y0 + chunk.shape(0) > h_)
      throw bad_input("apply: frame " + std::to_string(k) + ": a chunk of shape (" + std::to_string(chunk.shape(0)) +
                      ", " + std::to_string(chunk.shape(1)) + ", ...) does not fit frames of " + std::to_string(w_) +
                      "x" + std::to_string(h_) + " and " + std::to_string(channels_) + " channels");
    const float* src = chunk.data();
    const auto n = static_cast<std::size_t>(chunk.shape(2));
    const py::gil_scoped_release release;
    const Transform t = drift_[k];
    const OmpThreadCount guard(threads_);
    // The chunk is (pixel, channel); the warp wants planes: transposed once,
    // in tiles, so that neither side is read a cache line per value.
    const std::size_t rows = static_cast<std::size_t>(chunk.shape(0)), band = rows * static_cast<std::size_t>(w_);
    const std::size_t out_band = static_cast<std::size_t>(y1 - y0) * static_cast<std::size_t>(w_);
    const std::size_t out_first = static_cast<std::size_t>(y0) * static_cast<std::size_t>(w_);
    std::vector<float> planes(band * n);
    const auto pixels = static_cast<long>(band);
    constexpr long kTile = 64;
#pragma omp parallel for schedule(static)
    for (long p0 = 0; p0 < pixels; p0 += kTile)
      for (std::size_t c0t = 0; c0t < n; c0t += kTile)
        for (long p = p0; p < std::min(pixels, p0 + kTile); ++p)
          for (std::size_t c = c0t; c < std::min(n, c0t + kTile); ++c)
            planes[c * band + static_cast<std::size_t>(p)] = src[static_cast<std::size_t>(p) * n + c];
    std::vector<char> inside(out_band, 0);
    // One warp plan for the frame: every channel moves the same way, so the
    // taps and weights are worked out once (the averaging's own kernel).
    const CubicWarp warp(w_, h_);
#pragma omp parallel
    {
      CubicWarp::Scratch scratch = warp.scratch();
      std::vector<float> warped(out_band);
#pragma omp for schedule(dynamic)
      for (long c = 0; c < static_cast<long>(n); ++c) {
        warp.warp(planes.data() + static_cast<std::size_t>(c) * band, src_y0, static_cast<int>(rows), t, y0, y1,
                  warped.data(), scratch);
        double* dst = sum_.data() + (c0 + static_cast<std::size_t>(c)) * plane() + out_first;  // (channel, pixel)
        for (std::size_t p = 0; p < out_band; ++p) {
          const float v = warped[p];
          if (std::isnan(v)) continue;  // outside the frame (or a NaN among the taps)
          dst[p] += v;
          if (c == 0) inside[p] = 1;
        }
      }
    }
    if (c0 == 0)  // the frame counts once, with its first chunk of channels
      for (std::size_t p = 0; p < out_band; ++p) coverage_[out_first + p] += inside[p];
  }

  // (height, width, channels): the mean of the frames that covered each
  // pixel (0 where none did), or their sum.
  py::array_t<float> result(bool mean) const {
    py::array_t<float> out(
        {static_cast<py::ssize_t>(h_), static_cast<py::ssize_t>(w_), static_cast<py::ssize_t>(channels_)});
    float* o = out.mutable_data();
    for (std::size_t p = 0; p < plane(); ++p) {
      const double scale = !mean ? 1.0 : (coverage_[p] > 0 ? 1.0 / coverage_[p] : 0.0);
      for (std::size_t c = 0; c < channels_; ++c)
        o[p * channels_ + c] = static_cast<float>(sum_[c * plane() + p] * scale);
    }
    return out;
  }
  py::array_t<float> coverage() const {
    py::array_t<float> out({static_cast<py::ssize_t>(h_), static_cast<py::ssize_t>(w_)});
    std::copy(coverage_.begin(), coverage_.end(), out.mutable_data());
    return out;
  }

 private:
  std::size_t plane() const { return static_cast<std::size_t>(h_) * static_cast<std::size_t>(w_); }
  int h_, w_;
  std::size_t channels_;
  int threads_;
  std::vector<Transform> drift_;
  std::vector<double> sum_;       // (channel, y, x): a channel's plane is added in one pass
  std::vector<double> coverage_;  // frames per pixel
};

}  // namespace

void bind_apply(py::module_& m) {
  py::class_<SignalAccumulator>(m, "SignalAccumulator",
                                "Sums of another signal's frames warped with a drift table, chunk by chunk.")
      .def(py::init<const std::string&, int, int, std::size_t, int>(), py::arg("drift_csv"), py::arg("height"),
           py::arg("width"), py::arg("channels"), py::arg("threads") = 1)
      .def_property_readonly("frames", &SignalAccumulator::frames)
      .def("source_rows", &SignalAccumulator::source_rows, py::arg("frame"), py::arg("y0"), py::arg("y1"))
      .def("add", &SignalAccumulator::add, py::arg("frame"), py::arg("chunk"), py::arg("first_channel"),
           py::arg("source_first_row"), py::arg("y0"), py::arg("y1"))
      .def("result", &SignalAccumulator::result, py::arg("mean") = true)
      .def("coverage", &SignalAccumulator::coverage);
}

}  // namespace driftscan::python
