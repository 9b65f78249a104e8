#pragma once
// Drift of a registered series: dx and dy against frame, the 2-D trajectory
// and the per-frame quality. Clicking a point selects that frame.
#include <vector>

#include "pixel_calibration.hpp"
#include "plot_widget.hpp"
#include "result_set.hpp"

class DriftPlot : public PlotWidget {
  Q_OBJECT
 public:
  explicit DriftPlot(QWidget* parent = nullptr);
  // keepView: the same series grown (a follow): the zoom stays, as fractions of the frame axis.
  void setDrift(std::vector<DriftRow> rows, bool keepView = false);
  // The series' calibration (size <= 0 or no unit: none, the axes stay in
  // pixels). When known, shifts are drawn and read out in the unit unless
  // setPhysicalUnits(false) asked for pixels.
  void setPixelSize(double size, const QString& unit);
  void setPhysicalUnits(bool on);
  const PixelCalibration& calibration() const { return cal_; }
  QString calibrationText() const;
  // Shift axis range [lo, hi] as labelled (in the shown unit; for tests).
  std::pair<double, double> shiftAxisRange() const { return {dmin_ * cal_.scale(), dmax_ * cal_.scale()}; }
  QString shiftAxisLabel() const;
  const std::vector<DriftRow>& drift() const { return rows_; }
  int pointCount() const { return int(rows_.size()); }
  void render(QPainter& p, const QSize& size) const override;
  // Position of frame k's point in the dx/dy panel (widget coordinates; for tests).
  QPointF pointPosition(int index) const;
  // The frame axis as shown (zoomed and panned).
  std::pair<double, double> frameRange() const { return shown(xmin_, xmax_); }

 public slots:
  void setCurrentFrame(int frame);

 signals:
  void frameSelected(int frame);

 protected:
  QRectF zoomPanel(const QSize& size) const override;
  QString readoutAt(QPointF pos) const override;
  void clickedAt(QPointF pos) override;

 private:
  struct Layout {
    QRectF series, quality, trajectory;
  };
  Layout layout(const QSize& size) const;

  std::vector<DriftRow> rows_;
  PixelCalibration cal_;
  int current_ = -1;
  double xmin_ = 0, xmax_ = 1, dmin_ = -1, dmax_ = 1;  // series axes
  double tx0_ = -1, tx1_ = 1, ty0_ = -1, ty1_ = 1;     // trajectory axes
  bool hasQuality_ = false;
};
