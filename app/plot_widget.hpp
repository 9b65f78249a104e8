#pragma once
// A widget drawn entirely with QPainter through render(), so the same code
// paints the screen, a PNG and an SVG (QSvgGenerator) — exports are exact.
#include <QWidget>

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
