#pragma once
// The scan's scaling figure from scripts/scan-sweep's CSV: work stealing's
// speedup over the static scan (top) and its efficiency (bottom) against the
// worker count, per global algorithm, measured (solid, every shape a point,
// the line through the median of each worker count) beside the cost model
// (dashed). One K at a time, the largest first: the K key (or
// setElementsPerWorker) switches.
#include <QString>

#include "plots/chart_view.hpp"
#include "project/scan_sweep_table.hpp"

class QLogValueAxis;

class ScanSweepPlot : public ChartView {
  Q_OBJECT
 public:
  explicit ScanSweepPlot(QWidget* parent = nullptr);
  void setTable(ScanSweepTable table);
  const ScanSweepTable& table() const { return table_; }
  // Shows the rows with this K (ignored when the table has none).
  void setElementsPerWorker(int k);
  int elementsPerWorker() const { return k_; }
  // Series drawn on the speedup panel (for tests).
  int speedupSeriesCount() const;

 protected:
  void layoutCharts(const QSizeF& size) override;
  QString readoutAt(QPointF pos) const override;
  void keyPressEvent(QKeyEvent* e) override;

 private:
  void rebuild() override;

  QChart* speedup_;
  QChart* efficiency_;
  ScanSweepTable table_;
  int k_ = 0;
};
