#pragma once
// A widget drawn entirely with QPainter through render(), so the same code
// paints the screen, a PNG and an SVG (QSvgGenerator) — exports are exact.
#include <QWidget>

class QPainter;
class QRectF;

class PlotWidget : public QWidget {
  Q_OBJECT
 public:
  using QWidget::QWidget;
  virtual void render(QPainter& p, const QSize& size) const = 0;
  // Writes the plot at `size` (the widget's size when empty); false on I/O failure.
  bool exportPng(const QString& path, QSize size = {}) const;
  bool exportSvg(const QString& path, QSize size = {}) const;
  QImage toImage(QSize size = {}) const;
  QSize sizeHint() const override { return {800, 500}; }

 protected:
  void paintEvent(QPaintEvent*) override;
};

// Axis helper: "nice" tick positions covering [lo, hi].
std::vector<double> nice_ticks(double lo, double hi, int target = 6);

// The axes every plot panel draws, shared so that all plots look alike.
namespace plot {
// v in [a, b] mapped linearly to [p, q].
double map(double v, double a, double b, double p, double q);
// Grid, frame, ticks with labels, a bold title above and axis labels.
void frame_axes(QPainter& p, const QRectF& r, double x0, double x1, double y0, double y1, const QString& title,
                const QString& xlabel, const QString& ylabel);
// Widens [lo, hi] by 5% (and an empty range to a unit one).
void pad(double& lo, double& hi);
}  // namespace plot
