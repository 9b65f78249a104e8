#include "plot_widget.hpp"

#include <QPainter>
#include <QSvgGenerator>
#include <cmath>
#include <vector>

void PlotWidget::paintEvent(QPaintEvent*) {
  QPainter p(this);
  render(p, size());
}

QImage PlotWidget::toImage(QSize size) const {
  if (size.isEmpty()) size = this->size();
  QImage img(size, QImage::Format_RGB32);
  img.fill(Qt::white);
  QPainter p(&img);
  render(p, size);
  return img;
}

bool PlotWidget::exportPng(const QString& path, QSize size) const { return toImage(size).save(path, "PNG"); }

bool PlotWidget::exportSvg(const QString& path, QSize size) const {
  if (size.isEmpty()) size = this->size();
  QSvgGenerator gen;
  gen.setFileName(path);
  gen.setSize(size);
  gen.setViewBox(QRect(QPoint(0, 0), size));
  gen.setTitle("DriftScan plot");
  QPainter p;
  if (!p.begin(&gen)) return false;
  render(p, size);
  return p.end();
}

std::vector<double> nice_ticks(double lo, double hi, int target) {
  std::vector<double> t;
  if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi)) return t;
  const double raw = (hi - lo) / std::max(1, target);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  for (double v = std::ceil(lo / step) * step; v <= hi + 1e-9 * step; v += step)
    t.push_back(std::abs(v) < 1e-12 * step ? 0.0 : v);
  return t;
}
