#include "views/distortion_comparison_view.hpp"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "driftscan/core/interpolation.hpp"
#include "driftscan/registration/pair_registration.hpp"
#include "views/display_mapping.hpp"
#include "views/image_view.hpp"

namespace {
driftscan::Frame crop(const driftscan::Frame& f, int x0, int y0, int w, int h) {
  driftscan::Frame out(w, h);
  for (int y = 0; y < h; ++y) std::copy_n(f.row(y0 + y) + x0, w, out.row(y));
  return out;
}

// Standard deviation over the central region (edges are less covered).
double contrast(const driftscan::Frame& f) {
  const int mx = f.width / 8, my = f.height / 8;
  double s = 0, s2 = 0;
  long n = 0;
  for (int y = my; y < f.height - my; ++y)
    for (int x = mx; x < f.width - mx; ++x) {
      const double v = f.at(x, y);
      if (!std::isfinite(v)) continue;
      s += v;
      s2 += v * v;
      ++n;
    }
  if (n < 2) return 0;
  const double m = s / static_cast<double>(n);
  return std::sqrt(std::max(0.0, s2 / static_cast<double>(n) - m * m));
}
}  // namespace

AveragePair align_averages(const driftscan::Frame& rigid, const driftscan::Frame& corrected, QPointF origin) {
  AveragePair out;
  // Specimen region both show: rigid pixel p ~ specimen p; corrected pixel q = specimen p - origin.
  const int ox = static_cast<int>(std::lround(origin.x())), oy = static_cast<int>(std::lround(origin.y()));
  const int x0 = std::max(0, ox), y0 = std::max(0, oy);
  const int x1 = std::min(rigid.width, ox + corrected.width), y1 = std::min(rigid.height, oy + corrected.height);
  if (x1 - x0 < 16 || y1 - y0 < 16) {
    out.note = "the two averages share no region of at least 16x16 px";
    return out;
  }
  const int w = x1 - x0, h = y1 - y0;
  const driftscan::Frame r = crop(rigid, x0, y0, w, h);
  out.corrected = crop(corrected, x0 - ox, y0 - oy, w, h);
  try {
    driftscan::PairRegistrationOptions o;
    o.max_shift = 0.25 * std::min(w, h);
    const driftscan::PairShift s = driftscan::PairRegistrationPlan(w, h, o).execute(r, out.corrected);
    out.shift = QPointF(s.dx, s.dy);
    out.measured = true;
  } catch (const std::exception& e) {
    out.note = QString("shift not measured: %1").arg(e.what());
  }
  // The rigid average resampled where the corrected one looks.
  out.rigid = driftscan::Frame(w, h, NAN);
  double d2 = 0;
  long n = 0;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const double sx = x + out.shift.x(), sy = y + out.shift.y();
      if (!driftscan::inside(r, sx, sy)) continue;
      const float v = driftscan::sample_cubic(r, sx, sy);
      out.rigid.at(x, y) = v;
      const double d = out.corrected.at(x, y) - v;
      if (std::isfinite(d)) {
        d2 += d * d;
        ++n;
      }
    }
  out.rmsDifference = n ? std::sqrt(d2 / static_cast<double>(n)) : 0;
  out.rigidContrast = contrast(out.rigid);
  out.correctedContrast = contrast(out.corrected);
  return out;
}

DistortionComparisonView::DistortionComparisonView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  auto* bar = new QHBoxLayout;
  mode_ = new QComboBox;
  mode_->addItems({"side by side", "difference (corrected - rigid)"});
  bar->addWidget(new QLabel("Right view:"));
  bar->addWidget(mode_);
  bar->addStretch(1);
  layout->addLayout(bar);
  auto* views = new QHBoxLayout;
  left_ = new ImageView;
  right_ = new ImageView;
  views->addWidget(left_, 1);
  views->addWidget(right_, 1);
  layout->addLayout(views, 1);
  info_ = new QLabel(
      "No scan-distortion results: register with scan-distortion correction to compare the rigid and the corrected "
      "average.");
  info_->setWordWrap(true);
  layout->addWidget(info_);
  connect(left_, &ImageView::viewChanged, right_, &ImageView::setView);
  connect(right_, &ImageView::viewChanged, left_, &ImageView::setView);
  connect(mode_, qOverload<int>(&QComboBox::currentIndexChanged), this, &DistortionComparisonView::refresh);
}

void DistortionComparisonView::setAverages(const std::shared_ptr<const driftscan::Frame>& rigid,
                                           const std::shared_ptr<const driftscan::Frame>& corrected, QPointF origin) {
  pair_.reset();
  if (rigid && corrected) pair_ = std::make_unique<AveragePair>(align_averages(*rigid, *corrected, origin));
  if (pair_ && pair_->corrected.empty()) {
    info_->setText(QString("Cannot compare the averages: %1").arg(pair_->note));
    pair_.reset();
  } else if (!pair_) {
    info_->setText(rigid || corrected ? "Only one of the two averages is there (average_rigid.tif and average.tif "
                                        "of a scan-distortion run are needed)."
                                      : "No scan-distortion results: register with scan-distortion correction to "
                                        "compare the rigid and the corrected average.");
  }
  refresh();
  left_->fit();
}

void DistortionComparisonView::setPixelSize(double size, const QString& unit) {
  left_->setPixelSize(size, unit);
  right_->setPixelSize(size, unit);
}

void DistortionComparisonView::setMode(Mode m) { mode_->setCurrentIndex(static_cast<int>(m)); }

QString DistortionComparisonView::infoText() const { return info_->text(); }

void DistortionComparisonView::refresh() {
  if (!pair_) {
    left_->setImage(QImage());
    right_->setImage(QImage());
    left_->setCaption("rigid average");
    right_->setCaption("corrected average");
    return;
  }
  const AveragePair& p = *pair_;
  // One display range for both, so that the loss of contrast shows.
  const DisplayMapping m = auto_levels(p.corrected);
  auto rigid = std::make_shared<const driftscan::Frame>(p.rigid);
  left_->setImage(render_frame(*rigid, m), rigid);
  left_->setCaption("rigid average (one shift per frame)");
  if (mode_->currentIndex() == static_cast<int>(Mode::side_by_side)) {
    auto corrected = std::make_shared<const driftscan::Frame>(p.corrected);
    right_->setImage(render_frame(*corrected, m), corrected);
    right_->setCaption("corrected average (line by line)");
  } else {
    auto diff = std::make_shared<driftscan::Frame>(p.corrected.width, p.corrected.height, NAN);
    for (std::size_t i = 0; i < diff->pixels.size(); ++i) diff->pixels[i] = p.corrected.pixels[i] - p.rigid.pixels[i];
    DisplayMapping dm;
    dm.map = ColourMap::diverging;
    const double range = std::max(3.0 * p.rmsDifference, 1e-12);
    dm.low = -range;
    dm.high = range;
    right_->setImage(render_frame(*diff, dm), diff);
    right_->setCaption(QString("corrected - rigid (range +/- %1)").arg(range, 0, 'g', 3));
  }
  right_->setView(left_->zoom(), left_->centre());
  const double gain = p.rigidContrast > 0 ? 100.0 * (p.correctedContrast / p.rigidContrast - 1.0) : 0.0;
  info_->setText(QString("Common region %1x%2 px. Rigid average %3 by (%4, %5) px onto the corrected grid. "
                         "Contrast (std over the centre): rigid %6, corrected %7 (%8%9%). RMS difference %10.")
                     .arg(p.corrected.width)
                     .arg(p.corrected.height)
                     .arg(p.measured ? "moved" : QString("not moved (%1)").arg(p.note))
                     .arg(p.shift.x(), 0, 'f', 2)
                     .arg(p.shift.y(), 0, 'f', 2)
                     .arg(p.rigidContrast, 0, 'g', 4)
                     .arg(p.correctedContrast, 0, 'g', 4)
                     .arg(gain >= 0 ? "+" : "")
                     .arg(gain, 0, 'f', 1)
                     .arg(p.rmsDifference, 0, 'g', 3));
}
