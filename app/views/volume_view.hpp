#pragma once
// The 3-D stack spectrum (the engine's `spectrum` output: a float32 TIFF
// volume of log-magnitudes, centred on all three axes) as a volume rendering
// with three orthogonal slices whose positions follow the sliders, axes
// labelled in frequency (1/px, or 1/unit when the series' pixel size is
// known; 1/frame in time), a colour bar and an orientation marker. With no
// volume it says how to get one and offers to run the spectrum.
#include <QWidget>
#include <utility>
#include <vector>

#include <vtkSmartPointer.h>

#include "project/pixel_calibration.hpp"

class QSlider;
class QCheckBox;
class QLabel;
class QPushButton;
class QStackedWidget;
class VtkViewWidget;
class vtkImageData;
class vtkImageActor;
class vtkVolume;
class vtkCubeAxesActor;
class vtkScalarBarActor;
class vtkOrientationMarkerWidget;
class vtkRenderer;
class vtkColorTransferFunction;

class VolumeView : public QWidget {
  Q_OBJECT
 public:
  explicit VolumeView(QWidget* parent = nullptr);
  // values: nx*ny*nz floats, x fastest. Replaces what is shown.
  void setVolume(std::vector<float> values, int nx, int ny, int nz);
  // Reads a multi-page TIFF volume (throws driftscan::Error).
  void loadTiff(const QString& path);
  bool hasVolume() const { return nx_ > 0; }
  // The series the spectrum is of: pixel size (<= 0 or no unit: axes in 1/px)
  // and frame count (the time axis is in 1/frame when every frame is a plane,
  // in 1/plane when the engine binned frames).
  void setCalibration(double pixelSize, const QString& unit, int frames);
  // Axes in 1/px even when the pixel size is known (the px/physical choice).
  void setPhysicalUnits(bool on);
  // Frequency range of axis 0 (x), 1 (y), 2 (time) as labelled, and its label.
  std::pair<double, double> axisRange(int axis) const;
  QString axisTitle(int axis) const;
  // What the view draws besides the data (null before a volume / without GL).
  vtkCubeAxesActor* cubeAxes() const;
  vtkScalarBarActor* colourBar() const;
  vtkOrientationMarkerWidget* orientationMarker() const;
  // The "no spectrum yet" page: visible while there is no volume.
  bool hintShown() const;
  QString hintText() const;
  QPushButton* runSpectrumButton() const { return runSpectrum_; }
  // Whether there is something to run the spectrum on (a series is open).
  void setCanRunSpectrum(bool on);

  // Null where the platform cannot host OpenGL views (VtkViewWidget::available()).
  VtkViewWidget* vtkWidget() const { return view_; }
  QImage grabImage();

 signals:
  void runSpectrumRequested();

 private:
  // Parts of the scene setVolume() builds.
  void addColourBar(vtkRenderer* ren, vtkColorTransferFunction* color);
  void addCubeAxes(vtkRenderer* ren);
  void addOrientationMarker();
  void updateSlices();
  void updateAxes();
  double zScale() const;  // spacing of the time axis in the drawing

  VtkViewWidget* view_ = nullptr;
  QLabel* unavailable_ = nullptr;  // instead of view_, saying why
  QSlider* slider_[3];
  QCheckBox* showVolume_;
  QLabel* info_;
  QStackedWidget* pages_;  // 0: the hint, 1: the view (or why there is none)
  QLabel* hint_;
  QPushButton* runSpectrum_;
  int nx_ = 0, ny_ = 0, nz_ = 0;
  PixelCalibration cal_;
  int frames_ = 0;
  vtkSmartPointer<vtkImageData> image_;
  vtkSmartPointer<vtkImageActor> slice_[3];
  vtkSmartPointer<vtkVolume> volume_;
  vtkSmartPointer<vtkCubeAxesActor> axes_;
  vtkSmartPointer<vtkScalarBarActor> bar_;
  vtkSmartPointer<vtkOrientationMarkerWidget> marker_;
};
