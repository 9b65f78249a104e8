#include "imbalance_view.hpp"

#include <QPainter>
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
}  // namespace

ImbalanceView::ImbalanceView(QWidget* parent) : PlotWidget(parent) { setMinimumSize(400, 200); }

QRectF ImbalanceView::plotArea(const QSize& size) const {
  const double left = 90, top = 56, bottom = 70;
  const int rows = std::max<int>(1, int(trace_.workers.size()));
  const double plotW = std::max(100.0, size.width() - left - kRight);
  const double rowH = std::max(4.0, std::min(70.0, (size.height() - top - bottom) / rows));
  return {left, top, plotW, rowH * rows};
}

QRectF ImbalanceView::zoomPanel(const QSize& size) const { return trace_.workers.empty() ? QRectF() : plotArea(size); }

QString ImbalanceView::readoutAt(QPointF pos) const {
  const QRectF area = plotArea(size());
  if (trace_.workers.empty() || !area.contains(pos)) return {};
  const auto [t0, t1] = shown(0.0, std::max(trace_.makespan_s, 1e-9));
  const double t = plot::map(pos.x(), area.left(), area.right(), t0, t1);
  const int row = std::clamp(int((pos.y() - area.top()) / (area.height() / double(trace_.workers.size()))), 0,
                             int(trace_.workers.size()) - 1);
  const WorkerRow& w = trace_.workers[std::size_t(row)];
  QString text = QString("t %1 s, rank %2 thread %3").arg(t, 0, 'g', 5).arg(w.rank).arg(w.thread);
  for (const auto& r : trace_.records)
    if (r.rank == w.rank && r.thread == w.thread && r.start_s <= t && t <= r.end_s) {
      text += QString(": %1, elements %2..%3%4").arg(r.phase).arg(r.first).arg(r.last).arg(r.stolen ? " (stolen)" : "");
      return text;
    }
  return text + ": idle";
}

void ImbalanceView::setTrace(ScanTraceData trace) {
  trace_ = std::move(trace);
  resetView();
  std::sort(trace_.workers.begin(), trace_.workers.end(), [](const WorkerRow& a, const WorkerRow& b) {
    return std::make_pair(a.rank, a.thread) < std::make_pair(b.rank, b.thread);
  });
  update();
}

void ImbalanceView::render(QPainter& p, const QSize& size) const {
  p.fillRect(QRect(QPoint(0, 0), size), Qt::white);
  p.setRenderHint(QPainter::Antialiasing, false);
  if (trace_.workers.empty()) {
    p.setPen(Qt::darkGray);
    p.drawText(QRect(QPoint(0, 0), size), Qt::AlignCenter,
               "No scan trace: run a registration (report.json holds the trace).");
    return;
  }
  const QFontMetrics fm = p.fontMetrics();
  const QRectF area = plotArea(size);
  const double left = area.left(), right = kRight, top = area.top();
  const int rows = int(trace_.workers.size());
  const double plotW = area.width(), plotH = area.height(), rowH = plotH / rows;
  const auto range = shown(0.0, std::max(trace_.makespan_s, 1e-9));
  const double t0 = range.first, t1 = range.second;  // C++17: lambdas cannot capture structured bindings
  auto X = [&](double t) { return left + (t - t0) / (t1 - t0) * plotW; };
  std::map<std::pair<int, int>, int> rowOf;
  for (int i = 0; i < rows; ++i)
    rowOf[{trace_.workers[std::size_t(i)].rank, trace_.workers[std::size_t(i)].thread}] = i;

  double busySum = 0, idleSum = 0, busyMax = 0;
  for (const auto& w : trace_.workers) {
    busySum += w.busy_s;
    idleSum += w.idle_s;
    busyMax = std::max(busyMax, w.busy_s);
  }
  QFont bold = p.font();
  bold.setBold(true);
  p.save();
  p.setFont(bold);
  p.setPen(Qt::black);
  p.drawText(QPointF(left, 20),
             QString("Scan load balance: %1 rank(s) x %2 thread(s), makespan %3 s, imbalance factor %4 (max/mean busy)")
                 .arg(trace_.ranks)
                 .arg(trace_.threads)
                 .arg(trace_.makespan_s, 0, 'g', 4)
                 .arg(trace_.imbalance, 0, 'f', 3));
  p.restore();
  p.drawText(QPointF(left, 38),
             QString("%1 operator applications, total idle %2 s (%3% of worker time)")
                 .arg(trace_.records.size())
                 .arg(idleSum, 0, 'g', 4)
                 .arg(busySum + idleSum > 0 ? 100.0 * idleSum / (busySum + idleSum) : 0.0, 0, 'f', 1));

  // Rows: alternating background = idle time, bars = operator applications.
  for (int i = 0; i < rows; ++i) {
    const auto& w = trace_.workers[std::size_t(i)];
    const QRectF row(left, top + i * rowH, plotW, rowH);
    p.fillRect(row, i % 2 ? QColor(246, 246, 246) : QColor(236, 236, 236));
    p.setPen(Qt::black);
    p.drawText(QRectF(4, row.top(), left - 10, rowH), Qt::AlignRight | Qt::AlignVCenter,
               QString("r%1 t%2").arg(w.rank).arg(w.thread));
    p.drawText(QRectF(left + plotW + 8, row.top(), right - 8, rowH), Qt::AlignLeft | Qt::AlignVCenter,
               QString("busy %1 s, idle %2 s%3")
                   .arg(w.busy_s, 0, 'g', 3)
                   .arg(w.idle_s, 0, 'g', 3)
                   .arg(w.stolen ? QString(", %1 stolen").arg(w.stolen) : QString()));
  }
  p.save();
  p.setClipRect(area);  // zoomed: bars beyond the shown time are cut at the frame
  for (const auto& r : trace_.records) {
    auto it = rowOf.find({r.rank, r.thread});
    if (it == rowOf.end()) continue;
    const double y = top + it->second * rowH;
    QRectF bar(X(r.start_s), y + rowH * 0.15, std::max(1.0, X(r.end_s) - X(r.start_s)), rowH * 0.7);
    p.fillRect(bar, phase_colour(r.phase));
    if (r.stolen) {
      p.fillRect(bar, QBrush(Qt::black, Qt::BDiagPattern));
      p.setPen(QPen(Qt::black, 1.5));
      p.drawRect(bar);
    } else if (bar.width() > 3) {
      p.setPen(QPen(Qt::white, 0.5));
      p.drawRect(bar);
    }
  }
  p.restore();
  // Time axis.
  p.setPen(Qt::black);
  p.drawRect(QRectF(left, top, plotW, plotH));
  for (double t : nice_ticks(t0, t1)) {
    const double x = X(t);
    p.drawLine(QPointF(x, top + plotH), QPointF(x, top + plotH + 4));
    const QString s = QString::number(t, 'g', 4);
    p.drawText(QPointF(x - fm.horizontalAdvance(s) / 2.0, top + plotH + 6 + fm.ascent()), s);
  }
  p.drawText(QRectF(left, top + plotH + 8 + fm.height(), plotW, fm.height()), Qt::AlignCenter,
             "time since the scan started (s)");
  // Legend.
  double lx = left;
  const double ly = top + plotH + 16 + 2 * fm.height();
  QStringList phases;
  for (const auto& r : trace_.records)
    if (!phases.contains(r.phase)) phases << r.phase;
  for (const QString& ph : phases) {
    p.fillRect(QRectF(lx, ly, 14, 10), phase_colour(ph));
    p.drawText(QPointF(lx + 18, ly + 10), ph);
    lx += 30 + fm.horizontalAdvance(ph);
  }
  QRectF st(lx, ly, 14, 10);
  p.fillRect(st, QColor(160, 160, 160));
  p.fillRect(st, QBrush(Qt::black, Qt::BDiagPattern));
  p.drawText(QPointF(lx + 18, ly + 10), "stolen");
}
