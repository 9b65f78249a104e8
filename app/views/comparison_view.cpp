#include "views/comparison_view.hpp"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSpinBox>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "driftscan/core/interpolation.hpp"
#include "views/image_view.hpp"

ComparisonView::ComparisonView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  auto* bar = new QHBoxLayout;
  mode_ = new QComboBox;
  mode_->addItems({"side by side", "difference (aligned frame - average)", "checkerboard"});
  tile_ = new QSpinBox;
  tile_->setRange(4, 512);
  tile_->setValue(32);
  tile_->setPrefix("tile ");
  tile_->setSuffix(" px");
  layer_ = new QComboBox;
  layer_->addItems({"average", "standard error (sigma.tif)"});
  layer_->setToolTip(
      "sigma.tif: the standard error of each pixel of the average, from the spread of the frames "
      "that made it (NaN, shown dark, where fewer than 2 frames covered)");
  layer_->setEnabled(false);
  bar->addWidget(new QLabel("Left view:"));
  bar->addWidget(layer_);
  bar->addWidget(new QLabel("Right view:"));
  bar->addWidget(mode_);
  bar->addWidget(tile_);
  bar->addStretch(1);
  layout->addLayout(bar);
  auto* views = new QHBoxLayout;
  left_ = new ImageView;
  right_ = new ImageView;
  left_->setCaption("average");
  views->addWidget(left_, 1);
  views->addWidget(right_, 1);
  layout->addLayout(views, 1);
  info_ = new QLabel("Open a results folder or run a registration to see the average.");
  layout->addWidget(info_);
  // Linked zoom and pan (setView does not re-emit, so no loop).
  connect(left_, &ImageView::viewChanged, right_, &ImageView::setView);
  connect(right_, &ImageView::viewChanged, left_, &ImageView::setView);
  connect(mode_, qOverload<int>(&QComboBox::currentIndexChanged), this, &ComparisonView::refresh);
  connect(layer_, qOverload<int>(&QComboBox::currentIndexChanged), this, &ComparisonView::showLeft);
  connect(tile_, qOverload<int>(&QSpinBox::valueChanged), this, &ComparisonView::refresh);
}

void ComparisonView::setAverage(std::shared_ptr<const driftscan::Frame> average, const QString& path) {
  average_ = std::move(average);
  averagePath_ = path;
  showLeft();
  left_->fit();
  refresh();
}

void ComparisonView::setSigma(std::shared_ptr<const driftscan::Frame> sigma) {
  sigma_ = std::move(sigma);
  layer_->setEnabled(sigma_ != nullptr);
  if (!sigma_) layer_->setCurrentIndex(0);
  showLeft();
}

void ComparisonView::setLayer(Layer layer) { layer_->setCurrentIndex(sigma_ ? int(layer) : 0); }

void ComparisonView::showLeft() {
  const bool sigma = sigma_ && layer_->currentIndex() == int(Layer::sigma);
  const std::shared_ptr<const driftscan::Frame>& shown = sigma ? sigma_ : average_;
  if (shown) left_->setImage(render_frame(*shown, auto_levels(*shown)), shown);
  else left_->setImage(QImage());
  left_->setCaption(sigma ? "standard error of the average (sigma.tif)" : average_ ? "average" : "no average");
}

void ComparisonView::setSeries(std::shared_ptr<const driftscan::FrameSource> series) {
  series_ = std::move(series);
  if (series_) {
    left_->setPixelSize(series_->pixel_size(), QString::fromStdString(series_->pixel_unit()));
    right_->setPixelSize(series_->pixel_size(), QString::fromStdString(series_->pixel_unit()));
  }
  refresh();
}

void ComparisonView::setDrift(const std::vector<DriftRow>& drift) {
  drift_ = drift;
  refresh();
}

void ComparisonView::setAverageOrigin(QPointF origin) {
  origin_ = origin;
  refresh();
}

void ComparisonView::setMode(Mode m) { mode_->setCurrentIndex(int(m)); }

void ComparisonView::setFrame(int k) {
  frame_ = k;
  refresh();
}

void ComparisonView::setTransforms(std::vector<driftscan::Transform> toFrame0, driftscan::Interpolation interpolation) {
  toFrame0_ = std::move(toFrame0);
  interpolation_ = interpolation;
  refresh();
}

driftscan::Frame ComparisonView::alignedFrame(const driftscan::Frame& raw, int k) const {
  const int w = average_ ? average_->width : raw.width, h = average_ ? average_->height : raw.height;
  if (k >= 0 && std::size_t(k) < toFrame0_.size()) {
    // The engine's own warp (averaging.cpp), so the comparison shows what went
    // into the average. The average's pixel p is frame 0's p + origin.
    const driftscan::Transform toAverage =
        driftscan::compose(driftscan::Transform::translation(-origin_.x(), -origin_.y()), toFrame0_[std::size_t(k)]);
    // Fourier interpolation exists for translations only (the engine refuses it otherwise).
    const bool translation = toAverage.a == 1 && toAverage.b == 0 && toAverage.c == 0 && toAverage.d == 1;
    const driftscan::Interpolation interpolation = translation ? interpolation_ : driftscan::Interpolation::cubic;
    if (w == raw.width && h == raw.height) return driftscan::warp_to_reference(raw, toAverage, interpolation, NAN);
    // An average of another size (specimen coordinates): the frame padded with
    // "no data" to cover it, warped, cropped.
    driftscan::Frame padded(std::max(w, raw.width), std::max(h, raw.height), NAN);
    for (int y = 0; y < raw.height; ++y)
      std::copy_n(&raw.pixels[std::size_t(y) * raw.width], raw.width, &padded.pixels[std::size_t(y) * padded.width]);
    const driftscan::Frame warped =
        driftscan::warp_to_reference(padded, toAverage, driftscan::Interpolation::cubic, NAN);
    driftscan::Frame out(w, h, NAN);
    for (int y = 0; y < h; ++y)
      std::copy_n(&warped.pixels[std::size_t(y) * warped.width], w, &out.pixels[std::size_t(y) * w]);
    return out;
  }
  // No transforms: frame k at p shows what frame 0 shows at p + d, so the
  // aligned frame at q is raw(q - d) (translation only).
  double dx = 0, dy = 0;
  for (const auto& r : drift_)
    if (r.frame == k) {
      dx = r.dx;
      dy = r.dy;
      break;
    }
  driftscan::Frame out(w, h, NAN);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const double sx = x + origin_.x() - dx, sy = y + origin_.y() - dy;
      if (driftscan::inside(raw, sx, sy)) out.at(x, y) = driftscan::sample_bilinear(raw, sx, sy);
    }
  return out;
}

void ComparisonView::refresh() {
  tile_->setEnabled(mode_->currentIndex() == 2);
  if (!series_ || series_->frame_count() == 0) {
    right_->setImage(QImage());
    right_->setCaption("no series open");
    return;
  }
  const int k = std::min<int>(std::max(0, frame_), int(series_->frame_count()) - 1);
  driftscan::Frame raw;
  try {
    raw = series_->frame(std::size_t(k));
  } catch (const std::exception& e) {
    info_->setText(QString::fromStdString(e.what()));
    return;
  }
  const Mode mode = average_ ? Mode(mode_->currentIndex()) : Mode::side_by_side;
  if (mode == Mode::side_by_side) {
    auto data = std::make_shared<const driftscan::Frame>(std::move(raw));
    right_->setImage(render_frame(*data, auto_levels(*data)), data);
    right_->setCaption(QString("raw frame %1").arg(k));
  } else {
    const driftscan::Frame aligned = alignedFrame(raw, k);
    // Both normalised to zero mean, unit deviation, so intensities compare.
    auto normalised = [](const driftscan::Frame& f) {
      double s = 0, s2 = 0;
      std::size_t n = 0;
      for (float v : f.pixels)
        if (std::isfinite(v)) {
          s += v;
          s2 += double(v) * v;
          ++n;
        }
      const double m = n ? s / n : 0, sd = n ? std::sqrt(std::max(1e-30, s2 / n - m * m)) : 1;
      driftscan::Frame o = f;
      for (float& v : o.pixels) v = std::isfinite(v) ? float((v - m) / sd) : v;
      return o;
    };
    const driftscan::Frame a = normalised(*average_), b = normalised(aligned);
    auto out = std::make_shared<driftscan::Frame>(a.width, a.height);
    const int tile = tile_->value();
    for (int y = 0; y < a.height; ++y)
      for (int x = 0; x < a.width; ++x) {
        const float av = a.at(x, y), bv = b.at(x, y);
        if (mode == Mode::difference) out->at(x, y) = bv - av;
        else out->at(x, y) = ((x / tile + y / tile) % 2) ? bv : av;
      }
    DisplayMapping m;
    if (mode == Mode::difference) {
      m.map = ColourMap::diverging;
      m.low = -3;
      m.high = 3;
    } else {
      m = auto_levels(*out);
    }
    right_->setImage(render_frame(*out, m), out);
    right_->setCaption(mode == Mode::difference ? QString("frame %1 (aligned) - average").arg(k)
                                                : QString("checkerboard: average / aligned frame %1").arg(k));
  }
  if (average_) right_->setView(left_->zoom(), left_->centre());
  info_->setText(average_ ? QString("average: %1   frame %2").arg(averagePath_).arg(k)
                          : QString("no average loaded; frame %1").arg(k));
}
