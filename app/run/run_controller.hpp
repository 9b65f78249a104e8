#pragma once
// Runs a job without blocking the GUI thread. With the launcher library
// (local, ssh, slurm profiles) the engine is started on the launcher's
// background thread and its progress events are handed to the GUI thread;
// without it, `driftscan-engine --progress json run job.json` (under mpirun
// for more than one rank) is run with QProcess. Either way the engine is a
// separate process and the same signals come out.
#include <QObject>
#include <QString>
#include <memory>

#include <nlohmann/json.hpp>

#include "driftscan/job/job.hpp"

class QProcess;
class QTimer;

class RunController : public QObject {
  Q_OBJECT
 public:
  explicit RunController(QObject* parent = nullptr);
  ~RunController() override;
  bool running() const { return running_; }
  // Starts `job`; returns false (and emits failed()) if it could not start.
  bool start(const driftscan::Job& job);
  // The names of the launcher profiles (just "local" without the launcher).
  static QStringList profileNames();
  // How long a cancelled follow may take to finish its results before it is
  // killed: a cancel ends the follow, then the engine averages the frames taken.
  static constexpr double followFinishGraceS = 600.0;
  // The engine's start and result events as one readable log line each
  // ("engine 0.1.0 started: register on 1 rank × 2 threads, …",
  // "results in /path: average.tif, drift.csv, …").
  static QString startLine(const nlohmann::json& event);
  static QString resultLine(const nlohmann::json& event);

 public slots:
  void cancel();

 signals:
  void started();
  // eta_s < 0 while unknown.
  void progress(const QString& phase, double done, double total, double elapsed_s, double eta_s);
  void logLine(const QString& level, const QString& text);
  // register --follow: frame `frame` registered (its row in drift.csv; flags: RegistrationFlag bits).
  void frameRegistered(int frame, double dx, double dy, int flags);
  // status: "done", "failed" or "cancelled"; message is empty when done.
  void finished(const QString& status, const QString& message, const QString& resultFolder);

 private:
  void handleEvent(const nlohmann::json& e);
  void finish(const QString& status, const QString& message);

  bool running_ = false;
  QString resultFolder_;
  QString lastError_;
  bool sawCancelled_ = false;
#ifdef DRIFTSCAN_HAVE_LAUNCHER
  struct Launch;
  std::unique_ptr<Launch> launch_;
  QTimer* poll_ = nullptr;
#else
  QProcess* process_ = nullptr;
  QString stagingDir_;
  QByteArray stdoutBuffer_;
#endif
};
