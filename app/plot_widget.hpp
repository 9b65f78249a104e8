#pragma once
// A widget drawn entirely with QPainter through render(), so the same code
// paints the screen, a PNG and an SVG (QSvgGenerator) — exports are exact.
#include <QCursor>
#include <QWidget>
#include <utility>
#include <vector>

class QPainter;
class QRectF;

// The x axis (frames or time) zooms with the wheel about the cursor, pans by
// dragging and comes back whole on a double click; a click that does not drag
// is the plot's own (selecting a frame). Moving over the plot shows a readout
// (frame and value under the cursor) beside it, on screen only: exports draw
// the view as zoomed, without the readout.
class PlotWidget : public QWidget {
  Q_OBJECT
 public:
  explicit PlotWidget(QWidget* parent = nullptr);
  virtual void render(QPainter& p, const QSize& size) const = 0;
  // Writes the plot at `size` (the widget's size when empty); false on I/O failure.
  bool exportPng(const QString& path, QSize size = {}) const;
  bool exportSvg(const QString& path, QSize size = {}) const;
  QImage toImage(QSize size = {}) const;
  QSize sizeHint() const override { return {800, 500}; }

  // The shown part of the x axis as fractions of its full range (0, 1: all).
  double viewStart() const { return f0_; }
  double viewEnd() const { return f1_; }
  void setXView(double start, double end);
  void resetView() { setXView(0.0, 1.0); }
  bool zoomed() const { return f0_ > 0.0 || f1_ < 1.0; }
  // The readout at the cursor's last position (empty: none shown).
  QString readout() const { return readout_; }

 protected:
  // Where the zoomable x axis is drawn (empty: no zoom, no pan).
  virtual QRectF zoomPanel(const QSize& size) const;
  // The readout for widget point `pos` (empty: none).
  virtual QString readoutAt(QPointF pos) const;
  // A press and release without dragging.
  virtual void clickedAt(QPointF pos);
  // [lo, hi] narrowed to the shown part.
  std::pair<double, double> shown(double lo, double hi) const;

  void paintEvent(QPaintEvent*) override;
  void wheelEvent(QWheelEvent* e) override;
  void mousePressEvent(QMouseEvent* e) override;
  void mouseMoveEvent(QMouseEvent* e) override;
  void mouseReleaseEvent(QMouseEvent* e) override;
  void mouseDoubleClickEvent(QMouseEvent* e) override;
  void leaveEvent(QEvent* e) override;

 private:
  double f0_ = 0.0, f1_ = 1.0;
  QPointF pressAt_, readoutAt_;
  QCursor cursorBeforeDrag_;
  double pressF0_ = 0.0;
  bool pressed_ = false, dragging_ = false;
  QString readout_;
};

// Axis helper: "nice" tick positions covering [lo, hi].
std::vector<double> nice_ticks(double lo, double hi, int target = 6);

// The axes every plot panel draws, shared so that all plots look alike.
namespace plot {
// v in [a, b] mapped linearly to [p, q].
double map(double v, double a, double b, double p, double q);
// Grid, frame, ticks with labels, a bold title above and axis labels.
void frame_axes(QPainter& p, const QRectF& r, double x0, double x1, double y0, double y1, const QString& title,
                const QString& xlabel, const QString& ylabel);
// Widens [lo, hi] by 5% (and an empty range to a unit one).
void pad(double& lo, double& hi);
}  // namespace plot
