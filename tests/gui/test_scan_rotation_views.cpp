// Frames scanned in several directions in the app: the Frames table's last
// column shows each frame's scan rotation with an arrow along its fast axis,
// the frame view draws that arrow for the frame shown (none for a series
// scanned in one direction), and the results folder's report gives the
// rotations the run took.
#include <QApplication>
#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest/QtTest>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>

#include "driftscan/core/frame_source.hpp"
#include "project/result_set.hpp"
#include "views/frame_table.hpp"
#include "views/image_view.hpp"
#include "views/series_viewer.hpp"
#include "views/vtk_view_widget.hpp"

class ScanRotationViewsTest : public QObject {
  Q_OBJECT
 private slots:
  void framesTableHasAScanColumn() {
    FrameTable table;
    std::vector<DriftRow> rows(5);
    for (int k = 0; k < 5; ++k) rows[std::size_t(k)].frame = k;
    table.setDrift(rows);
    const int scan = 6;  // the last column
    QCOMPARE(table.headerText(scan), QString("scan"));
    QCOMPARE(table.cellText(1, scan), QString::fromUtf8("0\u00b0 \u2192"));  // one direction: every frame at 0
    table.setScanRotation({0, 90, 180, 270});
    QCOMPARE(table.cellText(1, scan), QString::fromUtf8("90\u00b0 \u2193"));
    QCOMPARE(table.cellText(2, scan), QString::fromUtf8("180\u00b0 \u2190"));
    QCOMPARE(table.cellText(3, scan), QString::fromUtf8("270\u00b0 \u2191"));
    QCOMPARE(table.cellText(4, scan), QString::fromUtf8("0\u00b0 \u2192"));  // frame 4: value 4 mod 4
  }

  void frameViewDrawsTheShownFramesArrow() {
    std::vector<driftscan::Frame> frames;
    for (int k = 0; k < 4; ++k) {
      driftscan::Frame f(32, 32);
      for (std::size_t i = 0; i < f.size(); ++i) f.pixels[i] = float((i * 7 + std::size_t(k)) % 13);
      frames.push_back(f);
    }
    SeriesViewer viewer;
    viewer.resize(400, 400);
    viewer.show();
    viewer.setSeries(std::make_shared<driftscan::FrameVector>(frames), "turned");
    QVERIFY(std::isnan(viewer.view()->scanArrow()));  // no rotations: no arrow
    viewer.setScanRotation({0, 90});
    QCOMPARE(viewer.view()->scanArrow(), 0.0);
    viewer.showFrame(3);
    QTRY_COMPARE(viewer.currentFrame(), 3);
    QCOMPARE(viewer.view()->scanArrow(), 90.0);
    QVERIFY(!viewer.view()->grab().isNull());  // the arrow is painted without error
    viewer.setScanRotation({0, 360});          // a full turn is one direction
    QVERIFY(std::isnan(viewer.view()->scanArrow()));
  }

  void resultsGiveTheRunsRotations() {
    QTemporaryDir dir;
    QFile report(dir.filePath("report.json"));
    QVERIFY(report.open(QIODevice::WriteOnly));
    nlohmann::json j = {{"status", "done"}, {"job", {{"scan", {{"rotation", {0, 90, 180, 270}}}}}}};
    report.write(QByteArray::fromStdString(j.dump()));
    report.close();
    const ResultSet r = ResultSet::load(dir.path());
    QCOMPARE(r.scanRotation, (std::vector<double>{0, 90, 180, 270}));
  }
};

int main(int argc, char** argv) {
  VtkViewWidget::setDefaultSurfaceFormat();
  QApplication app(argc, argv);
  ScanRotationViewsTest t;
  return QTest::qExec(&t, argc, argv);
}

#include "test_scan_rotation_views.moc"
