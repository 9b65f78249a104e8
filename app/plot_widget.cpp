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

namespace plot {

double map(double v, double a, double b, double p, double q) { return p + (v - a) / (b - a) * (q - p); }

void frame_axes(QPainter& p, const QRectF& r, double x0, double x1, double y0, double y1, const QString& title,
                const QString& xlabel, const QString& ylabel) {
  p.setPen(QPen(QColor(220, 220, 220), 1));
  for (double t : nice_ticks(x0, x1)) {
    const double x = map(t, x0, x1, r.left(), r.right());
    p.drawLine(QPointF(x, r.top()), QPointF(x, r.bottom()));
  }
  for (double t : nice_ticks(y0, y1, 5)) {
    const double y = map(t, y0, y1, r.bottom(), r.top());
    p.drawLine(QPointF(r.left(), y), QPointF(r.right(), y));
  }
  p.setPen(QPen(Qt::black, 1));
  p.setBrush(Qt::NoBrush);
  p.drawRect(r);
  const QFontMetrics fm = p.fontMetrics();
  for (double t : nice_ticks(x0, x1)) {
    const double x = map(t, x0, x1, r.left(), r.right());
    p.drawLine(QPointF(x, r.bottom()), QPointF(x, r.bottom() + 4));
    const QString s = QString::number(t, 'g', 5);
    p.drawText(QPointF(x - fm.horizontalAdvance(s) / 2.0, r.bottom() + 6 + fm.ascent()), s);
  }
  for (double t : nice_ticks(y0, y1, 5)) {
    const double y = map(t, y0, y1, r.bottom(), r.top());
    p.drawLine(QPointF(r.left() - 4, y), QPointF(r.left(), y));
    const QString s = QString::number(t, 'g', 5);
    p.drawText(QPointF(r.left() - 6 - fm.horizontalAdvance(s), y + fm.ascent() / 2.0 - 1), s);
  }
  QFont bold = p.font();
  bold.setBold(true);
  p.save();
  p.setFont(bold);
  p.drawText(QRectF(r.left(), r.top() - fm.height() - 4, r.width(), fm.height()), Qt::AlignCenter, title);
  p.restore();
  p.drawText(QRectF(r.left(), r.bottom() + 6 + fm.height(), r.width(), fm.height()), Qt::AlignCenter, xlabel);
  p.save();
  p.translate(r.left() - 48, r.center().y());
  p.rotate(-90);
  p.drawText(QRectF(-r.height() / 2, -fm.height(), r.height(), fm.height()), Qt::AlignCenter, ylabel);
  p.restore();
}

void pad(double& lo, double& hi) {
  if (!(hi > lo)) {
    lo -= 0.5;
    hi += 0.5;
  }
  const double m = 0.05 * (hi - lo);
  lo -= m;
  hi += m;
}

}  // namespace plot
