#pragma once
// Load imbalance of the scan: a Gantt chart with one row per worker (rank ×
// thread) and one bar per operator application, coloured by phase, stolen
// applications hatched; idle time per worker and the imbalance factor
// (max busy / mean busy) from the run's trace.
#include "plot_widget.hpp"
#include "result_set.hpp"

class ImbalanceView : public PlotWidget {
  Q_OBJECT
 public:
  explicit ImbalanceView(QWidget* parent = nullptr);
  void setTrace(ScanTraceData trace);
  const ScanTraceData& trace() const { return trace_; }
  int rowCount() const { return int(trace_.workers.size()); }
  void render(QPainter& p, const QSize& size) const override;

 protected:
  QRectF zoomPanel(const QSize& size) const override;
  QString readoutAt(QPointF pos) const override;

 private:
  static constexpr double kRight = 250;      // room for the per-worker totals
  QRectF plotArea(const QSize& size) const;  // the chart, one row per worker

  ScanTraceData trace_;
};
