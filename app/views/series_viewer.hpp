#pragma once
// The frame viewer: an ImageView with a frame slider, play, and display
// controls (range with ImageJ-style auto-levels, gamma, colour map). Frames
// are decoded on demand from the FrameSource (TiffSeries caches them); slider
// moves are coalesced so scrubbing never queues up decodes.
#include <QWidget>
#include <memory>
#include <vector>

#include "driftscan/core/frame_source.hpp"
#include "views/display_mapping.hpp"

class ImageView;
class QSlider;
class QSpinBox;
class QDoubleSpinBox;
class QComboBox;
class QLabel;
class QToolButton;
class QTimer;

class SeriesViewer : public QWidget {
  Q_OBJECT
 public:
  explicit SeriesViewer(QWidget* parent = nullptr);
  void setSeries(std::shared_ptr<const driftscan::FrameSource> series, const QString& name);
  // Each frame's scan rotation (frame k at value k mod n; empty or all 0:
  // one direction, no arrow): the shown frame's arrow on the view.
  void setScanRotation(std::vector<double> rotation);
  std::shared_ptr<const driftscan::FrameSource> series() const { return series_; }
  ImageView* view() const { return view_; }
  int currentFrame() const;
  std::shared_ptr<const driftscan::Frame> currentData() const { return data_; }
  const DisplayMapping& mapping() const { return mapping_; }
  // Milliseconds the last frame took to decode and draw (for the status line).
  double lastFrameMs() const { return lastMs_; }

 public slots:
  void showFrame(int k);
  void autoLevels();
  void setPlaying(bool on);

 signals:
  void frameShown(int k);
  void status(const QString& text);

 private:
  void decodeNow();
  void applyMapping();
  void readControls();

  void showScanArrow();

  std::shared_ptr<const driftscan::FrameSource> series_;
  std::vector<double> scanRotation_;
  std::shared_ptr<const driftscan::Frame> data_;
  DisplayMapping mapping_;
  ImageView* view_;
  QSlider* slider_;
  QSpinBox* frameSpin_;
  QToolButton* play_;
  QTimer* playTimer_;
  QTimer* decodeTimer_;
  QDoubleSpinBox* low_;
  QDoubleSpinBox* high_;
  QDoubleSpinBox* gamma_;
  QComboBox* map_;
  QLabel* info_;
  int pending_ = -1;
  int shown_ = -1;
  bool levelsSet_ = false;
  double lastMs_ = 0.0;
};
