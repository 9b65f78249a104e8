#include "plots/line_drift_plot.hpp"

#include <QGraphicsSimpleTextItem>
#include <QtCharts/QAreaSeries>
#include <QtCharts/QCategoryAxis>
#include <QtCharts/QChart>
#include <QtCharts/QLineSeries>
#include <QtCharts/QScatterSeries>
#include <QtCharts/QValueAxis>
#include <algorithm>
#include <cmath>

namespace {
const QColor kDx(31, 119, 180), kDy(214, 39, 40), kJitter(148, 103, 189), kBoundary(170, 170, 170),
    kFieldMean(40, 40, 40);
// Beyond this many frames the boundaries would paint the panel grey.
constexpr int kMaxBoundaries = 300;
// Frame numbers on the top axis up to this many frames (more would overlap).
constexpr int kMaxFrameLabels = 40;

QCategoryAxis* frame_axis(QChart* chart) {
  auto* a = new QCategoryAxis;
  a->setLabelsPosition(QCategoryAxis::AxisLabelsPositionCenter);
  a->setGridLinePen(QPen(kBoundary, 1, Qt::DashLine));
  a->setTitleText("frame");
  chart->addAxis(a, Qt::AlignTop);
  return a;
}
QLineSeries* line(const QString& name, const QColor& c, double width) {
  auto* s = new QLineSeries;
  s->setName(name);
  s->setPen(QPen(c, width));
  return s;
}
}  // namespace

LineDriftPlot::LineDriftPlot(QWidget* parent) : ChartView(parent) {
  setMinimumSize(400, 300);
  setCursor(Qt::PointingHandCursor);
  drift_ = addChart();
  jitter_ = addChart();
  driftX_ = addValueAxis(drift_, Qt::AlignBottom, "acquisition time (s)");
  driftY_ = addValueAxis(drift_, Qt::AlignLeft, {});
  jitterX_ = addValueAxis(jitter_, Qt::AlignBottom, "acquisition time (s)");
  jitterY_ = addValueAxis(jitter_, Qt::AlignLeft, {});
  // The drift panel's time axis is the jitter panel's just below (lined up):
  // shown there only. Qt Charts gives each visible horizontal axis of a chart
  // at most 20% of its height when there are two (40% for one), so the drift
  // panel's frame axis keeps its room at the app's default size.
  driftX_->setVisible(false);
  driftFrames_ = frame_axis(drift_);
  jitterFrames_ = frame_axis(jitter_);
  jitter_->setTitle("Line jitter (fast-axis offset of each line)");
  jitter_->legend()->setVisible(false);  // one curve, named by the title
  for (auto [chart, axis] : {std::pair{drift_, static_cast<QAbstractAxis*>(driftX_)},
                             {jitter_, jitterX_},
                             {drift_, driftFrames_},
                             {jitter_, jitterFrames_}})
    linkXAxis(chart, axis);
  currentText_ = new QGraphicsSimpleTextItem(drift_);
  // The line field's panel: its x axis is the place in a line, not time
  // (it does not zoom with the others).
  fieldChart_ = addChart();
  fieldX_ = addValueAxis(fieldChart_, Qt::AlignBottom, "sample in the line (acquisition order)");
  fieldY_ = addValueAxis(fieldChart_, Qt::AlignLeft, {});
  fieldChart_->setTitle("Line field: each line's start displaced along the fast axis (fly-back hysteresis)");
  setSeries({}, {});
}

void LineDriftPlot::setLineField(driftscan::LineFieldTable field) {
  field_ = std::move(field);
  fieldMeanValues_.clear();
  if (!field_.fields.empty()) {
    // Over the field's extent (it is 0 beyond), as the mean over the frames.
    const std::size_t n =
        static_cast<std::size_t>(std::min<double>(field_.basis.samples(), std::ceil(field_.basis.extent()) + 1));
    fieldMeanValues_.assign(n, 0.0);
    for (const std::vector<double>& c : field_.fields) {
      const std::vector<double> h = field_.basis.tabulate(c);
      for (std::size_t s = 0; s < n && s < h.size(); ++s)
        fieldMeanValues_[s] += h[s] / static_cast<double>(field_.fields.size());
    }
  }
  rebuildField();
  relayout();
}

void LineDriftPlot::rebuildField() {
  fieldChart_->removeAllSeries();  // deletes them
  fieldMean_ = fieldFrame_ = nullptr;
  if (!hasLineField()) return;
  const double k = cal_.scale();
  fieldY_->setTitleText(QString("field (%1)").arg(cal_.lengthUnit()));
  fieldMean_ = line(QString("mean over %1 frames").arg(field_.fields.size()), kFieldMean, 2.0);
  for (std::size_t s = 0; s < fieldMeanValues_.size(); ++s) fieldMean_->append(double(s), fieldMeanValues_[s] * k);
  addSeries(fieldChart_, fieldMean_, fieldX_, fieldY_, true);
  fieldFrame_ = line("current frame", kJitter, 1.5);
  addSeries(fieldChart_, fieldFrame_, fieldX_, fieldY_, true);
  // y over every frame's field (and 0), symmetric ranges are not needed: the
  // field's sign is its direction along the fast axis.
  double lo = 0.0, hi = 0.0;
  for (const std::vector<double>& c : field_.fields)
    for (const double v : field_.basis.tabulate(c)) lo = std::min(lo, v), hi = std::max(hi, v);
  pad(lo, hi);
  setAxisRange(fieldY_, lo * k, hi * k);
  setAxisRange(fieldX_, 0.0, std::max(1.0, double(fieldMeanValues_.size()) - 1.0));
  showCurrent();
}

void LineDriftPlot::setSeries(LineDriftSeries lines, std::vector<DriftRow> rigid) {
  built_ = false;  // the range changes below: the curves are rebuilt once, at the end
  lines_ = std::move(lines);
  rigid_ = std::move(rigid);
  t0_ = 0;
  t1_ = 1;
  d0_ = j0_ = INFINITY;
  d1_ = j1_ = -INFINITY;
  if (!lines_.empty()) {
    t0_ = lines_.frameFirst.front();
    t1_ = lines_.frameLast.back();
  }
  for (std::size_t i = 0; i < lines_.t.size(); ++i) {
    d0_ = std::min({d0_, lines_.dx[i], lines_.dy[i]});
    d1_ = std::max({d1_, lines_.dx[i], lines_.dy[i]});
    j0_ = std::min(j0_, lines_.jitter[i]);
    j1_ = std::max(j1_, lines_.jitter[i]);
  }
  // The rigid drift has frame 0 at 0; the line drift has its mean over frame
  // 0's lines at 0 (d = 0 at the start of frame 0 in files from before branch
  // rotated-11). Frame 0's rigid dot goes on the curve at its mid-time.
  rigidOffsetX_ = rigidOffsetY_ = 0;
  if (!lines_.empty() && !rigid_.empty()) {
    const double mid = frameMid(0);
    const auto it = std::lower_bound(lines_.t.begin(), lines_.t.end(), mid);
    const std::size_t i = std::min<std::size_t>(static_cast<std::size_t>(it - lines_.t.begin()), lines_.t.size() - 1);
    rigidOffsetX_ = lines_.dx[i] - rigid_.front().dx;
    rigidOffsetY_ = lines_.dy[i] - rigid_.front().dy;
    for (const DriftRow& r : rigid_) {
      d0_ = std::min({d0_, r.dx + rigidOffsetX_, r.dy + rigidOffsetY_});
      d1_ = std::max({d1_, r.dx + rigidOffsetX_, r.dy + rigidOffsetY_});
    }
  }
  if (lines_.empty()) d0_ = j0_ = -1, d1_ = j1_ = 1;
  pad(d0_, d1_);
  // Jitter symmetric about 0: its sign matters, not its mean.
  const double j = std::max({std::abs(j0_), std::abs(j1_), 0.05});
  j0_ = -1.1 * j;
  j1_ = 1.1 * j;

  // Frame k spans up to the middle of the fly-backs around it.
  for (QCategoryAxis* a : {driftFrames_, jitterFrames_}) {
    for (const QString& label : a->categoriesLabels()) a->remove(label);
    a->setStartValue(t0_);
    const int n = lines_.frameCount();
    for (int k = 0; k < n && n <= kMaxBoundaries; ++k) {
      const auto i = static_cast<std::size_t>(k);
      a->append(QString::number(k), k + 1 < n ? 0.5 * (lines_.frameLast[i] + lines_.frameFirst[i + 1]) : t1_);
    }
    a->setVisible(boundaryCount() > 0);
  }
  // Numbered above the drift; the jitter panel keeps only the boundaries.
  driftFrames_->setLabelsVisible(lines_.frameCount() <= kMaxFrameLabels);
  jitterFrames_->setLabelsVisible(false);
  jitterFrames_->setTitleVisible(false);
  jitterFrames_->setLineVisible(false);
  setXRange(t0_, t1_);
  resetView();
  setEmptyText(lines_.empty() ? "No line-resolution drift: register with scan-distortion correction\n"
                                "(Settings > Scan timing and distortion) or open the results of such a run."
                              : QString());
  rebuild();
}

double LineDriftPlot::frameMid(int k) const {
  return 0.5 * (lines_.frameFirst[static_cast<std::size_t>(k)] + lines_.frameLast[static_cast<std::size_t>(k)]);
}

int LineDriftPlot::boundaryCount() const {
  const int n = lines_.frameCount();
  return n > 1 && n <= kMaxBoundaries ? n - 1 : 0;
}

void LineDriftPlot::rebuild() {
  drift_->removeAllSeries();  // deletes them, the curves' too
  jitter_->removeAllSeries();
  // Series hold the shown unit: the axes label what they hold.
  const double k = cal_.scale();
  const QString unit = cal_.lengthUnit();
  const QString every = lines_.stride > 1 ? QString(", every %1th line").arg(lines_.stride) : QString();
  drift_->setTitle(QString("Drift during the scan: %1 frames, %2 lines%3")
                       .arg(lines_.frameCount())
                       .arg(lines_.totalLines)
                       .arg(every));
  driftY_->setTitleText(QString("drift (%1)").arg(unit));  // short: a y axis has the plot's height
  jitterY_->setTitleText(QString("jitter (%1)").arg(unit));
  setAxisRange(driftY_, d0_ * k, d1_ * k);
  setAxisRange(jitterY_, j0_ * k, j1_ * k);

  // The current frame's span under the curves.
  auto span = [&](QChart* chart, QValueAxis* x, QValueAxis* y, QCategoryAxis* frames) {
    auto* area = new QAreaSeries(new QLineSeries, new QLineSeries);
    area->upperSeries()->setParent(area);
    area->lowerSeries()->setParent(area);
    area->setPen(Qt::NoPen);
    area->setBrush(QColor(255, 140, 0, 50));
    addSeries(chart, area, x, y, false);
    area->attachAxis(frames);  // the frame axis then shares the time axis' range
    return area;
  };
  driftSpan_ = span(drift_, driftX_, driftY_, driftFrames_);
  jitterSpan_ = span(jitter_, jitterX_, jitterY_, jitterFrames_);

  curves_.clear();
  overCurves_.clear();
  built_ = true;
  rebuildCurves();
  rebuildField();
  showCurrent();
}

std::pair<int, int> LineDriftPlot::framesInView() const {
  if (lines_.empty()) return {0, -1};
  const auto [lo, hi] = shown(t0_, t1_);
  // Frames ending at or after lo, starting at or before hi.
  const int first = static_cast<int>(std::lower_bound(lines_.frameLast.begin(), lines_.frameLast.end(), lo) -
                                     lines_.frameLast.begin());
  const int last = static_cast<int>(std::upper_bound(lines_.frameFirst.begin(), lines_.frameFirst.end(), hi) -
                                    lines_.frameFirst.begin()) -
                   1;
  return {first, last};
}

namespace {
// The kept lines [begin, end) of frames [first, last] (lines_.frame is sorted).
std::pair<std::size_t, std::size_t> line_range(const LineDriftSeries& s, int first, int last) {
  const auto b = std::lower_bound(s.frame.begin(), s.frame.end(), first) - s.frame.begin();
  const auto e = std::upper_bound(s.frame.begin(), s.frame.end(), last) - s.frame.begin();
  return {static_cast<std::size_t>(b), static_cast<std::size_t>(e)};
}
}  // namespace

// Joined when too many frames are in view (their own series would be
// hundreds of items for a few pixels each), or when the table's subsample
// keeps fewer than two lines a frame (a frame's own series would draw nothing).
QString LineDriftPlot::joinReason(std::pair<int, int> frames) const {
  const int n = frames.second - frames.first + 1;
  if (n > kMaxSplitFrames) return QString("joined across fly-backs: > %1 frames in view").arg(kMaxSplitFrames);
  if (n <= 0) return {};
  const auto [b, e] = line_range(lines_, frames.first, frames.second);
  if (e - b < 2 * static_cast<std::size_t>(n)) return "joined across fly-backs: < 2 lines a frame kept";
  return {};
}

void LineDriftPlot::rebuildCurves() {
  for (QAbstractSeries* s : curves_) {
    s->chart()->removeSeries(s);
    delete s;
  }
  for (QAbstractSeries* s : overCurves_) {
    s->chart()->removeSeries(s);
    delete s;
  }
  curves_.clear();
  overCurves_.clear();
  const double k = cal_.scale();
  const std::pair<int, int> frames = framesInView();
  const QString why = joinReason(frames);
  joined_ = !why.isEmpty();
  // Split: the frames in view and, while the total stays within
  // kMaxSplitFrames, up to half as many again on each side, so that a pan
  // (a drag moves the view a few pixels at a time) rebuilds only once it
  // leaves them — a rebuild of a few hundred frames' series takes a few
  // hundred ms.
  if (!joined_) {
    const int n = frames.second - frames.first + 1;
    const int margin = std::max(0, std::min(n / 2, (kMaxSplitFrames - n) / 2));
    builtFrames_ = {std::max(0, frames.first - margin), std::min(lines_.frameCount() - 1, frames.second + margin)};
  } else {
    builtFrames_ = {-1, -1};
  }
  auto curve = [&](QChart* chart, QValueAxis* y, const std::vector<double>& v, const QString& name,
                   const QColor& colour, std::size_t b, std::size_t e, bool inLegend) {
    QList<QPointF> points;
    points.reserve(static_cast<qsizetype>(e - b));
    for (std::size_t i = b; i < e; ++i) points.append(QPointF(lines_.t[i], v[i] * k));
    QLineSeries* s = line(name, colour, 1.3);
    s->replace(points);
    addSeries(chart, s, chart == drift_ ? driftX_ : jitterX_, y, inLegend);
    curves_.push_back(s);
  };
  // Each curve's +-1 sigma band (lines.csv's sigma columns), drawn over it
  // translucent; a line without a finite sigma leaves a gap's worth of band out.
  auto band = [&](QChart* chart, QValueAxis* y, const std::vector<double>& v, const std::vector<double>& sd,
                  const QColor& colour, std::size_t b, std::size_t e) {
    if (sd.size() != v.size()) return;
    auto* upper = new QLineSeries;
    auto* lower = new QLineSeries;
    for (std::size_t i = b; i < e; ++i)
      if (std::isfinite(sd[i]))
        upper->append(lines_.t[i], (v[i] + sd[i]) * k), lower->append(lines_.t[i], (v[i] - sd[i]) * k);
    auto* area = new QAreaSeries(upper, lower);
    upper->setParent(area);
    lower->setParent(area);
    area->setName("+-1 sigma");
    area->setPen(Qt::NoPen);
    QColor c = colour;
    c.setAlpha(60);
    area->setBrush(c);
    addSeries(chart, area, chart == drift_ ? driftX_ : jitterX_, y, false);
    overCurves_.push_back(area);
  };
  auto bands = [&](std::size_t b, std::size_t e) {
    band(drift_, driftY_, lines_.dx, lines_.sigmaDx, kDx, b, e);
    band(drift_, driftY_, lines_.dy, lines_.sigmaDy, kDy, b, e);
    band(jitter_, jitterY_, lines_.jitter, lines_.sigmaJitter, kJitter, b, e);
  };
  const QString suffix = joined_ ? QString(" (%1)").arg(why) : QString();
  if (joined_) {
    curve(drift_, driftY_, lines_.dx, "dx" + suffix, kDx, 0, lines_.t.size(), true);
    curve(drift_, driftY_, lines_.dy, "dy" + suffix, kDy, 0, lines_.t.size(), true);
    curve(jitter_, jitterY_, lines_.jitter, "jitter", kJitter, 0, lines_.t.size(), false);
    bands(0, lines_.t.size());
  } else {
    // The legend names each curve once.
    for (int f = builtFrames_.first; f <= builtFrames_.second; ++f) {
      const auto [b, e] = line_range(lines_, f, f);
      if (b == e) continue;
      const bool named = curves_.empty();  // the first frame drawn
      curve(drift_, driftY_, lines_.dx, "dx", kDx, b, e, named);
      curve(drift_, driftY_, lines_.dy, "dy", kDy, b, e, named);
      curve(jitter_, jitterY_, lines_.jitter, "jitter", kJitter, b, e, false);
      bands(b, e);
    }
  }
  QLineSeries* zero = line("0", Qt::black, 0.5);
  zero->append(t0_, 0);
  zero->append(t1_, 0);
  addSeries(jitter_, zero, jitterX_, jitterY_, false);
  overCurves_.push_back(zero);

  // The rigid drift, one dot per frame at its mid-time (hollow: it is a frame's average position).
  if (!rigid_.empty() && rigid_.size() <= 2000) {
    for (auto [offset, member, name, colour] :
         {std::tuple{rigidOffsetX_, &DriftRow::dx, "rigid dx (one shift per frame)", kDx},
          std::tuple{rigidOffsetY_, &DriftRow::dy, "rigid dy", kDy}}) {
      auto* s = new QScatterSeries;
      s->setName(name);
      s->setColor(Qt::white);
      s->setBorderColor(colour);
      s->setPen(QPen(colour, 1.3));
      s->setMarkerSize(7);
      for (const DriftRow& r : rigid_)
        if (r.frame >= 0 && r.frame < lines_.frameCount()) s->append(frameMid(r.frame), (r.*member + offset) * k);
      addSeries(drift_, s, driftX_, driftY_, true);
      overCurves_.push_back(s);
    }
  }
}

void LineDriftPlot::xViewChanged() {
  if (!built_) return;
  const std::pair<int, int> frames = framesInView();
  const bool join = !joinReason(frames).isEmpty();
  if (join && joined_) return;  // the joined curves hold every frame already
  // Still within the frames built (zoomed in, or panned by less than the margin).
  if (!join && !joined_ && frames.first >= builtFrames_.first && frames.second <= builtFrames_.second) return;
  rebuildCurves();
  relayout();  // the legend's new markers laid out now (an export may follow at once)
}

void LineDriftPlot::showCurrent() {
  const int current = currentFrame();
  for (auto [area, axis] : {std::pair{driftSpan_, driftY_}, {jitterSpan_, jitterY_}}) {
    area->upperSeries()->clear();
    area->lowerSeries()->clear();
    if (current < 0 || current >= lines_.frameCount()) continue;
    const auto k = static_cast<std::size_t>(current);
    area->upperSeries()->append({{lines_.frameFirst[k], axis->max()}, {lines_.frameLast[k], axis->max()}});
    area->lowerSeries()->append({{lines_.frameFirst[k], axis->min()}, {lines_.frameLast[k], axis->min()}});
  }
  if (fieldFrame_) {
    fieldFrame_->clear();
    if (current >= 0 && static_cast<std::size_t>(current) < field_.fields.size()) {
      const std::vector<double> h = field_.basis.tabulate(field_.fields[static_cast<std::size_t>(current)]);
      const double k = cal_.scale();
      for (std::size_t s = 0; s < fieldMeanValues_.size() && s < h.size(); ++s)
        fieldFrame_->append(double(s), h[s] * k);
      fieldFrame_->setName(QString("frame %1").arg(current));
    } else {
      fieldFrame_->setName("current frame");
    }
  }
  currentText_->setText(current >= 0 && current < lines_.frameCount()
                            ? QString("frame %1: %2 to %3 s")
                                  .arg(current)
                                  .arg(lines_.frameFirst[static_cast<std::size_t>(current)], 0, 'g', 5)
                                  .arg(lines_.frameLast[static_cast<std::size_t>(current)], 0, 'g', 5)
                            : QString());
  relayout();
}

void LineDriftPlot::layoutCharts(const QSizeF& s) {
  // Qt Charts cuts the titles and labels of the axes along a side of a chart
  // that would take more than 40% of its height, shared by its horizontal
  // axes ("acquisition ti..."): the jitter panel (its time axis, and the frame
  // axis of its boundaries) keeps 40% of the height, 45% without a field panel.
  if (hasLineField()) {
    const double driftH = std::max(200.0, s.height() * 0.30), jitterH = std::max(240.0, s.height() * 0.40);
    placeChart(drift_, QRectF(0, 0, s.width(), driftH));
    placeChart(jitter_, QRectF(0, driftH, s.width(), jitterH));
    placeChart(fieldChart_, QRectF(0, driftH + jitterH, s.width(), std::max(160.0, s.height() - driftH - jitterH)));
    lineUp({drift_, jitter_, fieldChart_});
  } else {
    const double driftH = std::max(200.0, s.height() * 0.55);
    placeChart(drift_, QRectF(0, 0, s.width(), driftH));
    placeChart(jitter_, QRectF(0, driftH, s.width(), std::max(200.0, s.height() - driftH)));
    placeChart(fieldChart_, QRectF(0, s.height() + 1, s.width(), 160));  // outside the scene: not shown
    lineUp({drift_, jitter_});
  }
  const QRectF area = drift_->plotArea();
  currentText_->setPos(area.right() - currentText_->boundingRect().width() - 8, area.top() + 6);
}

double LineDriftPlot::xOfTime(double t) const { return positionOf(drift_, QPointF(t, 0)).x(); }

int LineDriftPlot::frameAtX(double x) const {
  if (lines_.empty()) return -1;
  const double t = valueAt(drift_, QPointF(x, drift_->plotArea().center().y())).x();
  // The frame whose span (up to the middle of the fly-back) holds t.
  const auto it = std::upper_bound(lines_.frameFirst.begin(), lines_.frameFirst.end(), t);
  int k = static_cast<int>(it - lines_.frameFirst.begin()) - 1;
  if (k < 0) k = 0;
  if (k + 1 < lines_.frameCount() &&
      t > 0.5 * (lines_.frameLast[static_cast<std::size_t>(k)] + lines_.frameFirst[static_cast<std::size_t>(k) + 1]))
    ++k;
  return k;
}

QString LineDriftPlot::readoutAt(QPointF pos) const {
  QChart* c = chartAt(pos);
  if (!c) return {};
  if (c == fieldChart_) {
    const QPointF v = valueAt(c, pos);
    return QString("sample %1: line field %2 %3")
        .arg(v.x(), 0, 'f', 0)
        .arg(cal_.shown() ? QString::number(v.y(), 'g', 4) : QString::number(v.y(), 'f', 3))
        .arg(cal_.lengthUnit());
  }
  const QPointF v = valueAt(c, pos);
  return QString("t %1 s, frame %2: %3 %4 %5")
      .arg(v.x(), 0, 'g', 5)
      .arg(frameAtX(pos.x()))
      .arg(c == drift_ ? "drift" : "jitter")
      .arg(cal_.shown() ? QString::number(v.y(), 'g', 4) : QString::number(v.y(), 'f', 3))
      .arg(cal_.lengthUnit());
}

void LineDriftPlot::clickedAt(QPointF pos) {
  QChart* c = chartAt(pos);
  if (!c || c == fieldChart_) return;  // the field's x is the place in a line, not time
  const int k = frameAtX(pos.x());
  if (k < 0) return;
  selectFrame(k);
}
