// The app's views of a scan-distortion run, in a real window (Xvfb): the
// engine scans and registers a raster-scanned synthetic series line by line,
// the app opens the results, and the line-resolution drift plot and the
// rigid-vs-corrected comparison show what the run found. The alignment of
// the two averages is also checked on its own against a known shift.
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtCharts/QLineSeries>
#include <QtTest/QtTest>
#include <algorithm>
#include <cmath>
#include <set>

#include "driftscan/core/error.hpp"
#include "driftscan/core/interpolation.hpp"
#include "main_window.hpp"
#include "plots/drift_plot.hpp"
#include "plots/imbalance_view.hpp"
#include "plots/line_drift_plot.hpp"
#include "project/line_drift_series.hpp"
#include "project/result_set.hpp"
#include "run/job_editor.hpp"
#include "views/comparison_view.hpp"
#include "views/distortion_comparison_view.hpp"
#include "views/follow_view.hpp"
#include "views/image_view.hpp"
#include "views/series_viewer.hpp"
#include "views/vtk_view_widget.hpp"

namespace {
int distinct_colours(const QImage& img) {
  std::set<QRgb> c;
  for (int y = 0; y < img.height(); y += 2)
    for (int x = 0; x < img.width(); x += 2) c.insert(img.pixel(x, y));
  return static_cast<int>(c.size());
}

bool run_engine(const QStringList& args, QString* err) {
  QProcess p;
  p.start(QString(DRIFTSCAN_BIN_DIR) + "/driftscan-engine", args);
  if (!p.waitForFinished(120000)) return false;
  *err = QString::fromUtf8(p.readAllStandardError());
  return p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0;
}
}  // namespace

class ScanDistortionViewsTest : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  QString series_, results_;
  const int frames_ = 10, size_ = 96;

 private slots:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    qputenv("XDG_CONFIG_HOME", tmp_.filePath("config").toUtf8());
    series_ = tmp_.filePath("scanned.tif");
    results_ = tmp_.filePath("results");
    const QStringList timing{"--scan-dwell", "2e-6", "--line-flyback", "0.25"};
    QString err;
    QVERIFY2(run_engine(QStringList{"synth",
                                    "--frames",
                                    QString::number(frames_),
                                    "--size",
                                    QString("%1x%1").arg(size_),
                                    "--dose",
                                    "10",
                                    "--drift-linear",
                                    "3,1.5",
                                    "--drift-wobble",
                                    "1",
                                    "--wobble-period",
                                    "4",
                                    "--jitter",
                                    "0.3",
                                    "--seed",
                                    "5",
                                    "--out",
                                    series_,
                                    "--progress",
                                    "none"} +
                            timing,
                        &err),
             qPrintable(err));
    QVERIFY2(run_engine(QStringList{"register", series_, "--out", results_, "--scan-distortion", "--threads", "2",
                                    "--progress", "none"} +
                            timing,
                        &err),
             qPrintable(err));
    QVERIFY(QFileInfo::exists(QDir(results_).filePath("lines.csv")));
  }

  void resultSetReadsTheLineModel() {
    const ResultSet r = ResultSet::load(results_);
    QVERIFY2(r.warnings.isEmpty(), qPrintable(r.warnings.join("; ")));
    QVERIFY(r.specimenCoordinates);
    QVERIFY(!r.averageRigidPath.isEmpty());
    QCOMPARE(r.lines.frameCount(), frames_);
    QCOMPARE(int(r.lines.totalLines), frames_ * size_);
    QCOMPARE(int(r.lines.t.size()), frames_ * size_);  // small: every line kept
    // Times increase, frames follow each other with a fly-back gap.
    for (std::size_t i = 1; i < r.lines.t.size(); ++i) QVERIFY(r.lines.t[i] > r.lines.t[i - 1]);
    for (int k = 1; k < frames_; ++k)
      QVERIFY(r.lines.frameFirst[std::size_t(k)] > r.lines.frameLast[std::size_t(k) - 1]);
    // A large table is subsampled, the frame boundaries kept whole.
    const LineDriftSeries few = LineDriftSeries::read(r.linesPath, 100);
    QVERIFY(few.stride > 1);
    QVERIFY(few.t.size() <= 200 && few.t.size() >= 50);
    QCOMPARE(few.frameCount(), frames_);
    QCOMPARE(few.frameLast.back(), r.lines.frameLast.back());
  }

  void errorBarsAreShown() {
    // lines.csv's sigma columns are read and drawn as bands; sigma.tif is a
    // layer of the average view that shows the map itself.
    const ResultSet r = ResultSet::load(results_);
    QCOMPARE(r.lines.sigmaDx.size(), r.lines.t.size());
    QCOMPARE(r.lines.sigmaJitter.size(), r.lines.t.size());
    for (std::size_t i = 0; i < r.lines.t.size(); ++i) QVERIFY(r.lines.sigmaDx[i] > 0 && r.lines.sigmaDy[i] > 0);
    QVERIFY(!r.sigmaPath.isEmpty());
    MainWindow w;
    w.setInteractive(false);
    w.resize(1200, 800);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.openResults(results_));
    ComparisonView* view = w.comparisonView();
    QVERIFY(view->hasSigma());
    const QImage average = view->averageView()->image();
    view->setLayer(ComparisonView::Layer::sigma);
    QVERIFY(view->averageView()->caption().contains("sigma.tif"));
    QCOMPARE(view->averageView()->image().size(), average.size());
    QVERIFY(view->averageView()->image() != average);
    view->setLayer(ComparisonView::Layer::average);
    QCOMPARE(view->averageView()->caption(), QString("average"));
  }

  void corruptLineTableIsOneLineError() {
    const QString bad = tmp_.filePath("bad_lines.csv");
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("frame,line,t,dx,dy,jitter,weight\n0,0,0.001,0.1,0.2,0.0,1\n0,1,oops,0.1,0.2,0,1\n");
    f.close();
    try {
      (void)LineDriftSeries::read(bad);
      QFAIL("a malformed row was accepted");
    } catch (const driftscan::Error& e) {
      const QString what = e.what();
      QVERIFY2(what.contains("bad_lines.csv") && !what.contains('\n'), qPrintable(what));
    }
  }

  void alignmentFindsAKnownShift() {
    // A smooth non-periodic pattern; "corrected" = the same specimen seen
    // through origin (3, 2), moved by (1.3, -0.7), inside the rigid one.
    const int w = 120, h = 110;
    driftscan::Frame rigid(w, h);
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x)
        rigid.at(x, y) = float(std::sin(0.31 * x + 0.05 * y * y / 9) + std::cos(0.23 * y - 0.002 * x * x) +
                               0.5 * std::sin(0.11 * (x + y)) * std::cos(0.07 * x));
    const QPointF origin(3, 2), moved(1.3, -0.7);
    driftscan::Frame corrected(w - 10, h - 10);
    for (int y = 0; y < corrected.height; ++y)
      for (int x = 0; x < corrected.width; ++x)
        corrected.at(x, y) = driftscan::sample_cubic(rigid, x + origin.x() + moved.x(), y + origin.y() + moved.y());
    const AveragePair p = align_averages(rigid, corrected, origin);
    QVERIFY2(p.measured, qPrintable(p.note));
    QVERIFY2(std::abs(p.shift.x() - moved.x()) < 0.08 && std::abs(p.shift.y() - moved.y()) < 0.08,
             qPrintable(QString("shift (%1, %2)").arg(p.shift.x()).arg(p.shift.y())));
    QCOMPARE(p.rigid.width, p.corrected.width);
    QVERIFY(p.rmsDifference < 0.05 * p.correctedContrast);
    // No overlap: an explanation, not a crash.
    const AveragePair none = align_averages(rigid, corrected, QPointF(500, 500));
    QVERIFY(none.corrected.empty() && !none.note.isEmpty());
  }

  void viewsShowTheRun() {
    MainWindow w;
    w.setInteractive(false);
    w.resize(1400, 900);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.openResults(results_));
    QVERIFY(w.seriesViewer()->series());  // the input found through the report

    LineDriftPlot* plot = w.lineDriftPlot();
    QCOMPARE(plot->pointCount(), frames_ * size_);
    QCOMPARE(plot->boundaryCount(), frames_ - 1);
    // Few frames: each frame's curves are their own series, so no segment
    // joins a frame's last line to the next frame's first across the fly-back.
    QVERIFY(!plot->curvesJoined());
    QCOMPARE(int(plot->curves().size()), 3 * frames_);
    for (const QLineSeries* c : plot->curves()) {
      const QList<QPointF> p = c->points();
      QVERIFY(p.size() >= 2);
      const auto k =
          std::upper_bound(plot->series().frameFirst.begin(), plot->series().frameFirst.end(), p.front().x()) -
          plot->series().frameFirst.begin() - 1;
      QVERIFY2(p.back().x() <= plot->series().frameLast[std::size_t(k)],
               qPrintable(QString("a series from t=%1 to %2 spans a fly-back").arg(p.front().x()).arg(p.back().x())));
    }
    QVERIFY(w.showView("lines"));
    QApplication::processEvents();
    QVERIFY(distinct_colours(plot->toImage(QSize(1000, 700))) > 8);
    // Clicking in frame 6's span selects frame 6 everywhere.
    const LineDriftSeries& s = plot->series();
    const double mid = 0.5 * (s.frameFirst[6] + s.frameLast[6]);
    QSignalSpy picked(plot, &LineDriftPlot::frameSelected);
    QTest::mouseClick(plot->viewport(), Qt::LeftButton, {}, QPoint(int(plot->xOfTime(mid)), plot->height() / 4));
    QCOMPARE(picked.count(), 1);
    QCOMPARE(picked.at(0).at(0).toInt(), 6);
    QElapsedTimer guard;
    guard.start();
    while (w.seriesViewer()->currentFrame() != 6 && guard.elapsed() < 5000) QCoreApplication::processEvents();
    QCOMPARE(w.seriesViewer()->currentFrame(), 6);

    // Rigid vs corrected: one grid; the corrected average is the sharper one
    // (3 px of drift per frame smear a rigid average).
    DistortionComparisonView* cmp = w.distortionView();
    QVERIFY2(cmp->hasPair(), qPrintable(cmp->infoText()));
    const AveragePair* p = cmp->pair();
    QVERIFY2(p->measured, qPrintable(p->note));
    QVERIFY2(std::hypot(p->shift.x(), p->shift.y()) < 4.0,
             qPrintable(QString("shift (%1, %2)").arg(p->shift.x()).arg(p->shift.y())));
    QVERIFY2(p->correctedContrast > 1.05 * p->rigidContrast,
             qPrintable(QString("contrast rigid %1, corrected %2").arg(p->rigidContrast).arg(p->correctedContrast)));
    QVERIFY(w.showView("distortion"));
    cmp->setMode(DistortionComparisonView::Mode::difference);
    QApplication::processEvents();
    QVERIFY(distinct_colours(cmp->rightView()->image()) > 20);
    QVERIFY(cmp->infoText().contains("Contrast"));
    QVERIFY(!w.grabView("distortion").isNull());
  }

  // A run with a line field (fly-back hysteresis): the drift tab's third
  // panel shows the field over a line's first samples, the mean over the
  // frames and the current frame's; a run without one hides the panel.
  void lineFieldPanel() {
    const QString hseries = tmp_.filePath("hysteresis.tif"), hresults = tmp_.filePath("hresults");
    const QStringList timing{"--scan-dwell", "2e-6", "--line-flyback", "0.25"};
    QString err;
    QVERIFY2(run_engine(QStringList{"synth",
                                    "--frames",
                                    "12",
                                    "--size",
                                    QString("%1x%1").arg(size_),
                                    "--dose",
                                    "10",
                                    "--drift-linear",
                                    "3,1.5",
                                    "--jitter",
                                    "0.1",
                                    "--seed",
                                    "5",
                                    "--scan-hysteresis",
                                    "1.5",
                                    "--hysteresis-length",
                                    "6",
                                    "--out",
                                    hseries,
                                    "--progress",
                                    "none"} +
                            timing,
                        &err),
             qPrintable(err));
    QVERIFY2(run_engine(QStringList{"register", hseries, "--out", hresults, "--scan-distortion", "--line-field-knots",
                                    "6", "--threads", "2", "--progress", "none"} +
                            timing,
                        &err),
             qPrintable(err));
    const ResultSet r = ResultSet::load(hresults);
    QVERIFY2(r.warnings.isEmpty(), qPrintable(r.warnings.join("; ")));
    QCOMPARE(int(r.lineField.fields.size()), 12);
    QCOMPARE(r.lineField.basis.knots(), 6);
    QCOMPARE(r.lineField.basis.extent(), 0.25 * size_);

    MainWindow w;
    w.setInteractive(false);
    w.resize(1400, 900);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.openResults(hresults));
    LineDriftPlot* plot = w.lineDriftPlot();
    QVERIFY(plot->hasLineField());
    const QList<QPointF> mean = plot->fieldMeanCurve()->points();
    QCOMPARE(int(mean.size()), int(std::ceil(0.25 * size_)) + 1);
    // The hysteresis (1.5 px x 0.5-1.5 at a line's first sample) is there,
    // and gone by the field's extent.
    QVERIFY2(mean.front().y() > 0.5, qPrintable(QString("mean field at sample 0: %1").arg(mean.front().y())));
    QVERIFY(std::abs(mean.back().y()) < 1e-9);
    // The current frame's field is that frame's row of line_field.csv.
    plot->setCurrentFrame(4);
    const QList<QPointF> frame = plot->fieldFrameCurve()->points();
    const std::vector<double> h = r.lineField.basis.tabulate(r.lineField.fields[4]);
    QCOMPARE(int(frame.size()), int(mean.size()));
    for (int s = 0; s < frame.size(); ++s) QVERIFY(std::abs(frame[s].y() - h[std::size_t(s)]) < 1e-9);
    QVERIFY(plot->fieldFrameCurve()->name().contains("frame 4"));
    QVERIFY(w.showView("lines"));
    QApplication::processEvents();
    QVERIFY(distinct_colours(plot->toImage(QSize(1000, 900))) > 8);
    // Clicking in the field panel selects no frame (its x is a place in a line).
    QSignalSpy picked(plot, &LineDriftPlot::frameSelected);
    QTest::mouseClick(plot->viewport(), Qt::LeftButton, {}, QPoint(plot->width() / 2, plot->height() - 60));
    QCOMPARE(picked.count(), 0);

    // A run without a line field: no panel.
    QVERIFY(w.openResults(results_));
    QVERIFY(!plot->hasLineField());
    QVERIFY(!plot->fieldMeanCurve());
  }

  // At the app's default window size (no resize: the size a user first
  // sees), with a scan-distortion run that has a line field open, no plot has
  // an axis title or label Qt Charts had to cut ("specimen dr..."): every axis
  // gets its room. Also the drift of the Live tab (half the width).
  void noPlotTextIsCutAtTheDefaultSize() {
    const QString hresults = tmp_.filePath("hresults");  // lineFieldPanel's run
    QVERIFY(QFileInfo::exists(QDir(hresults).filePath("line_field.csv")));
    MainWindow w;
    w.setInteractive(false);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    for (const QString& folder : {hresults, results_}) {
      QVERIFY(w.openResults(folder));
      w.followView()->setDrift(w.results().drift);
      const std::pair<const char*, ChartView*> plots[] = {{"drift", w.driftPlot()},
                                                          {"lines", w.lineDriftPlot()},
                                                          {"imbalance", w.imbalanceView()},
                                                          {"live", w.followView()->driftPlot()}};
      for (const auto& [view, plot] : plots) {
        QVERIFY(w.showView(view));
        QApplication::processEvents();
        const QStringList cut = plot->truncatedTexts();
        QVERIFY2(cut.isEmpty(), qPrintable(QString("%1 (%2x%3, %4): cut texts: %5")
                                               .arg(view)
                                               .arg(plot->width())
                                               .arg(plot->height())
                                               .arg(QFileInfo(folder).fileName(), cut.join(" | "))));
      }
      QVERIFY(w.lineDriftPlot()->hasLineField() == (folder == hresults));
    }
    // The check sees a cut: a field panel at its least height (160 px) is too
    // small for its axes.
    const ResultSet r = ResultSet::load(hresults);
    LineDriftPlot small;
    small.setSeries(r.lines, r.drift);
    small.setLineField(r.lineField);
    small.resize(900, 480);
    small.show();
    QVERIFY(QTest::qWaitForWindowExposed(&small));
    QApplication::processEvents();
    QVERIFY2(!small.truncatedTexts().isEmpty(), "no cut text seen in a 160 px field panel");
  }

  void averageVsFrameInSpecimenCoordinates() {
    // The corrected average is in specimen coordinates (its own size and
    // origin): Average vs frame warps frame k with the engine's warp onto that
    // grid, and agrees with the plain translation of the rigid drift there.
    MainWindow w;
    w.setInteractive(false);
    w.resize(1200, 800);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.openResults(results_));
    ComparisonView* view = w.comparisonView();
    QVERIFY(view->hasTransforms());
    QVERIFY(view->average());
    const int k = frames_ - 2;
    const driftscan::Frame raw = w.seriesViewer()->series()->frame(std::size_t(k));
    const driftscan::Frame warped = view->alignedFrame(raw, k);
    QCOMPARE(warped.width, view->average()->width);
    QCOMPARE(warped.height, view->average()->height);
    view->setTransforms({}, driftscan::Interpolation::cubic);
    const driftscan::Frame shifted = view->alignedFrame(raw, k);
    std::size_t both = 0, finite = 0;
    double mean = 0;
    for (std::size_t i = 0; i < warped.pixels.size(); ++i)
      if (std::isfinite(warped.pixels[i]) && std::isfinite(shifted.pixels[i])) {
        ++both;
        mean += shifted.pixels[i];
      }
    mean /= double(std::max<std::size_t>(both, 1));
    double diff2 = 0, norm2 = 0;  // difference against the frame's own variation
    for (std::size_t i = 0; i < warped.pixels.size(); ++i) {
      finite += std::isfinite(warped.pixels[i]) ? 1 : 0;
      if (std::isfinite(warped.pixels[i]) && std::isfinite(shifted.pixels[i])) {
        diff2 += double(warped.pixels[i] - shifted.pixels[i]) * (warped.pixels[i] - shifted.pixels[i]);
        norm2 += (shifted.pixels[i] - mean) * (shifted.pixels[i] - mean);
      }
    }
    qInfo("frame %d on the specimen grid: %zu finite pixels, warp vs translation relative difference %.4f", k, finite,
          diff2 / norm2);
    QVERIFY2(finite > warped.pixels.size() / 2, qPrintable(QString("%1 finite pixels").arg(finite)));
    // Same placement (cubic vs bilinear sampling of the same points): a few % apart, not a misplaced frame.
    QVERIFY2(both > finite * 9 / 10 && diff2 < 0.05 * norm2,
             qPrintable(QString("both %1 of %2, relative difference %3").arg(both).arg(finite).arg(diff2 / norm2)));
  }

  void driftPlotStatesTheCalibration() {
    // The engine's series carry a pixel size; the drift plot states it (its axes stay in px).
    MainWindow w;
    w.setInteractive(false);
    QVERIFY(w.openSeries(series_));
    const auto src = w.seriesViewer()->series();
    const bool calibrated = src->pixel_size() > 0 && !src->pixel_unit().empty() && src->pixel_unit() != "px";
    QCOMPARE(!w.driftPlot()->calibrationText().isEmpty(), calibrated);
    DriftPlot plot;
    plot.setPixelSize(0.05, "nm");
    QCOMPARE(plot.calibrationText(), QString("1 px = 0.05 nm"));
    plot.setPixelSize(1.0, "px");  // uncalibrated: nothing claimed
    QVERIFY(plot.calibrationText().isEmpty());
  }

  void aRigidRunLeavesTheViewsEmptyWithAReason() {
    const QString rigid = tmp_.filePath("rigid");
    QString err;
    QVERIFY2(run_engine({"register", series_, "--out", rigid, "--progress", "none"}, &err), qPrintable(err));
    MainWindow w;
    w.setInteractive(false);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.openResults(rigid));
    QCOMPARE(w.lineDriftPlot()->pointCount(), 0);
    QVERIFY(!w.distortionView()->hasPair());
    QVERIFY(w.distortionView()->infoText().contains("scan-distortion"));
  }
};

int main(int argc, char** argv) {
  VtkViewWidget::setDefaultSurfaceFormat();
  QApplication app(argc, argv);
  ScanDistortionViewsTest t;
  return QTest::qExec(&t, argc, argv);
}

#include "test_scan_distortion_views.moc"
