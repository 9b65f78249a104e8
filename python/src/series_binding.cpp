// A file's frames: the engine's readers (every format it reads), frame k
// decoded on demand, as numpy float32 arrays.
#include <memory>
#include <string>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "array_series.hpp"
#include "bindings.hpp"
#include "driftscan/core/error.hpp"
#include "driftscan/formats/series_opener.hpp"
#include "driftscan/formats/tiff/tiff_writer.hpp"
#include "exceptions.hpp"

namespace py = pybind11;

namespace driftscan::python {
namespace {

class FileSeries {
 public:
  FileSeries(const std::string& path, const std::string& signal) : path_(path) {
    reading_file([&] {
      signals_ = list_signals(path);
      chosen_ = find_signal(path, signals_, signal);
      source_ = open_series(path, signal);
      return 0;
    });
  }
  const std::string& path() const { return path_; }
  const SignalInfo& info() const { return signals_.at(chosen_); }
  std::vector<std::string> signal_names() const {
    std::vector<std::string> names;
    for (const SignalInfo& s : signals_) names.push_back(s.name);
    return names;
  }
  std::size_t size() const { return source_->frame_count(); }
  int width() const { return source_->width(); }
  int height() const { return source_->height(); }
  double pixel_size() const { return source_->pixel_size(); }
  std::string unit() const { return source_->pixel_unit(); }

  // Frames [first, last) as one (last - first, height, width) float32 array.
  py::array_t<float> frames(std::size_t first, std::size_t last) const {
    if (first > last || last > size())
      throw py::index_error(path_ + ": frames " + std::to_string(first) + ".." + std::to_string(last) +
                            " are not in the series (" + std::to_string(size()) + " frames)");
    const std::size_t plane = static_cast<std::size_t>(width()) * static_cast<std::size_t>(height());
    py::array_t<float> out({static_cast<py::ssize_t>(last - first), static_cast<py::ssize_t>(height()),
                            static_cast<py::ssize_t>(width())});
    float* dst = out.mutable_data();
    {
      const py::gil_scoped_release release;
      reading_file([&] {
        for (std::size_t k = first; k < last; ++k) {
          const Frame f = source_->frame(k);
          std::copy(f.pixels.begin(), f.pixels.end(), dst + (k - first) * plane);
        }
        return 0;
      });
    }
    return out;
  }

 private:
  std::string path_;
  std::vector<SignalInfo> signals_;
  std::size_t chosen_ = 0;
  std::unique_ptr<FrameSource> source_;
};

}  // namespace

void bind_series(py::module_& m) {
  py::class_<FileSeries>(m, "FileSeries", "The frames of one signal of a file, decoded on demand.")
      .def(py::init<const std::string&, const std::string&>(), py::arg("path"), py::arg("signal") = "")
      .def_property_readonly("path", &FileSeries::path)
      .def_property_readonly("signal", [](const FileSeries& s) { return s.info().name; })
      .def_property_readonly("signals", &FileSeries::signal_names)
      .def_property_readonly("format", [](const FileSeries& s) { return s.info().format; })
      .def_property_readonly("pixel_type", [](const FileSeries& s) { return s.info().pixel_type; })
      .def_property_readonly("width", &FileSeries::width)
      .def_property_readonly("height", &FileSeries::height)
      .def_property_readonly("pixel_size", &FileSeries::pixel_size)
      .def_property_readonly("unit", &FileSeries::unit)
      .def("__len__", &FileSeries::size)
      .def("frames", &FileSeries::frames, py::arg("first"), py::arg("last"));
  // A stack written a frame at a time (a lazy signal computed frame by frame).
  py::class_<TiffStackWriter>(m, "SeriesWriter", "A float32 TIFF stack written a frame at a time.")
      .def(py::init([](const std::string& path, int width, int height, std::size_t frames, double pixel_size,
                       const std::string& unit) {
             TiffWriteOptions options;
             options.pixel_size = pixel_size;
             options.unit = unit;
             return std::make_unique<TiffStackWriter>(path, width, height, frames, options);
           }),
           py::arg("path"), py::arg("width"), py::arg("height"), py::arg("frames"), py::arg("pixel_size") = 0.0,
           py::arg("unit") = "")
      .def(
          "append",
          [](TiffStackWriter& w, const py::array_t<float, py::array::c_style | py::array::forcecast>& frame) {
            if (frame.ndim() != 2) throw bad_input("SeriesWriter.append: a frame is a 2-D array");
            Frame f(static_cast<int>(frame.shape(1)), static_cast<int>(frame.shape(0)));
            std::copy(frame.data(), frame.data() + f.pixels.size(), f.pixels.begin());
            const py::gil_scoped_release release;
            w.append(f);
          },
          py::arg("frame"))
      .def("commit", [](TiffStackWriter& w) {
        const py::gil_scoped_release release;
        w.commit();
      });
  m.def(
      "write_series",
      [](const std::string& path, const py::array& array, double pixel_size, const std::string& unit) {
        const ArraySeries frames(array, pixel_size, unit, path);
        TiffWriteOptions options;
        options.pixel_size = pixel_size;
        options.unit = unit;
        const py::gil_scoped_release release;
        TiffStackWriter writer(path, frames.width(), frames.height(), frames.frame_count(), options);
        for (std::size_t k = 0; k < frames.frame_count(); ++k) writer.append(frames.frame(k));
        writer.commit();
      },
      py::arg("path"), py::arg("array"), py::arg("pixel_size") = 0.0, py::arg("unit") = "",
      "Writes an array (frames, height, width) as a float32 TIFF stack (temporary name, then renamed).");
}

}  // namespace driftscan::python
