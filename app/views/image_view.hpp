#pragma once
// A 2-D image view (plain QPainter on a QImage: fast and exact for frames).
// Mouse wheel zooms about the cursor, drag pans, fit and 1:1; reports the
// pixel under the cursor with its data value; draws a scale bar from the
// pixel size; an optional rectangular ROI tool. Views can be linked through
// viewChanged()/setView() (linked zoom and pan).
#include <QImage>
#include <QPointF>
#include <QRect>
#include <QWidget>
#include <limits>
#include <memory>

#include "driftscan/core/frame.hpp"

class ImageView : public QWidget {
  Q_OBJECT
 public:
  explicit ImageView(QWidget* parent = nullptr);

  // `data` (may be null) backs the value readout; `image` is what is drawn.
  void setImage(const QImage& image, std::shared_ptr<const driftscan::Frame> data = nullptr);
  const QImage& image() const { return image_; }
  void setPixelSize(double size, const QString& unit);
  double pixelSize() const { return pixelSize_; }
  QString pixelUnit() const { return unit_; }
  void setCaption(const QString& caption);
  QString caption() const { return caption_; }
  // An arrow along the shown frame's fast scan axis in frame 0's orientation
  // (scan rotation `deg`, core/scan_rotation.hpp), labelled with the angle;
  // NaN: none (a series scanned in one direction).
  void setScanArrow(double deg);
  double scanArrow() const { return scanArrow_; }
  void setRoiToolActive(bool on);
  bool roiToolActive() const { return roiTool_; }
  void setRoi(const QRect& roi);  // empty: none
  QRect roi() const { return roi_; }
  double zoom() const { return scale_; }
  // Where image point `p` is drawn, in widget coordinates.
  QPointF widgetPosition(QPointF p) const { return toWidget(p); }
  QPointF centre() const { return centre_; }
  QSize sizeHint() const override { return {512, 512}; }

 public slots:
  void fit();
  void oneToOne();
  void setView(double scale, QPointF centre);

 signals:
  void viewChanged(double scale, QPointF centre);
  // Pixel under the cursor; value is NaN when there is no data.
  void cursorMoved(int x, int y, double value);
  void cursorLeft();
  void roiChanged(QRect roi);

 protected:
  void paintEvent(QPaintEvent*) override;
  void resizeEvent(QResizeEvent*) override;
  void wheelEvent(QWheelEvent* e) override;
  void mousePressEvent(QMouseEvent* e) override;
  void mouseMoveEvent(QMouseEvent* e) override;
  void mouseReleaseEvent(QMouseEvent* e) override;
  void leaveEvent(QEvent*) override;

 private:
  QPointF toImage(QPointF widgetPos) const;
  QPointF toWidget(QPointF imagePos) const;
  void drawScaleBar(QPainter& p);
  void drawScanArrow(QPainter& p);
  void emitView();

  QImage image_;
  std::shared_ptr<const driftscan::Frame> data_;
  double scale_ = 1.0;
  QPointF centre_;
  bool fitted_ = true;  // keep fitting on resize until the user zooms
  double pixelSize_ = 0.0;
  QString unit_;
  QString caption_;
  double scanArrow_ = std::numeric_limits<double>::quiet_NaN();
  bool roiTool_ = false;
  QRect roi_;
  QPointF dragStart_;
  QPointF dragCentre_;
  bool panning_ = false;
  bool drawingRoi_ = false;
};
