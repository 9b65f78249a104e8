#include "views/volume_view.hpp"

#include <QCheckBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSlider>
#include <QStackedWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include <vtkAxesActor.h>
#include <vtkCamera.h>
#include <vtkColorTransferFunction.h>
#include <vtkCubeAxesActor.h>
#include <vtkFloatArray.h>
#include <vtkGenericOpenGLRenderWindow.h>
#include <vtkGenericRenderWindowInteractor.h>
#include <vtkImageActor.h>
#include <vtkImageData.h>
#include <vtkImageMapper3D.h>
#include <vtkImageProperty.h>
#include <vtkLookupTable.h>
#include <vtkOrientationMarkerWidget.h>
#include <vtkPiecewiseFunction.h>
#include <vtkPointData.h>
#include <vtkProperty.h>
#include <vtkRenderer.h>
#include <vtkScalarBarActor.h>
#include <vtkSmartVolumeMapper.h>
#include <vtkTextProperty.h>
#include <vtkVolume.h>
#include <vtkVolumeProperty.h>

#include "driftscan/formats/tiff/tiff_series.hpp"
#include "views/vtk_view_widget.hpp"

namespace {
// Centred transform of n samples: index i is frequency (i - n/2) / n cycles per sample.
std::pair<double, double> centred_range(int n, double per_sample) {
  const int zero = n / 2;
  return {(0 - zero) / double(n) / per_sample, (n - 1 - zero) / double(n) / per_sample};
}
}  // namespace

VolumeView::VolumeView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  pages_ = new QStackedWidget;
  auto* hintPage = new QWidget;
  auto* hintLayout = new QVBoxLayout(hintPage);
  hintLayout->addStretch(1);
  hint_ = new QLabel(
      "No 3-D spectrum yet: it shows the stack's lattice and drift as frequencies in space and time.\n\n"
      "Compute it from the open series (registered with the drift of the results folder when there is one),\n"
      "or run  driftscan-engine spectrum -i SERIES -o RESULTS --drift RESULTS/drift.csv,\n"
      "or open a spectrum3d.tif with File > Open 3-D spectrum.");
  hint_->setAlignment(Qt::AlignCenter);
  hint_->setWordWrap(true);
  hint_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  hintLayout->addWidget(hint_);
  runSpectrum_ = new QPushButton("Compute the 3-D spectrum");
  runSpectrum_->setEnabled(false);
  runSpectrum_->setToolTip("Open a series first");
  auto* buttonRow = new QHBoxLayout;
  buttonRow->addStretch(1);
  buttonRow->addWidget(runSpectrum_);
  buttonRow->addStretch(1);
  hintLayout->addLayout(buttonRow);
  hintLayout->addStretch(1);
  connect(runSpectrum_, &QPushButton::clicked, this, &VolumeView::runSpectrumRequested);
  pages_->addWidget(hintPage);
  QString why;
  if (VtkViewWidget::available(&why)) {
    view_ = new VtkViewWidget;
    view_->setMinimumSize(200, 200);
    pages_->addWidget(view_);
  } else {  // no GL here: say why instead of crashing in Qt's backing store
    unavailable_ = new QLabel("The 3-D view is not available: " + why + ".");
    unavailable_->setAlignment(Qt::AlignCenter);
    unavailable_->setWordWrap(true);
    unavailable_->setMinimumSize(200, 200);
    pages_->addWidget(unavailable_);
  }
  layout->addWidget(pages_, 1);
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
  info_ = new QLabel("No 3-D spectrum loaded.");
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
  pages_->setCurrentIndex(1);
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
  // The time axis drawn as long as the longer frame axis, whatever the number
  // of planes: a 16-plane spectrum of 512² frames is a box, not a sheet.
  image_->SetSpacing(1.0, 1.0, zScale());
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
  addColourBar(ren, color);
  addCubeAxes(ren);
  addOrientationMarker();

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

// The colour bar follows the volume's colours (its lower end is transparent in the volume).
void VolumeView::addColourBar(vtkRenderer* ren, vtkColorTransferFunction* color) {
  bar_ = vtkSmartPointer<vtkScalarBarActor>::New();
  bar_->SetLookupTable(color);
  bar_->SetTitle("ln(1 + power)");
  bar_->SetNumberOfLabels(4);
  bar_->SetLabelFormat("%.1f");
  bar_->SetPosition(0.88, 0.1);
  bar_->SetWidth(0.1);
  bar_->SetHeight(0.8);
  bar_->UnconstrainedFontSizeOn();
  bar_->GetTitleTextProperty()->SetFontSize(14);
  bar_->GetLabelTextProperty()->SetFontSize(12);
  bar_->GetTitleTextProperty()->SetColor(1, 1, 1);
  bar_->GetLabelTextProperty()->SetColor(1, 1, 1);
  ren->AddActor2D(bar_);
}

// The frame axes (kx, ky) and the time axis, in the zoom-independent 2-D mode.
void VolumeView::addCubeAxes(vtkRenderer* ren) {
  axes_ = vtkSmartPointer<vtkCubeAxesActor>::New();
  axes_->SetBounds(0, nx_ - 1, 0, std::max(ny_ - 1, 0), 0, std::max(nz_ - 1, 0) * zScale());
  axes_->SetUse2DMode(1);  // labels at a fixed size on screen, readable at any zoom
  axes_->XAxisMinorTickVisibilityOff();
  axes_->YAxisMinorTickVisibilityOff();
  axes_->ZAxisMinorTickVisibilityOff();
  axes_->SetCamera(ren->GetActiveCamera());
  axes_->SetFlyModeToOuterEdges();
  axes_->SetTickLocationToOutside();
  for (int i = 0; i < 3; ++i) {
    axes_->GetTitleTextProperty(i)->SetColor(0.9, 0.9, 0.9);
    axes_->GetLabelTextProperty(i)->SetColor(0.8, 0.8, 0.8);
  }
  axes_->GetXAxesLinesProperty()->SetColor(0.7, 0.7, 0.7);
  axes_->GetYAxesLinesProperty()->SetColor(0.7, 0.7, 0.7);
  axes_->GetZAxesLinesProperty()->SetColor(0.7, 0.7, 0.7);
  ren->AddActor(axes_);
  updateAxes();
}

void VolumeView::addOrientationMarker() {
  if (marker_) return;  // one per window: it lives in its own corner renderer
  auto triad = vtkSmartPointer<vtkAxesActor>::New();
  triad->SetXAxisLabelText("kx");
  triad->SetYAxisLabelText("ky");
  triad->SetZAxisLabelText("f");
  marker_ = vtkSmartPointer<vtkOrientationMarkerWidget>::New();
  marker_->SetOrientationMarker(triad);
  marker_->SetInteractor(view_->interactor());
  marker_->SetViewport(0.0, 0.0, 0.18, 0.18);
  marker_->SetEnabled(1);
  marker_->InteractiveOff();
}

void VolumeView::updateSlices() {
  if (!image_ || !view_) return;
  const int x = slider_[0]->value(), y = slider_[1]->value(), z = slider_[2]->value();
  slice_[0]->SetDisplayExtent(x, x, 0, ny_ - 1, 0, nz_ - 1);
  slice_[1]->SetDisplayExtent(0, nx_ - 1, y, y, 0, nz_ - 1);
  slice_[2]->SetDisplayExtent(0, nx_ - 1, 0, ny_ - 1, z, z);
  view_->requestRender();
}

void VolumeView::setCalibration(double pixelSize, const QString& unit, int frames) {
  cal_.recalibrate(pixelSize, unit);
  frames_ = frames;
  updateAxes();
}

void VolumeView::setPhysicalUnits(bool on) {
  cal_.physical = on;
  updateAxes();
}

std::pair<double, double> VolumeView::axisRange(int axis) const {
  const int n[3] = {nx_, ny_, nz_};
  if (n[axis] <= 0) return {0, 0};
  return centred_range(n[axis], axis < 2 ? cal_.scale() : 1.0);
}

QString VolumeView::axisTitle(int axis) const {
  if (axis == 2) return QString("f (1/%1)").arg(frames_ > 0 && frames_ == nz_ ? "frame" : "plane");
  // "1/nm" rather than nm⁻¹: the axes' vector text is ASCII only.
  return QString("%1 (1/%2)").arg(axis == 0 ? "kx" : "ky", cal_.lengthUnit());
}

void VolumeView::updateAxes() {
  if (!axes_) return;
  const auto x = axisRange(0), y = axisRange(1), z = axisRange(2);
  axes_->SetXAxisRange(x.first, x.second);
  axes_->SetYAxisRange(y.first, y.second);
  axes_->SetZAxisRange(z.first, z.second);
  axes_->SetXTitle(axisTitle(0).toUtf8().constData());
  axes_->SetYTitle(axisTitle(1).toUtf8().constData());
  axes_->SetZTitle(axisTitle(2).toUtf8().constData());
  axes_->SetXLabelFormat("%-#6.3g");
  axes_->SetYLabelFormat("%-#6.3g");
  axes_->SetZLabelFormat("%-#6.3g");
  if (view_) view_->requestRender();
}

double VolumeView::zScale() const { return nz_ > 1 ? double(std::max(nx_, ny_) - 1) / (nz_ - 1) : 1.0; }

vtkCubeAxesActor* VolumeView::cubeAxes() const { return axes_; }
vtkScalarBarActor* VolumeView::colourBar() const { return bar_; }
vtkOrientationMarkerWidget* VolumeView::orientationMarker() const { return marker_; }

bool VolumeView::hintShown() const { return pages_->currentIndex() == 0; }
QString VolumeView::hintText() const { return hint_->text(); }

void VolumeView::setCanRunSpectrum(bool on) {
  runSpectrum_->setEnabled(on);
  runSpectrum_->setToolTip(on ? "Run the engine's spectrum command on the open series" : "Open a series first");
}

QImage VolumeView::grabImage() {
  if (view_ && !hintShown()) return view_->grabFramebuffer();
  return pages_->currentWidget()->grab().toImage();
}
