// Average vs frame warps the frame with the engine's own warp and the full
// registered transform (rotation included), not only its translation: a
// series drifting with a rotation, registered with the rigid model by the
// real engine, then compared in the main window.
#include <QApplication>
#include <QDir>
#include <QFileInfo>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest/QtTest>
#include <cmath>

#include "driftscan/averaging/averaging.hpp"
#include "driftscan/registration/drift_table.hpp"
#include "driftscan/synthetic/synthetic_series.hpp"
#include "main_window.hpp"
#include "views/comparison_view.hpp"
#include "views/image_view.hpp"
#include "views/series_viewer.hpp"
#include "views/vtk_view_widget.hpp"

namespace {
// RMS of (a - b) after each is brought to zero mean and unit deviation over
// the pixels finite in both (what the difference view shows).
double normalised_rms(const driftscan::Frame& a, const driftscan::Frame& b, std::size_t* used) {
  double sa = 0, sa2 = 0, sb = 0, sb2 = 0;
  std::size_t n = 0;
  for (std::size_t i = 0; i < a.pixels.size(); ++i)
    if (std::isfinite(a.pixels[i]) && std::isfinite(b.pixels[i])) {
      sa += a.pixels[i];
      sa2 += double(a.pixels[i]) * a.pixels[i];
      sb += b.pixels[i];
      sb2 += double(b.pixels[i]) * b.pixels[i];
      ++n;
    }
  *used = n;
  if (n == 0) return INFINITY;
  const double ma = sa / n, mb = sb / n;
  const double da = std::sqrt(std::max(1e-30, sa2 / n - ma * ma)), db = std::sqrt(std::max(1e-30, sb2 / n - mb * mb));
  double s = 0;
  for (std::size_t i = 0; i < a.pixels.size(); ++i)
    if (std::isfinite(a.pixels[i]) && std::isfinite(b.pixels[i])) {
      const double d = (a.pixels[i] - ma) / da - (b.pixels[i] - mb) / db;
      s += d * d;
    }
  return std::sqrt(s / n);
}
}  // namespace

class ComparisonWarpTest : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

 private slots:
  void rotatedFramesAlignWithTheFullTransform() {
    QVERIFY(tmp_.isValid());
    qputenv("XDG_CONFIG_HOME", tmp_.filePath("config").toUtf8());
    driftscan::SynthOptions o;
    o.frames = 8;
    o.width = 96;
    o.height = 96;
    o.period = 9.0;
    o.dose = 50.0;
    o.rotation_step_deg = 0.6;  // 4.2 degrees by the last frame: ~3.5 px at the frame's edge
    o.seed = 21;
    const QString series = tmp_.filePath("rotating.tif");
    driftscan::write_synthetic_series(o, series.toStdString());
    const QString results = tmp_.filePath("results");
    QProcess engine;
    engine.start(QString(DRIFTSCAN_BIN_DIR) + "/driftscan-engine",
                 {"register", "-i", series, "-o", results, "--model", "rigid", "--progress", "none"});
    QVERIFY(engine.waitForFinished(120000));
    QVERIFY2(engine.exitCode() == 0, engine.readAllStandardError().constData());

    MainWindow w;
    w.setInteractive(false);
    w.resize(1200, 800);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.openSeries(series));
    QVERIFY(w.openResults(results));
    ComparisonView* view = w.comparisonView();
    QVERIFY(view->hasTransforms());
    QVERIFY(view->average());

    const int k = int(o.frames) - 1;
    const driftscan::Frame raw = w.seriesViewer()->series()->frame(std::size_t(k));
    const driftscan::Frame aligned = view->alignedFrame(raw, k);
    // Exactly the engine's warp of frame k with drift.csv's T_{0,k}.
    const driftscan::Point centre{(raw.width - 1) / 2.0, (raw.height - 1) / 2.0};
    const auto table = driftscan::read_drift_table(QDir(results).filePath("drift.csv").toStdString(), centre);
    QVERIFY(std::abs(table.to_frame0[std::size_t(k)].b) > 0.03);  // the rotation was found (sin 4.2 deg = 0.073)
    const driftscan::Frame engine_warp =
        driftscan::warp_to_reference(raw, table.to_frame0[std::size_t(k)], driftscan::Interpolation::cubic, NAN);
    QCOMPARE(aligned.width, engine_warp.width);
    for (std::size_t i = 0; i < aligned.pixels.size(); ++i)
      QVERIFY(aligned.pixels[i] == engine_warp.pixels[i] ||
              (std::isnan(aligned.pixels[i]) && std::isnan(engine_warp.pixels[i])));

    // And it matters: against the average, the full warp leaves much less
    // residual than the translation alone (what the view did before).
    std::size_t usedFull = 0, usedShift = 0;
    const double full = normalised_rms(aligned, *view->average(), &usedFull);
    view->setTransforms({}, driftscan::Interpolation::cubic);
    QVERIFY(!view->hasTransforms());
    const double shift = normalised_rms(view->alignedFrame(raw, k), *view->average(), &usedShift);
    qInfo("frame %d vs average, normalised RMS residual: full transform %.3f (%zu px), translation only %.3f (%zu px)",
          k, full, usedFull, shift, usedShift);
    QVERIFY(usedFull > aligned.pixels.size() / 2 && usedShift > aligned.pixels.size() / 2);
    QVERIFY2(full < 0.8 * shift, qPrintable(QString("full %1, translation %2").arg(full).arg(shift)));

    // The difference mode draws it without complaint.
    view->setMode(ComparisonView::Mode::difference);
    view->setFrame(k);
    QVERIFY(!view->frameView()->grab().toImage().isNull());
  }
};

int main(int argc, char** argv) {
  VtkViewWidget::setDefaultSurfaceFormat();
  QApplication app(argc, argv);
  ComparisonWarpTest t;
  return QTest::qExec(&t, argc, argv);
}

#include "test_comparison_warp.moc"
