#include "plots/chart_view.hpp"

#include <QGraphicsLayout>
#include <QGraphicsSimpleTextItem>
#include <QGraphicsTextItem>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QSvgGenerator>
#include <QWheelEvent>
#include <QtCharts/QChart>
#include <QtCharts/QLegend>
#include <QtCharts/QLegendMarker>
#include <QtCharts/QValueAxis>
#include <algorithm>
#include <cmath>

namespace {
const QMargins kMargins(4, 4, 12, 4);
}  // namespace

ChartView::ChartView(QWidget* parent) : QGraphicsView(parent) {
  setScene(new QGraphicsScene(this));
  // The scene is exactly the widget: widget and scene coordinates agree, no scrolling.
  setFrameShape(QFrame::NoFrame);
  setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  setAlignment(Qt::AlignLeft | Qt::AlignTop);
  setRenderHint(QPainter::Antialiasing);
  setBackgroundBrush(Qt::white);
  // The readout and the rubber band are drawn over the whole view.
  setViewportUpdateMode(QGraphicsView::FullViewportUpdate);
  // Mouse events are this class's (zoom, pan, readout), not the items'.
  setInteractive(false);
  setMouseTracking(true);
  setFocusPolicy(Qt::StrongFocus);
  // The empty state covers the charts rather than hiding them: Qt Charts
  // does not lay out a hidden chart, and its axes stay squeezed once shown.
  emptyCover_ = scene()->addRect(QRectF(), Qt::NoPen, Qt::white);
  emptyCover_->setZValue(10);
  emptyCover_->setVisible(false);
  emptyItem_ = scene()->addSimpleText({});
  emptyItem_->setBrush(Qt::darkGray);
  emptyItem_->setZValue(11);
  emptyItem_->setVisible(false);
}

QChart* ChartView::addChart() {
  auto* c = new QChart;
  c->setBackgroundRoundness(0);
  c->setMargins(kMargins);
  c->legend()->setAlignment(Qt::AlignTop);
  scene()->addItem(c);
  charts_.push_back(c);
  return c;
}

QStringList ChartView::truncatedTexts() const {
  QStringList cut;
  const QRectF sceneRect = scene()->sceneRect();
  for (QGraphicsItem* item : scene()->items()) {
    // Axis titles and labels are text items; Qt Charts ends a text it shortened with "...".
    const auto* text = dynamic_cast<const QGraphicsTextItem*>(item);
    if (!text || !text->isVisible() || !sceneRect.intersects(text->sceneBoundingRect())) continue;
    const QString t = text->toPlainText();
    if (t.endsWith("...") || t.endsWith(QChar(0x2026))) cut << t;
  }
  return cut;
}

void ChartView::setPixelSize(double size, const QString& unit) {
  cal_.recalibrate(size, unit);
  rebuild();
}

void ChartView::setPhysicalUnits(bool on) {
  cal_.physical = on;
  rebuild();
}

void ChartView::setCurrentFrame(int frame) {
  current_ = frame;
  showCurrent();
}

void ChartView::selectFrame(int frame) {
  setCurrentFrame(frame);
  emit frameSelected(frame);
}

void ChartView::linkXAxis(QChart* chart, QAbstractAxis* axis) {
  zoomCharts_.insert(chart);
  xAxes_.push_back(axis);
  applyXView();
}

void ChartView::setXRange(double lo, double hi) {
  x0_ = lo;
  x1_ = hi > lo ? hi : lo + 1;
  applyXView();
}

std::pair<double, double> ChartView::shown(double lo, double hi) const {
  return {lo + f0_ * (hi - lo), lo + f1_ * (hi - lo)};
}

void ChartView::setXView(double start, double end) {
  // At least 1/1000 of the axis stays shown; the view never leaves it.
  const double width = std::clamp(end - start, 1e-3, 1.0);
  f0_ = std::clamp(start, 0.0, 1.0 - width);
  f1_ = f0_ + width;
  if (f1_ > 1.0 - 1e-12) f1_ = 1.0;
  applyXView();
}

void ChartView::applyXView() {
  const auto [lo, hi] = shown(x0_, x1_);
  for (QAbstractAxis* a : xAxes_) {
    auto* v = qobject_cast<QValueAxis*>(a);
    if (v) setAxisRange(v, lo, hi);
    else a->setRange(lo, hi);
  }
  xViewChanged();
  viewport()->update();
}

namespace {
constexpr const char* kTickTarget = "driftscanTickTarget";
}  // namespace

void ChartView::useNiceTicks(QValueAxis* axis, int target) {
  axis->setProperty(kTickTarget, target);
  axis->setTickType(QValueAxis::TicksDynamic);
  axis->setTickAnchor(0.0);
  setAxisRange(axis, axis->min(), axis->max());
}

void ChartView::setAxisRange(QValueAxis* axis, double lo, double hi) {
  const int target = axis->property(kTickTarget).toInt();
  if (target <= 0 || !(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi)) {
    axis->setRange(lo, hi);
    return;
  }
  const double raw = (hi - lo) / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 10 * mag;
  for (double m : {1.0, 2.0, 5.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  // Fixed decimals, those of the interval: a tick at 0 computed as -0.08 +
  // 4 * 0.02 reads 0.00, not 6.9e-18 as with %g.
  axis->setLabelFormat(QString("%.%1f").arg(std::max(0, int(-std::floor(std::log10(step) + 1e-9)))));
  // Qt lays the ticks out at each change: the interval and the range must
  // never meet as a wide range with a fine interval (billions of ticks).
  if (step >= axis->tickInterval()) {
    axis->setTickInterval(step);
    axis->setRange(lo, hi);
  } else {
    axis->setRange(lo, hi);
    axis->setTickInterval(step);
  }
}

void ChartView::pad(double& lo, double& hi) {
  if (!(hi > lo)) {
    lo -= 0.5;
    hi += 0.5;
  }
  const double m = 0.05 * (hi - lo);
  lo -= m;
  hi += m;
}

QValueAxis* ChartView::addValueAxis(QChart* chart, Qt::Alignment side, const QString& title) {
  auto* a = new QValueAxis;
  a->setTitleText(title);
  useNiceTicks(a, side & (Qt::AlignLeft | Qt::AlignRight) ? 5 : 6);
  chart->addAxis(a, side);
  return a;
}

void ChartView::addSeries(QChart* chart, QAbstractSeries* series, QAbstractAxis* x, QAbstractAxis* y, bool inLegend) {
  chart->addSeries(series);
  series->attachAxis(x);
  series->attachAxis(y);
  if (!inLegend)
    for (QLegendMarker* m : chart->legend()->markers(series)) m->setVisible(false);
}

void ChartView::setEmptyText(const QString& text) {
  emptyText_ = text;
  emptyItem_->setText(text);
  emptyItem_->setVisible(!text.isEmpty());
  emptyCover_->setVisible(!text.isEmpty());
  relayout();
}

void ChartView::place(const QSizeF& size) {
  scene()->setSceneRect(QRectF(QPointF(0, 0), size));
  layoutCharts(size);
  emptyCover_->setRect(QRectF(QPointF(0, 0), size));
  const QRectF r = emptyItem_->boundingRect();
  emptyItem_->setPos((size.width() - r.width()) / 2, (size.height() - r.height()) / 2);
}

void ChartView::relayout() {
  place(viewport()->size());
  viewport()->update();
}

namespace {
// Qt lays a chart out at the next event loop pass; here it is needed now: an
// export renders right after, and a chart hidden at its last change of
// geometry was never laid out.
void lay_out_now(QChart* chart) {
  for (QGraphicsWidget* w : {static_cast<QGraphicsWidget*>(chart->legend()), static_cast<QGraphicsWidget*>(chart)})
    if (QGraphicsLayout* l = w->layout()) {
      l->invalidate();
      l->activate();
    }
}
}  // namespace

void ChartView::placeChart(QChart* chart, const QRectF& tile, const QMargins& extra) {
  chart->setMargins(kMargins + extra);
  chart->setGeometry(tile);
  lay_out_now(chart);
}

void ChartView::lineUp(const std::vector<QChart*>& charts) {
  double left = -INFINITY, right = INFINITY;
  for (QChart* c : charts) {
    const QRectF r = c->mapRectToScene(c->plotArea());
    left = std::max(left, r.left());
    right = std::min(right, r.right());
  }
  for (QChart* c : charts) {
    const QRectF r = c->mapRectToScene(c->plotArea());
    QMargins m = c->margins();
    m.setLeft(m.left() + int(std::lround(left - r.left())));
    m.setRight(m.right() + int(std::lround(r.right() - right)));
    c->setMargins(m);
    lay_out_now(c);
  }
}

void ChartView::makeSquare(QChart* chart) {
  const QRectF r = chart->plotArea();
  const int d = int(std::lround(r.width() - r.height()));
  QMargins m = chart->margins();
  if (d > 0) {
    m.setLeft(m.left() + d / 2);
    m.setRight(m.right() + d - d / 2);
  } else {
    m.setBottom(m.bottom() - d);
  }
  chart->setMargins(m);
  lay_out_now(chart);
}

QString ChartView::readoutAt(QPointF) const { return {}; }
void ChartView::clickedAt(QPointF) {}

QChart* ChartView::chartAt(QPointF pos) const {
  if (isEmpty()) return nullptr;
  const QPointF s = viewportTransform().inverted().map(pos);
  for (QChart* c : charts_)
    if (sceneRect().contains(c->mapRectToScene(c->plotArea())) && c->mapRectToScene(c->plotArea()).contains(s))
      return c;
  return nullptr;
}

QChart* ChartView::zoomChartAt(QPointF pos) const {
  QChart* c = chartAt(pos);
  return zoomCharts_.contains(c) ? c : nullptr;
}

QPointF ChartView::valueAt(QChart* chart, QPointF pos, QAbstractSeries* series) const {
  return chart->mapToValue(chart->mapFromScene(viewportTransform().inverted().map(pos)), series);
}

QPointF ChartView::positionOf(QChart* chart, QPointF value, QAbstractSeries* series) const {
  return viewportTransform().map(chart->mapToScene(chart->mapToPosition(value, series)));
}

void ChartView::resizeEvent(QResizeEvent* e) {
  QGraphicsView::resizeEvent(e);
  relayout();
}

void ChartView::drawForeground(QPainter* p, const QRectF&) {
  if (banding_ && dragging_) {
    // The rubber band: the frames it spans, over the whole panel height.
    if (QChart* c = zoomChartAt(pressAt_)) {
      const QRectF area = c->mapRectToScene(c->plotArea());
      const QRectF band(QPointF(std::clamp(pressAt_.x(), area.left(), area.right()), area.top()),
                        QPointF(std::clamp(readoutAt_.x(), area.left(), area.right()), area.bottom()));
      p->setPen(QPen(QColor(30, 90, 200), 1));
      p->setBrush(QColor(30, 90, 200, 40));
      p->drawRect(band.normalized());
    }
  }
  if (readout_.isEmpty()) return;
  // Beside the cursor, kept inside the widget.
  const QFontMetrics fm = p->fontMetrics();
  QRectF box(0, 0, fm.horizontalAdvance(readout_) + 12, fm.height() + 6);
  box.moveTopLeft(readoutAt_ + QPointF(14, 14));
  if (box.right() > width()) box.moveRight(readoutAt_.x() - 8);
  if (box.bottom() > height()) box.moveBottom(readoutAt_.y() - 8);
  p->setRenderHint(QPainter::Antialiasing, false);
  p->setPen(QColor(120, 120, 120));
  p->setBrush(QColor(255, 255, 225));
  p->drawRect(box);
  p->setPen(Qt::black);
  p->drawText(box, Qt::AlignCenter, readout_);
}

void ChartView::updateReadout(QPointF pos) {
  readout_ = readoutAt(pos);
  readoutAt_ = pos;
  viewport()->update();
}

void ChartView::wheelEvent(QWheelEvent* e) {
  QChart* c = zoomChartAt(e->position());
  const double steps = e->angleDelta().y() / 120.0;
  if (!c || steps == 0) {
    e->ignore();
    return;
  }
  // The axis point under the cursor stays under it.
  const QRectF area = c->mapRectToScene(c->plotArea());
  const double u = std::clamp((e->position().x() - area.left()) / area.width(), 0.0, 1.0);
  const double at = f0_ + u * (f1_ - f0_);
  const double width = std::clamp((f1_ - f0_) * std::pow(0.8, steps), 1e-3, 1.0);
  setXView(at - u * width, at - u * width + width);
  updateReadout(e->position());
  e->accept();
}

void ChartView::mousePressEvent(QMouseEvent* e) {
  const bool band =
      e->button() == Qt::RightButton || (e->button() == Qt::LeftButton && (e->modifiers() & Qt::ShiftModifier));
  if (e->button() != Qt::LeftButton && !band) return;
  pressed_ = true;
  banding_ = band;
  dragging_ = false;
  pressAt_ = e->position();
  pressF0_ = f0_;
}

void ChartView::mouseMoveEvent(QMouseEvent* e) {
  QChart* c = pressed_ ? zoomChartAt(pressAt_) : nullptr;
  if (c) {
    const double dx = e->position().x() - pressAt_.x();
    if (dragging_ || std::abs(dx) > 4) {  // a few pixels of slack: a shaky click is still a click
      if (!dragging_) cursorBeforeDrag_ = cursor();
      dragging_ = true;
      if (!banding_ && c->plotArea().width() > 0) {
        const double plotWidth = c->plotArea().width(), width = f1_ - f0_;
        setXView(pressF0_ - dx / plotWidth * width, pressF0_ - dx / plotWidth * width + width);
        setCursor(Qt::ClosedHandCursor);
      }
    }
  }
  updateReadout(e->position());
}

void ChartView::mouseReleaseEvent(QMouseEvent* e) {
  if (!pressed_ || (e->button() != Qt::LeftButton && e->button() != Qt::RightButton)) return;
  pressed_ = false;
  // The layout may have changed under the drag (a new result, a resize):
  // no plot under the press point any more means no zoom.
  QChart* c = banding_ && dragging_ ? zoomChartAt(pressAt_) : nullptr;
  if (c && c->plotArea().width() > 0) {
    const QRectF area = c->mapRectToScene(c->plotArea());
    auto fraction = [&](double x) {
      return f0_ + std::clamp((x - area.left()) / area.width(), 0.0, 1.0) * (f1_ - f0_);
    };
    const double a = fraction(pressAt_.x()), b = fraction(e->position().x());
    setXView(std::min(a, b), std::max(a, b));
  } else if (dragging_) {
    setCursor(cursorBeforeDrag_);
  } else if (e->button() == Qt::LeftButton) {
    clickedAt(e->position());
  }
  dragging_ = banding_ = false;
  updateReadout(e->position());
}

void ChartView::mouseDoubleClickEvent(QMouseEvent* e) {
  if (e->button() == Qt::LeftButton && zoomChartAt(e->position())) resetView();
}

void ChartView::keyPressEvent(QKeyEvent* e) {
  const double width = f1_ - f0_, mid = 0.5 * (f0_ + f1_);
  switch (e->key()) {
    case Qt::Key_Left: setXView(f0_ - 0.1 * width, f1_ - 0.1 * width); break;
    case Qt::Key_Right: setXView(f0_ + 0.1 * width, f1_ + 0.1 * width); break;
    case Qt::Key_Plus:
    case Qt::Key_Equal: setXView(mid - 0.4 * width, mid + 0.4 * width); break;
    case Qt::Key_Minus: setXView(mid - 0.625 * width, mid + 0.625 * width); break;
    case Qt::Key_Home:
    case Qt::Key_0: resetView(); break;
    default: QGraphicsView::keyPressEvent(e); return;
  }
  e->accept();
}

void ChartView::leaveEvent(QEvent*) {
  readout_.clear();
  viewport()->update();
}

bool ChartView::renderTo(QPaintDevice* device, QSize size) {
  const QSize own = viewport()->size();
  if (size.isEmpty()) size = own;
  // Laid out at the export's size, then back at the widget's.
  place(size);
  QPainter p;
  if (!p.begin(device)) {
    relayout();
    return false;
  }
  p.setRenderHint(QPainter::Antialiasing);
  p.fillRect(QRect(QPoint(0, 0), size), Qt::white);
  scene()->render(&p, QRectF(QPoint(0, 0), size), QRectF(QPoint(0, 0), size));
  const bool ok = p.end();
  relayout();
  return ok;
}

QImage ChartView::toImage(QSize size) {
  if (size.isEmpty()) size = viewport()->size();
  QImage img(size, QImage::Format_RGB32);
  img.fill(Qt::white);
  renderTo(&img, size);
  return img;
}

bool ChartView::exportPng(const QString& path, QSize size) { return toImage(size).save(path, "PNG"); }

bool ChartView::exportSvg(const QString& path, QSize size) {
  if (size.isEmpty()) size = viewport()->size();
  QSvgGenerator gen;
  gen.setFileName(path);
  gen.setSize(size);
  gen.setViewBox(QRect(QPoint(0, 0), size));
  gen.setTitle("DriftScan plot");
  return renderTo(&gen, size);
}
