#pragma once
// Load imbalance of the scan: a Gantt chart with one row per worker (rank ×
// thread) and one bar per operator application, coloured by phase, stolen
// applications hatched; idle time per worker and the imbalance factor
// (max busy / mean busy) from the run's trace.
#include <vector>

#include "plots/chart_view.hpp"
#include "project/result_set.hpp"

class QCategoryAxis;
class QValueAxis;

class ImbalanceView : public ChartView {
  Q_OBJECT
 public:
  explicit ImbalanceView(QWidget* parent = nullptr);
  void setTrace(ScanTraceData trace);
  const ScanTraceData& trace() const { return trace_; }
  int rowCount() const { return int(trace_.workers.size()); }
  // Widget point of time t (s) in the middle of worker row `row` (for tests).
  QPointF pointAt(double t, int row) const;

 protected:
  void layoutCharts(const QSizeF& size) override;
  QString readoutAt(QPointF pos) const override;

 private:
  QChart* chart_;
  QValueAxis* time_;
  // Row names on the left: one row per unit of y.
  QCategoryAxis* names_;
  // Per-worker totals right of the rows (a right-hand axis would cut them short).
  std::vector<QGraphicsSimpleTextItem*> totals_;
  ScanTraceData trace_;
};
