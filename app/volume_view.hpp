#pragma once
// The 3-D stack spectrum (the engine's `spectrum` output: a float32 TIFF
// volume of log-magnitudes) as a volume rendering with three orthogonal
// slices whose positions follow the sliders.
#include <QWidget>
#include <vector>

#include <vtkSmartPointer.h>

class QSlider;
class QCheckBox;
class QLabel;
class VtkViewWidget;
class vtkImageData;
class vtkImageActor;
class vtkVolume;

class VolumeView : public QWidget {
  Q_OBJECT
 public:
  explicit VolumeView(QWidget* parent = nullptr);
  // values: nx*ny*nz floats, x fastest. Replaces what is shown.
  void setVolume(std::vector<float> values, int nx, int ny, int nz);
  // Reads a multi-page TIFF volume (throws driftscan::Error).
  void loadTiff(const QString& path);
  bool hasVolume() const { return nx_ > 0; }
  // Null where the platform cannot host OpenGL views (VtkViewWidget::available()).
  VtkViewWidget* vtkWidget() const { return view_; }
  QImage grabImage();

 private:
  void updateSlices();

  VtkViewWidget* view_ = nullptr;
  QLabel* unavailable_ = nullptr;  // instead of view_, saying why
  QSlider* slider_[3];
  QCheckBox* showVolume_;
  QLabel* info_;
  int nx_ = 0, ny_ = 0, nz_ = 0;
  vtkSmartPointer<vtkImageData> image_;
  vtkSmartPointer<vtkImageActor> slice_[3];
  vtkSmartPointer<vtkVolume> volume_;
};
