#pragma once
// The drift of a scan-distortion run at line resolution: dx(t) and dy(t) as
// curves over acquisition time with the frame boundaries marked (and the
// frames numbered above while they fit), the rigid one-shift-per-frame drift
// as dots for comparison, and each line's fast-axis offset (jitter) in its
// own panel. Clicking selects a frame.
#include <vector>

#include "chart_view.hpp"
#include "line_drift_series.hpp"
#include "pixel_calibration.hpp"
#include "result_set.hpp"

class QAreaSeries;
class QCategoryAxis;
class QValueAxis;

class LineDriftPlot : public ChartView {
  Q_OBJECT
 public:
  explicit LineDriftPlot(QWidget* parent = nullptr);
  // `rigid`: the run's drift.csv rows (frame 0 = 0); drawn at each frame's
  // mid-time, moved so that frame 0's dot sits on the curve there.
  void setSeries(LineDriftSeries lines, std::vector<DriftRow> rigid);
  const LineDriftSeries& series() const { return lines_; }
  int pointCount() const { return static_cast<int>(lines_.t.size()); }
  // Frame boundaries drawn (none when there are too many frames to see them).
  int boundaryCount() const;
  // The series' calibration (as DriftPlot's): drift and jitter in the unit when known.
  void setPixelSize(double size, const QString& unit);
  void setPhysicalUnits(bool on);
  const PixelCalibration& calibration() const { return cal_; }
  // The frame whose acquisition spans the time under widget x (-1: none).
  int frameAtX(double x) const;
  // Widget x of acquisition time t (for tests).
  double xOfTime(double t) const;

 public slots:
  void setCurrentFrame(int frame);

 signals:
  void frameSelected(int frame);

 protected:
  void layoutCharts(const QSizeF& size) override;
  QString readoutAt(QPointF pos) const override;
  void clickedAt(QPointF pos) override;

 private:
  void rebuild();
  void showCurrent();
  double frameMid(int k) const;

  QChart *drift_, *jitter_;
  QValueAxis *driftX_, *driftY_, *jitterX_, *jitterY_;
  // Frames as categories of a top axis: its grid lines are the boundaries.
  QCategoryAxis *driftFrames_, *jitterFrames_;
  QAreaSeries *driftSpan_ = nullptr, *jitterSpan_ = nullptr;  // the current frame's span
  QGraphicsSimpleTextItem* currentText_;
  LineDriftSeries lines_;
  std::vector<DriftRow> rigid_;
  double rigidOffsetX_ = 0, rigidOffsetY_ = 0;
  PixelCalibration cal_;
  int current_ = -1;
  double t0_ = 0, t1_ = 1, d0_ = -1, d1_ = 1, j0_ = -1, j1_ = 1;
};
