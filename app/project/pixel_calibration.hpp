#pragma once
// The physical size of a series' pixel as the plots use it: lengths shown in
// the unit (nm from every reader that knows one) and spatial frequencies in
// its reciprocal. A size <= 0, or no unit / "px", is no calibration: the
// plots then stay in pixels. `physical` is the user's px/physical choice.
#include <QString>
#include <cmath>

struct PixelCalibration {
  double size = 0;  // unit per pixel; 0: not known
  QString unit;
  bool physical = true;

  // Lengths in pm, um, mm or m (and Angstrom, as the engine's
  // normalise_length_unit) are restated in nm; other units are kept.
  static PixelCalibration of(double size, QString unit) {
    PixelCalibration c;
    if (!(size > 0) || !std::isfinite(size) || unit.isEmpty() || unit == "px" || unit == "pixel") return c;
    const struct {
      const char* name;
      double nm;
    } lengths[] = {{"pm", 1e-3}, {"A", 0.1}, {"\u00c5", 0.1}, {"um", 1e3}, {"\u00b5m", 1e3}, {"mm", 1e6}, {"m", 1e9}};
    for (const auto& l : lengths)
      if (unit == QString::fromUtf8(l.name)) {
        size *= l.nm;
        unit = "nm";
      }
    c.size = size;
    c.unit = unit;
    return c;
  }
  // A new size and unit; the user's px/physical choice stays.
  void recalibrate(double new_size, const QString& new_unit) {
    const bool chosen = physical;
    *this = of(new_size, new_unit);
    physical = chosen;
  }
  bool known() const { return size > 0; }
  // Whether lengths are shown in the unit (known and chosen).
  bool shown() const { return known() && physical; }
  // Factor from pixels to what is shown, and the shown unit.
  double scale() const { return shown() ? size : 1.0; }
  QString lengthUnit() const { return shown() ? unit : QString("px"); }
  // Spatial frequency unit: nm⁻¹ (cycles per pixel / size), or 1/px.
  QString frequencyUnit() const { return shown() ? unit + QString::fromUtf8("\u207b\u00b9") : QString("1/px"); }
};
