#include "views/image_view.hpp"

#include <QMouseEvent>
#include <QPainter>
#include <QWheelEvent>
#include <cmath>

ImageView::ImageView(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setMinimumSize(160, 160);
  setAttribute(Qt::WA_OpaquePaintEvent);
  setFocusPolicy(Qt::StrongFocus);
}

void ImageView::setImage(const QImage& image, std::shared_ptr<const driftscan::Frame> data) {
  const bool sizeChanged = image.size() != image_.size();
  image_ = image;
  data_ = std::move(data);
  if (sizeChanged || fitted_) fit();
  update();
}

void ImageView::setPixelSize(double size, const QString& unit) {
  pixelSize_ = size;
  unit_ = unit;
  update();
}

void ImageView::setCaption(const QString& caption) {
  caption_ = caption;
  update();
}

void ImageView::setRoiToolActive(bool on) {
  roiTool_ = on;
  setCursor(on ? Qt::CrossCursor : Qt::ArrowCursor);
}

void ImageView::setRoi(const QRect& roi) {
  roi_ = roi;
  update();
}

void ImageView::fit() {
  fitted_ = true;
  if (image_.isNull() || width() <= 0 || height() <= 0) return;
  scale_ = std::min(double(width()) / image_.width(), double(height()) / image_.height());
  centre_ = QPointF(image_.width() / 2.0, image_.height() / 2.0);
  update();
  emitView();
}

void ImageView::oneToOne() {
  fitted_ = false;
  scale_ = 1.0;
  update();
  emitView();
}

void ImageView::setView(double scale, QPointF centre) {
  if (scale == scale_ && centre == centre_) return;
  scale_ = scale;
  centre_ = centre;
  fitted_ = false;
  update();
}

void ImageView::emitView() { emit viewChanged(scale_, centre_); }

QPointF ImageView::toImage(QPointF w) const { return centre_ + (w - QPointF(width() / 2.0, height() / 2.0)) / scale_; }

QPointF ImageView::toWidget(QPointF i) const { return (i - centre_) * scale_ + QPointF(width() / 2.0, height() / 2.0); }

void ImageView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), QColor(30, 30, 34));
  if (image_.isNull()) {
    p.setPen(Qt::lightGray);
    p.drawText(rect(), Qt::AlignCenter, caption_.isEmpty() ? QString("no image") : caption_);
    return;
  }
  // Nearest neighbour when magnified: pixels stay pixels.
  p.setRenderHint(QPainter::SmoothPixmapTransform, scale_ < 1.0);
  const QRectF target(toWidget(QPointF(0, 0)), toWidget(QPointF(image_.width(), image_.height())));
  p.drawImage(target, image_);
  if (!roi_.isEmpty()) {
    p.setPen(QPen(QColor(255, 220, 0), 1.5, Qt::DashLine));
    p.setBrush(Qt::NoBrush);
    p.drawRect(QRectF(toWidget(roi_.topLeft()), toWidget(QPointF(roi_.x() + roi_.width(), roi_.y() + roi_.height()))));
  }
  drawScaleBar(p);
  drawScanArrow(p);
  if (!caption_.isEmpty()) {
    p.setRenderHint(QPainter::Antialiasing);
    QFont f = font();
    f.setBold(true);
    p.setFont(f);
    const QRect box =
        p.fontMetrics().boundingRect(caption_).adjusted(-4, -2, 4, 2).translated(8, 8 + p.fontMetrics().ascent());
    p.fillRect(box, QColor(0, 0, 0, 150));
    p.setPen(Qt::white);
    p.drawText(box, Qt::AlignCenter, caption_);
  }
}

void ImageView::setScanArrow(double deg) {
  if (deg == scanArrow_ || (std::isnan(deg) && std::isnan(scanArrow_))) return;
  scanArrow_ = deg;
  update();
}

void ImageView::drawScanArrow(QPainter& p) {
  if (std::isnan(scanArrow_) || image_.isNull()) return;
  // Top right: the fast axis R(θ)(1, 0), x right and y down as displayed.
  const double a = scanArrow_ * M_PI / 180.0, len = 22.0;
  const QPointF c(width() - 40.0, 40.0), d(std::cos(a) * len, std::sin(a) * len);
  const QPointF tip = c + d, tail = c - d;
  p.save();
  p.setRenderHint(QPainter::Antialiasing);
  p.setBrush(QColor(0, 0, 0, 150));
  p.setPen(Qt::NoPen);
  p.drawEllipse(c, len + 10, len + 10);
  p.setPen(QPen(QColor(120, 220, 255), 2.5));
  p.drawLine(tail, tip);
  const QPointF u = d / len, n(-u.y(), u.x());
  p.setBrush(QColor(120, 220, 255));
  p.drawPolygon(QPolygonF{tip, tip - 8 * u + 5 * n, tip - 8 * u - 5 * n});
  p.setPen(Qt::white);
  p.drawText(QRectF(c.x() - 40, c.y() + len + 10, 80, 16), Qt::AlignCenter,
             QString::fromUtf8("scan %1\u00b0").arg(scanArrow_, 0, 'g', 4));
  p.restore();
}

void ImageView::drawScaleBar(QPainter& p) {
  if (pixelSize_ <= 0.0 || image_.isNull()) return;
  // A round length (1, 2 or 5 × 10^n units) about a fifth of the view width.
  const double targetUnits = width() / 5.0 / scale_ * pixelSize_;
  const double mag = std::pow(10.0, std::floor(std::log10(targetUnits)));
  double len = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag <= targetUnits) len = m * mag;
  const double px = len / pixelSize_ * scale_;
  const QString label = QString("%1 %2").arg(len, 0, 'g', 3).arg(unit_.isEmpty() ? "units" : unit_);
  const int x0 = width() - 16 - int(px), y0 = height() - 16;
  p.setRenderHint(QPainter::Antialiasing, false);
  const QRect textBox = p.fontMetrics().boundingRect(label);
  p.fillRect(QRect(x0 - 6, y0 - textBox.height() - 12, int(px) + 12, textBox.height() + 20), QColor(0, 0, 0, 140));
  p.fillRect(QRectF(x0, y0 - 4, px, 5), Qt::white);
  p.setPen(Qt::white);
  p.drawText(QRectF(x0, y0 - textBox.height() - 8, px, textBox.height()), Qt::AlignCenter, label);
}

void ImageView::resizeEvent(QResizeEvent*) {
  if (fitted_) fit();
}

void ImageView::wheelEvent(QWheelEvent* e) {
  if (image_.isNull()) return;
  const QPointF anchor = toImage(e->position());
  const double factor = std::pow(1.0015, e->angleDelta().y());
  scale_ = std::clamp(scale_ * factor, 0.02, 64.0);
  // Keep the pixel under the cursor where it is.
  centre_ = anchor - (e->position() - QPointF(width() / 2.0, height() / 2.0)) / scale_;
  fitted_ = false;
  update();
  emitView();
}

void ImageView::mousePressEvent(QMouseEvent* e) {
  dragStart_ = e->position();
  if (roiTool_ && e->button() == Qt::LeftButton) {
    drawingRoi_ = true;
    const QPointF i = toImage(e->position());
    roi_ = QRect(QPoint(int(std::floor(i.x())), int(std::floor(i.y()))), QSize(0, 0));
  } else {
    panning_ = true;
    dragCentre_ = centre_;
    setCursor(Qt::ClosedHandCursor);
  }
}

void ImageView::mouseMoveEvent(QMouseEvent* e) {
  const QPointF i = toImage(e->position());
  const int x = int(std::floor(i.x())), y = int(std::floor(i.y()));
  if (!image_.isNull() && x >= 0 && y >= 0 && x < image_.width() && y < image_.height()) {
    double v = NAN;
    if (data_ && x < data_->width && y < data_->height) v = data_->at(x, y);
    emit cursorMoved(x, y, v);
  } else {
    emit cursorLeft();
  }
  if (panning_) {
    centre_ = dragCentre_ - (e->position() - dragStart_) / scale_;
    fitted_ = false;
    update();
    emitView();
  } else if (drawingRoi_) {
    const QPointF a = toImage(dragStart_);
    QRect r = QRect(QPoint(int(std::floor(std::min(a.x(), i.x()))), int(std::floor(std::min(a.y(), i.y())))),
                    QPoint(int(std::ceil(std::max(a.x(), i.x()))) - 1, int(std::ceil(std::max(a.y(), i.y()))) - 1));
    roi_ = r.intersected(QRect(QPoint(0, 0), image_.size()));
    update();
  }
}

void ImageView::mouseReleaseEvent(QMouseEvent*) {
  if (drawingRoi_) {
    drawingRoi_ = false;
    if (roi_.width() < 4 || roi_.height() < 4) roi_ = QRect();
    update();
    emit roiChanged(roi_);
  }
  if (panning_) {
    panning_ = false;
    setCursor(roiTool_ ? Qt::CrossCursor : Qt::ArrowCursor);
  }
}

void ImageView::leaveEvent(QEvent*) { emit cursorLeft(); }
