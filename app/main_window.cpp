#include "main_window.hpp"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDateTime>
#include <QDir>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QInputDialog>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QStackedWidget>
#include <QStatusBar>
#include <QTabWidget>
#include <QVBoxLayout>
#include <filesystem>

#include <fstream>
#include <iterator>
#include <string>
#include <utility>

#include "driftscan/core/atomic_file.hpp"
#include "driftscan/core/derotated_source.hpp"
#include "driftscan/core/error.hpp"
#include "driftscan/core/scan_rotation.hpp"
#include "driftscan/formats/series_opener.hpp"
#include "driftscan/formats/tiff/tiff_series.hpp"
#include "driftscan/formats/tiff/tiff_writer.hpp"
#include "driftscan/registration/drift_table.hpp"
#include "plots/drift_plot.hpp"
#include "plots/imbalance_view.hpp"
#include "plots/line_drift_plot.hpp"
#include "plots/scan_sweep_plot.hpp"
#include "run/follow_monitor.hpp"
#include "run/job_editor.hpp"
#include "run/run_controller.hpp"
#include "views/comparison_view.hpp"
#include "views/distortion_comparison_view.hpp"
#include "views/follow_view.hpp"
#include "views/frame_table.hpp"
#include "views/image_view.hpp"
#include "views/series_viewer.hpp"
#include "views/spectrum_view.hpp"
#include "views/volume_view.hpp"
#include "views/vtk_view_widget.hpp"

namespace {
const char* kRecentKey = "recentFiles";
const int kMaxRecent = 10;
}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle("DriftScan");
  setAcceptDrops(true);

  tabs_ = new QTabWidget;
  series_ = new SeriesViewer;
  compare_ = new ComparisonView;
  drift_ = new DriftPlot;
  frames_ = new FrameTable;
  lines_ = new LineDriftPlot;
  distortion_ = new DistortionComparisonView;
  imbalance_ = new ImbalanceView;
  sweep_ = new ScanSweepPlot;
  loadBalance_ = new QStackedWidget;
  loadBalance_->addWidget(imbalance_);
  loadBalance_->addWidget(sweep_);
  spectra_ = new SpectrumView;
  volume_ = new VolumeView;
  follow_ = new FollowView;
  tabs_->addTab(series_, "Series");
  tabs_->addTab(compare_, "Average vs frame");
  tabs_->addTab(drift_, "Drift");
  tabs_->addTab(frames_, "Frames");
  tabs_->addTab(lines_, "Drift in time");
  tabs_->addTab(distortion_, "Rigid vs corrected");
  tabs_->addTab(loadBalance_, "Load balance");
  tabs_->addTab(spectra_, "Spectra");
  tabs_->addTab(volume_, "3-D spectrum");
  tabs_->addTab(follow_, "Live");
  setCentralWidget(tabs_);

  editor_ = new JobEditor;
  editor_->setProfiles(RunController::profileNames());
  auto* scroll = new QScrollArea;
  scroll->setWidget(editor_);
  scroll->setWidgetResizable(true);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  scroll->setMinimumWidth(editor_->minimumSizeHint().width() + scroll->verticalScrollBar()->sizeHint().width() + 8);
  auto* settingsDock = new QDockWidget("Settings (the project = the job file)");
  settingsDock->setObjectName("settings");
  settingsDock->setWidget(scroll);
  settingsDock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable);
  addDockWidget(Qt::RightDockWidgetArea, settingsDock);

  run_ = new RunController(this);
  monitor_ = new FollowMonitor(this);
  auto* runDock = new QDockWidget("Run");
  runDock->setObjectName("run");
  runDock->setWidget(buildRunPanel());
  runDock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable);
  addDockWidget(Qt::BottomDockWidgetArea, runDock);

  buildMenus();
  statusBar()->showMessage("Open a series (File > Open, drag and drop, or a command-line argument).");

  // Frame navigation is shared by every view that shows a frame.
  connect(series_, &SeriesViewer::frameShown, compare_, &ComparisonView::setFrame);
  connect(series_, &SeriesViewer::frameShown, spectra_, &SpectrumView::setFrame);
  connect(series_, &SeriesViewer::frameShown, drift_, &DriftPlot::setCurrentFrame);
  connect(series_, &SeriesViewer::frameShown, lines_, &LineDriftPlot::setCurrentFrame);
  connect(series_, &SeriesViewer::frameShown, frames_, &FrameTable::setCurrentFrame);
  // A frame picked in a plot or the frame table is shown by every view (also
  // without the series at hand, when the series viewer shows nothing).
  auto pick = [this](int k) {
    series_->showFrame(k);
    compare_->setFrame(k);
    drift_->setCurrentFrame(k);
    lines_->setCurrentFrame(k);
  };
  for (ChartView* plot : {static_cast<ChartView*>(drift_), static_cast<ChartView*>(lines_)})
    connect(plot, &ChartView::frameSelected, this, pick);
  connect(frames_, &FrameTable::frameSelected, this, pick);
  // The frame table's sigma limit, when it excludes, is the job field
  // averaging.max_sigma: the two controls stay in step.
  connect(frames_, &FrameTable::limitEdited, this, [this](double sigma, bool exclude) {
    driftscan::Job job = editor_->job();
    const double want = exclude ? sigma : 0.0;
    if (job.averaging.max_sigma == want) return;
    job.averaging.max_sigma = want;
    editor_->setJob(job);
  });
  connect(editor_, &JobEditor::changed, this, [this] {
    const double max_sigma = editor_->job().averaging.max_sigma;
    if (max_sigma > 0) frames_->setLimit(max_sigma, true);
    else if (frames_->excluding()) frames_->setLimit(frames_->limit(), false);
  });
  connect(volume_, &VolumeView::runSpectrumRequested, this, &MainWindow::runSpectrum);
  connect(series_, &SeriesViewer::status, statusBar(), [this](const QString& s) { statusBar()->showMessage(s); });
  // ROI: drawn on the frame or typed in the panel, kept in step.
  connect(series_->view(), &ImageView::roiChanged, this,
          [this](QRect r) { editor_->setRoi(r.x(), r.y(), r.width(), r.height()); });
  connect(editor_, &JobEditor::roiEdited, this, [this](int x, int y, int w, int h) {
    series_->view()->setRoi(w > 0 && h > 0 ? QRect(x, y, w, h) : QRect());
  });
  connect(editor_, &JobEditor::changed, this, &MainWindow::updateRunState);

  connectRun();
  updateRunState();
  resize(1500, 950);
  // The views get the room; the run panel and the settings stay compact.
  resizeDocks({runDock}, {190}, Qt::Vertical);
  resizeDocks({settingsDock}, {440}, Qt::Horizontal);
}

MainWindow::~MainWindow() = default;

// The run's events: the progress bar and phase, the log, a follow's live
// views, and what a finished run opens or says.
void MainWindow::connectRun() {
  connect(run_, &RunController::started, this, [this] {
    error_->hide();
    lastError_.clear();
    progress_->setRange(0, 0);  // busy until the first progress event
    phase_->setText("starting");
    eta_->clear();
    runClock_.start();
    updateRunState();
  });
  connect(run_, &RunController::progress, this,
          [this](const QString& phase, double done, double total, double /*phase's elapsed*/, double eta) {
            const int scaled = total > 0 ? int(1000.0 * done / total) : 0;
            progress_->setRange(0, total > 0 ? 1000 : 0);
            progress_->setValue(scaled);
            progress_->setFormat(QString("%1: %2 / %3").arg(phase).arg(done).arg(total));
            phase_->setText(QString("phase: %1").arg(phase));
            // The run's own clock (the engine's elapsed_s and eta_s are the phase's): the
            // phase's ETA while it is known and not over.
            const QString took = QString("elapsed %1 s").arg(runSeconds(), 0, 'f', 1);
            eta_->setText(eta > 0 && done < total ? took + QString(", ETA %1 s (%2)").arg(eta, 0, 'f', 1).arg(phase)
                                                  : took);
          });
  connect(run_, &RunController::logLine, this, &MainWindow::log);
  // A follow's live views: the counter from the engine's events, the drift
  // and the running average from the files it keeps rewriting.
  connect(run_, &RunController::progress, this, [this](const QString& phase, double done, double, double, double) {
    if (following_ && phase == "follow") follow_->setFramesRegistered(int(done));
  });
  connect(run_, &RunController::frameRegistered, follow_, &FollowView::setLastDrift);
  connect(monitor_, &FollowMonitor::driftChanged, this, [this] { follow_->setDrift(monitor_->drift()); });
  connect(monitor_, &FollowMonitor::averageChanged, this, [this] {
    follow_->driftPlot()->setPixelSize(monitor_->pixelSize(), monitor_->pixelUnit());
    follow_->setAverage(monitor_->average());
  });
  connect(monitor_, &FollowMonitor::problem, this, [this](const QString& m) { log("warning", "live view: " + m); });
  connect(run_, &RunController::finished, this,
          [this](const QString& status, const QString& message, const QString& folder) {
            progress_->setRange(0, 1000);
            progress_->setValue(status == "done" ? 1000 : 0);
            progress_->setFormat(status);
            phase_->setText(status);
            eta_->setText(QString("took %1 s").arg(runSeconds(), 0, 'f', 1));  // no ETA: it is over
            const bool followed = std::exchange(following_, false);
            updateRunState();
            const bool spectrum = std::exchange(spectrumRun_, false);
            if (followed) {
              endFollow(status, message, folder);
            } else if (status == "done") {
              if (openResults(folder) && spectrum) tabs_->setCurrentWidget(volume_);
            } else {
              showError(status == "cancelled"
                            ? QString("Cancelled: %1").arg(message.isEmpty() ? "stopped by the user" : message)
                            : QString("Run failed: %1").arg(message));
            }
            emit runFinished(status, message);
          });
}

QWidget* MainWindow::buildRunPanel() {
  auto* w = new QWidget;
  auto* v = new QVBoxLayout(w);
  auto* row = new QHBoxLayout;
  runButton_ = new QPushButton("Run");
  cancelButton_ = new QPushButton("Cancel");
  progress_ = new QProgressBar;
  progress_->setRange(0, 1000);
  progress_->setValue(0);
  progress_->setTextVisible(true);
  progress_->setFormat("idle");
  phase_ = new QLabel("idle");
  eta_ = new QLabel;
  eta_->setObjectName("runTime");
  row->addWidget(runButton_);
  row->addWidget(cancelButton_);
  row->addWidget(progress_, 1);
  row->addWidget(phase_);
  row->addWidget(eta_);
  v->addLayout(row);
  error_ = new QLabel;
  error_->setWordWrap(true);
  error_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  error_->setStyleSheet("QLabel { color: white; background: #c0392b; padding: 4px; }");
  error_->hide();
  v->addWidget(error_);
  log_ = new QPlainTextEdit;
  log_->setReadOnly(true);
  log_->setMaximumBlockCount(5000);
  log_->setMinimumHeight(60);
  v->addWidget(log_, 1);
  connect(runButton_, &QPushButton::clicked, this, &MainWindow::runJob);
  connect(cancelButton_, &QPushButton::clicked, this, &MainWindow::cancelRun);
  return w;
}

void MainWindow::buildMenus() {
  QMenu* file = menuBar()->addMenu("&File");
  file->addAction("&Open series...", QKeySequence::Open, this, [this] {
    const QString p = QFileDialog::getOpenFileName(
        this, "Open series", QString(),
        "Image series (*.tif *.tiff *.dm3 *.dm4 *.emd *.ser *.emi *.mrc *.mrcs);;All files (*)");
    if (!p.isEmpty()) openSeries(p);
  });
  file->addAction("Open series &folder...", this, [this] {
    const QString p = QFileDialog::getExistingDirectory(this, "Open a folder of single-frame TIFFs");
    if (!p.isEmpty()) openSeries(p);
  });
  file->addAction("Open &results folder...", this, [this] {
    const QString p = QFileDialog::getExistingDirectory(this, "Open results folder");
    if (!p.isEmpty()) openResults(p);
  });
  file->addAction("Open scan s&weep (CSV)...", this, [this] {
    const QString p =
        QFileDialog::getOpenFileName(this, "Open scan sweep (scripts/scan-sweep)", QString(), "CSV (*.csv)");
    if (!p.isEmpty()) openScanSweep(p);
  });
  file->addAction("&Follow acquisition...", this, &MainWindow::chooseFollowInput);
  file->addAction("Open 3-D &spectrum (TIFF volume)...", this, [this] {
    const QString p = QFileDialog::getOpenFileName(this, "Open 3-D spectrum", QString(), "TIFF (*.tif *.tiff)");
    if (p.isEmpty()) return;
    try {
      volume_->loadTiff(p);
      tabs_->setCurrentWidget(volume_);
    } catch (const std::exception& e) {
      showError(QString("Cannot open the 3-D spectrum: %1").arg(e.what()));
    }
  });
  recentMenu_ = file->addMenu("Open &recent");
  rebuildRecentMenu();
  file->addSeparator();
  file->addAction("Open &project (job file)...", this, [this] {
    const QString p = QFileDialog::getOpenFileName(this, "Open project", QString(), "Job files (*.json)");
    if (!p.isEmpty()) openProject(p);
  });
  file->addAction("&Save project", QKeySequence::Save, this, [this] {
    QString p = projectPath_;
    if (p.isEmpty()) p = QFileDialog::getSaveFileName(this, "Save project", "job.json", "Job files (*.json)");
    if (!p.isEmpty()) saveProject(p);
  });
  file->addAction("Save project &as...", QKeySequence::SaveAs, this, [this] {
    const QString p = QFileDialog::getSaveFileName(this, "Save project", "job.json", "Job files (*.json)");
    if (!p.isEmpty()) saveProject(p);
  });
  QMenu* exp = file->addMenu("&Export");
  exp->addAction("Current plot as &PNG...", this, [this] { exportPlot(false); });
  exp->addAction("Current plot as &SVG...", this, [this] { exportPlot(true); });
  exp->addAction("&Average as TIFF...", this, &MainWindow::exportAverage);
  exp->addAction("&Drift as CSV...", this, &MainWindow::exportDrift);
  exp->addAction("&Job file...", this, &MainWindow::exportJob);
  file->addSeparator();
  file->addAction("&Quit", QKeySequence::Quit, this, &QWidget::close);

  QMenu* view = menuBar()->addMenu("&View");
  view->addAction("&Fit", QKeySequence(Qt::Key_F), this, [this] { series_->view()->fit(); });
  view->addAction("&1:1", QKeySequence(Qt::Key_1), this, [this] { series_->view()->oneToOne(); });
  roiAction_ = view->addAction("&ROI tool (drag on the frame)");
  roiAction_->setCheckable(true);
  connect(roiAction_, &QAction::toggled, this, [this](bool on) {
    series_->view()->setRoiToolActive(on);
    tabs_->setCurrentWidget(series_);
  });
  view->addAction("Clear ROI", this, [this] {
    series_->view()->setRoi(QRect());
    editor_->setRoi(0, 0, 0, 0);
  });
  view->addAction("&Auto levels", QKeySequence(Qt::Key_A), series_, &SeriesViewer::autoLevels);
  physicalUnitsAction_ = view->addAction("&Physical units (nm) where the pixel size is known");
  physicalUnitsAction_->setCheckable(true);
  physicalUnitsAction_->setChecked(true);
  connect(physicalUnitsAction_, &QAction::toggled, this, [this](bool on) {
    drift_->setPhysicalUnits(on);
    frames_->setPhysicalUnits(on);
    follow_->driftPlot()->setPhysicalUnits(on);
    lines_->setPhysicalUnits(on);
    spectra_->setPhysicalUnits(on);
    volume_->setPhysicalUnits(on);
  });

  QMenu* run = menuBar()->addMenu("&Run");
  run->addAction("&Run", QKeySequence(Qt::CTRL | Qt::Key_R), this, &MainWindow::runJob);
  run->addAction("&Cancel (a follow: Stop)", this, &MainWindow::cancelRun);
}

void MainWindow::log(const QString& level, const QString& text) {
  const QString stamp = QDateTime::currentDateTime().toString("HH:mm:ss");
  log_->appendPlainText(QString("%1 [%2] %3").arg(stamp, level, text));
}

void MainWindow::showError(const QString& message) {
  lastError_ = message;
  error_->setText(message);
  error_->show();
  log("error", message);
  statusBar()->showMessage(message);
  if (interactive_) QMessageBox::warning(this, "DriftScan", message);
}

QString MainWindow::lastError() const { return lastError_; }

void MainWindow::updateRunState() {
  const bool running = run_->running();
  runButton_->setEnabled(!running && editor_->isValid());
  runButton_->setToolTip(editor_->isValid() ? "Run the job" : editor_->validationErrors().join("\n"));
  cancelButton_->setEnabled(running);
  // A follow's cancel is its Stop: the engine ends the follow and finishes the results;
  // pressed again, it cancels that finish.
  const bool finishing = running && following_ && followStops_ > 0;
  cancelButton_->setText(finishing ? "Cancel finishing" : running && following_ ? "Stop" : "Cancel");
  cancelButton_->setToolTip(finishing ? "Cancel the finishing of the results: no report.json is written; drift.csv "
                                        "and the running average of the frames so far are kept (--resume continues)"
                            : running && following_ ? "End the follow: the results are finished over the frames taken"
                                                    : "Cancel the run");
  editor_->setEnabled(!running);
}

void MainWindow::cancelRun() {
  if (!run_->running()) return;
  if (following_) ++followStops_;
  run_->cancel();
  updateRunState();
}

void MainWindow::runJob() {
  if (run_->running()) return;
  if (!editor_->isValid()) {
    showError("The settings are not valid: " + editor_->validationErrors().join("; "));
    return;
  }
  log_->clear();
  spectrumRun_ = false;
  const driftscan::Job job = editor_->job();
  following_ = job.command == "register" && job.follow.enabled;
  followStops_ = 0;
  if (following_) {
    followJob_ = job;
    follow_->begin(QString::fromStdString(job.input), job.follow.until_frames);
    monitor_->start(QString::fromStdString(job.output));
    tabs_->setCurrentWidget(follow_);
  }
  run_->start(job);
}

bool MainWindow::followAcquisition(const QString& path, const QString& output) {
  if (run_->running()) {
    showError("A run is in progress: stop it before following an acquisition.");
    return false;
  }
  const QFileInfo fi(QDir::cleanPath(path));
  driftscan::Job job = editor_->job();
  job.command = "register";
  job.input = fi.absoluteFilePath().toStdString();
  job.signal.clear();
  job.apply_to.clear();  // both need the whole series: refused with a follow
  job.scan.correct_distortion = false;
  job.follow.enabled = true;
  job.execution.ranks = 1;  // the follow runs on one rank; others would only wait
  const QString base = fi.isDir() ? fi.fileName() : fi.completeBaseName();
  job.output =
      (output.isEmpty() ? QDir(fi.absolutePath()).filePath(base + "_results") : QFileInfo(output).absoluteFilePath())
          .toStdString();
  editor_->setJob(job);
  seriesPath_ = fi.absoluteFilePath();
  runJob();
  return following_;
}

void MainWindow::chooseFollowInput() {
  QMessageBox ask(QMessageBox::Question, "Follow acquisition",
                  "Register an acquisition while it is written. What does the microscope write?", QMessageBox::Cancel,
                  this);
  QPushButton* file = ask.addButton("A growing TIFF file...", QMessageBox::AcceptRole);
  QPushButton* folder = ask.addButton("A folder of frame files...", QMessageBox::AcceptRole);
  ask.exec();
  QString p;
  if (ask.clickedButton() == file) {
    QFileDialog d(this, "Follow a TIFF being written (it may not exist yet)", QString(), "TIFF (*.tif *.tiff)");
    d.setFileMode(QFileDialog::AnyFile);
    d.setAcceptMode(QFileDialog::AcceptOpen);
    if (d.exec() && !d.selectedFiles().isEmpty()) p = d.selectedFiles().front();
  } else if (ask.clickedButton() == folder) {
    p = QFileDialog::getExistingDirectory(this, "Follow a folder where frame files appear");
  }
  if (!p.isEmpty()) followAcquisition(p);
}

void MainWindow::endFollow(const QString& status, const QString& message, const QString& folder) {
  monitor_->stop();  // a last look: the final drift.csv and average.tif
  const QString input = QString::fromStdString(followJob_.input);
  QString summary;
  if (status == "done") {
    // The frames written so far, for the frame views. A followed folder may
    // hold files the follow skipped (another size, corrupt): then it does not
    // open as one series, which is no error of the run.
    if (QFileInfo::exists(input)) {
      try {
        driftscan::open_series(input.toStdString());
        openSeries(input);
      } catch (const std::exception& e) {
        log("warning", QString("the followed series is not shown (%1); its results are").arg(e.what()));
      }
    }
    openResults(folder);
    // The job as it ran, so that Save project records the follow.
    driftscan::Job job = followJob_;
    job.output = QFileInfo(folder).absoluteFilePath().toStdString();
    editor_->setJob(job);
    const nlohmann::json f = results_.report.value("follow", nlohmann::json::object());
    const std::string by = f.value("stopped_by", std::string());
    const QString how = by == "cancel"         ? QString("stopped")
                        : by == "until_frames" ? QString("the frame bound reached")
                        : by == "idle_timeout"
                            ? QString("no frame completed for %1 s").arg(followJob_.follow.idle_timeout_s)
                            : QString::fromStdString(by);
    summary = QString(
                  "Follow ended (%1) after %2 frames. drift.csv, average.tif and report.json in %3 are those of a "
                  "batch register over these frames (the Drift, Frames and Average vs frame tabs show them).")
                  .arg(how)
                  .arg(f.value("frames", 0))
                  .arg(folder);
    log("info", summary);
    statusBar()->showMessage(summary);
  } else if (status == "cancelled" && followStops_ > 1) {
    summary = QString(
                  "Follow cancelled while its results were being finished: no report.json was written; drift.csv "
                  "and the running average.tif of the frames taken are kept in %1 (--resume continues).")
                  .arg(folder);
    showError(summary);
  } else {
    summary = QString("Follow %1: %2. The live views show the last state read; what the engine kept is in %3.")
                  .arg(status, message, folder);
    showError(QString("Follow %1: %2").arg(status, message));
  }
  follow_->end(summary);
  tabs_->setCurrentWidget(follow_);
}

void MainWindow::runSpectrum() {
  if (run_->running()) return;
  if (!source_) {
    showError("No series open: open the series the 3-D spectrum is to be computed from.");
    return;
  }
  driftscan::Job job = editor_->job();
  job.command = "spectrum";
  // Its own results folder: a folder holds one command's results as a set
  // (the engine refuses to mix a spectrum into a register run's folder).
  job.output = (std::filesystem::path(job.output) / "spectrum").string();
  // Registered with this series' drift when the results shown are of it.
  const bool same = !results_.driftPath.isEmpty() && results_.drift.size() == source_->frame_count();
  job.averaging.drift = same ? results_.driftPath.toStdString() : std::string();
  log_->clear();
  log("info", same ? QString("3-D spectrum of the series registered with %1").arg(results_.driftPath)
                   : QString("3-D spectrum of the raw series (no drift of it loaded)"));
  spectrumRun_ = true;
  run_->start(job);
}

bool MainWindow::openSeries(const QString& path, const QString& signal) {
  std::string chosen = signal.toStdString();
  bool several = false;
  try {
    const auto listed = driftscan::list_signals(path.toStdString());
    several = listed.size() > 1;
    // Only images are offered: a 1-D signal (a spectrum) is no series to
    // register. With none, open_series below says why.
    std::vector<driftscan::SignalInfo> found;
    for (const auto& g : listed)
      if (g.is_image()) found.push_back(g);
    if (several && chosen.empty() && !found.empty()) {
      chosen = found.front().name;
      if (interactive_) {
        QStringList items;
        for (const auto& g : found)
          items << QString("%1  (%2 frames, %3 x %4)")
                       .arg(QString::fromStdString(g.name))
                       .arg(g.frames)
                       .arg(g.width)
                       .arg(g.height);
        bool ok = false;
        const QString item = QInputDialog::getItem(this, "DriftScan",
                                                   "This file holds several signals. Register:", items, 0, false, &ok);
        if (!ok) return false;
        chosen = found[static_cast<std::size_t>(items.indexOf(item))].name;
      }
    }
    std::shared_ptr<const driftscan::FrameSource> s = driftscan::open_series(path.toStdString(), chosen);
    source_ = s;
  } catch (const std::exception& e) {
    showError(QString("Cannot open series: %1").arg(e.what()));
    return false;
  }
  seriesPath_ = path;
  series_->setSeries(source_, QFileInfo(path).fileName());
  compare_->setSeries(source_);
  spectra_->setSeries(source_);
  applyCalibration(source_->pixel_size(), QString::fromStdString(source_->pixel_unit()), int(source_->frame_count()));
  volume_->setCanRunSpectrum(true);
  editor_->setFrameSize(source_->width(), source_->height());
  driftscan::Job job = editor_->job();
  // Absolute, so the saved project re-runs from anywhere.
  job.input = QFileInfo(path).absoluteFilePath().toStdString();
  job.signal = several ? chosen : std::string();
  job.follow.enabled = false;  // an opened series is registered whole (File > Follow acquisition follows)
  if (job.output.empty() || results_.folder.isEmpty()) {
    const QFileInfo fi(path);
    job.output = QDir(fi.absolutePath()).filePath(fi.completeBaseName() + "_results").toStdString();
  }
  editor_->setJob(job);
  addRecent(path);
  setWindowTitle(QString("DriftScan - %1").arg(QFileInfo(path).fileName()));
  log("info", QString("opened %1").arg(QString::fromStdString(source_->describe())));
  tabs_->setCurrentWidget(series_);
  updateRunState();
  return true;
}

bool MainWindow::openResults(const QString& folder) {
  try {
    results_ = ResultSet::load(folder);
  } catch (const std::exception& e) {
    showError(QString("Cannot read results: %1").arg(e.what()));
    return false;
  }
  for (const QString& w : results_.warnings) log("warning", w);
  // The series the results belong to, when it is not open yet.
  if (!source_ && !results_.input.isEmpty() && QFileInfo::exists(results_.input)) openSeries(results_.input);
  if (!source_)  // the series is not at hand: its calibration from report.json (or average.tif, below)
    applyCalibration(results_.pixelSize, results_.pixelUnit, int(results_.drift.size()));
  if (source_) {  // a re-run from here writes to the folder being looked at
    driftscan::Job job = editor_->job();
    job.output = QFileInfo(folder).absoluteFilePath().toStdString();
    editor_->setJob(job);
  }
  drift_->setDrift(results_.drift);
  frames_->setDrift(results_.drift);
  frames_->setScanRotation(results_.scanRotation);  // a column, and an arrow on each frame shown
  series_->setScanRotation(results_.scanRotation);
  if (results_.report.contains("uncertainty") && results_.report["uncertainty"].contains("median_sigma"))
    statusBar()->showMessage(
        QString("Drift sigma: median %1 px, worst %2 px (frame %3); bands on the plot are +-2 sigma")
            .arg(results_.report["uncertainty"].value("median_sigma", 0.0), 0, 'g', 3)
            .arg(results_.report["uncertainty"].value("worst_sigma", 0.0), 0, 'g', 3)
            .arg(results_.report["uncertainty"].value("worst_frame", 0)));
  imbalance_->setTrace(results_.trace);
  loadBalance_->setCurrentWidget(imbalance_);
  compare_->setDrift(results_.drift);
  if (source_) {  // frames scanned in several directions are compared turned back, as the run averaged them
    std::shared_ptr<const driftscan::FrameSource> compared = source_;
    if (driftscan::has_scan_rotation(results_.scanRotation)) {
      try {
        compared = std::make_shared<driftscan::DerotatedSource>(source_, results_.scanRotation);
      } catch (const std::exception& e) {
        log("warning", QString("frames compared as recorded: %1").arg(e.what()));
      }
    }
    compare_->setSeries(compared);
  }
  // The registration's transforms, for warping frames as the averaging did.
  std::vector<driftscan::Transform> transforms;
  if (source_ && !results_.driftPath.isEmpty()) {
    try {
      const driftscan::Point centre{(source_->width() - 1) / 2.0, (source_->height() - 1) / 2.0};
      transforms = driftscan::read_drift_table(results_.driftPath.toStdString(), centre).to_frame0;
      if (transforms.size() != source_->frame_count()) transforms.clear();  // not this series' table
    } catch (const std::exception& e) {
      log("warning", QString("frames aligned by translation only: %1").arg(e.what()));
    }
  }
  const auto interpolation = "/settings/averaging/interpolation"_json_pointer;
  const bool fourier = results_.report.contains(interpolation) && results_.report[interpolation] == "fourier";
  compare_->setTransforms(std::move(transforms),
                          fourier ? driftscan::Interpolation::fourier : driftscan::Interpolation::cubic);
  std::shared_ptr<const driftscan::Frame> average;
  if (!results_.averagePath.isEmpty()) {
    try {
      auto avg = driftscan::TiffSeries::open(results_.averagePath.toStdString());
      average = std::make_shared<const driftscan::Frame>(avg->frame(0));
      // The average is written with the series' calibration: it stands in for a series not at hand
      // (after report.json, which records the series' own).
      if (!source_ && !(results_.pixelSize > 0))
        applyCalibration(avg->pixel_size(), QString::fromStdString(avg->pixel_unit()), int(results_.drift.size()));
    } catch (const std::exception& e) {
      showError(QString("Cannot read the average: %1").arg(e.what()));
    }
  }
  compare_->setAverageOrigin(results_.specimenCoordinates ? results_.specimenOrigin : QPointF());
  compare_->setAverage(average, results_.averagePath);
  std::shared_ptr<const driftscan::Frame> sigma;
  if (average && !results_.sigmaPath.isEmpty()) {
    try {
      sigma = std::make_shared<const driftscan::Frame>(
          driftscan::TiffSeries::open(results_.sigmaPath.toStdString())->frame(0));
      if (sigma->width != average->width || sigma->height != average->height) sigma.reset();  // not this average's
    } catch (const std::exception& e) {
      log("warning", QString("standard-error map not shown: %1").arg(e.what()));
    }
  }
  compare_->setSigma(sigma);
  spectra_->setAverage(average);
  showScanDistortion(average);
  if (!results_.spectrumPath.isEmpty()) {
    try {
      volume_->loadTiff(results_.spectrumPath);
    } catch (const std::exception& e) {
      log("warning", QString("3-D spectrum not shown: %1").arg(e.what()));
    }
  }
  addRecent(folder);
  log("info", QString("results from %1: %2 drift rows, %3 workers in the trace")
                  .arg(folder)
                  .arg(results_.drift.size())
                  .arg(results_.trace.workers.size()));
  if (!results_.drift.empty()) tabs_->setCurrentWidget(drift_);
  emit resultsLoaded(folder);
  return true;
}

bool MainWindow::openProject(const QString& path) {
  driftscan::Job job;
  try {
    job = driftscan::load_job(path.toStdString());
  } catch (const std::exception& e) {
    showError(QString("Cannot open project: %1").arg(e.what()));
    return false;
  }
  projectPath_ = path;
  if (!job.input.empty() && QFileInfo::exists(QString::fromStdString(job.input)))
    openSeries(QString::fromStdString(job.input), QString::fromStdString(job.signal));
  editor_->setJob(job);
  const auto& r = job.registration.roi;
  series_->view()->setRoi(r.whole_frame() ? QRect() : QRect(r.x, r.y, r.w, r.h));
  addRecent(path);
  log("info", QString("project %1 loaded").arg(path));
  return true;
}

bool MainWindow::saveProject(const QString& path) {
  try {
    driftscan::save_job(editor_->job(), path.toStdString());
  } catch (const std::exception& e) {
    showError(QString("Cannot save project: %1").arg(e.what()));
    return false;
  }
  projectPath_ = path;
  log("info", QString("project saved to %1 (re-run headless: driftscan-engine run %1)").arg(path));
  return true;
}

bool MainWindow::openScanSweep(const QString& path) {
  try {
    sweep_->setTable(read_scan_sweep(path));
  } catch (const std::exception& e) {
    showError(QString("Cannot read the scan sweep: %1").arg(e.what()));
    return false;
  }
  loadBalance_->setCurrentWidget(sweep_);
  tabs_->setCurrentWidget(loadBalance_);
  log("info", QString("scan sweep %1: %2 configurations").arg(path).arg(sweep_->table().rows.size()));
  return true;
}

bool MainWindow::openAny(const QString& path) {
  const QFileInfo fi(path);
  if (fi.isFile() && fi.suffix().toLower() == "csv") return openScanSweep(path);
  if (fi.isDir() && ResultSet::looksLikeResults(path)) return openResults(path);
  if (fi.isFile() && fi.suffix().toLower() == "json") return openProject(path);
  return openSeries(path);
}

void MainWindow::addRecent(const QString& path) {
  QSettings s("DriftScan", "driftscan");
  QStringList list = s.value(kRecentKey).toStringList();
  const QString abs = QFileInfo(path).absoluteFilePath();
  list.removeAll(abs);
  list.prepend(abs);
  while (list.size() > kMaxRecent) list.removeLast();
  s.setValue(kRecentKey, list);
  rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu() {
  if (!recentMenu_) return;
  recentMenu_->clear();
  const QStringList list = QSettings("DriftScan", "driftscan").value(kRecentKey).toStringList();
  for (const QString& p : list) recentMenu_->addAction(p, this, [this, p] { openAny(p); });
  recentMenu_->setEnabled(!list.isEmpty());
}

void MainWindow::dragEnterEvent(QDragEnterEvent* e) {
  if (e->mimeData()->hasUrls()) e->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* e) {
  const auto urls = e->mimeData()->urls();
  if (!urls.isEmpty() && urls.front().isLocalFile()) openAny(urls.front().toLocalFile());
  e->acceptProposedAction();
}

void MainWindow::closeEvent(QCloseEvent* e) {
  if (run_->running()) run_->cancel();
  e->accept();
}

QStringList MainWindow::viewNames() {
  return {"series", "compare", "drift", "frames", "lines", "distortion", "imbalance", "spectra", "volume", "live"};
}

void MainWindow::showScanDistortion(const std::shared_ptr<const driftscan::Frame>& average) {
  lines_->setSeries(results_.lines, results_.drift);
  lines_->setLineField(results_.lineField);
  std::shared_ptr<const driftscan::Frame> rigid;
  if (!results_.averageRigidPath.isEmpty() && results_.specimenCoordinates) {
    try {
      rigid = std::make_shared<const driftscan::Frame>(
          driftscan::TiffSeries::open(results_.averageRigidPath.toStdString())->frame(0));
    } catch (const std::exception& e) {
      log("warning", QString("rigid average not shown: %1").arg(e.what()));
    }
  }
  distortion_->setAverages(rigid, results_.specimenCoordinates ? average : nullptr, results_.specimenOrigin);
  if (source_) distortion_->setPixelSize(source_->pixel_size(), QString::fromStdString(source_->pixel_unit()));
}

void MainWindow::applyCalibration(double size, const QString& unit, int frames) {
  drift_->setPixelSize(size, unit);
  frames_->setPixelSize(size, unit);
  follow_->driftPlot()->setPixelSize(size, unit);
  lines_->setPixelSize(size, unit);
  spectra_->setPixelSize(size, unit);
  volume_->setCalibration(size, unit, frames);
}

bool MainWindow::showView(const QString& name) {
  const int i = viewNames().indexOf(name);
  if (i < 0) return name == "main";
  tabs_->setCurrentIndex(i);
  return true;
}

QImage MainWindow::grabView(const QString& name) {
  if (name == "main") return grab().toImage();
  if (!showView(name)) return {};
  QApplication::processEvents();
  if (name == "volume") return volume_->grabImage();
  return tabs_->currentWidget()->grab().toImage();
}

void MainWindow::exportPlot(bool svg) {
  QWidget* shown = tabs_->currentWidget();
  if (auto* stack = qobject_cast<QStackedWidget*>(shown)) shown = stack->currentWidget();
  ChartView* plot = qobject_cast<ChartView*>(shown);
  const QString filter = svg ? "SVG (*.svg)" : "PNG (*.png)";
  const QString path = QFileDialog::getSaveFileName(this, "Export view", svg ? "plot.svg" : "plot.png", filter);
  if (path.isEmpty()) return;
  bool ok;
  if (plot) {
    ok = svg ? plot->exportSvg(path) : plot->exportPng(path);
  } else if (!svg) {
    ok = grabView(viewNames().value(tabs_->currentIndex())).save(path, "PNG");
  } else {
    showError("SVG export is for the plots (drift, drift in time, load balance); export image views as PNG.");
    return;
  }
  if (ok) log("info", QString("exported %1").arg(path));
  else showError(QString("Cannot write %1").arg(path));
}

void MainWindow::exportAverage() {
  auto avg = compare_->average();
  if (!avg) {
    showError("No average to export: run a registration or open a results folder first.");
    return;
  }
  const QString path = QFileDialog::getSaveFileName(this, "Export average", "average.tif", "TIFF (*.tif)");
  if (path.isEmpty()) return;
  try {
    driftscan::TiffWriteOptions o;
    if (source_) {
      o.pixel_size = source_->pixel_size();
      o.unit = source_->pixel_unit();
    }
    driftscan::write_tiff(path.toStdString(), *avg, o);
    log("info", QString("exported %1").arg(path));
  } catch (const std::exception& e) {
    showError(QString("Cannot export the average: %1").arg(e.what()));
  }
}

void MainWindow::exportDrift() {
  if (results_.drift.empty()) {
    showError("No drift to export: run a registration or open a results folder first.");
    return;
  }
  const QString path = QFileDialog::getSaveFileName(this, "Export drift", "drift.csv", "CSV (*.csv)");
  if (path.isEmpty()) return;
  // Copy the engine's file verbatim (all its columns), atomically.
  try {
    std::ifstream in(results_.driftPath.toStdString(), std::ios::binary);
    if (!in) throw driftscan::failure(results_.driftPath.toStdString() + ": cannot read");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    driftscan::AtomicFile out(path.toStdString(), "drift table");
    out.stream() << text;
    out.commit();
  } catch (const driftscan::Error& e) {
    showError(QString("Cannot write %1: %2").arg(path, e.what()));
    return;
  }
  log("info", QString("exported %1").arg(path));
}

void MainWindow::exportJob() {
  const QString path = QFileDialog::getSaveFileName(this, "Export job file", "job.json", "Job files (*.json)");
  if (!path.isEmpty()) saveProject(path);
}
