#include "views/spectrum_view.hpp"

#include <QHBoxLayout>

#include "driftscan/spectra/power_spectrum.hpp"
#include "views/display_mapping.hpp"
#include "views/image_view.hpp"

SpectrumView::SpectrumView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  frame_ = new ImageView;
  average_ = new ImageView;
  frame_->setCaption("power spectrum of the frame");
  average_->setCaption("power spectrum of the average");
  layout->addWidget(frame_, 1);
  layout->addWidget(average_, 1);
  connect(frame_, &ImageView::viewChanged, average_, &ImageView::setView);
  connect(average_, &ImageView::viewChanged, frame_, &ImageView::setView);
}

void SpectrumView::setSeries(std::shared_ptr<const driftscan::FrameSource> series) {
  series_ = std::move(series);
  frameDirty_ = true;
  refresh();
}

void SpectrumView::setAverage(std::shared_ptr<const driftscan::Frame> average) {
  averageData_ = std::move(average);
  averageDirty_ = true;
  refresh();
}

void SpectrumView::setPixelSize(double size, const QString& unit) {
  cal_.recalibrate(size, unit);
  frameDirty_ = averageDirty_ = true;
  refresh();
}

void SpectrumView::setPhysicalUnits(bool on) {
  cal_.physical = on;
  frameDirty_ = averageDirty_ = true;
  refresh();
}

void SpectrumView::setFrame(int k) {
  if (k == k_ && !frameDirty_) return;
  k_ = k;
  frameDirty_ = true;
  refresh();
}

void SpectrumView::showEvent(QShowEvent*) { refresh(); }

void SpectrumView::refresh() {
  if (!isVisible()) return;
  // The engine's spectrum (windowed periodogram) and its lattice figure of merit.
  const PixelCalibration cal = cal_;
  auto show = [cal](ImageView* v, const driftscan::Frame& f, const QString& caption) {
    const driftscan::PowerSpectrum spectrum(f.width, f.height);
    auto s = std::make_shared<const driftscan::Frame>(spectrum.log_power(f));
    const driftscan::SpectrumPeak peak = spectrum.strongest_peak(f);
    DisplayMapping m = auto_levels(*s, 0.001);
    m.map = ColourMap::fire;
    v->setImage(render_frame(*s, m), s);
    // One spectrum pixel along x is 1/width cycles per pixel.
    if (cal.shown()) v->setPixelSize(1.0 / (f.width * cal.size), cal.frequencyUnit());
    else v->setPixelSize(0, QString());
    // The peak's period (in the unit: its spatial frequency too), or in px.
    const QString period = cal.shown() && peak.period > 0 ? QString("%1 %2 (%3 %4)")
                                                                .arg(peak.period * cal.size, 0, 'g', 4)
                                                                .arg(cal.unit)
                                                                .arg(1.0 / (peak.period * cal.size), 0, 'g', 3)
                                                                .arg(cal.frequencyUnit())
                                                          : QString("%1 px").arg(peak.period, 0, 'f', 2);
    v->setCaption(QString("%1: peak %2, sharpness %3").arg(caption, period).arg(peak.sharpness, 0, 'f', 1));
  };
  try {
    if (frameDirty_ && series_ && series_->frame_count() > 0) {
      const int k = std::min<int>(k_, int(series_->frame_count()) - 1);
      show(frame_, series_->frame(std::size_t(k)), QString("frame %1").arg(k));
      frameDirty_ = false;
    }
    if (averageDirty_ && averageData_) {
      show(average_, *averageData_, "average");
      averageDirty_ = false;
    }
  } catch (const std::exception& e) {
    frame_->setCaption(QString::fromStdString(e.what()));
  }
}
