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

void DriftPlot::setDrift(std::vector<DriftRow> rows, bool keepView) {
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
  if (!keepView) resetView();  // a new run: the whole series
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
  cal_.recalibrate(size, unit);
  update();
}

void DriftPlot::setPhysicalUnits(bool on) {
  cal_.physical = on;
  update();
}

QString DriftPlot::calibrationText() const {
  return cal_.known() ? QString("1 px = %1 %2").arg(cal_.size, 0, 'g', 4).arg(cal_.unit) : QString();
}

QString DriftPlot::shiftAxisLabel() const { return QString("shift (%1)").arg(cal_.lengthUnit()); }

namespace {
// A shift in pixels as shown: 3 decimals in px, 4 significant digits in a unit.
QString shift_text(double px, const PixelCalibration& c) {
  return c.shown() ? QString::number(px * c.scale(), 'g', 4) : QString::number(px, 'f', 3);
}
}  // namespace

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
  const auto vx = frameRange();
  const auto& r = rows_.at(std::size_t(i));
  return {map(r.frame, vx.first, vx.second, L.series.left(), L.series.right()),
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
  const auto vx = frameRange();
  // Drawn in pixels; only the labelled ranges are scaled (the scale is positive).
  const double k = cal_.scale();
  frame_axes(p, L.series, vx.first, vx.second, dmin_ * k, dmax_ * k,
             cal_.known() ? QString("Drift against frame 0 (%1)").arg(calibrationText()) : "Drift against frame 0",
             "frame", shiftAxisLabel());
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
      const double x = map(row.frame, vx.first, vx.second, r.left(), r.right());
      upper.emplace_back(x, map(value(row) + 2 * s, y0, y1, r.bottom(), r.top()));
      lower.emplace_back(x, map(value(row) - 2 * s, y0, y1, r.bottom(), r.top()));
    }
    flush();
  };
  auto drawSeries = [&](auto value, const QColor& c, const QRectF& r, double y0, double y1) {
    QPainterPath path;
    for (std::size_t i = 0; i < rows_.size(); ++i) {
      const QPointF q(map(rows_[i].frame, vx.first, vx.second, r.left(), r.right()),
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
        p.drawEllipse(QPointF(map(row.frame, vx.first, vx.second, r.left(), r.right()),
                              map(value(row), y0, y1, r.bottom(), r.top())),
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
    frame_axes(p, L.quality, vx.first, vx.second, q0, q1, "Quality (NCC with the average)", "frame", "NCC");
    p.save();
    p.setClipRect(L.quality.adjusted(-3, -3, 3, 3));
    drawSeries([](const DriftRow& r) { return r.quality; }, kQual, L.quality, q0, q1);
    p.setPen(QPen(Qt::red, 1));
    for (const auto& r : rows_)
      if (!r.used) {
        const double x = map(r.frame, vx.first, vx.second, L.quality.left(), L.quality.right());
        p.drawLine(QPointF(x, L.quality.top()), QPointF(x, L.quality.bottom()));
      }
    p.restore();
  }

  frame_axes(p, L.trajectory, tx0_ * k, tx1_ * k, ty0_ * k, ty1_ * k, "Trajectory",
             QString("dx (%1)").arg(cal_.lengthUnit()), QString("dy (%1)").arg(cal_.lengthUnit()));
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
      const double x = map(it->frame, vx.first, vx.second, L.series.left(), L.series.right());
      p.setPen(QPen(QColor(255, 140, 0), 1.5, Qt::DashLine));
      if (x >= L.series.left() && x <= L.series.right())
        p.drawLine(QPointF(x, L.series.top()), QPointF(x, L.series.bottom()));
      p.setBrush(QColor(255, 140, 0));
      p.setPen(Qt::NoPen);
      p.drawEllipse(QPointF(map(it->dx, tx0_, tx1_, L.trajectory.left(), L.trajectory.right()),
                            map(it->dy, ty0_, ty1_, L.trajectory.bottom(), L.trajectory.top())),
                    5, 5);
      p.setPen(Qt::black);
      const QString readout = QString("frame %1: dx %2, dy %3 %4")
                                  .arg(it->frame)
                                  .arg(shift_text(it->dx, cal_), shift_text(it->dy, cal_), cal_.lengthUnit());
      p.drawText(QPointF(L.series.right() - p.fontMetrics().horizontalAdvance(readout) - 8, L.series.top() + 16),
                 readout);
    }
  }
}

QRectF DriftPlot::zoomPanel(const QSize& size) const {
  if (rows_.empty()) return {};
  const Layout L = layout(size);
  return L.series.united(hasQuality_ ? L.quality : L.series);
}

namespace {
// The frame nearest to `pos`: in the trajectory by distance to its point,
// elsewhere by the frame axis. -1 when none is near.
template <class TrajectoryPoint, class FrameX>
int nearest_frame(const std::vector<DriftRow>& rows, const QPointF& pos, bool inTrajectory,
                  TrajectoryPoint trajectoryPoint, FrameX frameX) {
  int best = -1;
  double bestD = 1e300;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const QPointF q = inTrajectory ? trajectoryPoint(rows[i]) : QPointF(frameX(rows[i]), pos.y());
    const double d = std::hypot(q.x() - pos.x(), q.y() - pos.y());
    if (d < bestD) {
      bestD = d;
      best = int(i);
    }
  }
  return bestD < 40 ? best : -1;
}
}  // namespace

QString DriftPlot::readoutAt(QPointF pos) const {
  if (rows_.empty()) return {};
  const Layout L = layout(size());
  const auto vx = frameRange();
  const bool traj = L.trajectory.contains(pos);
  const bool quality = hasQuality_ && L.quality.contains(pos);
  if (!traj && !quality && !L.series.contains(pos)) return {};
  const int i = nearest_frame(
      rows_, pos, traj,
      [&](const DriftRow& r) {
        return QPointF(map(r.dx, tx0_, tx1_, L.trajectory.left(), L.trajectory.right()),
                       map(r.dy, ty0_, ty1_, L.trajectory.bottom(), L.trajectory.top()));
      },
      [&](const DriftRow& r) { return map(r.frame, vx.first, vx.second, L.series.left(), L.series.right()); });
  if (i < 0) return {};
  const DriftRow& r = rows_[std::size_t(i)];
  if (quality)
    return QString("frame %1: NCC %2%3").arg(r.frame).arg(r.quality, 0, 'f', 4).arg(r.used ? "" : " (left out)");
  QString text = QString("frame %1: dx %2, dy %3 %4")
                     .arg(r.frame)
                     .arg(shift_text(r.dx, cal_), shift_text(r.dy, cal_), cal_.lengthUnit());
  if (r.sigma_dx >= 0)
    text += QString::fromUtf8(", \u03c3 %1 %2")
                .arg(std::max(r.sigma_dx, r.sigma_dy) * cal_.scale(), 0, 'g', 3)
                .arg(cal_.lengthUnit());
  if (cal_.shown()) text += QString(" (%1, %2 px)").arg(r.dx, 0, 'f', 3).arg(r.dy, 0, 'f', 3);
  return text;
}

void DriftPlot::clickedAt(QPointF pos) {
  if (rows_.empty()) return;
  const Layout L = layout(size());
  const auto vx = frameRange();
  const int best = nearest_frame(
      rows_, pos, L.trajectory.contains(pos),
      [&](const DriftRow& r) {
        return QPointF(map(r.dx, tx0_, tx1_, L.trajectory.left(), L.trajectory.right()),
                       map(r.dy, ty0_, ty1_, L.trajectory.bottom(), L.trajectory.top()));
      },
      [&](const DriftRow& r) { return map(r.frame, vx.first, vx.second, L.series.left(), L.series.right()); });
  if (best >= 0) {
    current_ = rows_[std::size_t(best)].frame;
    update();
    emit frameSelected(current_);
  }
}
