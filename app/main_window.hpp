#pragma once
// The main window: the series viewer and the result views as tabs, the job
// settings on the right, the run panel (progress, log, Run/Cancel) below.
// The project file is the engine's job file.
#include <QElapsedTimer>
#include <QMainWindow>
#include <memory>

#include "driftscan/core/frame_source.hpp"
#include "driftscan/job/job.hpp"
#include "project/result_set.hpp"

class SeriesViewer;
class ComparisonView;
class DriftPlot;
class FrameTable;
class LineDriftPlot;
class DistortionComparisonView;
class ImbalanceView;
class SpectrumView;
class VolumeView;
class JobEditor;
class RunController;
class FollowView;
class FollowMonitor;
class QTabWidget;
class QStackedWidget;
class ScanSweepPlot;
class QProgressBar;
class QLabel;
class QPlainTextEdit;
class QPushButton;
class QMenu;
class QAction;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // Without interaction no modal dialog is ever shown (tests, --screenshot):
  // errors go to the log and the error line only.
  void setInteractive(bool on) { interactive_ = on; }

  // A file holding several signals (detectors) asks which one (the first
  // when not interactive) unless `signal` names it.
  bool openSeries(const QString& path, const QString& signal = QString());
  bool openResults(const QString& folder);
  // scripts/scan-sweep's CSV, shown in the Load balance tab (instead of a run's trace).
  bool openScanSweep(const QString& path);
  bool openProject(const QString& path);
  bool saveProject(const QString& path);
  // A series, a results folder, a job file or a scan sweep's CSV, whichever `path` is.
  bool openAny(const QString& path);
  // What File > Follow acquisition... does once a growing TIFF or a folder
  // (or glob) of frame files is chosen: the job of the settings panel with
  // follow.enabled, this input and (unless `output` is given) the folder
  // PATH_results beside it, run through Run's path; the Live tab shows it.
  bool followAcquisition(const QString& path, const QString& output = QString());

  // View names for --screenshot: series, compare, drift, frames, lines, distortion, imbalance, spectra, volume, live.
  static QStringList viewNames();
  bool showView(const QString& name);
  // The named view as an image at its current size ("main": the whole window).
  QImage grabView(const QString& name);

  SeriesViewer* seriesViewer() const { return series_; }
  ComparisonView* comparisonView() const { return compare_; }
  DriftPlot* driftPlot() const { return drift_; }
  FrameTable* frameTable() const { return frames_; }
  LineDriftPlot* lineDriftPlot() const { return lines_; }
  DistortionComparisonView* distortionView() const { return distortion_; }
  ImbalanceView* imbalanceView() const { return imbalance_; }
  ScanSweepPlot* scanSweepPlot() const { return sweep_; }
  SpectrumView* spectrumView() const { return spectra_; }
  VolumeView* volumeView() const { return volume_; }
  FollowView* followView() const { return follow_; }
  FollowMonitor* followMonitor() const { return monitor_; }
  bool following() const { return following_; }
  JobEditor* jobEditor() const { return editor_; }
  RunController* runController() const { return run_; }
  QPushButton* runButton() const { return runButton_; }
  QPushButton* cancelButton() const { return cancelButton_; }
  QProgressBar* progressBar() const { return progress_; }
  QString lastError() const;
  // View > Physical units (checked: nm / nm⁻¹ where the pixel size is known).
  QAction* physicalUnitsAction() const { return physicalUnitsAction_; }
  const ResultSet& results() const { return results_; }

 public slots:
  void runJob();  // what the Run button does
  // What the Cancel button does. While following it is Stop: the first press
  // ends the follow and the engine finishes the results, a second one
  // (the button then reads "Cancel finishing") cancels that finish.
  void cancelRun();
  // What the 3-D tab's button does: the engine's spectrum command on the open
  // series, with the drift of the results folder when there is one, into the
  // job's output folder; the volume is shown when it is done.
  void runSpectrum();

 signals:
  void resultsLoaded(const QString& folder);
  void runFinished(const QString& status, const QString& message);

 protected:
  void dragEnterEvent(QDragEnterEvent* e) override;
  void dropEvent(QDropEvent* e) override;
  void closeEvent(QCloseEvent* e) override;

 private:
  void buildMenus();
  QWidget* buildRunPanel();
  void addRecent(const QString& path);
  void rebuildRecentMenu();
  void showError(const QString& message);
  void log(const QString& level, const QString& text);
  void exportPlot(bool svg);
  void exportAverage();
  void exportDrift();
  void exportJob();
  void updateRunState();
  void connectRun();
  // Seconds since the run started (its own clock, not a phase's).
  double runSeconds() const { return runClock_.isValid() ? runClock_.elapsed() / 1000.0 : 0.0; }
  void chooseFollowInput();
  // The follow has ended (status as RunController::finished): say how, show its results.
  void endFollow(const QString& status, const QString& message, const QString& folder);
  // The line-resolution drift and the rigid-vs-corrected view of a scan-distortion run.
  void showScanDistortion(const std::shared_ptr<const driftscan::Frame>& average);
  // The pixel size every plot and spectrum uses (from the series, or from the
  // calibrated average.tif when the series is not at hand).
  void applyCalibration(double size, const QString& unit, int frames);

  SeriesViewer* series_;
  ComparisonView* compare_;
  DriftPlot* drift_;
  FrameTable* frames_;
  LineDriftPlot* lines_;
  DistortionComparisonView* distortion_;
  ImbalanceView* imbalance_;
  ScanSweepPlot* sweep_;
  QStackedWidget* loadBalance_;  // a run's trace (imbalance_) or a scan sweep (sweep_)
  SpectrumView* spectra_;
  VolumeView* volume_;
  FollowView* follow_;
  FollowMonitor* monitor_;
  JobEditor* editor_;
  RunController* run_;
  QTabWidget* tabs_;
  QProgressBar* progress_;
  QLabel* phase_;
  QLabel* eta_;  // "runTime": elapsed (and the phase's ETA), then how long the run took
  QElapsedTimer runClock_;
  QLabel* error_;
  QPlainTextEdit* log_;
  QPushButton* runButton_;
  QPushButton* cancelButton_;
  QMenu* recentMenu_ = nullptr;
  QAction* roiAction_ = nullptr;
  QAction* physicalUnitsAction_ = nullptr;
  std::shared_ptr<const driftscan::FrameSource> source_;
  QString seriesPath_;
  QString projectPath_;
  QString lastError_;
  ResultSet results_;
  bool interactive_ = true;
  bool spectrumRun_ = false;  // the running job is runSpectrum()'s
  bool following_ = false;    // the running job is a register --follow
  int followStops_ = 0;       // Stop presses during this follow
  driftscan::Job followJob_;  // ... this one
};
