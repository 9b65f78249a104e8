#pragma once
// How frame data maps to screen colours: display range, gamma, colour map.
// Display changes never touch the data; they only rebuild a lookup table.
#include <QColor>
#include <QImage>
#include <QString>
#include <QStringList>
#include <array>

#include "driftscan/core/frame.hpp"

enum class ColourMap { grey, inverted_grey, fire, viridis, diverging };
QStringList colour_map_names();
ColourMap colour_map_from_index(int i);

struct DisplayMapping {
  double low = 0.0;
  double high = 1.0;
  double gamma = 1.0;
  ColourMap map = ColourMap::grey;
};

// ImageJ's "Auto": the range that saturates `saturated` (fraction, 0.0035 =
// 0.35%) of the pixels, half at each end. NaNs are ignored.
DisplayMapping auto_levels(const driftscan::Frame& f, double saturated = 0.0035);
// Full data range (min..max) of the finite pixels.
std::pair<double, double> data_range(const driftscan::Frame& f);

// A 256-entry table including gamma; render() uses it per pixel.
class ColourTable {
 public:
  explicit ColourTable(const DisplayMapping& m);
  QRgb lookup(float v) const;
  QRgb entry(int i) const { return table_[std::size_t(i)]; }
  const DisplayMapping& mapping() const { return m_; }

 private:
  DisplayMapping m_;
  double scale_;
  std::array<QRgb, 256> table_{};
};

// RGB32 image of `f`; NaN pixels are shown dark blue so they are never mistaken for data.
QImage render_frame(const driftscan::Frame& f, const DisplayMapping& m);
