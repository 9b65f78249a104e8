#pragma once
// A scan-distortion run's two averages side by side — the rigid one (one
// shift per frame) and the corrected one (line by line, in specimen
// coordinates) — or their difference, on one grid with linked zoom and pan.
// The rigid average is resampled onto the corrected grid after the shift
// between the two is measured (their origins differ by the drift within frame
// 0), so what remains in the difference is the blur rigid registration left.
#include <QPointF>
#include <QWidget>
#include <memory>

#include "driftscan/core/frame.hpp"

class ImageView;
class QComboBox;
class QLabel;

// The two averages over the specimen region both cover, pixel for pixel.
struct AveragePair {
  driftscan::Frame rigid, corrected;  // same size
  QPointF shift;                      // corrected(p) ~ rigid(p + shift), after the origins are applied
  bool measured = false;              // false: the shift could not be measured (kept 0)
  QString note;                       // why not, when not
  // The standard deviation over the central region: blur lowers it.
  double rigidContrast = 0, correctedContrast = 0;
  double rmsDifference = 0;
};
// `origin`: the specimen point the corrected average's pixel (0, 0) shows
// (report.json scan_distortion.average_origin); the rigid average's pixel p
// shows about specimen point p.
AveragePair align_averages(const driftscan::Frame& rigid, const driftscan::Frame& corrected, QPointF origin);

class DistortionComparisonView : public QWidget {
  Q_OBJECT
 public:
  enum class Mode { side_by_side, difference };
  explicit DistortionComparisonView(QWidget* parent = nullptr);
  // Either may be null (then the view says what is missing).
  void setAverages(const std::shared_ptr<const driftscan::Frame>& rigid,
                   const std::shared_ptr<const driftscan::Frame>& corrected, QPointF origin);
  void setPixelSize(double size, const QString& unit);
  void setMode(Mode m);
  bool hasPair() const { return pair_ != nullptr; }
  const AveragePair* pair() const { return pair_.get(); }
  ImageView* leftView() const { return left_; }
  ImageView* rightView() const { return right_; }
  QString infoText() const;

 private:
  void refresh();

  ImageView* left_;
  ImageView* right_;
  QComboBox* mode_;
  QLabel* info_;
  std::unique_ptr<AveragePair> pair_;
};
