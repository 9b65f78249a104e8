#include "line_drift_plot.hpp"

#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <algorithm>
#include <cmath>

namespace {
const QColor kDx(31, 119, 180), kDy(214, 39, 40), kJitter(148, 103, 189), kBoundary(190, 190, 190);
// Beyond this many frames the boundaries would paint the panel grey.
constexpr int kMaxBoundaries = 300;
}  // namespace

LineDriftPlot::LineDriftPlot(QWidget* parent) : PlotWidget(parent) {
  setMinimumSize(400, 300);
  setCursor(Qt::PointingHandCursor);
}

void LineDriftPlot::setSeries(LineDriftSeries lines, std::vector<DriftRow> rigid) {
  lines_ = std::move(lines);
  rigid_ = std::move(rigid);
  t0_ = 0;
  t1_ = 1;
  d0_ = j0_ = INFINITY;
  d1_ = j1_ = -INFINITY;
  resetView();
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
  // The rigid drift has frame 0 at 0; the line drift has d = 0 at the start
  // of frame 0. Frame 0's rigid dot goes on the curve at its mid-time.
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
  plot::pad(d0_, d1_);
  // Jitter symmetric about 0: its sign matters, not its mean.
  const double j = std::max({std::abs(j0_), std::abs(j1_), 0.05});
  j0_ = -1.1 * j;
  j1_ = 1.1 * j;
  update();
}

double LineDriftPlot::frameMid(int k) const {
  return 0.5 * (lines_.frameFirst[static_cast<std::size_t>(k)] + lines_.frameLast[static_cast<std::size_t>(k)]);
}

int LineDriftPlot::boundaryCount() const {
  const int n = lines_.frameCount();
  return n > 1 && n <= kMaxBoundaries ? n - 1 : 0;
}

void LineDriftPlot::setCurrentFrame(int frame) {
  current_ = frame;
  update();
}

LineDriftPlot::Layout LineDriftPlot::layout(const QSize& s) const {
  const double w = s.width(), h = s.height();
  const double left = 70, right = 20, top = 30, bottom = 50, gap = 70;
  const double avail = std::max(120.0, h - top - bottom - gap);
  Layout L;
  L.drift = QRectF(left, top, std::max(80.0, w - left - right), avail * 0.66);
  L.jitter = QRectF(left, L.drift.bottom() + gap, L.drift.width(), avail * 0.34);
  return L;
}

double LineDriftPlot::xOfTime(double t) const {
  const Layout L = layout(size());
  const auto vt = shown(t0_, t1_);
  return plot::map(t, vt.first, vt.second, L.drift.left(), L.drift.right());
}

int LineDriftPlot::frameAtX(double x) const {
  if (lines_.empty()) return -1;
  const Layout L = layout(size());
  const auto vt = shown(t0_, t1_);
  const double t = plot::map(x, L.drift.left(), L.drift.right(), vt.first, vt.second);
  // The frame whose span (up to the middle of the fly-back) holds t.
  const auto it = std::upper_bound(lines_.frameFirst.begin(), lines_.frameFirst.end(), t);
  int k = static_cast<int>(it - lines_.frameFirst.begin()) - 1;
  if (k < 0) k = 0;
  if (k + 1 < lines_.frameCount() &&
      t > 0.5 * (lines_.frameLast[static_cast<std::size_t>(k)] + lines_.frameFirst[static_cast<std::size_t>(k) + 1]))
    ++k;
  return k;
}

void LineDriftPlot::setPixelSize(double size, const QString& unit) {
  cal_.recalibrate(size, unit);
  update();
}

void LineDriftPlot::setPhysicalUnits(bool on) {
  cal_.physical = on;
  update();
}

void LineDriftPlot::render(QPainter& p, const QSize& size) const {
  p.fillRect(QRect(QPoint(0, 0), size), Qt::white);
  p.setRenderHint(QPainter::Antialiasing);
  if (lines_.empty()) {
    p.setPen(Qt::darkGray);
    p.drawText(QRect(QPoint(0, 0), size), Qt::AlignCenter,
               "No line-resolution drift: register with scan-distortion correction\n"
               "(Settings > Scan timing and distortion) or open the results of such a run.");
    return;
  }
  const Layout L = layout(size);
  const auto vt = shown(t0_, t1_);
  const QString every = lines_.stride > 1 ? QString(", every %1th line").arg(lines_.stride) : QString();
  // Drawn in pixels; only the labelled ranges are scaled (the scale is positive).
  const double k = cal_.scale();
  const QString unit = cal_.lengthUnit();
  plot::frame_axes(p, L.drift, vt.first, vt.second, d0_ * k, d1_ * k,
                   QString("Drift during the scan: %1 frames, %2 lines%3")
                       .arg(lines_.frameCount())
                       .arg(lines_.totalLines)
                       .arg(every),
                   "acquisition time (s)", QString("specimen drift (%1)").arg(unit));
  plot::frame_axes(p, L.jitter, vt.first, vt.second, j0_ * k, j1_ * k, "Line jitter (fast-axis offset of each line)",
                   "acquisition time (s)", QString("jitter (%1)").arg(unit));
  auto x = [&](double t, const QRectF& r) { return plot::map(t, vt.first, vt.second, r.left(), r.right()); };

  // The current frame's span, then the boundaries, under the curves.
  for (const QRectF& r : {L.drift, L.jitter}) {
    p.save();
    p.setClipRect(r);
    if (current_ >= 0 && current_ < lines_.frameCount()) {
      const auto k = static_cast<std::size_t>(current_);
      p.fillRect(QRectF(QPointF(x(lines_.frameFirst[k], r), r.top()), QPointF(x(lines_.frameLast[k], r), r.bottom())),
                 QColor(255, 140, 0, 50));
    }
    if (boundaryCount() > 0) {
      p.setPen(QPen(kBoundary, 1, Qt::DashLine));
      for (int k = 1; k < lines_.frameCount(); ++k) {
        const auto i = static_cast<std::size_t>(k);
        const double xb = x(0.5 * (lines_.frameLast[i - 1] + lines_.frameFirst[i]), r);
        p.drawLine(QPointF(xb, r.top()), QPointF(xb, r.bottom()));
      }
    }
    p.restore();
  }
  // Curves: continuous within a frame, broken across the fly-back.
  auto curve = [&](const std::vector<double>& v, const QColor& c, const QRectF& r, double y0, double y1) {
    QPainterPath path;
    for (std::size_t i = 0; i < v.size(); ++i) {
      const QPointF q(x(lines_.t[i], r), plot::map(v[i], y0, y1, r.bottom(), r.top()));
      if (i == 0 || lines_.frame[i] != lines_.frame[i - 1]) path.moveTo(q);
      else path.lineTo(q);
    }
    p.save();
    p.setClipRect(r.adjusted(-2, -2, 2, 2));
    p.setPen(QPen(c, 1.3));
    p.setBrush(Qt::NoBrush);
    p.drawPath(path);
    p.restore();
  };
  curve(lines_.dx, kDx, L.drift, d0_, d1_);
  curve(lines_.dy, kDy, L.drift, d0_, d1_);
  curve(lines_.jitter, kJitter, L.jitter, j0_, j1_);
  p.setPen(QPen(Qt::black, 0.5));
  const double zero = plot::map(0.0, j0_, j1_, L.jitter.bottom(), L.jitter.top());
  p.drawLine(QPointF(L.jitter.left(), zero), QPointF(L.jitter.right(), zero));

  // The rigid drift, one dot per frame at its mid-time (hollow: it is a frame's average position).
  if (!rigid_.empty() && rigid_.size() <= 2000) {
    p.save();
    p.setClipRect(L.drift.adjusted(-4, -4, 4, 4));
    for (const DriftRow& r : rigid_) {
      if (r.frame < 0 || r.frame >= lines_.frameCount()) continue;
      const double xm = x(frameMid(r.frame), L.drift);
      p.setBrush(Qt::white);
      p.setPen(QPen(kDx, 1.3));
      p.drawEllipse(QPointF(xm, plot::map(r.dx + rigidOffsetX_, d0_, d1_, L.drift.bottom(), L.drift.top())), 3, 3);
      p.setPen(QPen(kDy, 1.3));
      p.drawEllipse(QPointF(xm, plot::map(r.dy + rigidOffsetY_, d0_, d1_, L.drift.bottom(), L.drift.top())), 3, 3);
    }
    p.restore();
  }
  // Legend.
  const QFontMetrics fm = p.fontMetrics();
  double lx = L.drift.left() + 8;
  const double ly = L.drift.top() + 16;
  for (const auto& [text, colour] : {std::pair<QString, QColor>{"dx", kDx}, {"dy", kDy}}) {
    p.setPen(colour);
    p.drawText(QPointF(lx, ly), text);
    lx += fm.horizontalAdvance(text) + 12;
  }
  if (!rigid_.empty()) {
    p.setPen(Qt::darkGray);
    p.drawText(QPointF(lx, ly), "o rigid (one shift per frame)");
  }
  if (current_ >= 0 && current_ < lines_.frameCount()) {
    p.setPen(Qt::black);
    const QString s = QString("frame %1: %2 to %3 s")
                          .arg(current_)
                          .arg(lines_.frameFirst[static_cast<std::size_t>(current_)], 0, 'g', 5)
                          .arg(lines_.frameLast[static_cast<std::size_t>(current_)], 0, 'g', 5);
    p.drawText(QPointF(L.drift.right() - fm.horizontalAdvance(s) - 8, ly), s);
  }
}

QRectF LineDriftPlot::zoomPanel(const QSize& size) const {
  if (lines_.empty()) return {};
  const Layout L = layout(size);
  return L.drift.united(L.jitter);
}

QString LineDriftPlot::readoutAt(QPointF pos) const {
  const Layout L = layout(size());
  const bool drift = L.drift.contains(pos), jitter = L.jitter.contains(pos);
  if (lines_.empty() || (!drift && !jitter)) return {};
  const auto vt = shown(t0_, t1_);
  const double t = plot::map(pos.x(), L.drift.left(), L.drift.right(), vt.first, vt.second);
  const QRectF& r = drift ? L.drift : L.jitter;
  const double v = plot::map(pos.y(), r.bottom(), r.top(), drift ? d0_ : j0_, drift ? d1_ : j1_);
  return QString("t %1 s, frame %2: %3 %4 %5")
      .arg(t, 0, 'g', 5)
      .arg(frameAtX(pos.x()))
      .arg(drift ? "drift" : "jitter")
      .arg(cal_.shown() ? QString::number(v * cal_.scale(), 'g', 4) : QString::number(v, 'f', 3))
      .arg(cal_.lengthUnit());
}

void LineDriftPlot::clickedAt(QPointF pos) {
  const Layout L = layout(size());
  if (lines_.empty() || pos.x() < L.drift.left() || pos.x() > L.drift.right()) return;
  const int k = frameAtX(pos.x());
  if (k < 0) return;
  current_ = k;
  update();
  emit frameSelected(k);
}
