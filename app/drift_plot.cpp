#include "drift_plot.hpp"

#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <algorithm>
#include <cmath>

namespace {
const QColor kDx(31, 119, 180), kDy(214, 39, 40), kTraj(44, 160, 44), kQual(148, 103, 189);
using plot::frame_axes;
using plot::map;
using plot::pad;
}  // namespace

DriftPlot::DriftPlot(QWidget* parent) : PlotWidget(parent) {
  setMinimumSize(400, 300);
  setCursor(Qt::PointingHandCursor);
}

void DriftPlot::setDrift(std::vector<DriftRow> rows) {
  rows_ = std::move(rows);
  hasQuality_ = std::any_of(rows_.begin(), rows_.end(), [](const DriftRow& r) { return r.quality >= -1; });
  xmin_ = 0;
  xmax_ = 1;
  dmin_ = tx0_ = ty0_ = INFINITY;
  dmax_ = tx1_ = ty1_ = -INFINITY;
  for (const auto& r : rows_) {
    xmax_ = std::max<double>(xmax_, r.frame);
    dmin_ = std::min({dmin_, r.dx, r.dy});
    dmax_ = std::max({dmax_, r.dx, r.dy});
    tx0_ = std::min(tx0_, r.dx);
    tx1_ = std::max(tx1_, r.dx);
    ty0_ = std::min(ty0_, r.dy);
    ty1_ = std::max(ty1_, r.dy);
  }
  if (rows_.empty()) dmin_ = tx0_ = ty0_ = -1, dmax_ = tx1_ = ty1_ = 1;
  pad(dmin_, dmax_);
  pad(tx0_, tx1_);
  pad(ty0_, ty1_);
  // Equal scales on the trajectory so its shape is true.
  const double span = std::max(tx1_ - tx0_, ty1_ - ty0_);
  const double cx = (tx0_ + tx1_) / 2, cy = (ty0_ + ty1_) / 2;
  tx0_ = cx - span / 2;
  tx1_ = cx + span / 2;
  ty0_ = cy - span / 2;
  ty1_ = cy + span / 2;
  update();
}

void DriftPlot::setPixelSize(double size, const QString& unit) {
  const bool calibrated = size > 0 && std::isfinite(size) && !unit.isEmpty() && unit != "px" && unit != "pixel";
  pixelSize_ = calibrated ? size : 0;
  unit_ = calibrated ? unit : QString();
  update();
}

QString DriftPlot::calibrationText() const {
  return pixelSize_ > 0 ? QString("1 px = %1 %2").arg(pixelSize_, 0, 'g', 4).arg(unit_) : QString();
}

void DriftPlot::setCurrentFrame(int frame) {
  current_ = frame;
  update();
}

DriftPlot::Layout DriftPlot::layout(const QSize& s) const {
  const double w = s.width(), h = s.height();
  const double left = 70, right = 20, top = 30, bottom = 50, gap = 80;
  const double side = std::max(80.0, std::min(h - top - bottom, (w - left - right - gap) * 0.4));
  const double plotW = std::max(80.0, w - left - right - gap - side);
  Layout L;
  const double qh = hasQuality_ ? std::max(60.0, (h - top - bottom) * 0.28) : 0;
  L.series = QRectF(left, top, plotW, h - top - bottom - (hasQuality_ ? qh + gap * 0.75 : 0));
  L.quality = QRectF(left, L.series.bottom() + gap * 0.75, plotW, qh);
  L.trajectory = QRectF(left + plotW + gap, top, side, side);
  return L;
}

QPointF DriftPlot::pointPosition(int i) const {
  const Layout L = layout(size());
  const auto& r = rows_.at(std::size_t(i));
  return {map(r.frame, xmin_, xmax_, L.series.left(), L.series.right()),
          map(r.dx, dmin_, dmax_, L.series.bottom(), L.series.top())};
}

void DriftPlot::render(QPainter& p, const QSize& size) const {
  p.fillRect(QRect(QPoint(0, 0), size), Qt::white);
  p.setRenderHint(QPainter::Antialiasing);
  if (rows_.empty()) {
    p.setPen(Qt::darkGray);
    p.drawText(QRect(QPoint(0, 0), size), Qt::AlignCenter,
               "No drift yet: run a registration or open a results folder.");
    return;
  }
  const Layout L = layout(size);
  frame_axes(p, L.series, xmin_, xmax_, dmin_, dmax_,
             pixelSize_ > 0 ? QString("Drift against frame 0 (%1)").arg(calibrationText()) : "Drift against frame 0",
             "frame", "shift (px)");
  // +-2 sigma band of a series (frames with a finite sigma; inf leaves a gap).
  auto drawBand = [&](auto value, auto sigma, const QColor& c, const QRectF& r, double y0, double y1) {
    QColor fill = c;
    fill.setAlpha(50);
    p.setPen(Qt::NoPen);
    p.setBrush(fill);
    std::vector<QPointF> upper, lower;
    auto flush = [&] {
      if (upper.size() >= 2) {
        QPolygonF poly;
        for (const QPointF& q : upper) poly << q;
        for (auto it = lower.rbegin(); it != lower.rend(); ++it) poly << *it;
        p.drawPolygon(poly);
      }
      upper.clear();
      lower.clear();
    };
    for (const auto& row : rows_) {
      const double s = sigma(row);
      if (!(s >= 0) || !std::isfinite(s)) {
        flush();
        continue;
      }
      const double x = map(row.frame, xmin_, xmax_, r.left(), r.right());
      upper.emplace_back(x, map(value(row) + 2 * s, y0, y1, r.bottom(), r.top()));
      lower.emplace_back(x, map(value(row) - 2 * s, y0, y1, r.bottom(), r.top()));
    }
    flush();
  };
  auto drawSeries = [&](auto value, const QColor& c, const QRectF& r, double y0, double y1) {
    QPainterPath path;
    for (std::size_t i = 0; i < rows_.size(); ++i) {
      const QPointF q(map(rows_[i].frame, xmin_, xmax_, r.left(), r.right()),
                      map(value(rows_[i]), y0, y1, r.bottom(), r.top()));
      if (i == 0) path.moveTo(q);
      else path.lineTo(q);
    }
    p.setPen(QPen(c, 1.5));
    p.setBrush(Qt::NoBrush);
    p.drawPath(path);
    if (rows_.size() <= 400) {
      p.setBrush(c);
      p.setPen(Qt::NoPen);
      for (const auto& row : rows_)
        p.drawEllipse(
            QPointF(map(row.frame, xmin_, xmax_, r.left(), r.right()), map(value(row), y0, y1, r.bottom(), r.top())),
            2.2, 2.2);
    }
  };
  p.save();
  p.setClipRect(L.series.adjusted(-3, -3, 3, 3));
  drawBand([](const DriftRow& r) { return r.dx; }, [](const DriftRow& r) { return r.sigma_dx; }, kDx, L.series, dmin_,
           dmax_);
  drawBand([](const DriftRow& r) { return r.dy; }, [](const DriftRow& r) { return r.sigma_dy; }, kDy, L.series, dmin_,
           dmax_);
  drawSeries([](const DriftRow& r) { return r.dx; }, kDx, L.series, dmin_, dmax_);
  drawSeries([](const DriftRow& r) { return r.dy; }, kDy, L.series, dmin_, dmax_);
  p.restore();
  // Legend.
  p.setPen(kDx);
  p.drawText(QPointF(L.series.left() + 8, L.series.top() + 16), "dx");
  p.setPen(kDy);
  p.drawText(QPointF(L.series.left() + 32, L.series.top() + 16), "dy");

  if (hasQuality_) {
    double q0 = INFINITY, q1 = -INFINITY;
    for (const auto& r : rows_)
      if (r.quality >= -1) {
        q0 = std::min(q0, r.quality);
        q1 = std::max(q1, r.quality);
      }
    pad(q0, q1);
    frame_axes(p, L.quality, xmin_, xmax_, q0, q1, "Quality (NCC with the average)", "frame", "NCC");
    p.save();
    p.setClipRect(L.quality.adjusted(-3, -3, 3, 3));
    drawSeries([](const DriftRow& r) { return r.quality; }, kQual, L.quality, q0, q1);
    p.setPen(QPen(Qt::red, 1));
    for (const auto& r : rows_)
      if (!r.used) {
        const double x = map(r.frame, xmin_, xmax_, L.quality.left(), L.quality.right());
        p.drawLine(QPointF(x, L.quality.top()), QPointF(x, L.quality.bottom()));
      }
    p.restore();
  }

  frame_axes(p, L.trajectory, tx0_, tx1_, ty0_, ty1_, "Trajectory", "dx (px)", "dy (px)");
  QPainterPath traj;
  for (std::size_t i = 0; i < rows_.size(); ++i) {
    const QPointF q(map(rows_[i].dx, tx0_, tx1_, L.trajectory.left(), L.trajectory.right()),
                    map(rows_[i].dy, ty0_, ty1_, L.trajectory.bottom(), L.trajectory.top()));
    if (i == 0) traj.moveTo(q);
    else traj.lineTo(q);
  }
  p.setPen(QPen(kTraj, 1.5));
  p.setBrush(Qt::NoBrush);
  p.drawPath(traj);
  p.setBrush(Qt::black);
  p.drawEllipse(traj.elementAt(0), 3.5, 3.5);  // frame 0

  if (current_ >= 0) {
    auto it = std::find_if(rows_.begin(), rows_.end(), [&](const DriftRow& r) { return r.frame == current_; });
    if (it != rows_.end()) {
      const double x = map(it->frame, xmin_, xmax_, L.series.left(), L.series.right());
      p.setPen(QPen(QColor(255, 140, 0), 1.5, Qt::DashLine));
      p.drawLine(QPointF(x, L.series.top()), QPointF(x, L.series.bottom()));
      p.setBrush(QColor(255, 140, 0));
      p.setPen(Qt::NoPen);
      p.drawEllipse(QPointF(map(it->dx, tx0_, tx1_, L.trajectory.left(), L.trajectory.right()),
                            map(it->dy, ty0_, ty1_, L.trajectory.bottom(), L.trajectory.top())),
                    5, 5);
      p.setPen(Qt::black);
      const QString readout = QString("frame %1: dx %2, dy %3 px%4")
                                  .arg(it->frame)
                                  .arg(it->dx, 0, 'f', 3)
                                  .arg(it->dy, 0, 'f', 3)
                                  .arg(pixelSize_ > 0 ? QString(" (%1, %2 %3)")
                                                            .arg(it->dx * pixelSize_, 0, 'g', 4)
                                                            .arg(it->dy * pixelSize_, 0, 'g', 4)
                                                            .arg(unit_)
                                                      : QString());
      p.drawText(QPointF(L.series.right() - p.fontMetrics().horizontalAdvance(readout) - 8, L.series.top() + 16),
                 readout);
    }
  }
}

void DriftPlot::mousePressEvent(QMouseEvent* e) {
  if (rows_.empty()) return;
  const Layout L = layout(size());
  const QPointF pos = e->position();
  int best = -1;
  double bestD = 1e300;
  for (std::size_t i = 0; i < rows_.size(); ++i) {
    QPointF q;
    if (L.trajectory.contains(pos))
      q = QPointF(map(rows_[i].dx, tx0_, tx1_, L.trajectory.left(), L.trajectory.right()),
                  map(rows_[i].dy, ty0_, ty1_, L.trajectory.bottom(), L.trajectory.top()));
    else  // dx/dy or quality panel: the frame axis decides
      q = QPointF(map(rows_[i].frame, xmin_, xmax_, L.series.left(), L.series.right()), pos.y());
    const double d = std::hypot(q.x() - pos.x(), q.y() - pos.y());
    if (d < bestD) {
      bestD = d;
      best = int(i);
    }
  }
  if (best >= 0 && bestD < 40) {
    current_ = rows_[std::size_t(best)].frame;
    update();
    emit frameSelected(current_);
  }
}
