#include "plots/scan_sweep_plot.hpp"

#include <QKeyEvent>
#include <QtCharts/QChart>
#include <QtCharts/QLineSeries>
#include <QtCharts/QLogValueAxis>
#include <QtCharts/QScatterSeries>
#include <QtCharts/QValueAxis>
#include <algorithm>
#include <cmath>
#include <map>

namespace {
QColor algorithm_colour(const QString& algorithm) {
  static const std::map<QString, QColor> colours{{"blelloch", QColor(31, 119, 180)},
                                                 {"dissemination", QColor(255, 127, 14)},
                                                 {"ladner-fischer", QColor(44, 160, 44)},
                                                 {"mpi-scan", QColor(214, 39, 40)}};
  auto it = colours.find(algorithm);
  return it != colours.end() ? it->second : QColor(127, 127, 127);
}

// The median of each worker count's values, in worker order.
QList<QPointF> medians(const std::map<int, std::vector<double>>& byCount) {
  QList<QPointF> line;
  for (auto [count, values] : byCount) {
    std::sort(values.begin(), values.end());
    line.append(QPointF(count, values[values.size() / 2]));
  }
  return line;
}
}  // namespace

ScanSweepPlot::ScanSweepPlot(QWidget* parent) : ChartView(parent) {
  setMinimumSize(400, 300);
  speedup_ = addChart();
  efficiency_ = addChart();
  setEmptyText("No scan sweep: File > Open scan sweep (scripts/scan-sweep's scan_sweep.csv).");
}

void ScanSweepPlot::setTable(ScanSweepTable table) {
  table_ = std::move(table);
  const auto ks = table_.elementsPerWorker();
  k_ = ks.empty() ? 0 : ks.back();  // the most elements per worker: the least granular
  rebuild();
}

void ScanSweepPlot::setElementsPerWorker(int k) {
  const auto ks = table_.elementsPerWorker();
  if (std::find(ks.begin(), ks.end(), k) == ks.end()) return;
  k_ = k;
  rebuild();
}

int ScanSweepPlot::speedupSeriesCount() const { return int(speedup_->series().size()); }

void ScanSweepPlot::rebuild() {
  double mean = 0;
  for (const auto& r : table_.rows)
    if (r.elementsPerWorker == k_) mean = r.meanMs;
  const auto ks = table_.elementsPerWorker();
  QString others;
  for (int k : ks)
    if (k != k_) others += QString(others.isEmpty() ? "K=%1" : ", K=%1").arg(k);
  for (auto [chart, title, field] :
       {std::tuple{speedup_, QString("work stealing: speedup over the static scan"), 0},
        std::tuple{efficiency_, QString("work stealing: efficiency (work bound / makespan)"), 1}}) {
    chart->removeAllSeries();
    for (QAbstractAxis* a : chart->axes()) {
      chart->removeAxis(a);
      delete a;
    }
    chart->setTitle(QString("%1 — K=%2, exponential mean %3 ms%4")
                        .arg(title)
                        .arg(k_)
                        .arg(mean)
                        .arg(others.isEmpty() ? QString() : QString(" (key K: %1)").arg(others)));
    auto* x = new QLogValueAxis;
    x->setBase(2);
    x->setLabelFormat("%d");
    x->setTitleText("workers (ranks x threads; several shapes per count)");
    chart->addAxis(x, Qt::AlignBottom);
    QValueAxis* y = addValueAxis(chart, Qt::AlignLeft, field == 0 ? "speedup (x static)" : "efficiency");
    double lo = 1e300, hi = -1e300, wlo = 1e300, whi = -1e300;
    std::map<QString, std::pair<std::map<int, std::vector<double>>, std::map<int, std::vector<double>>>> byAlg;
    for (const auto& r : table_.rows) {
      if (r.elementsPerWorker != k_ || r.strategy != "work-stealing") continue;
      const double measured = field == 0 ? r.speedup : r.efficiency;
      const double model = field == 0 ? r.modelSpeedup : r.modelEfficiency;
      byAlg[r.algorithm].first[r.workers].push_back(measured);
      byAlg[r.algorithm].second[r.workers].push_back(model);
      lo = std::min({lo, measured, model});
      hi = std::max({hi, measured, model});
      wlo = std::min(wlo, double(r.workers));
      whi = std::max(whi, double(r.workers));
    }
    for (const auto& [algorithm, values] : byAlg) {
      for (int which = 0; which < 2; ++which) {
        const auto& byCount = which == 0 ? values.first : values.second;
        auto* points = new QScatterSeries;
        points->setMarkerSize(7);
        points->setColor(algorithm_colour(algorithm));
        points->setBorderColor(algorithm_colour(algorithm));
        if (which == 1) points->setMarkerShape(QScatterSeries::MarkerShapeRectangle);
        for (const auto& [count, vs] : byCount)
          for (double v : vs) points->append(count, v);
        addSeries(chart, points, x, y, false);
        auto* line = new QLineSeries;
        line->setName(algorithm + (which == 0 ? " measured" : " model"));
        line->replace(medians(byCount));
        QPen pen(algorithm_colour(algorithm), 2, which == 0 ? Qt::SolidLine : Qt::DashLine);
        line->setPen(pen);
        addSeries(chart, line, x, y, true);
      }
    }
    if (lo > hi) lo = 0, hi = 1, wlo = 1, whi = 2;
    pad(lo, hi);
    setAxisRange(y, lo, hi);
    x->setRange(wlo / 1.3, whi * 1.3);
  }
  setEmptyText(table_.rows.empty() ? "No scan sweep: File > Open scan sweep (scripts/scan-sweep's scan_sweep.csv)."
                                   : QString());
  relayout();
}

void ScanSweepPlot::layoutCharts(const QSizeF& s) {
  const double h = s.height() / 2;
  placeChart(speedup_, QRectF(0, 0, s.width(), h));
  placeChart(efficiency_, QRectF(0, h, s.width(), h));
  lineUp({speedup_, efficiency_});
}

QString ScanSweepPlot::readoutAt(QPointF pos) const {
  QChart* chart = chartAt(pos);
  if (!chart || table_.rows.empty() || chart->series().isEmpty()) return {};
  const QPointF v = valueAt(chart, pos);
  const bool speed = chart == speedup_;
  // The nearest worker count's shapes, with measured and model figures.
  int best = 0;
  for (const auto& r : table_.rows)
    if (r.elementsPerWorker == k_ && (best == 0 || std::abs(std::log2(double(r.workers)) - std::log2(v.x())) <
                                                       std::abs(std::log2(double(best)) - std::log2(v.x()))))
      best = r.workers;
  QString text = QString("%1 workers:").arg(best);
  for (const auto& r : table_.rows)
    if (r.elementsPerWorker == k_ && r.workers == best && r.strategy == "work-stealing" &&
        r.algorithm == "dissemination")
      text += QString(" %1x%2 %3 %4 (model %5)")
                  .arg(r.ranks)
                  .arg(r.threads)
                  .arg(speed ? "speedup" : "efficiency")
                  .arg(speed ? r.speedup : r.efficiency, 0, 'f', 3)
                  .arg(speed ? r.modelSpeedup : r.modelEfficiency, 0, 'f', 3);
  return text + " (dissemination)";
}

void ScanSweepPlot::keyPressEvent(QKeyEvent* e) {
  if (e->key() == Qt::Key_K) {
    const auto ks = table_.elementsPerWorker();
    auto it = std::find(ks.begin(), ks.end(), k_);
    if (it != ks.end()) setElementsPerWorker(++it == ks.end() ? ks.front() : *it);
    return;
  }
  ChartView::keyPressEvent(e);
}
