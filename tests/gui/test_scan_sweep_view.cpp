// The Load balance tab opens scripts/scan-sweep's CSV: File > Open scan sweep
// (or any .csv given to openAny) shows the scaling figure — one measured and
// one model line per global algorithm for work stealing, one K at a time (the
// K key switches) — and a CSV without the sweep's columns is refused with
// one message naming the file and the column, leaving what was shown.
#include <QApplication>
#include <QFile>
#include <QKeyEvent>
#include <QStackedWidget>
#include <QTemporaryDir>
#include <QtTest/QtTest>

#include "main_window.hpp"
#include "plots/scan_sweep_plot.hpp"

namespace {
const char* kHeader =
    "workers,ranks,threads,elements_per_worker,mean_ms,algorithm,strategy,repeat,makespan_s,makespan_min_s,"
    "makespan_max_s,model_makespan_s,speedup_vs_static,model_speedup_vs_static,efficiency,model_efficiency,"
    "work_bound_s,operator_overrun,stolen_elements,load_1min\n";

// Two shapes of 16 workers and one of 64, two algorithms, two K.
QString write_sweep(const QString& dir) {
  QString path = dir + "/scan_sweep.csv";  // not const: returned by move
  QFile f(path);
  f.open(QIODevice::WriteOnly);
  f.write(kHeader);
  for (int k : {16, 64})
    for (auto [r, t] : {std::pair{4, 4}, std::pair{2, 8}, std::pair{8, 8}})
      for (const char* alg : {"dissemination", "mpi-scan"})
        for (const char* strategy : {"reduce-then-scan", "work-stealing"}) {
          const bool ws = QString(strategy) == "work-stealing";
          f.write(QString("%1,%2,%3,%4,20.0,%5,%6,3,0.9,0.88,0.95,0.8,%7,%8,%9,0.7,0.5,1.01,12,3.5\n")
                      .arg(r * t)
                      .arg(r)
                      .arg(t)
                      .arg(k)
                      .arg(alg)
                      .arg(strategy)
                      .arg(ws ? 1.2 : 1.0)
                      .arg(ws ? 1.3 : 1.0)
                      .arg(ws ? 0.6 : 0.5)
                      .toUtf8());
        }
  return path;
}
}  // namespace

class ScanSweepViewTest : public QObject {
  Q_OBJECT

 private slots:
  void opensTheSweepInTheLoadBalanceTab() {
    QTemporaryDir dir;
    MainWindow w;
    w.setInteractive(false);
    w.resize(1200, 800);
    w.show();
    QVERIFY(w.openAny(write_sweep(dir.path())));
    ScanSweepPlot* plot = w.scanSweepPlot();
    QVERIFY(plot->isVisible());
    QCOMPARE(int(plot->table().rows.size()), 2 * 3 * 2 * 2);
    QCOMPARE(plot->elementsPerWorker(), 64);  // the largest K first
    // Per algorithm: measured and model, each a line and its points.
    QCOMPARE(plot->speedupSeriesCount(), 2 * 2 * 2);
    QKeyEvent k(QEvent::KeyPress, Qt::Key_K, Qt::NoModifier, "k");
    QApplication::sendEvent(plot, &k);
    QCOMPARE(plot->elementsPerWorker(), 16);
    const QImage img = w.grabView("imbalance");
    QVERIFY(!img.isNull());
  }

  void refusesACsvWithoutTheSweepsColumns() {
    QTemporaryDir dir;
    const QString path = dir.path() + "/other.csv";
    QFile f(path);
    f.open(QIODevice::WriteOnly);
    f.write("frame,dx,dy\n0,0,0\n");
    f.close();
    MainWindow w;
    w.setInteractive(false);
    QVERIFY(w.openScanSweep(write_sweep(dir.path())));
    QVERIFY(!w.openScanSweep(path));
    QCOMPARE(int(w.scanSweepPlot()->table().rows.size()), 24);  // the earlier sweep still shown
    try {
      read_scan_sweep(path);
      QFAIL("read_scan_sweep accepted a drift table");
    } catch (const std::runtime_error& e) {
      QVERIFY2(QString(e.what()).contains("other.csv") && QString(e.what()).contains("'workers'"), e.what());
    }
  }
};

QTEST_MAIN(ScanSweepViewTest)
#include "test_scan_sweep_view.moc"
