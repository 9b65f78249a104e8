#include "plot_widget.hpp"

#include <QMouseEvent>
#include <QPainter>
#include <QSvgGenerator>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>
#include <vector>

PlotWidget::PlotWidget(QWidget* parent) : QWidget(parent) { setMouseTracking(true); }

QRectF PlotWidget::zoomPanel(const QSize&) const { return {}; }
QString PlotWidget::readoutAt(QPointF) const { return {}; }
void PlotWidget::clickedAt(QPointF) {}

void PlotWidget::setXView(double start, double end) {
  // At least 1/1000 of the axis stays shown; the view never leaves it.
  const double width = std::clamp(end - start, 1e-3, 1.0);
  f0_ = std::clamp(start, 0.0, 1.0 - width);
  f1_ = f0_ + width;
  if (f1_ > 1.0 - 1e-12) f1_ = 1.0;
  update();
}

std::pair<double, double> PlotWidget::shown(double lo, double hi) const {
  return {lo + f0_ * (hi - lo), lo + f1_ * (hi - lo)};
}

void PlotWidget::paintEvent(QPaintEvent*) {
  QPainter p(this);
  render(p, size());
  if (readout_.isEmpty()) return;
  // Beside the cursor, kept inside the widget.
  const QFontMetrics fm = p.fontMetrics();
  QRectF box(0, 0, fm.horizontalAdvance(readout_) + 12, fm.height() + 6);
  box.moveTopLeft(readoutAt_ + QPointF(14, 14));
  if (box.right() > width()) box.moveRight(readoutAt_.x() - 8);
  if (box.bottom() > height()) box.moveBottom(readoutAt_.y() - 8);
  p.setRenderHint(QPainter::Antialiasing, false);
  p.setPen(QColor(120, 120, 120));
  p.setBrush(QColor(255, 255, 225));
  p.drawRect(box);
  p.setPen(Qt::black);
  p.drawText(box, Qt::AlignCenter, readout_);
}

void PlotWidget::wheelEvent(QWheelEvent* e) {
  const QRectF panel = zoomPanel(size());
  const double steps = e->angleDelta().y() / 120.0;
  if (panel.isEmpty() || steps == 0 || !panel.contains(e->position())) {
    e->ignore();
    return;
  }
  // The axis point under the cursor stays under it.
  const double u = std::clamp((e->position().x() - panel.left()) / panel.width(), 0.0, 1.0);
  const double at = f0_ + u * (f1_ - f0_);
  const double width = std::clamp((f1_ - f0_) * std::pow(0.8, steps), 1e-3, 1.0);
  setXView(at - u * width, at - u * width + width);
  readout_ = readoutAt(e->position());
  readoutAt_ = e->position();
  e->accept();
}

void PlotWidget::mousePressEvent(QMouseEvent* e) {
  if (e->button() != Qt::LeftButton) return;
  pressed_ = true;
  dragging_ = false;
  pressAt_ = e->position();
  pressF0_ = f0_;
}

void PlotWidget::mouseMoveEvent(QMouseEvent* e) {
  const QRectF panel = zoomPanel(size());
  if (pressed_ && !panel.isEmpty() && panel.contains(pressAt_)) {
    const double dx = e->position().x() - pressAt_.x();
    if (dragging_ || std::abs(dx) > 4) {  // a few pixels of slack: a shaky click is still a click
      if (!dragging_) cursorBeforeDrag_ = cursor();
      dragging_ = true;
      const double width = f1_ - f0_;
      setXView(pressF0_ - dx / panel.width() * width, pressF0_ - dx / panel.width() * width + width);
      setCursor(Qt::ClosedHandCursor);
    }
  }
  readout_ = readoutAt(e->position());
  readoutAt_ = e->position();
  update();
}

void PlotWidget::mouseReleaseEvent(QMouseEvent* e) {
  if (e->button() != Qt::LeftButton || !pressed_) return;
  pressed_ = false;
  if (dragging_) setCursor(cursorBeforeDrag_);
  else clickedAt(e->position());
  dragging_ = false;
  readout_ = readoutAt(e->position());
  update();
}

void PlotWidget::mouseDoubleClickEvent(QMouseEvent* e) {
  if (e->button() == Qt::LeftButton && zoomPanel(size()).contains(e->position())) resetView();
}

void PlotWidget::leaveEvent(QEvent*) {
  readout_.clear();
  update();
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
