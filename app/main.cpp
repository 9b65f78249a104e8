// driftscan: the desktop app.
//   driftscan [series | results folder | job.json]
//   driftscan --screenshot VIEW out.png [series | results folder | job.json]...
// VIEW is main or one of MainWindow::viewNames() (series, compare, drift, frames, ...).
#include <QApplication>
#include <QCommandLineParser>
#include <QElapsedTimer>
#include <QWindow>
#include <cstdio>

#include "main_window.hpp"
#include "views/vtk_view_widget.hpp"

namespace {
// Waits until the window is on screen (no window manager under Xvfb: exposure,
// not activation) and every pending paint has run.
bool wait_exposed(QWidget& w, int timeout_ms) {
  QElapsedTimer t;
  t.start();
  while (t.elapsed() < timeout_ms) {
    QApplication::processEvents(QEventLoop::AllEvents, 20);
    if (w.windowHandle() && w.windowHandle()->isExposed()) break;
  }
  const bool exposed = w.windowHandle() && w.windowHandle()->isExposed();
  QElapsedTimer settle;
  settle.start();
  while (settle.elapsed() < 300) QApplication::processEvents(QEventLoop::AllEvents, 20);
  return exposed;
}
}  // namespace

int main(int argc, char** argv) {
  VtkViewWidget::setDefaultSurfaceFormat();  // before QApplication (VTK needs GL 3.2 core)
  QApplication app(argc, argv);
  QApplication::setApplicationName("driftscan");
  QApplication::setOrganizationName("DriftScan");
  QApplication::setApplicationVersion(DRIFTSCAN_VERSION);

  QCommandLineParser cli;
  cli.setApplicationDescription("Register and average drifting electron-microscopy image series.");
  cli.addHelpOption();
  cli.addVersionOption();
  QCommandLineOption shot("screenshot",
                          "Render VIEW (" + QStringList(MainWindow::viewNames() << "main").join(", ") +
                              ") to a PNG and exit; the next argument is the PNG.",
                          "VIEW");
  QCommandLineOption size("size", "Window size for --screenshot (default 1500x950).", "WxH", "1500x950");
  cli.addOption(shot);
  cli.addOption(size);
  cli.addPositionalArgument("paths", "A series, a results folder or a job file (project); several are opened in order.",
                            "[paths...]");
  cli.process(app);
  QStringList args = cli.positionalArguments();

  MainWindow window;
  if (cli.isSet(shot)) {
    const QString view = cli.value(shot);
    if (args.isEmpty()) {
      std::fprintf(stderr, "driftscan: --screenshot VIEW needs the output PNG\n");
      return 2;
    }
    if (view != "main" && !MainWindow::viewNames().contains(view)) {
      std::fprintf(stderr, "driftscan: unknown view '%s' (one of main, %s)\n", qPrintable(view),
                   qPrintable(MainWindow::viewNames().join(", ")));
      return 2;
    }
    QString why;
    if (view == "volume" && !VtkViewWidget::available(&why)) {
      std::fprintf(stderr, "driftscan: --screenshot volume: %s\n", qPrintable(why));
      return 2;
    }
    const QString out = args.takeFirst();
    window.setInteractive(false);
    const QStringList wh = cli.value(size).split('x');
    window.resize(wh.value(0).toInt() > 0 ? wh.value(0).toInt() : 1500,
                  wh.value(1).toInt() > 0 ? wh.value(1).toInt() : 950);
    window.show();
    if (!wait_exposed(window, 10000)) std::fprintf(stderr, "driftscan: window never exposed\n");
    for (const QString& path : args)
      if (!window.openAny(path)) {
        std::fprintf(stderr, "driftscan: %s\n", qPrintable(window.lastError()));
        return 2;
      }
    window.showView(view);
    wait_exposed(window, 2000);
    const QImage img = window.grabView(view);
    if (img.isNull() || !img.save(out, "PNG")) {
      std::fprintf(stderr, "driftscan: could not write %s\n", qPrintable(out));
      return 3;
    }
    std::printf("%s: %dx%d\n", qPrintable(out), img.width(), img.height());
    return 0;
  }
  window.show();
  for (const QString& path : args) window.openAny(path);
  return app.exec();
}
