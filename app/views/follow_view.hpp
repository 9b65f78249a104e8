#pragma once
// The "Live" tab of a followed acquisition (File > Follow acquisition...):
// the frame counter and the last frame's drift (from the engine's progress
// and frame events), the running average (average.tif as the engine rewrites
// it) and the drift plot growing with drift.csv. When the follow ends, the
// usual views get the finished results and this tab says how it ended.
#include <QWidget>
#include <memory>
#include <vector>

#include "driftscan/core/frame.hpp"
#include "project/result_set.hpp"

class QLabel;
class ImageView;
class DriftPlot;

class FollowView : public QWidget {
  Q_OBJECT
 public:
  explicit FollowView(QWidget* parent = nullptr);

  // A new follow of `input` (untilFrames 0: no bound).
  void begin(const QString& input, std::size_t untilFrames);
  // The follow is over: `summary` says how, and what the results are.
  void end(const QString& summary);

  int framesRegistered() const { return frames_; }
  int averageUpdates() const { return averageUpdates_; }
  QString counterText() const;
  QString statusText() const;
  DriftPlot* driftPlot() const { return drift_; }
  ImageView* averageView() const { return average_; }

 public slots:
  // From a progress event of the `follow` phase or a `frame` event (frame k: k + 1 registered).
  void setFramesRegistered(int n);
  void setLastDrift(int frame, double dx, double dy, int flags);
  void setDrift(const std::vector<DriftRow>& rows);
  void setAverage(const std::shared_ptr<const driftscan::Frame>& average);

 private:
  void updateCounter();
  void updateStatus();

  QLabel* title_;
  QLabel* counter_;
  QLabel* status_;
  ImageView* average_;
  DriftPlot* drift_;
  QString input_;
  std::size_t until_ = 0;
  int frames_ = 0;
  int averageUpdates_ = 0;
  int lastFrame_ = -1;
  double lastDx_ = 0, lastDy_ = 0;
  int lastFlags_ = 0;
  int driftRows_ = 0;
  QString averageAt_;
  bool ended_ = false;
};
