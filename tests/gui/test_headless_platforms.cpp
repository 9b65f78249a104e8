// The app binary on Qt platforms without OpenGL (QT_QPA_PLATFORM=offscreen and
// minimal): it used to crash in Qt's backing store as soon as the 3-D view's
// QOpenGLWidget was created. Now the 2-D views render there, the 3-D view is
// replaced by a line saying why, and `--screenshot volume` is refused with one
// line and exit 2. Each case runs the real driftscan binary.
#include <QDir>
#include <QFileInfo>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest/QtTest>
#include <set>

#include "driftscan/synthetic/synthetic_series.hpp"

class HeadlessPlatformsTest : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  QString series_, results_;

  QProcessEnvironment env(const QString& platform) const {
    QProcessEnvironment e = QProcessEnvironment::systemEnvironment();
    e.insert("QT_QPA_PLATFORM", platform);
    e.insert("XDG_CONFIG_HOME", tmp_.filePath("config"));  // recent files stay here
    return e;
  }
  static QString app() { return QString(DRIFTSCAN_BIN_DIR) + "/driftscan"; }

 private slots:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    driftscan::SynthOptions o;
    o.frames = 6;
    o.width = 48;
    o.height = 48;
    o.seed = 5;
    series_ = tmp_.filePath("s.tif");
    driftscan::write_synthetic_series(o, series_.toStdString());
    results_ = tmp_.filePath("res");
    QProcess engine;
    engine.start(QString(DRIFTSCAN_BIN_DIR) + "/driftscan-engine",
                 {"register", "-i", series_, "-o", results_, "--progress", "none"});
    QVERIFY(engine.waitForFinished(60000));
    QVERIFY2(engine.exitCode() == 0, engine.readAllStandardError().constData());
  }

  void screenshotsRenderWithoutOpenGL_data() {
    QTest::addColumn<QString>("platform");
    QTest::addColumn<QString>("view");
    for (const char* platform : {"offscreen", "minimal"})
      for (const char* view : {"main", "drift", "series"})
        QTest::newRow(qPrintable(QString("%1 %2").arg(platform, view))) << QString(platform) << QString(view);
  }
  void screenshotsRenderWithoutOpenGL() {
    QFETCH(QString, platform);
    QFETCH(QString, view);
    const QString out = tmp_.filePath(platform + "-" + view + ".png");
    QProcess p;
    p.setProcessEnvironment(env(platform));
    p.start(app(), {"--screenshot", view, out, "--size", "900x600", results_});
    QVERIFY(p.waitForFinished(60000));
    const QByteArray err = p.readAllStandardError();
    QVERIFY2(p.exitStatus() == QProcess::NormalExit, qPrintable("crashed: " + err));
    QVERIFY2(p.exitCode() == 0, err.constData());
    const QImage img(out);
    QVERIFY(!img.isNull());
    QVERIFY(img.width() >= 300 && img.height() >= 200);
    std::set<QRgb> colours;
    for (int y = 0; y < img.height(); y += 3)
      for (int x = 0; x < img.width(); x += 3) colours.insert(img.pixel(x, y));
    // Not one flat colour (`minimal` draws no text without its enable_fonts
    // option and the 48² frame has few grey levels, so no more is asked).
    QVERIFY2(colours.size() > 8, qPrintable(QString("%1 colours only").arg(colours.size())));
  }

  void volumeScreenshotIsRefusedInOneLine_data() {
    QTest::addColumn<QString>("platform");
    QTest::newRow("offscreen") << "offscreen";
    QTest::newRow("minimal") << "minimal";
  }
  void volumeScreenshotIsRefusedInOneLine() {
    QFETCH(QString, platform);
    const QString out = tmp_.filePath(platform + "-volume.png");
    QProcess p;
    p.setProcessEnvironment(env(platform));
    p.start(app(), {"--screenshot", "volume", out, results_});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);
    QCOMPARE(p.exitCode(), 2);
    QVERIFY(!QFileInfo::exists(out));
    // Qt's own chatter (XDG_RUNTIME_DIR, ...) aside, exactly one line of ours, naming the platform.
    QStringList ours;
    for (const QString& line : QString::fromUtf8(p.readAllStandardError()).split('\n', Qt::SkipEmptyParts))
      if (line.startsWith("driftscan:")) ours << line;
    QCOMPARE(ours.size(), 1);
    QVERIFY2(ours[0].contains(platform) && ours[0].contains("volume"), qPrintable(ours[0]));
  }

  void interactiveStartStaysUp() {
    // Without --screenshot the window is shown and the event loop runs: still
    // alive after the results (and the empty 3-D tab) have been laid out.
    QProcess p;
    p.setProcessEnvironment(env("offscreen"));
    p.start(app(), {results_});
    QVERIFY(p.waitForStarted(10000));
    QVERIFY2(!p.waitForFinished(2500), qPrintable("exited early: " + p.readAllStandardError()));
    QCOMPARE(p.state(), QProcess::Running);
    p.terminate();
    if (!p.waitForFinished(10000)) {
      p.kill();
      p.waitForFinished(5000);
    }
  }
};

QTEST_GUILESS_MAIN(HeadlessPlatformsTest)
#include "test_headless_platforms.moc"
