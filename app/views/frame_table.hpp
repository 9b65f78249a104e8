#pragma once
// The frames of a registered series as a table: drift, its uncertainty σ
// (the larger of sigma_dx and sigma_dy from drift.csv), quality and whether
// the frame went into the average. Frames whose σ is above a chosen limit
// are highlighted, and optionally left out of the next average: that is the
// job field averaging.max_sigma, which the main window keeps in step with
// the settings panel. Selecting a row shows that frame in every view.
// dx, dy and σ are in nm when the pixel size is known and View > Physical
// units is on, as in the plots; the σ limit stays in px, the unit of the job
// field it sets.
#include <QWidget>
#include <vector>

#include "project/pixel_calibration.hpp"
#include "project/result_set.hpp"

class QTableView;
class QDoubleSpinBox;
class QCheckBox;
class QLabel;
class FrameTableModel;

class FrameTable : public QWidget {
  Q_OBJECT
 public:
  explicit FrameTable(QWidget* parent = nullptr);
  void setDrift(std::vector<DriftRow> rows);
  // Each frame's scan rotation (the run's scan.rotation: frame k at value k
  // mod n; empty: every frame at 0), shown in the last column, "scan".
  void setScanRotation(std::vector<double> rotation);
  // The series' pixel size (<= 0: unknown); the px/physical choice stays.
  void setPixelSize(double size, const QString& unit);
  // false: px even when the pixel size is known (View > Physical units).
  void setPhysicalUnits(bool on);
  const PixelCalibration& calibration() const;
  // The σ limit (px; 0: none) and whether frames above it are excluded
  // from the average. Does not emit limitEdited.
  void setLimit(double sigma, bool exclude);
  double limit() const;
  bool excluding() const;
  int rowCount() const;
  // The column's header and the cell text as shown (for tests and exports).
  QString headerText(int column) const;
  QString cellText(int row, int column) const;
  // Frames above the limit (the engine's rule: σ > limit or no information;
  // frame 0, the reference, never).
  const std::vector<int>& highlightedFrames() const { return highlighted_; }
  bool isHighlighted(int frame) const;
  QTableView* table() const { return table_; }
  QDoubleSpinBox* limitBox() const { return limit_; }
  QCheckBox* excludeBox() const { return exclude_; }
  QString summary() const;

 public slots:
  void setCurrentFrame(int frame);

 signals:
  void limitEdited(double sigma, bool exclude);
  void frameSelected(int frame);

 private:
  void applyLimit();

  FrameTableModel* model_;
  QTableView* table_;
  QDoubleSpinBox* limit_;
  QCheckBox* exclude_;
  QLabel* summary_;
  std::vector<int> highlighted_;
  bool setting_ = false;
};
