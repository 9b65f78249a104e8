#include "views/follow_view.hpp"

#include <QDateTime>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QSplitter>
#include <QVBoxLayout>
#include <algorithm>

#include "plots/drift_plot.hpp"
#include "views/display_mapping.hpp"
#include "views/image_view.hpp"

FollowView::FollowView(QWidget* parent) : QWidget(parent) {
  auto* v = new QVBoxLayout(this);
  title_ = new QLabel("Nothing followed yet: File > Follow acquisition... (a growing TIFF or a folder of frames).");
  title_->setWordWrap(true);
  counter_ = new QLabel;
  QFont big = counter_->font();
  big.setPointSizeF(big.pointSizeF() * 1.6);
  big.setBold(true);
  counter_->setFont(big);
  status_ = new QLabel;
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  v->addWidget(title_);
  v->addWidget(counter_);
  v->addWidget(status_);
  auto* split = new QSplitter(Qt::Horizontal);
  average_ = new ImageView;
  average_->setCaption("running average (none yet)");
  drift_ = new DriftPlot;
  split->addWidget(average_);
  split->addWidget(drift_);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 1);
  v->addWidget(split, 1);
  updateCounter();
}

void FollowView::begin(const QString& input, std::size_t untilFrames) {
  input_ = input;
  until_ = untilFrames;
  frames_ = 0;
  averageUpdates_ = 0;
  lastFrame_ = -1;
  driftRows_ = 0;
  averageAt_.clear();
  ended_ = false;
  title_->setText(QString("Following %1%2 — Stop (the Run panel) ends it; the results are then finished over the "
                          "frames taken, as a batch register of them.")
                      .arg(input, until_ ? QString(" until %1 frames").arg(until_) : QString()));
  status_->setText("waiting for the first frame");
  average_->setImage(QImage());
  average_->setCaption("running average (none yet)");
  drift_->setDrift({});
  updateCounter();
}

void FollowView::end(const QString& summary) {
  ended_ = true;
  status_->setText(summary);
}

void FollowView::updateStatus() {
  if (ended_) return;
  status_->setText(QString("drift.csv: %1 rows · average.tif: %2")
                       .arg(driftRows_)
                       .arg(averageUpdates_ ? QString("read %1 times, last at %2").arg(averageUpdates_).arg(averageAt_)
                                            : QString("not written yet")));
}

void FollowView::setFramesRegistered(int n) {
  if (n <= frames_) return;  // events and the table may disagree for a moment: never count back
  frames_ = n;
  updateCounter();
}

void FollowView::setLastDrift(int frame, double dx, double dy, int flags) {
  lastFrame_ = frame;
  lastDx_ = dx;
  lastDy_ = dy;
  lastFlags_ = flags;
  setFramesRegistered(frame + 1);
  updateCounter();
}

void FollowView::setDrift(const std::vector<DriftRow>& rows) {
  // Grown rows keep a zoom the user chose; the first rows of a follow show all.
  drift_->setDrift(rows, driftRows_ > 0 && int(rows.size()) >= driftRows_);
  setFramesRegistered(int(rows.size()));
  driftRows_ = int(rows.size());
  updateStatus();
}

void FollowView::setAverage(const std::shared_ptr<const driftscan::Frame>& average) {
  if (!average) return;
  ++averageUpdates_;
  averageAt_ = QDateTime::currentDateTime().toString("HH:mm:ss");
  average_->setImage(render_frame(*average, auto_levels(*average)), average);
  average_->setCaption(QString("running average, read at %1").arg(averageAt_));
  updateStatus();
}

QString FollowView::counterText() const { return counter_->text(); }
QString FollowView::statusText() const { return status_->text(); }

void FollowView::updateCounter() {
  QString text = until_ ? QString("%1 / %2 frames registered").arg(frames_).arg(until_)
                        : QString("%1 frames registered").arg(frames_);
  if (lastFrame_ >= 0) {
    // In the live plot's unit (nm once the running average has told the pixel size).
    const PixelCalibration& c = drift_->calibration();
    auto shift = [&](double px) {
      return c.shown() ? QString::number(px * c.scale(), 'g', 3) : QString::number(px, 'f', 2);
    };
    text +=
        QString("   ·   frame %1: dx %2, dy %3 %4").arg(lastFrame_).arg(shift(lastDx_), shift(lastDy_), c.lengthUnit());
    if (lastFlags_) text += QString(" (flags %1)").arg(lastFlags_);
  }
  counter_->setText(text);
}
