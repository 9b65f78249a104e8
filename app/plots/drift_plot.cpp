#include "plots/drift_plot.hpp"

#include <QGraphicsSimpleTextItem>
#include <QtCharts/QAreaSeries>
#include <QtCharts/QChart>
#include <QtCharts/QLegend>
#include <QtCharts/QLineSeries>
#include <QtCharts/QScatterSeries>
#include <QtCharts/QValueAxis>
#include <algorithm>
#include <cmath>

namespace {
const QColor kDx(31, 119, 180), kDy(214, 39, 40), kTraj(44, 160, 44), kQual(148, 103, 189), kCurrent(255, 140, 0);

QLineSeries* line(const QString& name, const QColor& c, double width) {
  auto* s = new QLineSeries;
  s->setName(name);
  s->setPen(QPen(c, width));
  return s;
}
QScatterSeries* dots(const QString& name, const QColor& c, double size) {
  auto* s = new QScatterSeries;
  s->setName(name);
  s->setColor(c);
  s->setBorderColor(c);
  s->setMarkerSize(size);
  return s;
}
}  // namespace

DriftPlot::DriftPlot(QWidget* parent) : ChartView(parent) {
  setMinimumSize(400, 300);
  setCursor(Qt::PointingHandCursor);
  series_ = addChart();
  quality_ = addChart();
  trajectory_ = addChart();
  seriesX_ = addValueAxis(series_, Qt::AlignBottom, "frame");
  seriesY_ = addValueAxis(series_, Qt::AlignLeft, {});
  qualityX_ = addValueAxis(quality_, Qt::AlignBottom, "frame");
  qualityY_ = addValueAxis(quality_, Qt::AlignLeft, "NCC");
  trajectoryX_ = addValueAxis(trajectory_, Qt::AlignBottom, {});
  trajectoryY_ = addValueAxis(trajectory_, Qt::AlignLeft, {});
  quality_->setTitle("Quality (NCC with the average)");
  trajectory_->setTitle("Trajectory");
  linkXAxis(series_, seriesX_);
  linkXAxis(quality_, qualityX_);
  currentText_ = new QGraphicsSimpleTextItem(series_);
  setDrift({});
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
  pad(dmin_, dmax_);
  pad(tx0_, tx1_);
  pad(ty0_, ty1_);
  // Equal scales on the trajectory (a square plot area) so its shape is true.
  const double span = std::max(tx1_ - tx0_, ty1_ - ty0_);
  const double cx = (tx0_ + tx1_) / 2, cy = (ty0_ + ty1_) / 2;
  tx0_ = cx - span / 2;
  tx1_ = cx + span / 2;
  ty0_ = cy - span / 2;
  ty1_ = cy + span / 2;
  setXRange(xmin_, xmax_);
  if (!keepView) resetView();  // a new run: the whole series
  setEmptyText(rows_.empty() ? "No drift yet: run a registration or open a results folder." : QString());
  rebuild();
}

QString DriftPlot::calibrationText() const {
  return cal_.known() ? QString("1 px = %1 %2").arg(cal_.size, 0, 'g', 4).arg(cal_.unit) : QString();
}

QString DriftPlot::shiftAxisLabel() const { return QString("shift (%1)").arg(cal_.lengthUnit()); }

std::pair<double, double> DriftPlot::shiftAxisRange() const { return {seriesY_->min(), seriesY_->max()}; }

namespace {
// A shift in pixels as shown: 3 decimals in px, 4 significant digits in a unit.
QString shift_text(double px, const PixelCalibration& c) {
  return c.shown() ? QString::number(px * c.scale(), 'g', 4) : QString::number(px, 'f', 3);
}
}  // namespace

void DriftPlot::rebuild() {
  for (QChart* c : {series_, quality_, trajectory_}) c->removeAllSeries();
  currentLine_ = nullptr;
  currentDot_ = nullptr;
  // Series hold the shown unit: the axes label what they hold.
  const double k = cal_.scale();
  const QString unit = cal_.lengthUnit();
  series_->setTitle(cal_.known() ? QString("Drift against frame 0 (%1)").arg(calibrationText())
                                 : "Drift against frame 0");
  seriesY_->setTitleText(shiftAxisLabel());
  setAxisRange(seriesY_, dmin_ * k, dmax_ * k);
  trajectoryX_->setTitleText(QString("dx (%1)").arg(unit));
  trajectoryY_->setTitleText(QString("dy (%1)").arg(unit));
  setAxisRange(trajectoryX_, tx0_ * k, tx1_ * k);
  setAxisRange(trajectoryY_, ty0_ * k, ty1_ * k);

  // ±2σ bands: one area per run of frames with a finite σ (inf leaves a gap).
  auto bands = [&](double DriftRow::*value, double DriftRow::*sigma, const QColor& c, const QString& name) {
    QColor fill = c;
    fill.setAlpha(50);
    QList<QPointF> upper, lower;
    bool named = false;
    auto flush = [&] {
      if (upper.size() >= 2) {
        auto* area = new QAreaSeries;
        auto* up = new QLineSeries(area);
        auto* low = new QLineSeries(area);
        up->replace(upper);
        low->replace(lower);
        area->setUpperSeries(up);
        area->setLowerSeries(low);
        area->setName(name);
        area->setPen(Qt::NoPen);
        area->setBrush(fill);
        addSeries(series_, area, seriesX_, seriesY_, !named);
        named = true;
      }
      upper.clear();
      lower.clear();
    };
    for (const auto& r : rows_) {
      const double s = r.*sigma;
      if (!(s >= 0) || !std::isfinite(s)) {
        flush();
        continue;
      }
      upper.append(QPointF(r.frame, (r.*value + 2 * s) * k));
      lower.append(QPointF(r.frame, (r.*value - 2 * s) * k));
    }
    flush();
  };
  bands(&DriftRow::dx, &DriftRow::sigma_dx, kDx, QString::fromUtf8("dx \u00b12\u03c3"));
  bands(&DriftRow::dy, &DriftRow::sigma_dy, kDy, QString::fromUtf8("dy \u00b12\u03c3"));

  QList<QPointF> dx, dy, quality, left, trajectory;
  for (const auto& r : rows_) {
    dx.append(QPointF(r.frame, r.dx * k));
    dy.append(QPointF(r.frame, r.dy * k));
    trajectory.append(QPointF(r.dx * k, r.dy * k));
    if (r.quality >= -1) {
      quality.append(QPointF(r.frame, r.quality));
      if (!r.used) left.append(QPointF(r.frame, r.quality));
    }
  }
  // Points marked while they can be told apart.
  const bool marked = rows_.size() <= 400;
  for (auto [points, name, colour] : {std::tuple{&dx, "dx", kDx}, std::tuple{&dy, "dy", kDy}}) {
    QLineSeries* s = line(name, colour, 1.5);
    s->replace(*points);
    s->setPointsVisible(marked);
    s->setMarkerSize(4.4);
    addSeries(series_, s, seriesX_, seriesY_, true);
  }
  currentLine_ = line("current", kCurrent, 1.5);
  currentLine_->setPen(QPen(kCurrent, 1.5, Qt::DashLine));
  addSeries(series_, currentLine_, seriesX_, seriesY_, false);

  if (hasQuality_) {
    double q0 = INFINITY, q1 = -INFINITY;
    for (const QPointF& q : quality) {
      q0 = std::min(q0, q.y());
      q1 = std::max(q1, q.y());
    }
    pad(q0, q1);
    setAxisRange(qualityY_, q0, q1);
    QLineSeries* s = line("NCC", kQual, 1.5);
    s->replace(quality);
    s->setPointsVisible(marked);
    s->setMarkerSize(4.4);
    addSeries(quality_, s, qualityX_, qualityY_, true);
    QScatterSeries* out = dots("left out of the average", Qt::red, 9);
    out->setMarkerShape(QScatterSeries::MarkerShapeRectangle);
    out->replace(left);
    addSeries(quality_, out, qualityX_, qualityY_, !left.isEmpty());
  }

  QLineSeries* path = line("trajectory", kTraj, 1.5);
  path->replace(trajectory);
  addSeries(trajectory_, path, trajectoryX_, trajectoryY_, false);
  QScatterSeries* start = dots("frame 0", Qt::black, 7);
  if (!trajectory.isEmpty()) start->append(trajectory.front());
  addSeries(trajectory_, start, trajectoryX_, trajectoryY_, true);
  currentDot_ = dots("current", kCurrent, 10);
  addSeries(trajectory_, currentDot_, trajectoryX_, trajectoryY_, false);
  showCurrent();
  relayout();
}

void DriftPlot::showCurrent() {
  auto it = std::find_if(rows_.begin(), rows_.end(), [&](const DriftRow& r) { return r.frame == currentFrame(); });
  currentLine_->clear();
  currentDot_->clear();
  currentText_->setText({});
  if (it == rows_.end()) return;
  const double k = cal_.scale();
  currentLine_->append(it->frame, seriesY_->min());
  currentLine_->append(it->frame, seriesY_->max());
  currentDot_->append(it->dx * k, it->dy * k);
  currentText_->setText(QString("frame %1: dx %2, dy %3 %4")
                            .arg(it->frame)
                            .arg(shift_text(it->dx, cal_), shift_text(it->dy, cal_), cal_.lengthUnit()));
  relayout();
}

void DriftPlot::layoutCharts(const QSizeF& s) {
  // The trajectory beside the series (at most 40% of the width), the quality below them.
  const double side = std::min(s.width() * 0.4, s.height());
  const double seriesW = s.width() - side;
  const double qualityH = hasQuality_ ? std::max(150.0, s.height() * 0.34) : 0;
  placeChart(series_, QRectF(0, 0, seriesW, s.height() - qualityH));
  if (hasQuality_) {
    placeChart(quality_, QRectF(0, s.height() - qualityH, seriesW, qualityH));
    lineUp({series_, quality_});
  } else {
    placeChart(quality_, QRectF(0, s.height() + 1, seriesW, 150));  // outside the scene: not shown
  }
  // Taller than wide by about its title, legend and axis: the plot area comes out square at the tile's width.
  placeChart(trajectory_, QRectF(seriesW, 0, side, std::min(s.height(), side + 100)));
  makeSquare(trajectory_);
  // The current frame's values at the top right of the series panel.
  const QRectF area = series_->plotArea();
  currentText_->setPos(area.right() - currentText_->boundingRect().width() - 8, area.top() + 6);
}

QPointF DriftPlot::pointPosition(int i) const {
  const auto& r = rows_.at(std::size_t(i));
  return positionOf(series_, QPointF(r.frame, r.dx * cal_.scale()));
}

int DriftPlot::nearestFrame(QPointF pos) const {
  // In the trajectory by distance to its point, elsewhere by the frame axis.
  QChart* c = chartAt(pos);
  if (!c || rows_.empty()) return -1;
  const double k = cal_.scale();
  int best = -1;
  double bestD = 1e300;
  for (std::size_t i = 0; i < rows_.size(); ++i) {
    const DriftRow& r = rows_[i];
    const QPointF q = c == trajectory_ ? positionOf(c, QPointF(r.dx * k, r.dy * k))
                                       : QPointF(positionOf(c, QPointF(r.frame, 0)).x(), pos.y());
    const double d = std::hypot(q.x() - pos.x(), q.y() - pos.y());
    if (d < bestD) {
      bestD = d;
      best = int(i);
    }
  }
  return bestD < 40 ? best : -1;
}

QString DriftPlot::readoutAt(QPointF pos) const {
  const int i = nearestFrame(pos);
  if (i < 0) return {};
  const DriftRow& r = rows_[std::size_t(i)];
  if (chartAt(pos) == quality_)
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
  const int i = nearestFrame(pos);
  if (i < 0) return;
  selectFrame(rows_[std::size_t(i)].frame);
}
