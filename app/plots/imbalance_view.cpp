#include "plots/imbalance_view.hpp"

#include <QGraphicsSimpleTextItem>
#include <QtCharts/QAreaSeries>
#include <QtCharts/QCategoryAxis>
#include <QtCharts/QChart>
#include <QtCharts/QLineSeries>
#include <QtCharts/QValueAxis>
#include <algorithm>
#include <map>

namespace {
QColor phase_colour(const QString& phase) {
  static const std::map<QString, QColor> colours{
      {"local-reduce", QColor(31, 119, 180)},    {"local-scan", QColor(23, 190, 207)},
      {"thread-combine", QColor(148, 103, 189)}, {"global", QColor(214, 39, 40)},
      {"final-scan", QColor(44, 160, 44)},       {"map", QColor(188, 189, 34)}};
  auto it = colours.find(phase);
  return it != colours.end() ? it->second : QColor(127, 127, 127);
}
constexpr double kMaxRowHeight = 70;

QCategoryAxis* row_axis(QChart* chart, Qt::Alignment side) {
  auto* a = new QCategoryAxis;
  a->setLabelsPosition(QCategoryAxis::AxisLabelsPositionCenter);
  a->setReverse(true);  // the first worker at the top
  a->setGridLineVisible(false);
  chart->addAxis(a, side);
  return a;
}
}  // namespace

ImbalanceView::ImbalanceView(QWidget* parent) : ChartView(parent) {
  setMinimumSize(400, 200);
  chart_ = addChart();
  time_ = addValueAxis(chart_, Qt::AlignBottom, "time since the scan started (s)");
  names_ = row_axis(chart_, Qt::AlignLeft);
  // Alternating row backgrounds: idle time is what shows through.
  names_->setShadesVisible(true);
  names_->setShadesPen(Qt::NoPen);
  names_->setShadesBrush(QColor(236, 236, 236));
  linkXAxis(chart_, time_);
  setTrace({});
}

void ImbalanceView::setTrace(ScanTraceData trace) {
  trace_ = std::move(trace);
  std::sort(trace_.workers.begin(), trace_.workers.end(), [](const WorkerRow& a, const WorkerRow& b) {
    return std::make_pair(a.rank, a.thread) < std::make_pair(b.rank, b.thread);
  });
  chart_->removeAllSeries();
  const int rows = int(trace_.workers.size());
  std::map<std::pair<int, int>, int> rowOf;
  double busySum = 0, idleSum = 0;
  for (const QString& label : names_->categoriesLabels()) names_->remove(label);
  for (QGraphicsSimpleTextItem* t : totals_) delete t;
  totals_.clear();
  for (int i = 0; i < rows; ++i) {
    const WorkerRow& w = trace_.workers[std::size_t(i)];
    rowOf[{w.rank, w.thread}] = i;
    busySum += w.busy_s;
    idleSum += w.idle_s;
    names_->append(QString("r%1 t%2").arg(w.rank).arg(w.thread), i + 1);
    totals_.push_back(new QGraphicsSimpleTextItem(QString("busy %1 s, idle %2 s%3")
                                                      .arg(w.busy_s, 0, 'g', 3)
                                                      .arg(w.idle_s, 0, 'g', 3)
                                                      .arg(w.stolen ? QString(", %1 stolen").arg(w.stolen) : QString()),
                                                  chart_));
  }
  names_->setRange(0, std::max(1, rows));

  // Short enough for the default window whatever the figures' digits (a
  // makespan of 0.003872 s cut the longer title of before).
  chart_->setTitle(QString("Scan load balance: %1 rank(s) x %2 thread(s), makespan %3 s, imbalance %4 "
                           "(max/mean busy)")
                       .arg(trace_.ranks)
                       .arg(trace_.threads)
                       .arg(trace_.makespan_s, 0, 'g', 3)
                       .arg(trace_.imbalance, 0, 'f', 3));
  // The totals under the time axis (a chart title is one line).
  time_->setTitleText(QString("time since the scan started (s); %1 applications, idle %2 s (%3% of worker time)")
                          .arg(trace_.records.size())
                          .arg(idleSum, 0, 'g', 4)
                          .arg(busySum + idleSum > 0 ? 100.0 * idleSum / (busySum + idleSum) : 0.0, 0, 'f', 1));

  // One area per worker and phase (and one for the stolen ones): its upper
  // edge steps up to the bar's top over each application, so a few series
  // draw thousands of bars.
  std::vector<TraceRecord> records = trace_.records;
  std::sort(records.begin(), records.end(),
            [](const TraceRecord& a, const TraceRecord& b) { return a.start_s < b.start_s; });
  QStringList phases;
  std::map<std::pair<int, QString>, QList<QPointF>> steps;  // (row, phase; "" = stolen) -> upper edge
  for (const TraceRecord& r : records) {
    auto it = rowOf.find({r.rank, r.thread});
    if (it == rowOf.end()) continue;
    if (!phases.contains(r.phase)) phases << r.phase;
    const double lo = it->second + 0.15, hi = it->second + 0.85;
    for (const QString& key : r.stolen ? QStringList{r.phase, QString()} : QStringList{r.phase})
      steps[{it->second, key}].append({{r.start_s, lo}, {r.start_s, hi}, {r.end_s, hi}, {r.end_s, lo}});
  }
  QStringList named;
  for (const QString& key : phases + QStringList{QString()})
    for (const auto& [rowKey, upper] : steps) {
      if (rowKey.second != key) continue;
      const double lo = rowKey.first + 0.15;
      auto* area = new QAreaSeries(new QLineSeries, new QLineSeries);
      area->upperSeries()->setParent(area);
      area->lowerSeries()->setParent(area);
      area->upperSeries()->replace(upper);
      area->lowerSeries()->append({{upper.front().x(), lo}, {upper.back().x(), lo}});
      area->setName(key.isEmpty() ? "stolen" : key);
      area->setPen(Qt::NoPen);
      area->setBrush(key.isEmpty() ? QBrush(Qt::black, Qt::BDiagPattern) : QBrush(phase_colour(key)));
      addSeries(chart_, area, time_, names_, !named.contains(area->name()));
      named << area->name();
    }
  setXRange(0.0, std::max(trace_.makespan_s, 1e-9));
  resetView();
  setEmptyText(trace_.workers.empty() ? "No scan trace: run a registration (report.json holds the trace)." : QString());
}

void ImbalanceView::layoutCharts(const QSizeF& s) {
  double widest = 0;
  for (const QGraphicsSimpleTextItem* t : totals_) widest = std::max(widest, t->boundingRect().width());
  const QMargins room(0, 0, int(widest) + 12, 0);
  placeChart(chart_, QRectF(QPointF(0, 0), s), room);
  // Rows no higher than kMaxRowHeight: a few workers do not fill the height with grey.
  const double excess = chart_->plotArea().height() - kMaxRowHeight * std::max(1, rowCount());
  if (excess > 0) placeChart(chart_, QRectF(0, 0, s.width(), s.height() - excess), room);
  const QRectF area = chart_->plotArea();
  for (std::size_t i = 0; i < totals_.size(); ++i) {
    const double y = chart_->mapToPosition(QPointF(0, double(i) + 0.5)).y();
    totals_[i]->setPos(area.right() + 8, y - totals_[i]->boundingRect().height() / 2);
  }
}

QPointF ImbalanceView::pointAt(double t, int row) const { return positionOf(chart_, QPointF(t, row + 0.5)); }

QString ImbalanceView::readoutAt(QPointF pos) const {
  if (trace_.workers.empty() || !chartAt(pos)) return {};
  const QPointF v = valueAt(chart_, pos);
  const double t = v.x();
  const int row = std::clamp(int(v.y()), 0, rowCount() - 1);
  const WorkerRow& w = trace_.workers[std::size_t(row)];
  QString text = QString("t %1 s, rank %2 thread %3").arg(t, 0, 'g', 5).arg(w.rank).arg(w.thread);
  for (const auto& r : trace_.records)
    if (r.rank == w.rank && r.thread == w.thread && r.start_s <= t && t <= r.end_s) {
      text += QString(": %1, elements %2..%3%4").arg(r.phase).arg(r.first).arg(r.last).arg(r.stolen ? " (stolen)" : "");
      return text;
    }
  return text + ": idle";
}
