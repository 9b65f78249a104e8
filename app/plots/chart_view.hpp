#pragma once
// The behaviour every plot shares, on Qt Charts: one QGraphicsView whose
// scene holds the plot's charts (panels), so one scene renders the screen, a
// PNG and an SVG alike, and it works on the offscreen/minimal platforms (no
// OpenGL). Qt Charts draws the axes, ticks, grids and legends.
//
// The x axis (frames or time) of the linked panels zooms with the wheel about
// the cursor and with a rubber band (right-button or Shift drag), pans by
// dragging or with the arrow keys, and comes back whole on a double click or
// Home. A click that does not drag is the plot's own (selecting a frame).
// Moving over the plot shows a readout (frame and value under the cursor)
// beside it, on screen only: exports draw the view as zoomed, without it.
//
// The plots over frames (the drift plots, the line-drift plot, the live
// plot) share here their calibration (lengths in the series' unit when known),
// the current frame (marked; set from the other views) and the frame a click
// selects.
#include <QCursor>
#include <QGraphicsView>
#include <QSet>
#include <utility>
#include <vector>

#include "project/pixel_calibration.hpp"

class QAbstractAxis;
class QAbstractSeries;
class QChart;
class QGraphicsRectItem;
class QGraphicsSimpleTextItem;
class QValueAxis;

class ChartView : public QGraphicsView {
  Q_OBJECT
 public:
  explicit ChartView(QWidget* parent = nullptr);
  // Writes the plot at `size` (the widget's size when empty); false on I/O failure.
  bool exportPng(const QString& path, QSize size = {});
  bool exportSvg(const QString& path, QSize size = {});
  QImage toImage(QSize size = {});
  QSize sizeHint() const override { return {800, 500}; }

  // The shown part of the x axis as fractions of its full range (0, 1: all).
  double viewStart() const { return f0_; }
  double viewEnd() const { return f1_; }
  void setXView(double start, double end);
  void resetView() { setXView(0.0, 1.0); }
  bool zoomed() const { return f0_ > 0.0 || f1_ < 1.0; }
  // The readout at the cursor's last position (empty: none shown).
  QString readout() const { return readout_; }
  // The texts of the shown panels that Qt Charts cut to fit ("specimen
  // dr..."): axis titles and tick labels without the room for them. Empty
  // when the layout gives every axis its room.
  QStringList truncatedTexts() const;

  // Ticks at 1, 2 or 5 times a power of ten, about `target` of them, kept so
  // when the range is set by setAxisRange (as zooming does).
  static void useNiceTicks(QValueAxis* axis, int target = 6);
  static void setAxisRange(QValueAxis* axis, double lo, double hi);
  // Widens [lo, hi] by 5% (and an empty range to a unit one).
  static void pad(double& lo, double& hi);

  // The series' calibration (size <= 0 or no unit: none, the axes stay in
  // pixels). When known, lengths are drawn and read out in the unit unless
  // setPhysicalUnits(false) asked for pixels.
  void setPixelSize(double size, const QString& unit);
  void setPhysicalUnits(bool on);
  const PixelCalibration& calibration() const { return cal_; }
  int currentFrame() const { return current_; }

 public slots:
  // The frame shown elsewhere (the series viewer, the frame table), marked here.
  void setCurrentFrame(int frame);

 signals:
  // A click on the plot chose this frame.
  void frameSelected(int frame);

 protected:
  // A click chose `frame`: it becomes current and frameSelected() is emitted.
  void selectFrame(int frame);
  // The series drawn again (new data, or another unit).
  virtual void rebuild() {}
  // The current frame marked again.
  virtual void showCurrent() {}

  // A new panel, owned by the scene; placed by layoutCharts() (a panel not
  // shown is placed outside the scene: hidden, Qt Charts would not lay it out).
  QChart* addChart();
  // A value axis titled `title` with nice ticks, on `chart`'s `side`.
  static QValueAxis* addValueAxis(QChart* chart, Qt::Alignment side, const QString& title);
  // `series` added to `chart` on axes x and y; named in the legend only if `inLegend`.
  static void addSeries(QChart* chart, QAbstractSeries* series, QAbstractAxis* x, QAbstractAxis* y, bool inLegend);
  // `axis` (of `chart`) shows the zoomable x axis; its full range is setXRange's.
  void linkXAxis(QChart* chart, QAbstractAxis* axis);
  void setXRange(double lo, double hi);
  // [lo, hi] narrowed to the shown part.
  std::pair<double, double> shown(double lo, double hi) const;
  // Places the panels in a scene of `size` (the widget's, or an export's).
  virtual void layoutCharts(const QSizeF& size) = 0;
  // Shown instead of the charts while not empty (no data yet, and why).
  void setEmptyText(const QString& text);
  bool isEmpty() const { return !emptyText_.isEmpty(); }
  // The readout for widget point `pos` (empty: none).
  virtual QString readoutAt(QPointF pos) const;
  // A press and release without dragging.
  virtual void clickedAt(QPointF pos);
  // Lays the panels out again (after a change of what they show).
  void relayout();
  // After the shown part of the x axis changed (zoom, pan, a new range): for
  // plots whose series depend on what is in view.
  virtual void xViewChanged() {}
  // `chart` over `tile` (scene coordinates), laid out now; `extra`: more
  // room around its plot area (for the plot's own labels).
  static void placeChart(QChart* chart, const QRectF& tile, const QMargins& extra = {});
  // Charts stacked in one column: their plot areas' left and right edges
  // lined up (the tick labels of their y axes differ in width).
  static void lineUp(const std::vector<QChart*>& charts);
  // `chart`'s plot area made square (equal scales on both axes).
  static void makeSquare(QChart* chart);

  // The panel whose plot area holds widget point `pos` (null: none).
  QChart* chartAt(QPointF pos) const;
  // Widget point <-> data value in `chart` (of `series`' axes; its first series when null).
  QPointF valueAt(QChart* chart, QPointF pos, QAbstractSeries* series = nullptr) const;
  QPointF positionOf(QChart* chart, QPointF value, QAbstractSeries* series = nullptr) const;

  void resizeEvent(QResizeEvent* e) override;
  void drawForeground(QPainter* p, const QRectF& rect) override;
  void wheelEvent(QWheelEvent* e) override;
  void mousePressEvent(QMouseEvent* e) override;
  void mouseMoveEvent(QMouseEvent* e) override;
  void mouseReleaseEvent(QMouseEvent* e) override;
  void mouseDoubleClickEvent(QMouseEvent* e) override;
  void keyPressEvent(QKeyEvent* e) override;
  void leaveEvent(QEvent* e) override;

 private:
  // The x-zoomable panel under `pos` (null: none).
  QChart* zoomChartAt(QPointF pos) const;
  void applyXView();
  // The scene laid out at `size`.
  void place(const QSizeF& size);
  // Renders the scene laid out at `size` into `device` (a QImage or QSvgGenerator).
  bool renderTo(QPaintDevice* device, QSize size);
  void updateReadout(QPointF pos);

  std::vector<QChart*> charts_;
  QSet<QChart*> zoomCharts_;
  std::vector<QAbstractAxis*> xAxes_;
  QGraphicsRectItem* emptyCover_ = nullptr;
  QGraphicsSimpleTextItem* emptyItem_ = nullptr;
  QString emptyText_;
  double x0_ = 0, x1_ = 1;
  double f0_ = 0.0, f1_ = 1.0;
  QPointF pressAt_, readoutAt_;
  QCursor cursorBeforeDrag_;
  double pressF0_ = 0.0;
  bool pressed_ = false, dragging_ = false, banding_ = false;
  QString readout_;
  int current_ = -1;

 protected:
  PixelCalibration cal_;
};
