#pragma once
// The averaged reconstruction beside a raw frame, with linked zoom and pan;
// the right side can instead show the difference (aligned frame − average)
// or a checkerboard of the two, which makes residual misalignment obvious.
#include <QPointF>
#include <QWidget>
#include <memory>

#include "driftscan/averaging/averaging.hpp"
#include "driftscan/core/frame_source.hpp"
#include "project/result_set.hpp"
#include "views/display_mapping.hpp"

class ImageView;
class QComboBox;
class QSpinBox;
class QLabel;

class ComparisonView : public QWidget {
  Q_OBJECT
 public:
  enum class Mode { side_by_side, difference, checkerboard };
  explicit ComparisonView(QWidget* parent = nullptr);
  void setAverage(std::shared_ptr<const driftscan::Frame> average, const QString& path);
  // The average's standard-error map (sigma.tif; null: none): a layer the
  // left view can show instead of the average ("Left view").
  void setSigma(std::shared_ptr<const driftscan::Frame> sigma);
  enum class Layer { average, sigma };
  void setLayer(Layer layer);
  bool hasSigma() const { return sigma_ != nullptr; }
  // The frame-0 point the average's pixel (0, 0) shows: (0, 0) but for a
  // scan-distortion average, which is in specimen coordinates.
  void setAverageOrigin(QPointF origin);
  void setSeries(std::shared_ptr<const driftscan::FrameSource> series);
  void setDrift(const std::vector<DriftRow>& drift);
  // The registration's T_{0,k} for every frame (read_drift_table of the
  // results' drift.csv) and the averaging's interpolation: the aligned frame
  // is then warped exactly as the engine warped it into the average (rotation
  // and affine included). Without them only the drift's translation is applied.
  void setTransforms(std::vector<driftscan::Transform> toFrame0, driftscan::Interpolation interpolation);
  bool hasTransforms() const { return !toFrame0_.empty(); }
  // Frame `raw` (frame k of the series) in the average's coordinates; NaN where it has no data.
  driftscan::Frame alignedFrame(const driftscan::Frame& raw, int k) const;
  void setMode(Mode m);
  ImageView* averageView() const { return left_; }
  ImageView* frameView() const { return right_; }
  std::shared_ptr<const driftscan::Frame> average() const { return average_; }
  QString averagePath() const { return averagePath_; }

 public slots:
  void setFrame(int k);

 private:
  void refresh();
  void showLeft();

  ImageView* left_;
  ImageView* right_;
  QComboBox* mode_;
  QComboBox* layer_;
  QSpinBox* tile_;
  QLabel* info_;
  std::shared_ptr<const driftscan::Frame> average_, sigma_;
  std::shared_ptr<const driftscan::FrameSource> series_;
  std::vector<DriftRow> drift_;
  std::vector<driftscan::Transform> toFrame0_;
  driftscan::Interpolation interpolation_ = driftscan::Interpolation::cubic;
  QString averagePath_;
  QPointF origin_;
  int frame_ = 0;
};
