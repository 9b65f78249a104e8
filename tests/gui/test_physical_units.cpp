// Physical units in the app (Xvfb, real engine runs): a series whose TIFF
// carries a pixel size is registered by driftscan-engine; its results shown
// in the main window have the drift axes in nm with every value scaled by
// the pixel size (the readout of a known frame is dx * pixel size), the
// spectra in nm⁻¹; the same holds when the series is not at hand (its
// pixel size from report.json, or from the calibrated average.tif); the Frames
// table's dx, dy and σ columns follow the plots, unit in the header; View >
// Physical units switches back to px. An uncalibrated series' results stay in px.
#include <QAction>
#include <QApplication>
#include <QDir>
#include <QFile>
#include <QMouseEvent>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest/QtTest>
#include <cmath>
#include <nlohmann/json.hpp>

#include "driftscan/formats/tiff/tiff_series.hpp"
#include "driftscan/formats/tiff/tiff_writer.hpp"
#include "driftscan/synthetic/synthetic_series.hpp"
#include "main_window.hpp"
#include "plots/drift_plot.hpp"
#include "views/frame_table.hpp"
#include "views/image_view.hpp"
#include "views/series_viewer.hpp"
#include "views/spectrum_view.hpp"
#include "views/volume_view.hpp"

namespace {
constexpr double kPixelNm = 0.25;

// The synthetic series written as a TIFF, with (size > 0) or without a pixel size.
void write_series(const QString& path, double size) {
  driftscan::SynthOptions o;
  o.frames = 8;
  o.width = 80;
  o.height = 80;
  o.period = 8.0;
  o.dose = 30.0;
  o.seed = 11;
  const driftscan::SyntheticSeries synth(o);
  driftscan::TiffWriteOptions w;
  w.pixel_size = size;
  w.unit = size > 0 ? "nm" : "";
  driftscan::TiffStackWriter out(path.toStdString(), o.width, o.height, o.frames, w);
  for (std::size_t k = 0; k < o.frames; ++k) out.append(synth.frame(k));
  out.commit();
}

void register_series(const QString& series, const QString& results) {
  QProcess p;
  p.start(QString(DRIFTSCAN_BIN_DIR) + "/driftscan-engine",
          {"register", series, "--out", results, "--threads", "1", "--progress", "none"});
  QVERIFY(p.waitForFinished(120000));
  QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
}

void move_to(QWidget* w, QPointF at) {
  QMouseEvent e(QEvent::MouseMove, at, w->mapToGlobal(at), Qt::NoButton, Qt::NoButton, Qt::NoModifier);
  QApplication::sendEvent(w, &e);
}

// The first two numbers after "dx " and "dy " in a readout.
std::pair<double, double> readout_shift(const QString& text) {
  const QRegularExpression re(R"(dx (-?[0-9.eE+-]+), dy (-?[0-9.eE+-]+) )");
  const auto m = re.match(text);
  if (!m.hasMatch()) return {NAN, NAN};
  return {m.captured(1).toDouble(), m.captured(2).toDouble()};
}

// The Frames table's columns dx, dy, σ (1, 2, 3).
constexpr int kDx = 1, kDy = 2, kSigma = 3;
}  // namespace

class PhysicalUnitsTest : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

  // The drift plot of `w` (showing results) reads out frame k in `unit`, dx and dy scaled by `scale`.
  static void check_readout(MainWindow& w, int k, double scale, const QString& unit) {
    DriftPlot* plot = w.driftPlot();
    const DriftRow& r = plot->drift().at(std::size_t(k));
    move_to(plot->viewport(), plot->pointPosition(k));
    const QString text = plot->readout();
    QVERIFY2(text.startsWith(QString("frame %1: dx ").arg(k)), qPrintable(text));
    QVERIFY2(text.contains(QString(" %1").arg(unit)), qPrintable(text));
    const auto [dx, dy] = readout_shift(text);
    // 4 significant digits in nm, 3 decimals in px.
    const double tol = unit == "px" ? 6e-4 : 6e-4 * std::max(std::abs(r.dx * scale), std::abs(r.dy * scale)) + 1e-9;
    QVERIFY2(std::abs(dx - r.dx * scale) <= tol && std::abs(dy - r.dy * scale) <= tol,
             qPrintable(QString("%1 (dx %2 px, dy %3 px, scale %4)").arg(text).arg(r.dx).arg(r.dy).arg(scale)));
  }

  // The Frames table of `w` shows dx, dy and σ of every frame in `unit`, scaled by `scale`, the unit in
  // each header; σ is the larger of sigma_dx and sigma_dy.
  static void check_frame_table(MainWindow& w, double scale, const QString& unit) {
    FrameTable* table = w.frameTable();
    const auto& rows = w.driftPlot()->drift();
    QCOMPARE(table->rowCount(), int(rows.size()));
    QCOMPARE(table->headerText(kDx), QString("dx (%1)").arg(unit));
    QCOMPARE(table->headerText(kDy), QString("dy (%1)").arg(unit));
    QCOMPARE(table->headerText(kSigma), QString::fromUtf8("\u03c3 (%1)").arg(unit));
    bool someSigma = false;
    for (int k = 0; k < int(rows.size()); ++k) {
      const DriftRow& r = rows[std::size_t(k)];
      const double sigma = std::max(r.sigma_dx, r.sigma_dy);
      QVERIFY(std::isfinite(sigma) && sigma >= 0);
      someSigma = someSigma || sigma > 1e-3;
      const double shown[] = {table->cellText(k, kDx).toDouble(), table->cellText(k, kDy).toDouble(),
                              table->cellText(k, kSigma).toDouble()};
      const double want[] = {r.dx * scale, r.dy * scale, sigma * scale};
      // 3 decimals of a px (4 for σ), in nm at least as fine.
      const double tol[] = {6e-4 * scale, 6e-4 * scale, 6e-5 * scale};
      for (int c = 0; c < 3; ++c)
        QVERIFY2(std::abs(shown[c] - want[c]) <= tol[c],
                 qPrintable(QString("frame %1 column %2: shown %3, expected %4 %5 (%6 px)")
                                .arg(k)
                                .arg(table->headerText(c + 1))
                                .arg(table->cellText(k, c + 1))
                                .arg(want[c])
                                .arg(unit)
                                .arg(want[c] / scale)));
    }
    QVERIFY(someSigma);  // a σ that a wrong scale would show as a different number
  }

 private slots:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    qputenv("XDG_CONFIG_HOME", tmp_.filePath("config").toUtf8());
    qputenv("PATH", QByteArray(DRIFTSCAN_BIN_DIR) + ":" + qgetenv("PATH"));
  }

  void calibratedResultsAreInNanometres() {
    const QString series = tmp_.filePath("calibrated.tif"), results = tmp_.filePath("calibrated_results");
    write_series(series, kPixelNm);
    QCOMPARE(driftscan::TiffSeries::open(series.toStdString())->pixel_size(), kPixelNm);
    register_series(series, results);
    // The engine keeps the calibration in the average.
    auto avg = driftscan::TiffSeries::open(QDir(results).filePath("average.tif").toStdString());
    QCOMPARE(avg->pixel_size(), kPixelNm);
    QCOMPARE(QString::fromStdString(avg->pixel_unit()), QString("nm"));

    // From the series; with the series moved away, from report.json; from average.tif
    // when the report does not record it either (as older results).
    for (const QString source : {"series", "report", "average"}) {
      if (source == "report") QVERIFY(QFile::rename(series, tmp_.filePath("moved.tif")));
      if (source == "average") {
        const QString path = QDir(results).filePath("report.json");
        QFile in(path);
        QVERIFY(in.open(QIODevice::ReadOnly));
        nlohmann::json report = nlohmann::json::parse(in.readAll().toStdString());
        in.close();
        QVERIFY(report["input"].contains("pixel_size"));
        report["input"].erase("pixel_size");
        report["input"].erase("unit");
        QFile out(path);
        QVERIFY(out.open(QIODevice::WriteOnly | QIODevice::Truncate));
        out.write(QByteArray::fromStdString(report.dump(2)));
      }
      MainWindow w;
      w.setInteractive(false);
      w.resize(1400, 900);
      w.show();
      QVERIFY(QTest::qWaitForWindowExposed(&w));
      QVERIFY(w.openResults(results));
      QCOMPARE(w.seriesViewer()->series() != nullptr, source == "series");
      DriftPlot* plot = w.driftPlot();
      QCOMPARE(plot->pointCount(), 8);
      QVERIFY(plot->calibration().known());
      QCOMPARE(plot->calibration().size, kPixelNm);
      QCOMPARE(plot->shiftAxisLabel(), QString("shift (nm)"));
      // The labelled range is the pixel range times the pixel size: the largest shift lies inside it.
      const auto range = plot->shiftAxisRange();
      double most = 0;
      for (const DriftRow& r : plot->drift()) most = std::max({most, std::abs(r.dx), std::abs(r.dy)});
      QVERIFY(most > 0.5);  // the synthetic series drifts by more than half a pixel
      QVERIFY2(range.second >= most * kPixelNm * 0.999 || range.first <= -most * kPixelNm * 0.999,
               qPrintable(QString("%1..%2 nm, largest shift %3 px").arg(range.first).arg(range.second).arg(most)));
      QVERIFY(range.second - range.first < 3 * most * kPixelNm);  // and not in pixels
      w.showView("drift");
      QApplication::processEvents();
      check_readout(w, 5, kPixelNm, "nm");
      QVERIFY(w.frameTable()->calibration().shown());
      check_frame_table(w, kPixelNm, "nm");

      // Spectra: the scale bar in nm⁻¹, one spectrum pixel = 1/(width * pixel size).
      w.showView("spectra");
      QApplication::processEvents();
      ImageView* spectrum = w.spectrumView()->averageSpectrum();
      QTRY_VERIFY(!spectrum->caption().isEmpty());
      QCOMPARE(spectrum->pixelUnit(), QString::fromUtf8("nm\u207b\u00b9"));
      QVERIFY(std::abs(spectrum->pixelSize() - 1.0 / (80 * kPixelNm)) < 1e-12);
      QVERIFY2(spectrum->caption().contains(QString::fromUtf8(" nm\u207b\u00b9)")), qPrintable(spectrum->caption()));
      QCOMPARE(w.volumeView()->axisTitle(0), QString("kx (1/nm)"));

      // View > Physical units off: pixels everywhere, on again: nm.
      w.physicalUnitsAction()->setChecked(false);
      w.showView("drift");
      QApplication::processEvents();
      QCOMPARE(plot->shiftAxisLabel(), QString("shift (px)"));
      check_readout(w, 5, 1.0, "px");
      check_frame_table(w, 1.0, "px");
      QCOMPARE(w.volumeView()->axisTitle(0), QString("kx (1/px)"));
      w.showView("spectra");
      QApplication::processEvents();
      QCOMPARE(spectrum->pixelSize(), 0.0);
      QVERIFY2(!spectrum->caption().contains("nm"), qPrintable(spectrum->caption()));
      w.physicalUnitsAction()->setChecked(true);
      QCOMPARE(plot->shiftAxisLabel(), QString("shift (nm)"));
      check_frame_table(w, kPixelNm, "nm");
    }
  }

  void uncalibratedResultsStayInPixels() {
    const QString series = tmp_.filePath("plain.tif"), results = tmp_.filePath("plain_results");
    write_series(series, 0);
    register_series(series, results);
    MainWindow w;
    w.setInteractive(false);
    w.resize(1400, 900);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.openResults(results));
    QVERIFY(!w.driftPlot()->calibration().known());
    QCOMPARE(w.driftPlot()->shiftAxisLabel(), QString("shift (px)"));
    w.showView("drift");
    QApplication::processEvents();
    check_readout(w, 5, 1.0, "px");
    QVERIFY(!w.driftPlot()->readout().contains("nm"));
    check_frame_table(w, 1.0, "px");
    QCOMPARE(w.volumeView()->axisTitle(0), QString("kx (1/px)"));
  }
};

QTEST_MAIN(PhysicalUnitsTest)
#include "test_physical_units.moc"
