#include "views/series_viewer.hpp"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QElapsedTimer>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSlider>
#include <QSpinBox>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>
#include <cmath>
#include <limits>

#include "driftscan/core/error.hpp"
#include "driftscan/core/scan_rotation.hpp"
#include "views/image_view.hpp"

SeriesViewer::SeriesViewer(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  view_ = new ImageView(this);
  layout->addWidget(view_, 1);

  auto* nav = new QHBoxLayout;
  play_ = new QToolButton;
  play_->setText("Play");
  play_->setCheckable(true);
  nav->addWidget(play_);
  slider_ = new QSlider(Qt::Horizontal);
  slider_->setEnabled(false);
  nav->addWidget(slider_, 1);
  frameSpin_ = new QSpinBox;
  frameSpin_->setEnabled(false);
  frameSpin_->setPrefix("frame ");
  nav->addWidget(frameSpin_);
  auto* fitBtn = new QPushButton("Fit");
  auto* oneBtn = new QPushButton("1:1");
  nav->addWidget(fitBtn);
  nav->addWidget(oneBtn);
  layout->addLayout(nav);

  auto* disp = new QHBoxLayout;
  low_ = new QDoubleSpinBox;
  high_ = new QDoubleSpinBox;
  for (auto* s : {low_, high_}) {
    s->setRange(-1e12, 1e12);
    s->setDecimals(3);
    s->setKeyboardTracking(false);
  }
  gamma_ = new QDoubleSpinBox;
  gamma_->setRange(0.1, 5.0);
  gamma_->setSingleStep(0.1);
  gamma_->setValue(1.0);
  map_ = new QComboBox;
  map_->addItems(colour_map_names());
  auto* autoBtn = new QPushButton("Auto");
  autoBtn->setToolTip("Auto-levels: 0.35% of the pixels saturated, as ImageJ");
  disp->addWidget(new QLabel("min"));
  disp->addWidget(low_);
  disp->addWidget(new QLabel("max"));
  disp->addWidget(high_);
  disp->addWidget(autoBtn);
  disp->addWidget(new QLabel("gamma"));
  disp->addWidget(gamma_);
  disp->addWidget(map_);
  disp->addStretch(1);
  layout->addLayout(disp);
  info_ = new QLabel(" ");
  layout->addWidget(info_);

  playTimer_ = new QTimer(this);
  playTimer_->setInterval(33);  // 30 frames/s
  decodeTimer_ = new QTimer(this);
  decodeTimer_->setSingleShot(true);
  decodeTimer_->setInterval(0);

  connect(slider_, &QSlider::valueChanged, this, &SeriesViewer::showFrame);
  connect(frameSpin_, qOverload<int>(&QSpinBox::valueChanged), slider_, &QSlider::setValue);
  connect(play_, &QToolButton::toggled, this, &SeriesViewer::setPlaying);
  connect(playTimer_, &QTimer::timeout, this, [this] {
    if (!series_) return;
    slider_->setValue((slider_->value() + 1) % int(series_->frame_count()));
  });
  connect(decodeTimer_, &QTimer::timeout, this, &SeriesViewer::decodeNow);
  connect(fitBtn, &QPushButton::clicked, view_, &ImageView::fit);
  connect(oneBtn, &QPushButton::clicked, view_, &ImageView::oneToOne);
  connect(autoBtn, &QPushButton::clicked, this, &SeriesViewer::autoLevels);
  for (auto* s : {low_, high_, gamma_})
    connect(s, qOverload<double>(&QDoubleSpinBox::valueChanged), this, &SeriesViewer::readControls);
  connect(map_, qOverload<int>(&QComboBox::currentIndexChanged), this, &SeriesViewer::readControls);
  connect(view_, &ImageView::cursorMoved, this, [this](int x, int y, double v) {
    emit status(QString("frame %1  x=%2 y=%3  value=%4").arg(shown_).arg(x).arg(y).arg(v, 0, 'g', 6));
  });
}

void SeriesViewer::setSeries(std::shared_ptr<const driftscan::FrameSource> series, const QString& name) {
  setPlaying(false);
  series_ = std::move(series);
  levelsSet_ = false;
  shown_ = -1;
  const int n = series_ ? int(series_->frame_count()) : 0;
  for (auto* w : std::initializer_list<QWidget*>{slider_, frameSpin_}) w->setEnabled(n > 0);
  slider_->blockSignals(true);
  frameSpin_->blockSignals(true);
  slider_->setRange(0, std::max(0, n - 1));
  frameSpin_->setRange(0, std::max(0, n - 1));
  slider_->setValue(0);
  frameSpin_->setValue(0);
  slider_->blockSignals(false);
  frameSpin_->blockSignals(false);
  if (series_) {
    view_->setPixelSize(series_->pixel_size(), QString::fromStdString(series_->pixel_unit()));
    view_->setCaption(name);
    pending_ = 0;
    decodeNow();
    view_->fit();
  }
}

int SeriesViewer::currentFrame() const { return shown_; }

void SeriesViewer::setScanRotation(std::vector<double> rotation) {
  scanRotation_ = driftscan::has_scan_rotation(rotation) ? std::move(rotation) : std::vector<double>{};
  showScanArrow();
}

void SeriesViewer::showScanArrow() {
  view_->setScanArrow(scanRotation_.empty() || shown_ < 0
                          ? std::numeric_limits<double>::quiet_NaN()
                          : driftscan::scan_rotation_of(scanRotation_, std::size_t(shown_)));
}

void SeriesViewer::showFrame(int k) {
  if (!series_) return;
  if (slider_->value() != k) {
    slider_->setValue(k);  // re-enters via valueChanged
    return;
  }
  pending_ = k;
  // Coalesce: only the latest requested frame is decoded.
  decodeTimer_->start();
}

void SeriesViewer::decodeNow() {
  if (!series_ || pending_ < 0) return;
  const int k = pending_;
  pending_ = -1;
  QElapsedTimer t;
  t.start();
  try {
    data_ = std::make_shared<const driftscan::Frame>(series_->frame(std::size_t(k)));
  } catch (const std::exception& e) {
    emit status(QString::fromStdString(e.what()));
    return;
  }
  shown_ = k;
  if (!levelsSet_) {
    levelsSet_ = true;
    autoLevels();  // also draws
  } else {
    applyMapping();
  }
  lastMs_ = t.nsecsElapsed() / 1e6;
  frameSpin_->blockSignals(true);
  frameSpin_->setValue(k);
  frameSpin_->blockSignals(false);
  info_->setText(QString("%1   frame %2 / %3   decoded and drawn in %4 ms")
                     .arg(QString::fromStdString(series_->describe()))
                     .arg(k)
                     .arg(series_->frame_count())
                     .arg(lastMs_, 0, 'f', 1));
  showScanArrow();
  emit frameShown(k);
}

void SeriesViewer::autoLevels() {
  if (!data_) return;
  DisplayMapping m = auto_levels(*data_);
  m.gamma = gamma_->value();
  m.map = colour_map_from_index(map_->currentIndex());
  mapping_ = m;
  for (auto* s : {low_, high_}) s->blockSignals(true);
  low_->setValue(m.low);
  high_->setValue(m.high);
  for (auto* s : {low_, high_}) s->blockSignals(false);
  applyMapping();
}

void SeriesViewer::readControls() {
  mapping_.low = low_->value();
  mapping_.high = high_->value();
  mapping_.gamma = gamma_->value();
  mapping_.map = colour_map_from_index(map_->currentIndex());
  applyMapping();
}

void SeriesViewer::applyMapping() {
  if (!data_) return;
  view_->setImage(render_frame(*data_, mapping_), data_);
}

void SeriesViewer::setPlaying(bool on) {
  if (on && series_) playTimer_->start();
  else playTimer_->stop();
  play_->blockSignals(true);
  play_->setChecked(on && series_);
  play_->setText(on && series_ ? "Pause" : "Play");
  play_->blockSignals(false);
}
