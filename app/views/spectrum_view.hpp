#pragma once
// 2-D log power spectra of the current frame and of the average side by
// side (sharp lattice peaks in the average's spectrum mean a good average).
// Spectra are computed (by the engine's PowerSpectrum) only while the view
// is visible; captions give the strongest peak's period and sharpness. With
// a calibrated series the scale bar is in spatial frequency (nm⁻¹: cycles
// per pixel / pixel size) and the period also in nm.
#include <QWidget>
#include <memory>

#include "driftscan/core/frame_source.hpp"
#include "project/pixel_calibration.hpp"

class ImageView;

class SpectrumView : public QWidget {
  Q_OBJECT
 public:
  explicit SpectrumView(QWidget* parent = nullptr);
  void setSeries(std::shared_ptr<const driftscan::FrameSource> series);
  void setAverage(std::shared_ptr<const driftscan::Frame> average);
  // The series' pixel size (<= 0 or no unit: spectra in 1/px).
  void setPixelSize(double size, const QString& unit);
  void setPhysicalUnits(bool on);
  const PixelCalibration& calibration() const { return cal_; }
  ImageView* frameSpectrum() const { return frame_; }
  ImageView* averageSpectrum() const { return average_; }

 public slots:
  void setFrame(int k);

 protected:
  void showEvent(QShowEvent*) override;

 private:
  void refresh();

  ImageView* frame_;
  ImageView* average_;
  std::shared_ptr<const driftscan::FrameSource> series_;
  std::shared_ptr<const driftscan::Frame> averageData_;
  PixelCalibration cal_;
  int k_ = 0;
  bool frameDirty_ = true, averageDirty_ = true;
};
