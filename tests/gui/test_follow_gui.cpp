// The app follows an acquisition (#15): a writer process appends frames to a
// multi-page TIFF (or puts frame files into a folder) while the app runs
// `register --follow` through the Run path (launcher, local profile). The Live
// tab's frame counter, drift plot and running average must advance while the
// frames arrive; the follow ends on its frame bound or on Stop, and the
// drift it leaves equals a batch `register` of the same frames. Stop pressed
// again while the results are finished cancels that finish.
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QPushButton>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest/QtTest>
#include <algorithm>
#include <cmath>
#include <deque>
#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "driftscan/formats/tiff/tiff_writer.hpp"
#include "driftscan/job/job.hpp"
#include "driftscan/registration/drift_table.hpp"
#include "driftscan/synthetic/synthetic_series.hpp"
#include "main_window.hpp"
#include "plots/drift_plot.hpp"
#include "run/follow_monitor.hpp"
#include "run/job_editor.hpp"
#include "run/run_controller.hpp"
#include "views/follow_view.hpp"
#include "views/image_view.hpp"

namespace {

const QString kBin = QStringLiteral(DRIFTSCAN_BIN_DIR);

// What the Live tab showed while the follow ran, sampled every 50 ms.
struct LiveSamples {
  std::set<int> counters, points;  // values seen before the follow ended
  int averagesBeforeEnd = 0;
  qint64 longestLagMs = 0;  // the plot showing fewer rows than drift.csv had (the views' update latency)
  bool zoomKept = false;    // a zoom set on the live plot survived rows arriving after it
};

// Waits for the run to finish, sampling the Live tab. With DRIFTSCAN_GUI_SHOTS
// set (a folder), the window is saved there halfway (docs/app-tour.md's picture).
LiveSamples watch(MainWindow& w, QSignalSpy& finished, int timeoutMs, int halfway, const QString& driftCsv) {
  LiveSamples s;
  const QString shots = qEnvironmentVariable("DRIFTSCAN_GUI_SHOTS");
  bool shot = shots.isEmpty();
  QElapsedTimer clock;
  clock.start();
  int zoomedAt = -1;
  std::deque<std::pair<int, qint64>> seen;  // drift.csv's row count as it grew, and when
  while (finished.count() == 0 && clock.elapsed() < timeoutMs) {
    QTest::qWait(50);
    if (finished.count() > 0) break;
    const int points = w.followView()->driftPlot()->pointCount();
    s.counters.insert(w.followView()->framesRegistered());
    s.points.insert(points);
    s.averagesBeforeEnd = w.followView()->averageUpdates();
    // The user zooms the live plot: rows arriving afterwards must not undo it.
    DriftPlot* plot = w.followView()->driftPlot();
    if (zoomedAt < 0 && points >= halfway + 2) {  // after the picture
      plot->setXView(0.25, 1.0);
      zoomedAt = points;
    }
    if (zoomedAt >= 0 && points > zoomedAt) s.zoomKept = plot->zoomed();
    if (!shot && points >= halfway && s.averagesBeforeEnd > 0)
      shot = w.grab().save(QDir(shots).filePath("screenshot-live-follow.png"));
    // The rows in the file now (complete lines after the header) against the rows shown.
    QFile f(driftCsv);
    const int rows = f.open(QIODevice::ReadOnly) ? std::max(0, int(f.readAll().count('\n')) - 1) : 0;
    if (rows > (seen.empty() ? 0 : seen.back().first)) seen.emplace_back(rows, clock.elapsed());
    while (!seen.empty() && seen.front().first <= points) seen.pop_front();  // on the plot now
    if (!seen.empty()) s.longestLagMs = std::max(s.longestLagMs, clock.elapsed() - seen.front().second);
  }
  return s;
}

// Waits until the engine reports its `follow` phase (it is looking for frames).
bool following_started(MainWindow& w, int timeoutMs) {
  QSignalSpy progress(w.runController(), &RunController::progress);
  QElapsedTimer clock;
  clock.start();
  while (clock.elapsed() < timeoutMs && w.following()) {
    for (const auto& e : progress)
      if (e.at(0).toString() == "follow") return true;
    progress.wait(100);
  }
  return false;
}

// The batch run over `series` (one rank, as the follow's).
bool batch_register(const QString& series, const QString& out) {
  QProcess p;
  p.setProcessChannelMode(QProcess::ForwardedChannels);
  p.start(kBin + "/driftscan-engine", {"register", series, "--out", out, "--threads", "1", "--progress", "none"});
  return p.waitForFinished(120000) && p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0;
}

// Largest |dx|, |dy| difference of two drift tables of the same frames (-1: not the same frames).
double drift_deviation(const std::vector<DriftRow>& a, const driftscan::DriftRecords& b) {
  if (a.size() != b.frames.size()) return -1;
  double worst = 0;
  for (std::size_t k = 0; k < a.size(); ++k)
    worst = std::max({worst, std::abs(a[k].dx - b.frames[k].dx), std::abs(a[k].dy - b.frames[k].dy)});
  return worst;
}

nlohmann::json read_json(const QString& path) {
  std::ifstream in(path.toStdString());
  return nlohmann::json::parse(in, nullptr, false);
}

}  // namespace

class FollowGuiTest : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  QString source_;

  // The settings panel's job for a small, quick follow.
  void prepare(MainWindow& w, std::size_t untilFrames) {
    driftscan::Job job = w.jobEditor()->job();
    job.execution.profile = "local";
    job.execution.threads = 1;
    job.follow.until_frames = untilFrames;
    job.follow.idle_timeout_s = 20;
    job.follow.average_every_frames = 4;
    job.follow.average_every_s = 0.5;
    w.jobEditor()->setJob(job);
  }

 private slots:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    qputenv("XDG_CONFIG_HOME", tmp_.filePath("config").toUtf8());
    qputenv("PATH", kBin.toUtf8() + ":" + qgetenv("PATH"));
    QVERIFY2(QFileInfo(kBin + "/follow_writer").isExecutable(), "follow_writer not built");
    driftscan::SynthOptions o;
    o.frames = 40;
    o.width = 96;
    o.height = 96;
    o.period = 9.0;
    o.dose = 20.0;
    o.seed = 11;
    source_ = tmp_.filePath("source.tif");
    driftscan::write_synthetic_series(o, source_.toStdString());
  }

  // The monitor alone, on files written as the engine writes them: an
  // earlier run's files are ignored, a half-written row waits for its end,
  // the average is reloaded when replaced, at most every minReloadMs, and the
  // last look takes the newest.
  void monitorReadsWhatTheEngineWrites() {
    const QString folder = tmp_.filePath("monitor");
    QVERIFY(QDir().mkpath(folder));
    const auto put = [&](const QString& name, const QByteArray& text, bool append = false) {
      QFile f(QDir(folder).filePath(name));
      QVERIFY(f.open(append ? QIODevice::Append : QIODevice::WriteOnly | QIODevice::Truncate));
      f.write(text);
    };
    const auto average = [&](float v) {  // replaced by rename, as AtomicFile does
      const std::string part = QDir(folder).filePath(".average.part").toStdString();
      driftscan::write_tiff(part, driftscan::Frame(16, 16, v));
      std::filesystem::rename(part, QDir(folder).filePath("average.tif").toStdString());
    };
    put("drift.csv", "frame,dx,dy\n0,0,0\n1,5,5\n2,5,5\n3,5,5\n");  // an earlier run's
    average(9.0f);
    QTest::qWait(300);
    FollowMonitor m;
    QSignalSpy driftChanged(&m, &FollowMonitor::driftChanged);
    m.start(folder, 50);
    QTest::qWait(300);
    QCOMPARE(driftChanged.count(), 0);
    QCOMPARE(m.averageLoads(), 0);

    put("drift.csv", "frame,dx,dy\n0,0,0\n1,0.5,-0.25\n2,0.7");  // the new run's; row 2 half-written
    QTRY_COMPARE_WITH_TIMEOUT(int(m.drift().size()), 2, 5000);
    QCOMPARE(m.drift()[1].dx, 0.5);
    QCOMPARE(m.drift()[1].quality, -2.0);  // a running table's quality is not a measurement
    put("drift.csv", "5,-0.5\n", true);
    QTRY_COMPARE_WITH_TIMEOUT(int(m.drift().size()), 3, 5000);
    QCOMPARE(m.drift()[2].dx, 0.75);
    QCOMPARE(m.drift()[2].dy, -0.5);

    average(1.0f);
    QTRY_COMPARE_WITH_TIMEOUT(m.averageLoads(), 1, 5000);
    QCOMPARE(m.average()->at(0, 0), 1.0f);
    average(2.0f);  // three replacements in quick succession: at most one more load within minReloadMs
    average(3.0f);
    QTest::qWait(m.minReloadMs() / 2);
    QVERIFY(m.averageLoads() <= 2);
    m.stop();  // the last look: the newest
    QCOMPARE(m.average()->at(0, 0), 3.0f);
    QVERIFY(!m.active());
  }

  // A growing multi-page TIFF, 30 frames at 10 per second, followed until 30 frames.
  void followFileUntilFrames() {
    const int frames = 30;
    const QString live = tmp_.filePath("live.tif"), out = tmp_.filePath("live_results");
    MainWindow w;
    w.setInteractive(false);
    w.resize(1400, 900);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    prepare(w, frames);

    QSignalSpy finished(&w, &MainWindow::runFinished);
    // The follow starts first and waits for the file; once it is under way, the microscope writes.
    QVERIFY2(w.followAcquisition(live, out), qPrintable(w.lastError()));
    QCOMPARE(w.cancelButton()->text(), QString("Stop"));
    QVERIFY2(following_started(w, 60000), "the engine did not start following within 60 s");
    QProcess writer;
    writer.setProcessChannelMode(QProcess::ForwardedChannels);
    writer.start(kBin + "/follow_writer", {source_, live, "--frames", QString::number(frames), "--rate", "10"});
    QVERIFY(writer.waitForStarted());

    const LiveSamples s = watch(w, finished, 120000, frames / 2, out + "/drift.csv");
    QVERIFY2(finished.count() == 1, "the follow did not end in 120 s");
    QVERIFY(writer.state() == QProcess::NotRunning || writer.waitForFinished(20000));
    QCOMPARE(finished.at(0).at(0).toString(), QString("done"));
    qInfo(
        "live: %d counter values, %d plot sizes, %d average reloads before the end; "
        "the plot trailed drift.csv by at most %lld ms",
        int(s.counters.size()), int(s.points.size()), s.averagesBeforeEnd, s.longestLagMs);
    // The views advanced while the frames arrived (several intermediate states, not just the end).
    const auto between = [frames](const std::set<int>& v) {
      return std::count_if(v.begin(), v.end(), [frames](int n) { return n > 0 && n < frames; });
    };
    QVERIFY2(between(s.counters) >= 3, "the frame counter did not advance while the frames arrived");
    QVERIFY2(between(s.points) >= 3, "the drift plot did not grow while the frames arrived");
    QVERIFY2(s.zoomKept, "rows arriving reset the zoom of the live drift plot");
    QVERIFY2(s.averagesBeforeEnd >= 2, "the running average was not reloaded while following");
    // Updated at least once a second: a row in drift.csv is on the plot within 1 s.
    QVERIFY2(s.longestLagMs <= 1000, qPrintable(QString("the plot trailed drift.csv by %1 ms").arg(s.longestLagMs)));

    // The end: the frame bound, said so; every view has the 30 frames.
    QCOMPARE(w.followView()->framesRegistered(), frames);
    QVERIFY2(w.followView()->statusText().contains("frame bound reached") &&
                 w.followView()->statusText().contains(QString("after %1 frames").arg(frames)),
             qPrintable(w.followView()->statusText()));
    QCOMPARE(w.followView()->driftPlot()->pointCount(), frames);
    QCOMPARE(w.driftPlot()->pointCount(), frames);
    QVERIFY(!w.followView()->averageView()->image().isNull());
    const nlohmann::json report = read_json(out + "/report.json");
    QCOMPARE(QString::fromStdString(report["follow"].value("stopped_by", "")), QString("until_frames"));

    // The final drift equals the batch run's over the same file.
    QVERIFY(batch_register(live, tmp_.filePath("live_batch")));
    const auto batch = driftscan::read_drift_records(tmp_.filePath("live_batch/drift.csv").toStdString());
    const double dev = drift_deviation(w.driftPlot()->drift(), batch);
    const double devLive = drift_deviation(w.followView()->driftPlot()->drift(), batch);
    qInfo("final drift vs batch register: %.3g px (Drift tab), %.3g px (Live tab)", dev, devLive);
    QVERIFY2(dev >= 0 && dev <= 0.01, qPrintable(QString("drift deviation %1 px").arg(dev)));
    QVERIFY2(devLive >= 0 && devLive <= 0.01, qPrintable(QString("live drift deviation %1 px").arg(devLive)));

    // The project records the follow like any other run.
    const QString project = tmp_.filePath("follow_job.json");
    QVERIFY(w.saveProject(project));
    const driftscan::Job saved = driftscan::load_job(project.toStdString());
    QVERIFY(saved.follow.enabled);
    QCOMPARE(QString::fromStdString(saved.input), live);
    QCOMPARE(QString::fromStdString(saved.output), out);
    QCOMPARE(saved.follow.until_frames, std::size_t(frames));
    QCOMPARE(saved.command, std::string("register"));
  }

  // A file that has stopped growing: the idle timeout ends the follow, and the Live tab says so.
  void followEndsOnIdleTimeout() {
    const QString grown = tmp_.filePath("grown.tif"), out = tmp_.filePath("grown_results");
    QCOMPARE(QProcess::execute(kBin + "/follow_writer", {source_, grown, "--frames", "6", "--rate", "0"}), 0);
    MainWindow w;
    w.setInteractive(false);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    prepare(w, 0);
    driftscan::Job job = w.jobEditor()->job();
    job.follow.idle_timeout_s = 1;
    w.jobEditor()->setJob(job);
    QSignalSpy finished(&w, &MainWindow::runFinished);
    QVERIFY2(w.followAcquisition(grown, out), qPrintable(w.lastError()));
    QVERIFY2(finished.wait(60000), "the idle timeout did not end the follow");
    QCOMPARE(finished.at(0).at(0).toString(), QString("done"));
    QVERIFY2(w.followView()->statusText().contains("(no frame completed for 1 s) after 6 frames"),
             qPrintable(w.followView()->statusText()));
    QCOMPARE(w.driftPlot()->pointCount(), 6);
  }

  // A folder where frame files appear (8 per second, up to 40), ended by the Stop button.
  void followFolderUntilStop() {
    const QString folder = tmp_.filePath("frames"), out = tmp_.filePath("frames_results");
    QVERIFY(QDir().mkpath(folder));
    MainWindow w;
    w.setInteractive(false);
    w.resize(1400, 900);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    prepare(w, 0);

    QSignalSpy finished(&w, &MainWindow::runFinished);
    QVERIFY2(w.followAcquisition(folder, out), qPrintable(w.lastError()));
    QVERIFY2(following_started(w, 60000), "the engine did not start following within 60 s");
    QProcess writer;
    writer.setProcessChannelMode(QProcess::ForwardedChannels);
    writer.start(kBin + "/follow_writer", {source_, folder, "--folder", "--frames", "40", "--rate", "8"});
    QVERIFY(writer.waitForStarted());
    QTRY_VERIFY_WITH_TIMEOUT(w.followView()->framesRegistered() >= 8, 60000);
    const int before = w.followView()->driftPlot()->pointCount();
    QTest::mouseClick(w.cancelButton(), Qt::LeftButton);  // Stop
    QVERIFY2(finished.count() == 1 || finished.wait(120000), "the follow did not end after Stop");
    writer.kill();
    writer.waitForFinished(5000);
    QCOMPARE(finished.at(0).at(0).toString(), QString("done"));  // Stop ends the follow; the results are finished

    const nlohmann::json report = read_json(out + "/report.json");
    QCOMPARE(QString::fromStdString(report["follow"].value("stopped_by", "")), QString("cancel"));
    const int taken = report["follow"].value("frames", 0);
    QVERIFY2(taken >= before && taken < 40, qPrintable(QString("%1 frames taken").arg(taken)));
    QVERIFY2(w.followView()->statusText().contains(QString("(stopped) after %1 frames").arg(taken)),
             qPrintable(w.followView()->statusText()));
    QCOMPARE(w.driftPlot()->pointCount(), taken);
    QCOMPARE(w.followView()->driftPlot()->pointCount(), taken);
    QCOMPARE(w.cancelButton()->text(), QString("Cancel"));

    // The same frames as a finished file, registered in batch.
    const QString prefix = tmp_.filePath("prefix.tif");
    QCOMPARE(QProcess::execute(kBin + "/follow_writer",
                               {source_, prefix, "--frames", QString::number(taken), "--rate", "0"}),
             0);
    QVERIFY(batch_register(prefix, tmp_.filePath("prefix_batch")));
    const auto batch = driftscan::read_drift_records(tmp_.filePath("prefix_batch/drift.csv").toStdString());
    const double dev = drift_deviation(w.driftPlot()->drift(), batch);
    qInfo("stopped after %d frames; drift vs batch register of them: %.3g px", taken, dev);
    QVERIFY2(dev >= 0 && dev <= 0.01, qPrintable(QString("drift deviation %1 px").arg(dev)));
  }

  // Stop, then Stop again while the engine finishes the results (a median
  // in 1 MB over the frames taken: seconds): the finish is cancelled, the app says so,
  // and nothing under a final name looks like finished results.
  void secondStopCancelsTheFinish() {
    driftscan::SynthOptions o;
    o.frames = 300;
    o.width = 256;
    o.height = 256;
    o.period = 9.0;
    o.dose = 6.0;
    o.seed = 5;
    // A finished file: the follow takes its frames as fast as it can. The
    // Stop comes after 60 of them, so that the finish (a median of 60
    // frames of 256² in 1 MB: many passes) outlasts the second Stop's way
    // to the engine (once, on an idle machine, 30 frames of 192² finished
    // first).
    const QString series = tmp_.filePath("long.tif"), out = tmp_.filePath("long_results");
    driftscan::write_synthetic_series(o, series.toStdString());
    MainWindow w;
    w.setInteractive(false);
    w.resize(1400, 900);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    prepare(w, 0);
    driftscan::Job job = w.jobEditor()->job();
    job.averaging.method = driftscan::AverageMethod::median;
    job.averaging.median_memory_mb = 1;  // many passes over the frames: a finish of seconds
    w.jobEditor()->setJob(job);

    QSignalSpy finished(&w, &MainWindow::runFinished);
    QSignalSpy log(w.runController(), &RunController::logLine);
    QVERIFY2(w.followAcquisition(series, out), qPrintable(w.lastError()));
    QTRY_VERIFY_WITH_TIMEOUT(w.followView()->framesRegistered() >= 60, 60000);
    QCOMPARE(w.cancelButton()->text(), QString("Stop"));
    QTest::mouseClick(w.cancelButton(), Qt::LeftButton);
    QCOMPARE(w.cancelButton()->text(), QString("Cancel finishing"));
    // The engine has taken the Stop: it is finishing.
    int taken = -1;
    const QRegularExpression stopped("following stopped after (\\d+) frames; finishing the results");
    QElapsedTimer clock;
    clock.start();
    while (taken < 0 && finished.count() == 0 && clock.elapsed() < 60000) {
      for (const auto& line : log)
        if (const auto m = stopped.match(line.at(1).toString()); m.hasMatch()) taken = m.captured(1).toInt();
      if (taken < 0) log.wait(50);
    }
    QVERIFY2(taken >= 60, "the engine did not say it was finishing the results");
    QVERIFY2(finished.count() == 0, "the finish was over before the second Stop");
    QTest::mouseClick(w.cancelButton(), Qt::LeftButton);  // Cancel finishing
    QVERIFY2(finished.count() == 1 || finished.wait(30000), "the run did not end within 30 s of the second Stop");

    QCOMPARE(finished.at(0).at(0).toString(), QString("cancelled"));
    QVERIFY2(w.lastError().contains("cancelled while its results were being finished"), qPrintable(w.lastError()));
    QVERIFY2(w.followView()->statusText().contains("no report.json was written"),
             qPrintable(w.followView()->statusText()));
    QCOMPARE(w.cancelButton()->text(), QString("Cancel"));
    QVERIFY(!QFileInfo::exists(out + "/report.json"));
    QVERIFY(!QFileInfo::exists(out + "/coverage.tif"));
    QCOMPARE(QDir(out).entryList({".*.tmp-*"}, QDir::Files | QDir::Hidden), QStringList());
    // What the follow wrote stays whole: a row per frame taken.
    const auto rows = driftscan::read_drift_records((out + "/drift.csv").toStdString());
    QCOMPARE(int(rows.frames.size()), taken);
  }
};

QTEST_MAIN(FollowGuiTest)
#include "test_follow_gui.moc"
