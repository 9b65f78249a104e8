#include "views/display_mapping.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

QStringList colour_map_names() { return {"grey", "inverted grey", "fire", "viridis", "diverging"}; }

ColourMap colour_map_from_index(int i) {
  switch (i) {
    case 1: return ColourMap::inverted_grey;
    case 2: return ColourMap::fire;
    case 3: return ColourMap::viridis;
    case 4: return ColourMap::diverging;
    default: return ColourMap::grey;
  }
}

std::pair<double, double> data_range(const driftscan::Frame& f) {
  double lo = INFINITY, hi = -INFINITY;
  for (float v : f.pixels)
    if (std::isfinite(v)) {
      lo = std::min<double>(lo, v);
      hi = std::max<double>(hi, v);
    }
  if (!std::isfinite(lo)) return {0.0, 1.0};
  if (hi <= lo) hi = lo + 1.0;
  return {lo, hi};
}

DisplayMapping auto_levels(const driftscan::Frame& f, double saturated) {
  // Histogram based, like ImageJ: 4096 bins over the data range.
  auto [lo, hi] = data_range(f);
  const int bins = 4096;
  std::vector<std::size_t> hist(bins, 0);
  std::size_t n = 0;
  const double scale = bins / (hi - lo);
  for (float v : f.pixels) {
    if (!std::isfinite(v)) continue;
    int b = std::min(bins - 1, std::max(0, int((v - lo) * scale)));
    ++hist[std::size_t(b)];
    ++n;
  }
  DisplayMapping m;
  m.low = lo;
  m.high = hi;
  if (n == 0) return m;
  const std::size_t limit = std::size_t(n * saturated / 2.0);
  std::size_t acc = 0;
  int b0 = 0;
  for (; b0 < bins - 1; ++b0) {
    acc += hist[std::size_t(b0)];
    if (acc > limit) break;
  }
  acc = 0;
  int b1 = bins - 1;
  for (; b1 > 0; --b1) {
    acc += hist[std::size_t(b1)];
    if (acc > limit) break;
  }
  if (b1 > b0) {
    m.low = lo + b0 / scale;
    m.high = lo + (b1 + 1) / scale;
  }
  return m;
}

namespace {
QRgb map_colour(ColourMap map, double t) {
  t = std::clamp(t, 0.0, 1.0);
  auto lerp = [](const std::vector<std::array<double, 3>>& stops, double s) {
    const double x = s * (stops.size() - 1);
    const std::size_t i = std::min(stops.size() - 2, std::size_t(x));
    const double u = x - i;
    std::array<int, 3> c{};
    for (int k = 0; k < 3; ++k) c[k] = int(std::lround(255.0 * ((1 - u) * stops[i][k] + u * stops[i + 1][k])));
    return qRgb(c[0], c[1], c[2]);
  };
  switch (map) {
    case ColourMap::grey: {
      int g = int(std::lround(t * 255));
      return qRgb(g, g, g);
    }
    case ColourMap::inverted_grey: {
      int g = int(std::lround((1 - t) * 255));
      return qRgb(g, g, g);
    }
    case ColourMap::fire:
      return lerp({{0, 0, 0}, {0.5, 0, 0.6}, {0.9, 0.1, 0.1}, {1, 0.6, 0}, {1, 1, 0.3}, {1, 1, 1}}, t);
    case ColourMap::viridis:
      return lerp({{0.267, 0.005, 0.329},
                   {0.229, 0.322, 0.546},
                   {0.128, 0.567, 0.551},
                   {0.369, 0.789, 0.383},
                   {0.993, 0.906, 0.144}},
                  t);
    case ColourMap::diverging: return lerp({{0.23, 0.30, 0.75}, {0.87, 0.87, 0.87}, {0.71, 0.02, 0.15}}, t);
  }
  return 0;
}
}  // namespace

ColourTable::ColourTable(const DisplayMapping& m) : m_(m) {
  const double span = m.high > m.low ? m.high - m.low : 1.0;
  scale_ = 255.0 / span;
  const double g = m.gamma > 0 ? m.gamma : 1.0;
  for (int i = 0; i < 256; ++i) table_[std::size_t(i)] = map_colour(m.map, std::pow(i / 255.0, g));
}

QRgb ColourTable::lookup(float v) const {
  if (!std::isfinite(v)) return qRgb(0, 0, 60);
  const double x = (v - m_.low) * scale_;
  const int i = x <= 0 ? 0 : (x >= 255 ? 255 : int(std::lround(x)));
  return table_[std::size_t(i)];
}

QImage render_frame(const driftscan::Frame& f, const DisplayMapping& m) {
  QImage img(f.width, f.height, QImage::Format_RGB32);
  const ColourTable table(m);
  for (int y = 0; y < f.height; ++y) {
    const float* src = f.row(y);
    auto* dst = reinterpret_cast<QRgb*>(img.scanLine(y));
    for (int x = 0; x < f.width; ++x) dst[x] = table.lookup(src[x]);
  }
  return img;
}
