// The desktop app in a real window (Xvfb): open a synthetic series, run a
// local 2-rank registration through the Run button's path, and check what
// every view shows; --screenshot from the command line; settings validation
// and the project file; scrubbing speed at 512².
#include <QCheckBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QProcess>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QThread>
#include <QtTest/QtTest>
#include <cmath>
#include <set>

#include "../unit/sample_data.hpp"
#include "driftscan/formats/tiff/tiff_series.hpp"
#include "driftscan/job/job.hpp"
#include "driftscan/synthetic/synthetic_series.hpp"
#include "main_window.hpp"
#include "plots/drift_plot.hpp"
#include "plots/imbalance_view.hpp"
#include "run/job_editor.hpp"
#include "run/run_controller.hpp"
#include "views/comparison_view.hpp"
#include "views/frame_table.hpp"
#include "views/image_view.hpp"
#include "views/series_viewer.hpp"
#include "views/volume_view.hpp"
#include "views/vtk_view_widget.hpp"

#include <vtkCubeAxesActor.h>
#include <vtkOrientationMarkerWidget.h>
#include <vtkRenderer.h>
#include <vtkScalarBarActor.h>

namespace {
// Not blank: many distinct colours and a real spread of intensities.
void check_not_blank(const QImage& img, const QString& what) {
  QVERIFY2(!img.isNull(), qPrintable(what + ": null image"));
  std::set<QRgb> colours;
  double s = 0, s2 = 0;
  long n = 0;
  for (int y = 0; y < img.height(); y += 2)
    for (int x = 0; x < img.width(); x += 2) {
      const QRgb c = img.pixel(x, y);
      colours.insert(c);
      const double g = qGray(c);
      s += g;
      s2 += g * g;
      ++n;
    }
  const double sd = std::sqrt(std::max(0.0, s2 / n - (s / n) * (s / n)));
  QVERIFY2(colours.size() > 20, qPrintable(QString("%1: only %2 colours").arg(what).arg(colours.size())));
  QVERIFY2(sd > 5.0, qPrintable(QString("%1: grey spread %2").arg(what).arg(sd)));
}
}  // namespace

class AppGuiTest : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  QString series_;
  const int frames_ = 12;

 private slots:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    // Isolate profiles and recent files from the user's; find the engine in the build.
    qputenv("XDG_CONFIG_HOME", tmp_.filePath("config").toUtf8());
    qputenv("PATH", QByteArray(DRIFTSCAN_BIN_DIR) + ":" + qgetenv("PATH"));
    driftscan::SynthOptions o;
    o.frames = std::size_t(frames_);
    o.width = 96;
    o.height = 96;
    o.period = 9.0;
    o.dose = 20.0;
    o.seed = 7;
    series_ = tmp_.filePath("synthetic.tif");
    driftscan::write_synthetic_series(o, series_.toStdString());
    QVERIFY(QFileInfo::exists(series_));
  }

  void openRunAndInspect() {
    MainWindow w;
    w.setInteractive(false);
    w.resize(1400, 900);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.openSeries(series_));
    QCOMPARE(int(w.seriesViewer()->series()->frame_count()), frames_);
    QCOMPARE(w.seriesViewer()->currentFrame(), 0);

    driftscan::Job job = w.jobEditor()->job();
    QCOMPARE(QString::fromStdString(job.input), series_);
    job.output = tmp_.filePath("results").toStdString();
    job.execution.profile = "local";
    job.execution.ranks = 2;
    job.execution.threads = 1;
    job.registration.pyramid_levels = 2;
    w.jobEditor()->setJob(job);
    QVERIFY2(w.jobEditor()->isValid(), qPrintable(w.jobEditor()->validationErrors().join("; ")));
    QVERIFY(w.runButton()->isEnabled());

    QSignalSpy finished(&w, &MainWindow::runFinished);
    QSignalSpy loaded(&w, &MainWindow::resultsLoaded);
    QTest::mouseClick(w.runButton(), Qt::LeftButton);  // the Run button's own path
    QVERIFY(w.cancelButton()->isEnabled() || finished.count() == 1);
    QVERIFY2(finished.count() == 1 || finished.wait(150000), "the run did not finish in 150 s");
    const QString status = finished.at(0).at(0).toString();
    QVERIFY2(status == "done", qPrintable(status + ": " + finished.at(0).at(1).toString()));
    QCOMPARE(loaded.count(), 1);
    QCOMPARE(w.progressBar()->value(), w.progressBar()->maximum());

    // Drift: one point per frame, frame 0 at the origin.
    QCOMPARE(w.driftPlot()->pointCount(), frames_);
    QCOMPARE(w.driftPlot()->drift().front().frame, 0);
    QVERIFY(std::abs(w.driftPlot()->drift().front().dx) < 1e-6);

    // The average view shows the engine's average.tif, pixel for pixel.
    const QString averagePath = QDir(tmp_.filePath("results")).filePath("average.tif");
    QCOMPARE(QFileInfo(w.comparisonView()->averagePath()).canonicalFilePath(),
             QFileInfo(averagePath).canonicalFilePath());
    auto shown = w.comparisonView()->average();
    QVERIFY(shown);
    const driftscan::Frame onDisk = driftscan::TiffSeries::open(averagePath.toStdString())->frame(0);
    QCOMPARE(shown->width, onDisk.width);
    QCOMPARE(shown->height, onDisk.height);
    QVERIFY(shown->pixels == onDisk.pixels);
    QCOMPARE(w.comparisonView()->averageView()->image().size(), QSize(onDisk.width, onDisk.height));

    // Clicking a drift point shows that frame.
    w.showView("drift");
    QApplication::processEvents();
    const int target = frames_ - 3;
    QTest::mouseClick(w.driftPlot()->viewport(), Qt::LeftButton, {}, w.driftPlot()->pointPosition(target).toPoint());
    QTRY_COMPARE(w.seriesViewer()->currentFrame(), target);

    // Linked zoom: zooming the average zooms the frame beside it.
    w.showView("compare");
    QApplication::processEvents();
    w.comparisonView()->averageView()->oneToOne();
    QCOMPARE(w.comparisonView()->frameView()->zoom(), 1.0);
    w.comparisonView()->setMode(ComparisonView::Mode::difference);
    w.comparisonView()->averageView()->fit();

    // Every view grabbed, not blank, at the size it has on screen.
    const QString shots = tmp_.filePath("shots");
    QDir().mkpath(shots);
    for (const QString& name : MainWindow::viewNames()) {
      if (name == "volume") continue;  // the register run writes no 3-D spectrum; below
      if (name == "imbalance" && w.imbalanceView()->rowCount() == 0) continue;  // see imbalanceView...()
      const QImage img = w.grabView(name);
      img.save(QDir(shots).filePath(name + ".png"));
      check_not_blank(img, name);
      if (QTest::currentTestFailed()) return;
      // Every tab page has the size of the tab area.
      QCOMPARE(img.size(), w.seriesViewer()->size() * w.devicePixelRatio());
      QVERIFY(img.width() >= 300 && img.height() >= 200);
    }
    const QImage whole = w.grabView("main");
    QCOMPARE(whole.size(), w.size() * w.devicePixelRatio());
    check_not_blank(whole, "main");

    // Plot export: PNG at the requested size, SVG with content.
    QVERIFY(w.driftPlot()->exportPng(QDir(shots).filePath("drift-export.png"), QSize(900, 500)));
    QCOMPARE(QImage(QDir(shots).filePath("drift-export.png")).size(), QSize(900, 500));
    QVERIFY(w.imbalanceView()->exportSvg(QDir(shots).filePath("imbalance.svg")));
    QFile svg(QDir(shots).filePath("imbalance.svg"));
    QVERIFY(svg.open(QIODevice::ReadOnly));
    QVERIFY(svg.readAll().contains("<svg"));
  }

  void imbalanceViewHasOneRowPerWorker() {
    const QString results = tmp_.filePath("results");
    if (!QFileInfo::exists(QDir(results).filePath("report.json"))) QSKIP("needs the results of openRunAndInspect");
    MainWindow w;
    w.setInteractive(false);
    w.resize(1200, 800);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.openResults(results));
    if (w.results().trace.empty())
      QSKIP("report.json has no scan_trace: this engine's register does not write the scan trace yet");
    // The run had 2 ranks x 1 thread.
    QCOMPARE(w.imbalanceView()->rowCount(), 2);
    QVERIFY(!w.imbalanceView()->trace().records.empty());
    const QImage img = w.grabView("imbalance");
    check_not_blank(img, "imbalance");
    QCOMPARE(img.size(), w.imbalanceView()->size() * w.devicePixelRatio());
  }

  void frameTableHighlightsAndExcludesBySigma() {
    const QString results = tmp_.filePath("results");
    if (!QFileInfo::exists(QDir(results).filePath("drift.csv"))) QSKIP("needs the results of openRunAndInspect");
    MainWindow w;
    w.setInteractive(false);
    w.resize(1200, 800);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.openResults(results));
    QVERIFY(w.showView("frames"));
    FrameTable* t = w.frameTable();
    QCOMPARE(t->rowCount(), frames_);
    QVERIFY(t->highlightedFrames().empty());  // no limit chosen yet
    // The sigma column is the larger standard error of drift.csv.
    const auto& drift = w.results().drift;
    std::vector<double> sigma;
    sigma.reserve(drift.size());
    for (const DriftRow& r : drift) sigma.push_back(std::max(r.sigma_dx, r.sigma_dy));
    QVERIFY2(sigma[1] > 0 && std::isfinite(sigma[1]), "drift.csv of a register run has sigma columns");
    const QAbstractItemModel* m = t->table()->model();
    QCOMPARE(m->headerData(3, Qt::Horizontal).toString(), QString::fromUtf8("\u03c3 (px)"));
    for (int k = 0; k < frames_; ++k)
      QCOMPARE(m->data(m->index(k, 3)).toString(), QString::number(sigma[std::size_t(k)], 'f', 4));
    // A limit between the sigmas: exactly the frames above it are highlighted (frame 0 never).
    std::vector<double> sorted(sigma.begin() + 1, sigma.end());
    std::sort(sorted.begin(), sorted.end());
    const double limit = std::round(sorted[sorted.size() / 2] * 1000.0) / 1000.0;  // the box has 3 decimals
    t->limitBox()->setValue(limit);
    std::vector<int> expected;
    for (int k = 1; k < frames_; ++k)
      if (sigma[std::size_t(k)] > limit) expected.push_back(k);
    QVERIFY(!expected.empty() && int(expected.size()) < frames_ - 1);
    QCOMPARE(t->highlightedFrames(), expected);
    for (int k = 0; k < frames_; ++k)
      QCOMPARE(m->data(m->index(k, 0), Qt::BackgroundRole).isValid(), t->isHighlighted(k));
    QVERIFY(t->summary().contains(QString("%1 with").arg(expected.size())));
    // Highlighting alone leaves the job alone; excluding sets averaging.max_sigma...
    QCOMPARE(w.jobEditor()->job().averaging.max_sigma, 0.0);
    QTest::mouseClick(t->excludeBox(), Qt::LeftButton, {}, QPoint(8, t->excludeBox()->height() / 2));
    QVERIFY(t->excluding());
    QCOMPARE(w.jobEditor()->job().averaging.max_sigma, limit);
    // ... and the settings panel's field drives the table back.
    driftscan::Job job = w.jobEditor()->job();
    job.averaging.max_sigma = 0;  // no limit: still highlighted, no longer excluded
    w.jobEditor()->setJob(job);
    QVERIFY(!t->excluding());
    QCOMPARE(t->highlightedFrames(), expected);
    job.averaging.max_sigma = limit;
    w.jobEditor()->setJob(job);
    QCOMPARE(t->limit(), limit);
    QVERIFY(t->excluding());
    const QImage img = w.grabView("frames");
    check_not_blank(img, "frames");
    // Run with it: the highlighted frames are the ones the engine leaves out.
    job = w.jobEditor()->job();
    job.output = tmp_.filePath("results-sigma").toStdString();
    job.execution.ranks = 1;
    w.jobEditor()->setJob(job);
    QSignalSpy finished(&w, &MainWindow::runFinished);
    QTest::mouseClick(w.runButton(), Qt::LeftButton);
    QVERIFY2(finished.count() == 1 || finished.wait(120000), "the run did not finish in 120 s");
    QCOMPARE(finished.at(0).at(0).toString(), QString("done"));
    std::vector<int> unused;
    for (const DriftRow& r : w.results().drift)
      if (!r.used) unused.push_back(r.frame);
    QVERIFY(!unused.empty());
    QCOMPARE(unused, t->highlightedFrames());  // the new run's sigmas, the same rule
  }

  void defaultRunShowsItsScanTrace() {
    // The job as the editor makes it (local, 1 rank, a thread per core: the
    // engine's single-process scan) records a trace too, so Load balance is
    // never empty.
    MainWindow w;
    w.setInteractive(false);
    w.resize(1200, 800);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.openSeries(series_));
    driftscan::Job job = w.jobEditor()->job();
    QCOMPARE(job.execution.ranks, 1);
    QCOMPARE(job.execution.threads, std::max(1, QThread::idealThreadCount()));  // a thread per core
    job.output = tmp_.filePath("results-default").toStdString();
    w.jobEditor()->setJob(job);
    QSignalSpy finished(&w, &MainWindow::runFinished);
    QTest::mouseClick(w.runButton(), Qt::LeftButton);
    QVERIFY2(finished.count() == 1 || finished.wait(120000), "the run did not finish in 120 s");
    QCOMPARE(finished.at(0).at(0).toString(), QString("done"));
    const ScanTraceData& trace = w.results().trace;
    QCOMPARE(trace.ranks, 1);
    QCOMPARE(w.imbalanceView()->rowCount(), 1);
    // One application per frame after the first, each covering 0..k, in order.
    QCOMPARE(int(trace.records.size()), frames_ - 1);
    for (std::size_t i = 0; i < trace.records.size(); ++i) {
      QCOMPARE(trace.records[i].first, 0LL);
      QCOMPARE(trace.records[i].last, (long long)(i + 1));
      QVERIFY(trace.records[i].end_s >= trace.records[i].start_s);
      if (i) QVERIFY(trace.records[i].start_s >= trace.records[i - 1].end_s);
    }
    QCOMPARE(trace.workers.front().applications, frames_ - 1);
    const QImage img = w.grabView("imbalance");
    check_not_blank(img, "imbalance after the default run");
    // The bars are drawn: the final-scan phase's green is in the picture.
    bool green = false;
    for (int y = 0; y < img.height() && !green; ++y)
      for (int x = 0; x < img.width() && !green; ++x) green = img.pixel(x, y) == qRgb(44, 160, 44);
    QVERIFY(green);
  }

  void unknownProfileAndCancelGiveClearMessages() {
    MainWindow w;
    w.setInteractive(false);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.openSeries(series_));
    driftscan::Job job = w.jobEditor()->job();
    job.output = tmp_.filePath("results-bad").toStdString();
    job.execution.profile = "nosuchcluster";
    w.jobEditor()->setJob(job);
    QSignalSpy finished(&w, &MainWindow::runFinished);
    QTest::mouseClick(w.runButton(), Qt::LeftButton);
    QVERIFY(finished.count() == 1 || finished.wait(30000));
    QCOMPARE(finished.at(0).at(0).toString(), QString("failed"));
    QVERIFY2(w.lastError().contains("nosuchcluster"), qPrintable(w.lastError()));
    QVERIFY(!w.lastError().contains('\n'));
    QVERIFY(w.runButton()->isEnabled());

    // Cancel a longer run: status "cancelled", no report that looks complete.
    driftscan::SynthOptions o;
    o.frames = 150;
    o.width = 128;
    o.height = 128;
    o.seed = 11;
    const QString longSeries = tmp_.filePath("long.tif");
    driftscan::write_synthetic_series(o, longSeries.toStdString());
    QVERIFY(w.openSeries(longSeries));
    job = w.jobEditor()->job();
    job.output = tmp_.filePath("results-cancelled").toStdString();
    job.execution.profile = "local";
    job.execution.ranks = 1;
    w.jobEditor()->setJob(job);
    finished.clear();
    QTest::mouseClick(w.runButton(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(w.progressBar()->maximum() > 0 && w.progressBar()->value() > 0, 60000);
    QVERIFY(w.cancelButton()->isEnabled());
    QTest::mouseClick(w.cancelButton(), Qt::LeftButton);
    QVERIFY(finished.count() == 1 || finished.wait(60000));
    const QString status = finished.at(0).at(0).toString();
    if (status == "done") QSKIP("the run finished before the cancel arrived");
    QCOMPARE(status, QString("cancelled"));
    QVERIFY(w.lastError().startsWith("Cancelled"));
    QVERIFY(!QFileInfo::exists(QDir(tmp_.filePath("results-cancelled")).filePath("report.json")));
  }

  void volumeViewRendersThroughTheQt6Adapter() {
    // The VTK volume + orthogonal slices, embedded in the Qt6 QOpenGLWidget.
    VolumeView v;
    v.resize(500, 420);
    const int n = 32;
    std::vector<float> vol(std::size_t(n) * n * n);
    for (int z = 0; z < n; ++z)
      for (int y = 0; y < n; ++y)
        for (int x = 0; x < n; ++x) {
          const double r2 =
              (x - n / 2.0) * (x - n / 2.0) + (y - n / 2.0) * (y - n / 2.0) + (z - n / 2.0) * (z - n / 2.0);
          vol[(std::size_t(z) * n + y) * n + x] = float(std::exp(-r2 / 40.0) + 0.2 * std::cos(x * 0.7));
        }
    v.setVolume(vol, n, n, n);
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    QTest::qWait(200);
    const QImage img = v.grabImage();
    QCOMPARE(img.size(), v.vtkWidget()->size() * v.vtkWidget()->devicePixelRatio());
    check_not_blank(img, "volume");
    img.save(tmp_.filePath("volume.png"));
  }

  void volumeViewHasAxesColourBarMarkerAndHint() {
    VolumeView v;
    v.resize(640, 480);
    // No volume: the hint and the (disabled until a series is open) button.
    QVERIFY(v.hintShown());
    QVERIFY(v.hintText().contains("driftscan-engine spectrum"));
    QVERIFY(!v.runSpectrumButton()->isEnabled());
    v.setCanRunSpectrum(true);
    QSignalSpy asked(&v, &VolumeView::runSpectrumRequested);
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    QTest::mouseClick(v.runSpectrumButton(), Qt::LeftButton);
    QCOMPARE(asked.count(), 1);

    // A 0.05 nm pixel, 32 frames: a 32-plane volume is in 1/nm and 1/frame.
    const int n = 32;
    v.setCalibration(0.05, "nm", n);
    std::vector<float> vol(std::size_t(n) * n * n);
    for (int z = 0; z < n; ++z)
      for (int y = 0; y < n; ++y)
        for (int x = 0; x < n; ++x)
          vol[(std::size_t(z) * n + y) * n + x] =
              float(std::exp(-((x - 16) * (x - 16) + (y - 16) * (y - 16)) / 30.0) + 0.3 * std::cos(z * 0.5) + 0.01 * x);
    v.setVolume(vol, n, n, n);
    QVERIFY(!v.hintShown());
    QCOMPARE(v.axisTitle(0), QString("kx (1/nm)"));
    QCOMPARE(v.axisTitle(1), QString("ky (1/nm)"));
    QCOMPARE(v.axisTitle(2), QString("f (1/frame)"));
    // Centred transform: index i is (i - n/2) / n cycles per pixel, / 0.05 nm.
    QCOMPARE(v.axisRange(0).first, -10.0);
    QCOMPARE(v.axisRange(0).second, 9.375);
    QCOMPARE(v.axisRange(2).first, -0.5);
    QCOMPARE(v.axisRange(2).second, 15.0 / 32.0);
    QVERIFY(v.cubeAxes() && v.vtkWidget()->renderer()->HasViewProp(v.cubeAxes()));
    QCOMPARE(v.cubeAxes()->GetXAxisRange()[0], -10.0);
    QCOMPARE(QString(v.cubeAxes()->GetZTitle()), QString("f (1/frame)"));
    QVERIFY(v.colourBar() && v.vtkWidget()->renderer()->HasViewProp(v.colourBar()));
    QVERIFY(v.orientationMarker() && v.orientationMarker()->GetEnabled());
    // Without a pixel size the axes are in 1/px; binned planes are 1/plane.
    v.setCalibration(0, QString(), 64);
    QCOMPARE(v.axisTitle(0), QString("kx (1/px)"));
    QCOMPARE(v.axisRange(0).first, -0.5);
    QCOMPARE(v.axisTitle(2), QString("f (1/plane)"));

    QTest::qWait(200);
    const QImage img = v.grabImage();
    img.save(tmp_.filePath("volume-annotated.png"));
    check_not_blank(img, "annotated volume");
    // Drawn, not only present: the colour bar's orange on the right, the
    // marker's red x axis in the lower-left corner.
    auto count = [&](QRect r, auto pred) {
      int c = 0;
      for (int y = r.top(); y <= r.bottom(); ++y)
        for (int x = r.left(); x <= r.right(); ++x) c += pred(QColor(img.pixel(x, y))) ? 1 : 0;
      return c;
    };
    const int W = img.width(), H = img.height();
    const int orange = count(QRect(int(W * 0.85), 0, W - int(W * 0.85), H), [](QColor c) {
      return c.red() > 180 && c.green() > 60 && c.green() < 200 && c.blue() < 90;
    });
    QVERIFY2(orange > 50, qPrintable(QString("colour bar: %1 orange pixels").arg(orange)));
    const int red = count(QRect(0, int(H * 0.8), int(W * 0.2), H - int(H * 0.8)),
                          [](QColor c) { return c.red() > 150 && c.green() < 80 && c.blue() < 80; });
    QVERIFY2(red > 5, qPrintable(QString("orientation marker: %1 red pixels").arg(red)));
  }

  void spectrumButtonComputesAndShowsTheVolume() {
    const QString results = tmp_.filePath("results");
    if (!QFileInfo::exists(QDir(results).filePath("drift.csv"))) QSKIP("needs the results of openRunAndInspect");
    MainWindow w;
    w.setInteractive(false);
    w.resize(1200, 800);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.openSeries(series_));
    QVERIFY(w.openResults(results));
    QVERIFY(!w.volumeView()->hasVolume());
    QVERIFY(w.showView("volume"));
    QVERIFY(w.volumeView()->hintShown());
    QVERIFY(w.volumeView()->runSpectrumButton()->isEnabled());
    QSignalSpy finished(&w, &MainWindow::runFinished);
    QTest::mouseClick(w.volumeView()->runSpectrumButton(), Qt::LeftButton);
    QVERIFY2(finished.count() == 1 || finished.wait(120000), "the spectrum did not finish in 120 s");
    QVERIFY2(finished.at(0).at(0).toString() == "done", qPrintable(finished.at(0).at(1).toString()));
    QVERIFY(QFileInfo::exists(QDir(results).filePath("spectrum/spectrum3d.tif")));
    QVERIFY(w.volumeView()->hasVolume());
    QVERIFY(!w.volumeView()->hintShown());
    QCOMPARE(w.volumeView()->axisTitle(2), QString("f (1/frame)"));  // one plane per frame
    QTest::qWait(200);
    check_not_blank(w.grabView("volume"), "computed volume");
  }

  void screenshotOptionWritesPng() {
    const QString results = tmp_.filePath("results");
    if (!QFileInfo::exists(QDir(results).filePath("drift.csv"))) QSKIP("needs the results of openRunAndInspect");
    const QString out = tmp_.filePath("cli-drift.png");
    QProcess p;
    p.start(QString(DRIFTSCAN_BIN_DIR) + "/driftscan", {"--screenshot", "drift", out, "--size", "1200x800", results});
    QVERIFY(p.waitForFinished(60000));
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
    const QImage img(out);
    check_not_blank(img, "cli drift");
    QVERIFY(img.width() > 400 && img.height() > 300);
    // A bad view name is a usage error, not a crash.
    QProcess bad;
    bad.start(QString(DRIFTSCAN_BIN_DIR) + "/driftscan", {"--screenshot", "nosuchview", out});
    QVERIFY(bad.waitForFinished(30000));
    QCOMPARE(bad.exitCode(), 2);
  }

  // The scan timing as read off the microscope: the dwell is shown and typed
  // in µs; the job (and its file) keeps seconds.
  void dwellIsEditedInMicroseconds() {
    JobEditor editor;
    driftscan::Job job = JobEditor::newJob();
    job.input = series_.toStdString();
    job.output = tmp_.filePath("dwell-results").toStdString();
    job.scan.dwell = 2e-6;
    editor.setJob(job);
    QLabel* label = nullptr;
    for (QLabel* l : editor.findChildren<QLabel*>())
      if (l->text().startsWith("Dwell time")) label = l;
    QVERIFY(label);
    QCOMPARE(label->text(), QString::fromUtf8("Dwell time (\u00b5s)"));
    auto* dwell = qobject_cast<QDoubleSpinBox*>(label->buddy());
    QVERIFY(dwell);
    QCOMPARE(dwell->value(), 2.0);
    QCOMPARE(dwell->text(), QString("2.000"));
    // Typed as a user would: 0.5 µs is 5e-7 s in the job.
    editor.show();
    QVERIFY(QTest::qWaitForWindowExposed(&editor));
    dwell->setFocus();
    dwell->selectAll();
    QTest::keyClicks(dwell, "0.5");
    QTest::keyClick(dwell, Qt::Key_Tab);
    QCOMPARE(dwell->value(), 0.5);
    QVERIFY2(std::abs(editor.job().scan.dwell - 5e-7) < 1e-15,
             qPrintable(QString("dwell %1 s in the job").arg(editor.job().scan.dwell)));
    QVERIFY2(editor.isValid(), qPrintable(editor.validationErrors().join("; ")));
    const QString file = tmp_.filePath("dwell.json");
    driftscan::save_job(editor.job(), file.toStdString());
    QVERIFY(std::abs(driftscan::load_job(file.toStdString()).scan.dwell - 5e-7) < 1e-15);
    // Sub-nanosecond steps survive the round trip: 0.125 µs.
    job.scan.dwell = 1.25e-7;
    editor.setJob(job);
    QCOMPARE(dwell->value(), 0.125);
    QVERIFY(std::abs(editor.job().scan.dwell - 1.25e-7) < 1e-15);
  }

  // Issue #31: the fly-backs are typed in µs, as read off the microscope, while
  // the job keeps fractions of the active time; without a frame size (no
  // series open) they are shown as the fraction.
  void flybackIsEditedInMicroseconds() {
    JobEditor editor;
    driftscan::Job job = JobEditor::newJob();
    job.input = series_.toStdString();
    job.output = tmp_.filePath("flyback-results").toStdString();
    job.scan.dwell = 2e-6;
    job.scan.line_flyback = 0.25;
    job.scan.frame_flyback = 0.01;
    editor.setJob(job);
    auto labelOf = [&editor](const QString& start) {
      QLabel* found = nullptr;
      for (QLabel* l : editor.findChildren<QLabel*>())
        if (l->text().startsWith(start)) found = l;
      return found;
    };
    QLabel* lineLabel = labelOf("Line fly-back");
    QLabel* frameLabel = labelOf("Frame fly-back");
    QVERIFY(lineLabel && frameLabel);
    auto* line = qobject_cast<QDoubleSpinBox*>(lineLabel->buddy());
    auto* frame = qobject_cast<QDoubleSpinBox*>(frameLabel->buddy());
    QVERIFY(line && frame);
    QCOMPARE(lineLabel->text(), QString("Line fly-back (of a line)"));
    QCOMPARE(frameLabel->text(), QString("Frame fly-back (of a frame)"));
    QCOMPARE(line->value(), 0.25);
    // 200 x 100 frames at 2 µs: a line is 400 µs, a frame 100 lines of 500 µs.
    editor.setFrameSize(200, 100);
    QCOMPARE(lineLabel->text(), QString::fromUtf8("Line fly-back (\u00b5s)"));
    QCOMPARE(frameLabel->text(), QString::fromUtf8("Frame fly-back (\u00b5s)"));
    QCOMPARE(line->value(), 100.0);
    QCOMPARE(frame->value(), 500.0);
    // Typed as a user would: 40 µs of a 400 µs line is 0.1.
    editor.show();
    QVERIFY(QTest::qWaitForWindowExposed(&editor));
    line->setFocus();
    line->selectAll();
    QTest::keyClicks(line, "40");
    QTest::keyClick(line, Qt::Key_Tab);
    QCOMPARE(line->value(), 40.0);
    QVERIFY2(std::abs(editor.job().scan.line_flyback - 0.1) < 1e-12,
             qPrintable(QString("line fly-back %1 in the job").arg(editor.job().scan.line_flyback)));
    QCOMPARE(frame->value(), 440.0);  // the line time is now 440 µs; the frame's fraction is kept
    QVERIFY(std::abs(editor.job().scan.frame_flyback - 0.01) < 1e-12);
    QVERIFY2(editor.isValid(), qPrintable(editor.validationErrors().join("; ")));
    // The fraction is the truth: a new dwell changes the µs shown, not the job's fraction.
    auto* dwell = qobject_cast<QDoubleSpinBox*>(labelOf("Dwell time")->buddy());
    QVERIFY(dwell);
    dwell->setValue(1.0);
    QCOMPARE(line->value(), 20.0);
    QVERIFY(std::abs(editor.job().scan.line_flyback - 0.1) < 1e-12);
    // rotated90 scans columns: a line is the 100 px height.
    job = editor.job();
    job.scan.direction = driftscan::ScanDirection::rotated90;
    editor.setJob(job);
    QCOMPARE(line->value(), 10.0);
    // No series open: back to the fraction.
    editor.setFrameSize(0, 0);
    QCOMPARE(lineLabel->text(), QString("Line fly-back (of a line)"));
    QCOMPARE(line->value(), 0.1);
    QVERIFY(std::abs(editor.job().scan.line_flyback - 0.1) < 1e-12);
  }

  // The real ABF series (the optional sample data), as a new user runs it: open it,
  // press Run. The job runs on one rank with a thread per core, the log has
  // one readable line for the engine's start and for its results (no raw
  // JSON), and the run panel says how long the run took, with no ETA.
  // Issue #33: the scan rotations are typed as a list ("0,90" or "0 90 180
  // 270"), kept as the job's scan.rotation; an entry that is no number and an
  // angle the run cannot take are refused inline.
  void scanRotationIsEditedAsAList() {
    JobEditor editor;
    driftscan::Job job = JobEditor::newJob();
    job.input = series_.toStdString();
    job.output = tmp_.filePath("rotation-results").toStdString();
    job.scan.rotation = {0, 90};
    editor.setJob(job);
    QLabel* label = nullptr;
    for (QLabel* l : editor.findChildren<QLabel*>())
      if (l->text().startsWith("Scan rotation")) label = l;
    QVERIFY(label);
    auto* edit = qobject_cast<QLineEdit*>(label->buddy());
    QVERIFY(edit);
    QCOMPARE(edit->text(), QString("0,90"));
    editor.show();
    QVERIFY(QTest::qWaitForWindowExposed(&editor));
    auto type = [&](const QString& text) {
      edit->setFocus();
      edit->selectAll();
      QTest::keyClick(edit, Qt::Key_Backspace);
      QTest::keyClicks(edit, text);
      QTest::keyClick(edit, Qt::Key_Tab);
    };
    type("0 90 180 270");
    QCOMPARE(editor.job().scan.rotation, (std::vector<double>{0, 90, 180, 270}));
    QVERIFY2(editor.isValid(), qPrintable(editor.validationErrors().join("; ")));
    type("0,abc");
    QVERIFY(!editor.isValid());
    QVERIFY2(editor.validationErrors().join("; ").contains("Scan rotation: 'abc' is not a number."),
             qPrintable(editor.validationErrors().join("; ")));
    type("0,45");  // any angle from frame 0's
    QCOMPARE(editor.job().scan.rotation, (std::vector<double>{0, 45}));
    QVERIFY2(editor.isValid(), qPrintable(editor.validationErrors().join("; ")));
    type("");  // empty: one direction, or the file's rotations
    QVERIFY(editor.job().scan.rotation.empty());
    QVERIFY2(editor.isValid(), qPrintable(editor.validationErrors().join("; ")));
  }

  void realSeriesRunsAsANewUserWould() {
    const QString abf = QString::fromStdString(driftscan::test::sample_file("stem_abf_series.tif"));
    if (abf.isEmpty()) QSKIP(driftscan::test::sample_absent("stem_abf_series.tif").c_str());
    MainWindow w;
    w.setInteractive(false);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.openSeries(abf));
    driftscan::Job job = w.jobEditor()->job();
    QCOMPARE(job.execution.ranks, 1);
    const int cores = std::max(1, QThread::idealThreadCount());
    QCOMPARE(job.execution.threads, cores);
    // The only change from what the user gets: the results out of the shared data folder.
    const QString out = tmp_.filePath("abf results");
    job.output = out.toStdString();
    w.jobEditor()->setJob(job);
    QVERIFY2(w.jobEditor()->isValid(), qPrintable(w.jobEditor()->validationErrors().join("; ")));
    QSignalSpy lines(w.runController(), &RunController::logLine);
    QSignalSpy finished(&w, &MainWindow::runFinished);
    QElapsedTimer clock;
    clock.start();
    QTest::mouseClick(w.runButton(), Qt::LeftButton);
    QVERIFY2(finished.count() == 1 || finished.wait(150000), "the run did not finish in 150 s");
    const double took = clock.elapsed() / 1000.0;
    QCOMPARE(finished.at(0).at(0).toString(), QString("done"));
    QStringList log;
    for (const QList<QVariant>& l : lines) log << l.at(1).toString();
    const QString all = log.join("\n");
    QVERIFY2(!all.contains("{\""), qPrintable("raw JSON in the log:\n" + all));
    const QString threads = QString::fromUtf8("1 rank \u00d7 %1 thread%2").arg(cores).arg(cores == 1 ? "" : "s");
    const QStringList started = log.filter("started: register on " + threads);
    QVERIFY2(started.size() == 1, qPrintable(all));
    QVERIFY2(started.front().contains("input " + QFileInfo(abf).canonicalFilePath()), qPrintable(started.front()));
    const QString resultsLine = QString("results in %1: average.tif, coverage.tif, drift.csv, report.json, sigma.tif")
                                    .arg(QFileInfo(out).absoluteFilePath());
    QVERIFY2(log.contains(resultsLine), qPrintable(all));
    // The run panel: how long the run took by the app's clock, no ETA.
    const QLabel* runTime = w.findChild<QLabel*>("runTime");
    QVERIFY(runTime);
    QVERIFY2(!runTime->text().contains("ETA"), qPrintable(runTime->text()));
    const QRegularExpressionMatch m = QRegularExpression("^took (\\d+\\.\\d) s$").match(runTime->text());
    QVERIFY2(m.hasMatch(), qPrintable(runTime->text()));
    const double shown = m.captured(1).toDouble();
    QVERIFY2(shown > 0.0 && shown <= took + 0.1,
             qPrintable(QString("shown %1 s, the run took %2 s by the test's clock").arg(shown).arg(took)));
    QCOMPARE(w.driftPlot()->pointCount(), 5);
  }

  void settingsValidateInlineAndProjectRoundTrips() {
    MainWindow w;
    w.setInteractive(false);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.openSeries(series_));
    // An ROI beyond the 96x96 frame is refused with a message, Run disabled.
    w.jobEditor()->setRoi(80, 10, 40, 40);
    QVERIFY(!w.jobEditor()->isValid());
    QVERIFY(w.jobEditor()->validationErrors().join(" ").contains("exceeds"));
    QVERIFY(!w.runButton()->isEnabled());
    // Draw the ROI with the mouse on the frame: the settings follow.
    ImageView* view = w.seriesViewer()->view();
    view->setRoiToolActive(true);
    const QPoint a = view->widgetPosition(QPointF(8.2, 10.2)).toPoint();
    const QPoint b = view->widgetPosition(QPointF(71.8, 57.8)).toPoint();
    QTest::mousePress(view, Qt::LeftButton, {}, a);
    QTest::mouseMove(view, (a + b) / 2);
    QTest::mouseMove(view, b);
    QTest::mouseRelease(view, Qt::LeftButton, {}, b);
    const driftscan::Roi drawn = w.jobEditor()->job().registration.roi;
    QVERIFY2(std::abs(drawn.x - 8) <= 1 && std::abs(drawn.y - 10) <= 1 && std::abs(drawn.w - 64) <= 2 &&
                 std::abs(drawn.h - 48) <= 2,
             qPrintable(QString("drawn ROI %1,%2 %3x%4").arg(drawn.x).arg(drawn.y).arg(drawn.w).arg(drawn.h)));
    w.jobEditor()->setRoi(8, 10, 64, 48);
    QVERIFY2(w.jobEditor()->isValid(), qPrintable(w.jobEditor()->validationErrors().join("; ")));
    // The project file is the engine's job file.
    const QString project = tmp_.filePath("project.json");
    QVERIFY(w.saveProject(project));
    const driftscan::Job j = driftscan::load_job(project.toStdString());
    QCOMPARE(j.registration.roi.x, 8);
    QCOMPARE(j.registration.roi.w, 64);
    QCOMPARE(QString::fromStdString(j.input), series_);
    MainWindow w2;
    w2.setInteractive(false);
    QVERIFY(w2.openProject(project));
    QCOMPARE(w2.jobEditor()->job().registration.roi.h, 48);
    // A missing series gives a one-line error naming the file, no crash.
    QVERIFY(!w2.openSeries(tmp_.filePath("missing.tif")));
    QVERIFY(w2.lastError().contains("missing.tif"));
  }

  void scrubbingKeepsUpAt512() {
    driftscan::SynthOptions o;
    o.frames = 40;
    o.width = 512;
    o.height = 512;
    o.seed = 3;
    const QString path = tmp_.filePath("scrub512.tif");
    driftscan::write_synthetic_series(o, path.toStdString());
    SeriesViewer v;
    v.resize(700, 700);
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    v.setSeries(std::shared_ptr<const driftscan::FrameSource>(driftscan::TiffSeries::open(path.toStdString())),
                "scrub");
    QElapsedTimer t;
    t.start();
    for (int k = 1; k < 40; ++k) {
      v.showFrame(k);
      QElapsedTimer guard;
      guard.start();
      while (v.currentFrame() != k && guard.elapsed() < 2000) QCoreApplication::processEvents();
      QCOMPARE(v.currentFrame(), k);
      v.repaint();  // the frame really reaches the screen
    }
    const double fps = 39 / (t.nsecsElapsed() / 1e9);
    qInfo("scrubbing 512x512 (first decode of every frame): %.1f frames/s", fps);
    QVERIFY2(fps >= 30.0, qPrintable(QString("only %1 frames/s").arg(fps)));
  }
};

int main(int argc, char** argv) {
  VtkViewWidget::setDefaultSurfaceFormat();
  QApplication app(argc, argv);
  AppGuiTest t;
  return QTest::qExec(&t, argc, argv);
}

#include "test_app_gui.moc"
