// The plots' navigation in a real window (Xvfb): the wheel zooms the frame
// (or time) axis about the cursor, dragging pans it, a right-button drag
// zooms to the band it spans, the arrow keys pan and Home resets, a click
// without drag still selects a frame, a double click shows everything again, and the
// readout beside the cursor gives the frame and its values (in the series'
// unit when it has one). The readout is drawn on screen only, never into an export.
#include <QApplication>
#include <QMouseEvent>
#include <QSignalSpy>
#include <QWheelEvent>
#include <QtCharts/QChart>
#include <QtCharts/QLegend>
#include <QtCharts/QLegendMarker>
#include <QtCharts/QLineSeries>
#include <QtTest/QtTest>
#include <algorithm>
#include <cmath>

#include "plots/drift_plot.hpp"
#include "plots/imbalance_view.hpp"
#include "plots/line_drift_plot.hpp"

namespace {
void wheel(QWidget* w, QPointF at, int notches) {
  QWheelEvent e(at, w->mapToGlobal(at), QPoint(), QPoint(0, 120 * notches), Qt::NoButton, Qt::NoModifier,
                Qt::NoScrollPhase, false);
  QApplication::sendEvent(w, &e);
}
void mouse(QWidget* w, QEvent::Type type, QPointF at, Qt::MouseButton button, Qt::MouseButtons buttons) {
  QMouseEvent e(type, at, w->mapToGlobal(at), button, buttons, Qt::NoModifier);
  QApplication::sendEvent(w, &e);
}
// Consecutive points of `s` in different frames: a segment across a fly-back.
int fly_back_segments(const QLineSeries* s, const LineDriftSeries& lines) {
  int n = 0;
  const QList<QPointF> p = s->points();
  for (qsizetype i = 1; i < p.size(); ++i) {
    const auto k =
        std::upper_bound(lines.frameFirst.begin(), lines.frameFirst.end(), p[i - 1].x()) - lines.frameFirst.begin() - 1;
    if (p[i].x() > lines.frameLast[static_cast<std::size_t>(k)]) ++n;
  }
  return n;
}
bool has_colour(const QImage& img, QRgb c) {
  for (int y = 0; y < img.height(); ++y)
    for (int x = 0; x < img.width(); ++x)
      if (img.pixel(x, y) == c) return true;
  return false;
}
}  // namespace

class PlotNavigationTest : public QObject {
  Q_OBJECT

 private slots:
  void driftPlotZoomsPansSelectsAndReadsOut() {
    DriftPlot plot;
    std::vector<DriftRow> rows;
    for (int k = 0; k <= 20; ++k) {
      DriftRow r;
      r.frame = k;
      r.dx = 0.5 * k;
      r.dy = -0.2 * k;
      r.quality = 0.9;
      r.sigma_dx = 0.01 * k;
      r.sigma_dy = 0.005 * k;
      rows.push_back(r);
    }
    plot.setDrift(rows);
    plot.setPixelSize(0.1, "nm");
    plot.resize(1000, 650);
    plot.show();
    QVERIFY(QTest::qWaitForWindowExposed(&plot));
    QCOMPARE(plot.frameRange(), std::make_pair(0.0, 20.0));
    QSignalSpy selected(&plot, &DriftPlot::frameSelected);

    // Zoom in 3 notches about frame 10: it stays under the cursor, the range narrows.
    const QPointF at10 = plot.pointPosition(10);
    wheel(plot.viewport(), at10, 3);
    QVERIFY(plot.zoomed());
    const auto zoomedRange = plot.frameRange();
    QVERIFY2(zoomedRange.second - zoomedRange.first < 0.6 * 20,
             qPrintable(QString("%1..%2").arg(zoomedRange.first).arg(zoomedRange.second)));
    QVERIFY(std::abs(plot.pointPosition(10).x() - at10.x()) < 1.0);
    QVERIFY(zoomedRange.first > 0 && zoomedRange.second < 20);

    // Drag 120 px to the right: earlier frames come into view; no frame is selected by a drag.
    const QPointF start = plot.pointPosition(10);
    mouse(plot.viewport(), QEvent::MouseButtonPress, start, Qt::LeftButton, Qt::LeftButton);
    mouse(plot.viewport(), QEvent::MouseMove, start + QPointF(60, 0), Qt::NoButton, Qt::LeftButton);
    mouse(plot.viewport(), QEvent::MouseMove, start + QPointF(120, 0), Qt::NoButton, Qt::LeftButton);
    mouse(plot.viewport(), QEvent::MouseButtonRelease, start + QPointF(120, 0), Qt::LeftButton, Qt::NoButton);
    const auto panned = plot.frameRange();
    QVERIFY(panned.first < zoomedRange.first);
    QVERIFY(std::abs((panned.second - panned.first) - (zoomedRange.second - zoomedRange.first)) < 1e-9);
    QVERIFY(std::abs(plot.pointPosition(10).x() - (start.x() + 120)) < 1.5);  // the frame followed the mouse
    QCOMPARE(selected.count(), 0);

    // A click that does not move selects the frame under it.
    const int target = int(std::round(0.5 * (panned.first + panned.second)));
    const QPointF atTarget = plot.pointPosition(target);
    mouse(plot.viewport(), QEvent::MouseButtonPress, atTarget, Qt::LeftButton, Qt::LeftButton);
    mouse(plot.viewport(), QEvent::MouseButtonRelease, atTarget, Qt::LeftButton, Qt::NoButton);
    QCOMPARE(selected.count(), 1);
    QCOMPARE(selected.at(0).at(0).toInt(), target);

    // The readout: frame, shift in the series' unit (dx * pixel size), sigma too, the pixels after.
    mouse(plot.viewport(), QEvent::MouseMove, atTarget, Qt::NoButton, Qt::NoButton);
    const QString expected =
        QString("frame %1: dx %2, dy %3 nm").arg(target).arg(0.05 * target, 0, 'g', 4).arg(-0.02 * target, 0, 'g', 4);
    QVERIFY2(plot.readout().startsWith(expected), qPrintable(plot.readout() + " vs " + expected));
    QVERIFY2(plot.readout().contains(QString::number(0.001 * target, 'g', 3) + " nm"), qPrintable(plot.readout()));
    QVERIFY2(plot.readout().endsWith(QString("(%1, %2 px)").arg(0.5 * target, 0, 'f', 3).arg(-0.2 * target, 0, 'f', 3)),
             qPrintable(plot.readout()));
    // View > Physical units off: the same point reads out in pixels.
    plot.setPhysicalUnits(false);
    mouse(plot.viewport(), QEvent::MouseMove, atTarget + QPointF(0, 1), Qt::NoButton, Qt::NoButton);
    QVERIFY2(plot.readout().startsWith(QString("frame %1: dx %2, dy %3 px")
                                           .arg(target)
                                           .arg(0.5 * target, 0, 'f', 3)
                                           .arg(-0.2 * target, 0, 'f', 3)),
             qPrintable(plot.readout()));
    QCOMPARE(plot.shiftAxisLabel(), QString("shift (px)"));
    plot.setPhysicalUnits(true);
    mouse(plot.viewport(), QEvent::MouseMove, atTarget, Qt::NoButton, Qt::NoButton);
    // On screen, not in the export.
    QApplication::processEvents();
    const QRgb box = qRgb(255, 255, 225);
    QVERIFY(has_colour(plot.grab().toImage(), box));
    // The export shows the zoomed view (it differs from the whole one, below).
    const QImage zoomedExport = plot.toImage();
    QVERIFY(!has_colour(zoomedExport, box));

    // Double click: the whole series again.
    mouse(plot.viewport(), QEvent::MouseButtonDblClick, atTarget, Qt::LeftButton, Qt::LeftButton);
    QVERIFY(!plot.zoomed());
    QCOMPARE(plot.frameRange(), std::make_pair(0.0, 20.0));
    QVERIFY(plot.toImage() != zoomedExport);
    // A rubber band (right-button drag) from frame 5 to frame 10 zooms to those frames; nothing is selected.
    const QPointF from = plot.pointPosition(5), to = plot.pointPosition(10);
    mouse(plot.viewport(), QEvent::MouseButtonPress, from, Qt::RightButton, Qt::RightButton);
    mouse(plot.viewport(), QEvent::MouseMove, (from + to) / 2, Qt::NoButton, Qt::RightButton);
    mouse(plot.viewport(), QEvent::MouseMove, to, Qt::NoButton, Qt::RightButton);
    mouse(plot.viewport(), QEvent::MouseButtonRelease, to, Qt::RightButton, Qt::NoButton);
    const auto banded = plot.frameRange();
    QVERIFY2(std::abs(banded.first - 5) < 0.05 && std::abs(banded.second - 10) < 0.05,
             qPrintable(QString("%1..%2").arg(banded.first).arg(banded.second)));
    QCOMPARE(selected.count(), 1);
    // Keys: Right pans by a tenth of the shown range, Home shows everything.
    QTest::keyClick(&plot, Qt::Key_Right);
    QVERIFY(std::abs(plot.frameRange().first - (banded.first + 0.5)) < 1e-6);
    QTest::keyClick(&plot, Qt::Key_Home);
    QVERIFY(!plot.zoomed());
    // Leaving the plot removes the readout.
    QEvent leave(QEvent::Leave);
    QApplication::sendEvent(&plot, &leave);
    QVERIFY(plot.readout().isEmpty());
  }

  void lineDriftPlotReadsOutInTheSeriesUnit() {
    // Two frames of 50 lines, drifting 0.1 px per line in x, jitter +-0.2 px.
    LineDriftSeries lines;
    for (int k = 0; k < 2; ++k) {
      lines.frameFirst.push_back(k * 1.2);
      lines.frameLast.push_back(k * 1.2 + 0.98);
      for (int i = 0; i < 50; ++i) {
        lines.t.push_back(k * 1.2 + i * 0.02);
        lines.dx.push_back(0.1 * (50 * k + i));
        lines.dy.push_back(-0.05 * (50 * k + i));
        lines.jitter.push_back(i % 2 ? 0.2 : -0.2);
        lines.frame.push_back(k);
      }
    }
    lines.totalLines = 100;
    LineDriftPlot plot;
    plot.setSeries(lines, {});
    plot.resize(900, 600);
    plot.show();
    QVERIFY(QTest::qWaitForWindowExposed(&plot));
    const QPointF at(plot.xOfTime(1.5), 120);  // in the drift panel
    const QRegularExpression value(R"(: drift (-?[0-9.eE+-]+) (\S+)$)");
    mouse(plot.viewport(), QEvent::MouseMove, at, Qt::NoButton, Qt::NoButton);
    const auto px = value.match(plot.readout());
    QVERIFY2(px.hasMatch() && px.captured(2) == "px", qPrintable(plot.readout()));  // no calibration: px
    plot.setPixelSize(20, "pm");                                                    // restated in nm: 0.02 nm
    QCOMPARE(plot.calibration().size, 0.02);
    mouse(plot.viewport(), QEvent::MouseMove, at + QPointF(0, 1), Qt::NoButton, Qt::NoButton);
    mouse(plot.viewport(), QEvent::MouseMove, at, Qt::NoButton, Qt::NoButton);
    const auto nm = value.match(plot.readout());
    QVERIFY2(nm.hasMatch() && nm.captured(2) == "nm", qPrintable(plot.readout()));
    const double v = px.captured(1).toDouble();
    QVERIFY(std::abs(v) > 0.5);
    QVERIFY2(std::abs(nm.captured(1).toDouble() - v * 0.02) <= 1e-3 * std::abs(v * 0.02) + 1e-6,
             qPrintable(plot.readout() + " vs " + px.captured(0)));
  }

  void lineDriftPlotBreaksAtFlyBacksWhileFewFramesAreInView() {
    // 400 frames of 20 lines 0.02 s apart, a 0.12 s fly-back between frames.
    LineDriftSeries lines;
    for (int k = 0; k < 400; ++k) {
      for (int i = 0; i < 20; ++i) {
        lines.t.push_back(k * 0.5 + i * 0.02);
        lines.dx.push_back(0.01 * (20 * k + i));
        lines.dy.push_back(std::sin(0.05 * (20 * k + i)));
        lines.jitter.push_back(i % 2 ? 0.1 : -0.1);
        lines.frame.push_back(k);
      }
      lines.frameFirst.push_back(lines.t[lines.t.size() - 20]);  // as LineDriftSeries::read keeps them
      lines.frameLast.push_back(lines.t.back());
    }
    lines.totalLines = lines.t.size();
    LineDriftPlot plot;
    plot.setSeries(lines, {});
    plot.resize(1000, 650);
    plot.show();
    QVERIFY(QTest::qWaitForWindowExposed(&plot));
    const std::vector<QLineSeries*>* curves = &plot.curves();
    auto legend_names = [&] {
      QStringList names;
      for (QLineSeries* s : *curves)
        for (QLegendMarker* m : s->chart()->legend()->markers(s))
          if (m->isVisible()) names << s->name();
      return names;
    };
    // All 400 in view: one series per curve, joined, and the legend says so.
    QVERIFY(plot.curvesJoined());
    QCOMPARE(curves->size(), std::size_t(3));
    QVERIFY(fly_back_segments(curves->front(), lines) == 399);
    QVERIFY2(legend_names().size() == 2 && legend_names().front().contains("joined across fly-backs"),
             qPrintable(legend_names().join(", ")));
    // Wheel in 7 notches (0.8^7 of the axis: ~84 frames): a series per frame
    // and curve (the frames in view and some around them), none across a
    // fly-back, each curve named once.
    const QPointF mid(plot.xOfTime(100.0), 120);
    wheel(plot.viewport(), mid, 7);
    auto check_split = [&](const char* when) {
      const auto [first, last] = plot.framesInView();
      const int n = last - first + 1;
      QVERIFY2(!plot.curvesJoined() && n > 50 && n <= LineDriftPlot::kMaxSplitFrames,
               qPrintable(QString("%1: frames %2..%3").arg(when).arg(first).arg(last)));
      QVERIFY(int(curves->size()) >= 3 * n);
      QCOMPARE(curves->size() % 3, std::size_t(0));
      QVERIFY(int(curves->size()) <= 3 * LineDriftPlot::kMaxSplitFrames);
      for (const QLineSeries* s : *curves) QCOMPARE(fly_back_segments(s, lines), 0);
      // The series cover the frames in view.
      QVERIFY(curves->front()->points().front().x() <= lines.frameFirst[std::size_t(first)]);
      QVERIFY(curves->back()->points().back().x() >= lines.frameLast[std::size_t(last)]);
      QVERIFY2(legend_names() == QStringList({"dx", "dy"}),
               qPrintable(when + (": " + legend_names().join(", ")) +
                          QString(" markers %1 of first %2")
                              .arg(curves->front()->chart()->legend()->markers().size())
                              .arg(curves->front()->chart()->legend()->markers(curves->front()).size())));
    };
    check_split("zoomed in");
    const int firstBefore = plot.framesInView().first;
    // Panned right (arrow key, 10% of the view each): other frames in view,
    // past the margin built around them after a few presses.
    for (int i = 0; i < 8; ++i) QTest::keyClick(plot.viewport(), Qt::Key_Right);
    QVERIFY(plot.framesInView().first > firstBefore + 40);
    check_split("panned");
    // Out 3 notches: ~164 frames, still split; 3 more: ~320 > 300, joined again.
    QElapsedTimer rebuild;
    rebuild.start();
    wheel(plot.viewport(), mid, -3);
    qInfo("zoom out to %d frames in view, %zu series rebuilt: %lld ms",
          plot.framesInView().second - plot.framesInView().first + 1, curves->size(),
          static_cast<long long>(rebuild.elapsed()));
    check_split("zoomed out to ~164 frames");
    wheel(plot.viewport(), mid, -3);
    QVERIFY2(plot.framesInView().second - plot.framesInView().first + 1 > LineDriftPlot::kMaxSplitFrames,
             qPrintable(QString::number(plot.framesInView().second - plot.framesInView().first + 1)));
    QVERIFY(plot.curvesJoined());
    QCOMPARE(curves->size(), std::size_t(3));
    QVERIFY(fly_back_segments(curves->front(), lines) > 0);
    // The picture still has its curves (rebuilt series are drawn).
    QVERIFY(!plot.toImage(QSize(800, 500)).isNull());
  }

  void loadBalanceZoomsAndNamesTheApplication() {
    ImbalanceView view;
    ScanTraceData t;
    t.ranks = 1;
    t.threads = 2;
    t.makespan_s = 1.0;
    t.workers = {WorkerRow{0, 0, 0.8, 0.2, 2, 0}, WorkerRow{0, 1, 0.5, 0.5, 1, 1}};
    t.records = {TraceRecord{0, 0, 0, 3, "local-reduce", 0.0, 0.4, false},
                 TraceRecord{0, 0, 0, 7, "final-scan", 0.5, 0.9, false},
                 TraceRecord{0, 1, 4, 7, "local-reduce", 0.1, 0.6, true}};
    view.setTrace(t);
    view.resize(900, 400);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    // Row 1 (thread 1) at t = 0.3 s: its stolen application; row 0 at t = 0.45 s: idle.
    auto at = [&](double time, int row) { return view.pointAt(time, row); };
    const double left = at(0, 0).x(), plotW = at(1, 0).x() - left;
    QVERIFY(plotW > 300);
    QVERIFY(at(0.3, 1).y() > at(0.3, 0).y() + 20);  // rows apart, the first on top
    mouse(view.viewport(), QEvent::MouseMove, at(0.3, 1), Qt::NoButton, Qt::NoButton);
    QVERIFY2(view.readout().contains("thread 1: local-reduce, elements 4..7 (stolen)"), qPrintable(view.readout()));
    mouse(view.viewport(), QEvent::MouseMove, at(0.45, 0), Qt::NoButton, Qt::NoButton);
    QVERIFY2(view.readout().endsWith("thread 0: idle"), qPrintable(view.readout()));
    // Zoom about t = 0.7 s: it stays under the cursor.
    const QPointF before = at(0.7, 0);
    wheel(view.viewport(), before, 2);
    QVERIFY(view.zoomed());
    const double u = (before.x() - left) / plotW;
    QVERIFY(std::abs(view.viewStart() + u * (view.viewEnd() - view.viewStart()) - 0.7) < 1e-3);
    QVERIFY(std::abs(at(0.7, 0).x() - before.x()) < 1.0);
    QVERIFY(at(1, 0).x() - at(0, 0).x() > 1.5 * plotW);  // a second is wider now
  }
};

QTEST_MAIN(PlotNavigationTest)
#include "test_plot_navigation.moc"
