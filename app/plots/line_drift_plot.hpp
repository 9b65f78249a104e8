#pragma once
// The drift of a scan-distortion run at line resolution: dx(t) and dy(t) as
// curves over acquisition time with the frame boundaries marked (and the
// frames numbered above while they fit), the rigid one-shift-per-frame drift
// as dots for comparison, and each line's fast-axis offset (jitter) in its
// own panel, each with its +-1 sigma band when lines.csv has the sigma
// columns (translucent, over the curve). Clicking selects a frame. With a line field (fly-back
// hysteresis), a third panel: the field over a line's first samples, the
// series' mean and the current frame's.
//
// A QLineSeries has no gaps: one series over all frames joins each frame's
// last line to the next frame's first across the fly-back, a straight segment
// that is no drift. While at most kMaxSplitFrames frames are in view each
// frame has its own series (rebuilt when zooming or panning brings frames
// into view that have none); beyond that one joined series per curve, so
// named in the legend.
#include <utility>
#include <vector>

#include "driftscan/scan_distortion/line_field.hpp"
#include "plots/chart_view.hpp"
#include "project/line_drift_series.hpp"
#include "project/result_set.hpp"

class QAreaSeries;
class QCategoryAxis;
class QLineSeries;
class QValueAxis;

class LineDriftPlot : public ChartView {
  Q_OBJECT
 public:
  explicit LineDriftPlot(QWidget* parent = nullptr);
  // `rigid`: the run's drift.csv rows (frame 0 = 0); drawn at each frame's
  // mid-time, moved so that frame 0's dot sits on the curve there.
  void setSeries(LineDriftSeries lines, std::vector<DriftRow> rigid);
  // The run's line fields (line_field.csv; empty: the panel is hidden).
  void setLineField(driftscan::LineFieldTable field);
  bool hasLineField() const { return !field_.fields.empty(); }
  // The field panel's curves: the mean over the frames, the current frame's
  // (empty when no frame is current), in the shown unit.
  const QLineSeries* fieldMeanCurve() const { return fieldMean_; }
  const QLineSeries* fieldFrameCurve() const { return fieldFrame_; }
  const LineDriftSeries& series() const { return lines_; }
  int pointCount() const { return static_cast<int>(lines_.t.size()); }
  // Frame boundaries drawn (none when there are too many frames to see them).
  int boundaryCount() const;
  // The frame whose acquisition spans the time under widget x (-1: none).
  int frameAtX(double x) const;
  // Widget x of acquisition time t (for tests).
  double xOfTime(double t) const;
  // Frames in view up to which each frame's curves are series of their own.
  static constexpr int kMaxSplitFrames = 300;
  // The dx, dy and jitter series drawn now: one per frame and curve (the
  // frames in view and some around them), or one per curve when joined
  // across the fly-backs.
  const std::vector<QLineSeries*>& curves() const { return curves_; }
  bool curvesJoined() const { return joined_; }
  // The frames [first, last] whose span meets the shown time range.
  std::pair<int, int> framesInView() const;

 protected:
  void layoutCharts(const QSizeF& size) override;
  QString readoutAt(QPointF pos) const override;
  void clickedAt(QPointF pos) override;
  void xViewChanged() override;
  void rebuild() override;
  void showCurrent() override;

 private:
  // The curves (and what is drawn over them) for the frames in view.
  void rebuildCurves();
  // Why frames [first, last] in view are drawn joined (empty: one series a frame).
  QString joinReason(std::pair<int, int> frames) const;
  // The field panel's curves for the current unit and frame.
  void rebuildField();
  double frameMid(int k) const;

  QChart *drift_, *jitter_, *fieldChart_;
  QValueAxis *driftX_, *driftY_, *jitterX_, *jitterY_, *fieldX_, *fieldY_;
  driftscan::LineFieldTable field_;
  std::vector<double> fieldMeanValues_;  // the mean field at each sample (px)
  QLineSeries *fieldMean_ = nullptr, *fieldFrame_ = nullptr;
  // Frames as categories of a top axis: its grid lines are the boundaries.
  QCategoryAxis *driftFrames_, *jitterFrames_;
  QAreaSeries *driftSpan_ = nullptr, *jitterSpan_ = nullptr;  // the current frame's span
  QGraphicsSimpleTextItem* currentText_;
  std::vector<QLineSeries*> curves_;
  std::vector<QAbstractSeries*> overCurves_;  // drawn after the curves: rebuilt with them
  bool joined_ = true, built_ = false;
  std::pair<int, int> builtFrames_{-1, -1};  // the frames the split curves were built for (in view and around)
  LineDriftSeries lines_;
  std::vector<DriftRow> rigid_;
  double rigidOffsetX_ = 0, rigidOffsetY_ = 0;
  double t0_ = 0, t1_ = 1, d0_ = -1, d1_ = 1, j0_ = -1, j1_ = 1;
};
