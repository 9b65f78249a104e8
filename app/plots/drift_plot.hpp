#pragma once
// Drift of a registered series: dx and dy against frame with their ±2σ bands,
// the 2-D trajectory and the per-frame quality (frames left out of the
// average marked). Clicking a point selects that frame.
#include <vector>

#include "plots/chart_view.hpp"
#include "project/result_set.hpp"

class QLineSeries;
class QScatterSeries;
class QValueAxis;

class DriftPlot : public ChartView {
  Q_OBJECT
 public:
  explicit DriftPlot(QWidget* parent = nullptr);
  // keepView: the same series grown (a follow): the zoom stays, as fractions of the frame axis.
  void setDrift(std::vector<DriftRow> rows, bool keepView = false);
  QString calibrationText() const;
  // Shift axis range [lo, hi] as labelled (in the shown unit).
  std::pair<double, double> shiftAxisRange() const;
  QString shiftAxisLabel() const;
  const std::vector<DriftRow>& drift() const { return rows_; }
  int pointCount() const { return int(rows_.size()); }
  // Position of frame k's point in the dx/dy panel (widget coordinates; for tests).
  QPointF pointPosition(int index) const;
  // The frame axis as shown (zoomed and panned).
  std::pair<double, double> frameRange() const { return shown(xmin_, xmax_); }

 protected:
  void layoutCharts(const QSizeF& size) override;
  QString readoutAt(QPointF pos) const override;
  void clickedAt(QPointF pos) override;
  void rebuild() override;
  void showCurrent() override;

 private:
  // The frame nearest to widget point `pos` (-1: none near).
  int nearestFrame(QPointF pos) const;

  QChart *series_, *quality_, *trajectory_;
  QValueAxis *seriesX_, *seriesY_, *qualityX_, *qualityY_, *trajectoryX_, *trajectoryY_;
  QLineSeries* currentLine_ = nullptr;
  QScatterSeries* currentDot_ = nullptr;
  QGraphicsSimpleTextItem* currentText_;
  std::vector<DriftRow> rows_;
  double xmin_ = 0, xmax_ = 1, dmin_ = -1, dmax_ = 1;  // series axes (px)
  double tx0_ = -1, tx1_ = 1, ty0_ = -1, ty1_ = 1;     // trajectory axes (px)
  bool hasQuality_ = false;
};
