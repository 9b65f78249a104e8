#include "volume_view.hpp"

#include <QCheckBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSlider>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include <vtkCamera.h>
#include <vtkColorTransferFunction.h>
#include <vtkFloatArray.h>
#include <vtkGenericOpenGLRenderWindow.h>
#include <vtkImageActor.h>
#include <vtkImageData.h>
#include <vtkImageMapper3D.h>
#include <vtkImageProperty.h>
#include <vtkLookupTable.h>
#include <vtkPiecewiseFunction.h>
#include <vtkPointData.h>
#include <vtkRenderer.h>
#include <vtkSmartVolumeMapper.h>
#include <vtkVolume.h>
#include <vtkVolumeProperty.h>

#include "driftscan/tiff_series.hpp"
#include "vtk_view_widget.hpp"

VolumeView::VolumeView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  QString why;
  if (VtkViewWidget::available(&why)) {
    view_ = new VtkViewWidget(this);
    view_->setMinimumSize(200, 200);
    layout->addWidget(view_, 1);
  } else {  // no GL here: say why instead of crashing in Qt's backing store
    unavailable_ = new QLabel("The 3-D view is not available: " + why + ".");
    unavailable_->setAlignment(Qt::AlignCenter);
    unavailable_->setWordWrap(true);
    unavailable_->setMinimumSize(200, 200);
    layout->addWidget(unavailable_, 1);
  }
  auto* controls = new QHBoxLayout;
  const char* names[3] = {"x", "y", "z"};
  for (int i = 0; i < 3; ++i) {
    controls->addWidget(new QLabel(QString("%1 slice").arg(names[i])));
    slider_[i] = new QSlider(Qt::Horizontal);
    slider_[i]->setEnabled(false);
    controls->addWidget(slider_[i], 1);
    connect(slider_[i], &QSlider::valueChanged, this, &VolumeView::updateSlices);
  }
  showVolume_ = new QCheckBox("volume");
  showVolume_->setChecked(true);
  controls->addWidget(showVolume_);
  connect(showVolume_, &QCheckBox::toggled, this, [this](bool on) {
    if (volume_) volume_->SetVisibility(on);
    if (view_) view_->requestRender();
  });
  layout->addLayout(controls);
  info_ = new QLabel("No 3-D spectrum loaded (run the spectrum command, or open spectrum.tif).");
  layout->addWidget(info_);
  if (view_) view_->renderer()->SetBackground(0.08, 0.08, 0.1);
}

void VolumeView::loadTiff(const QString& path) {
  auto series = driftscan::TiffSeries::open(path.toStdString());
  const int nx = series->width(), ny = series->height();
  const int nz = int(series->frame_count());
  std::vector<float> v(std::size_t(nx) * ny * nz);
  for (int z = 0; z < nz; ++z) {
    driftscan::Frame f = series->frame(std::size_t(z));
    std::copy(f.pixels.begin(), f.pixels.end(), v.begin() + std::ptrdiff_t(z) * nx * ny);
  }
  setVolume(std::move(v), nx, ny, nz);
  info_->setText(QString("%1: %2 x %3 x %4 (log magnitude)").arg(path).arg(nx).arg(ny).arg(nz));
}

void VolumeView::setVolume(std::vector<float> values, int nx, int ny, int nz) {
  nx_ = nx;
  ny_ = ny;
  nz_ = nz;
  // Robust display range: 1st..99.9th percentile (the DC peak dwarfs everything).
  std::vector<float> sorted;
  const std::size_t step = std::max<std::size_t>(1, values.size() / 200000);
  for (std::size_t i = 0; i < values.size(); i += step)
    if (std::isfinite(values[i])) sorted.push_back(values[i]);
  std::sort(sorted.begin(), sorted.end());
  double lo = 0, hi = 1;
  if (!sorted.empty()) {
    lo = sorted[std::size_t(0.01 * (sorted.size() - 1))];
    hi = sorted[std::size_t(0.999 * (sorted.size() - 1))];
    if (hi <= lo) hi = lo + 1;
  }

  image_ = vtkSmartPointer<vtkImageData>::New();
  image_->SetDimensions(nx, ny, nz);
  auto arr = vtkSmartPointer<vtkFloatArray>::New();
  arr->SetNumberOfTuples(vtkIdType(values.size()));
  std::copy(values.begin(), values.end(), arr->GetPointer(0));
  image_->GetPointData()->SetScalars(arr);

  if (!view_) {  // the data is kept (hasVolume()), nothing can be drawn here
    info_->setText(QString("%1 x %2 x %3 volume (not drawn: no OpenGL on this platform)").arg(nx).arg(ny).arg(nz));
    return;
  }
  vtkRenderer* ren = view_->renderer();
  ren->RemoveAllViewProps();

  auto color = vtkSmartPointer<vtkColorTransferFunction>::New();
  color->AddRGBPoint(lo, 0.0, 0.0, 0.0);
  color->AddRGBPoint(lo + 0.5 * (hi - lo), 0.8, 0.2, 0.1);
  color->AddRGBPoint(lo + 0.8 * (hi - lo), 1.0, 0.8, 0.2);
  color->AddRGBPoint(hi, 1.0, 1.0, 1.0);
  auto opacity = vtkSmartPointer<vtkPiecewiseFunction>::New();
  opacity->AddPoint(lo, 0.0);
  opacity->AddPoint(lo + 0.6 * (hi - lo), 0.0);
  opacity->AddPoint(hi, 0.6);
  auto prop = vtkSmartPointer<vtkVolumeProperty>::New();
  prop->SetColor(color);
  prop->SetScalarOpacity(opacity);
  prop->SetInterpolationTypeToLinear();
  auto mapper = vtkSmartPointer<vtkSmartVolumeMapper>::New();
  mapper->SetInputData(image_);
  volume_ = vtkSmartPointer<vtkVolume>::New();
  volume_->SetMapper(mapper);
  volume_->SetProperty(prop);
  volume_->SetVisibility(showVolume_->isChecked());
  ren->AddVolume(volume_);

  auto lut = vtkSmartPointer<vtkLookupTable>::New();
  lut->SetTableRange(lo, hi);
  lut->SetSaturationRange(0, 0);
  lut->SetHueRange(0, 0);
  lut->SetValueRange(0, 1);
  lut->Build();
  for (int i = 0; i < 3; ++i) {
    slice_[i] = vtkSmartPointer<vtkImageActor>::New();
    slice_[i]->GetMapper()->SetInputData(image_);
    slice_[i]->GetProperty()->SetLookupTable(lut);
    slice_[i]->GetProperty()->UseLookupTableScalarRangeOn();
    slice_[i]->GetProperty()->SetInterpolationTypeToNearest();
    ren->AddActor(slice_[i]);
  }
  const int dims[3] = {nx, ny, nz};
  for (int i = 0; i < 3; ++i) {
    slider_[i]->blockSignals(true);
    slider_[i]->setRange(0, dims[i] - 1);
    slider_[i]->setValue(dims[i] / 2);
    slider_[i]->setEnabled(true);
    slider_[i]->blockSignals(false);
  }
  updateSlices();
  ren->ResetCamera();
  vtkCamera* cam = ren->GetActiveCamera();
  cam->Azimuth(35);
  cam->Elevation(25);
  cam->OrthogonalizeViewUp();
  ren->ResetCamera();
  ren->ResetCameraClippingRange();
  info_->setText(QString("%1 x %2 x %3 volume").arg(nx).arg(ny).arg(nz));
  view_->requestRender();
}

void VolumeView::updateSlices() {
  if (!image_ || !view_) return;
  const int x = slider_[0]->value(), y = slider_[1]->value(), z = slider_[2]->value();
  slice_[0]->SetDisplayExtent(x, x, 0, ny_ - 1, 0, nz_ - 1);
  slice_[1]->SetDisplayExtent(0, nx_ - 1, y, y, 0, nz_ - 1);
  slice_[2]->SetDisplayExtent(0, nx_ - 1, 0, ny_ - 1, z, z);
  view_->requestRender();
}

QImage VolumeView::grabImage() { return view_ ? view_->grabFramebuffer() : unavailable_->grab().toImage(); }
