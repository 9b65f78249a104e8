#include "run/run_controller.hpp"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTimer>

#include "driftscan/core/error.hpp"

#ifdef DRIFTSCAN_HAVE_LAUNCHER
#include "driftscan/launch/job_launcher.hpp"
#include "driftscan/launch/profile.hpp"

struct RunController::Launch {
  std::unique_ptr<driftscan::launch::JobLauncher> launcher;
};
#endif

RunController::RunController(QObject* parent) : QObject(parent) {}

RunController::~RunController() {
#ifdef DRIFTSCAN_HAVE_LAUNCHER
  // The launcher's destructor cancels and joins its thread; queued events
  // addressed to this object are dropped with it.
  launch_.reset();
#else
  if (process_ && process_->state() != QProcess::NotRunning) {
    process_->terminate();
    if (!process_->waitForFinished(5000)) process_->kill();
    process_->waitForFinished(2000);
  }
#endif
}

QStringList RunController::profileNames() {
  QStringList names;
#ifdef DRIFTSCAN_HAVE_LAUNCHER
  try {
    for (const auto& p : driftscan::launch::load_profiles(driftscan::launch::default_profiles_path()))
      names << QString::fromStdString(p.name);
  } catch (const std::exception&) {
    // A broken profiles file must not stop the app; running reports it.
  }
#endif
  if (!names.contains("local")) names.prepend("local");
  return names;
}

namespace {
QString text_of(const nlohmann::json& e, const char* key) {
  auto it = e.find(key);
  if (it == e.end() || it->is_null()) return {};
  return it->is_string() ? QString::fromStdString(it->get<std::string>()) : QString::fromStdString(it->dump());
}
}  // namespace

QString RunController::startLine(const nlohmann::json& e) {
  // "engine 0.1.0 started: register on 1 rank × 2 threads (host vm), input A, output B"
  const int ranks = e.value("ranks", 1), threads = e.value("threads", 1);
  QString line = QString("engine %1 started: %2 on %3 rank%4 \u00d7 %5 thread%6")
                     .arg(text_of(e, "version"), text_of(e, "command"))
                     .arg(ranks)
                     .arg(ranks == 1 ? "" : "s")
                     .arg(threads)
                     .arg(threads == 1 ? "" : "s");
  if (!text_of(e, "host").isEmpty()) line += QString(" (host %1)").arg(text_of(e, "host"));
  if (!text_of(e, "input").isEmpty()) line += ", input " + text_of(e, "input");
  if (!text_of(e, "output").isEmpty()) line += ", output " + text_of(e, "output");
  return line;
}

QString RunController::resultLine(const nlohmann::json& e) {
  // "results in /path: average.tif, drift.csv, report.json" (full paths when the files are not in one folder).
  QStringList paths;
  auto files = e.find("files");
  if (files != e.end() && files->is_object())
    for (const auto& [key, value] : files->items())
      if (value.is_string()) paths << QString::fromStdString(value.get<std::string>());
  if (paths.isEmpty()) return "results: none written";
  const QString folder = QFileInfo(paths.front()).absolutePath();
  QStringList names;
  for (const QString& p : paths) {
    if (QFileInfo(p).absolutePath() != folder) return "results: " + paths.join(", ");
    names << QFileInfo(p).fileName();
  }
  names.sort();
  return QString("results in %1: %2").arg(folder, names.join(", "));
}

void RunController::handleEvent(const nlohmann::json& e) {
  if (!e.is_object()) return;
  const std::string ev = e.value("event", "");
  auto str = [&](const char* k) {
    auto it = e.find(k);
    return it != e.end() && it->is_string() ? QString::fromStdString(it->get<std::string>()) : QString();
  };
  auto num = [&](const char* k, double def) {
    auto it = e.find(k);
    return it != e.end() && it->is_number() ? it->get<double>() : def;
  };
  if (ev == "progress") {
    emit progress(str("phase"), num("done", 0), num("total", 0), num("elapsed_s", 0), num("eta_s", -1));
  } else if (ev == "frame") {
    emit frameRegistered(int(num("frame", -1)), num("dx", 0), num("dy", 0), int(num("flags", 0)));
  } else if (ev == "log") {
    emit logLine(str("level").isEmpty() ? "info" : str("level"), str("message"));
  } else if (ev == "start") {
    emit logLine("info", startLine(e));
  } else if (ev == "result") {
    emit logLine("info", resultLine(e));
  } else if (ev == "error") {
    lastError_ = str("message");
    emit logLine("error", lastError_);
  } else if (ev == "cancelled") {
    sawCancelled_ = true;
    emit logLine("warning", "cancelled");
  }
}

void RunController::finish(const QString& status, const QString& message) {
  running_ = false;
  emit logLine(
      status == "done" ? "info" : (status == "cancelled" ? "warning" : "error"),
      status == "done" ? QString("done: results in %1").arg(resultFolder_) : QString("%1: %2").arg(status, message));
  emit finished(status, message, resultFolder_);
}

#ifdef DRIFTSCAN_HAVE_LAUNCHER

bool RunController::start(const driftscan::Job& job) {
  if (running_) return false;
  using namespace driftscan::launch;
  lastError_.clear();
  sawCancelled_ = false;
  resultFolder_ = QString::fromStdString(job.output);
  try {
    Profile profile;
    profile = find_profile(load_profiles(default_profiles_path()), job.execution.profile);
    // The settings panel decides ranks and threads; the profile decides where.
    profile.ranks = job.execution.ranks;
    profile.threads = job.execution.threads;
    launch_ = std::make_unique<Launch>();
    LaunchOptions options;
    if (job.follow.enabled) options.cancel_grace_s = followFinishGraceS;
    launch_->launcher = std::make_unique<JobLauncher>(profile, job, options);
    launch_->launcher->on_event([this](const nlohmann::json& e) {
      // Launcher thread: hand over to the GUI thread.
      QMetaObject::invokeMethod(
          this, [this, e] { handleEvent(e); }, Qt::QueuedConnection);
    });
    emit logLine("info", QString("starting with profile '%1' (%2): %3 rank(s) x %4 thread(s)")
                             .arg(QString::fromStdString(profile.name), to_string(profile.kind))
                             .arg(profile.ranks)
                             .arg(profile.threads));
    launch_->launcher->start();
  } catch (const std::exception& e) {
    launch_.reset();
    emit started();
    finish("failed", QString::fromStdString(e.what()));
    return false;
  }
  running_ = true;
  emit started();
  if (!poll_) {
    poll_ = new QTimer(this);
    poll_->setInterval(100);
    connect(poll_, &QTimer::timeout, this, [this] {
      if (!launch_ || !launch_->launcher->finished()) return;
      poll_->stop();
      // Deliver the events still queued before reporting the end.
      QMetaObject::invokeMethod(
          this,
          [this] {
            const LaunchResult r = launch_->launcher->result();
            if (!r.result_folder.empty()) resultFolder_ = QString::fromStdString(r.result_folder);
            QString msg = QString::fromStdString(r.message);
            if (msg.isEmpty() && r.status != LaunchStatus::done) msg = lastError_;
            finish(to_string(r.status), msg);
          },
          Qt::QueuedConnection);
    });
  }
  poll_->start();
  return true;
}

void RunController::cancel() {
  if (launch_ && running_) {
    emit logLine("warning", "cancel requested");
    launch_->launcher->cancel();
  }
}

#else  // the local path without the launcher library

bool RunController::start(const driftscan::Job& job) {
  if (running_) return false;
  lastError_.clear();
  sawCancelled_ = false;
  stdoutBuffer_.clear();
  resultFolder_ = QString::fromStdString(job.output);
  if (job.execution.profile != "local") {
    emit started();
    finish("failed", QString("profile '%1' needs the launcher library, which this build lacks")
                         .arg(QString::fromStdString(job.execution.profile)));
    return false;
  }
  stagingDir_ = QDir::temp().filePath(QString("driftscan-app-%1").arg(QCoreApplication::applicationPid()));
  QDir().mkpath(stagingDir_);
  const QString jobFile = QDir(stagingDir_).filePath("job.json");
  try {
    driftscan::save_job(job, jobFile.toStdString());
  } catch (const std::exception& e) {
    emit started();
    finish("failed", QString::fromStdString(e.what()));
    return false;
  }
  QString engine = QDir(QCoreApplication::applicationDirPath()).filePath("driftscan-engine");
  if (!QFileInfo(engine).isExecutable()) engine = QStandardPaths::findExecutable("driftscan-engine");
  if (engine.isEmpty()) {
    emit started();
    finish("failed", "driftscan-engine not found next to the app or on PATH");
    return false;
  }
  QStringList args{"--progress", "json", "run", jobFile};
  QString program = engine;
  if (job.execution.ranks > 1) {
    program = QStringLiteral(DRIFTSCAN_MPIEXEC);
    args = QStringList{"-np",
                       QString::number(job.execution.ranks),
                       "--oversubscribe",
                       "--bind-to",
                       "none",
                       "--mca",
                       "mpi_yield_when_idle",
                       "1",
                       engine} +
           args;
  }
  process_ = new QProcess(this);
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert("OMP_NUM_THREADS", QString::number(job.execution.threads));
  process_->setProcessEnvironment(env);
  connect(process_, &QProcess::readyReadStandardOutput, this, [this] {
    stdoutBuffer_ += process_->readAllStandardOutput();
    int nl;
    while ((nl = stdoutBuffer_.indexOf('\n')) >= 0) {
      const QByteArray line = stdoutBuffer_.left(nl).trimmed();
      stdoutBuffer_.remove(0, nl + 1);
      if (line.isEmpty()) continue;
      auto j = nlohmann::json::parse(line.toStdString(), nullptr, false);
      if (j.is_discarded()) emit logLine("info", QString::fromUtf8(line));
      else handleEvent(j);
    }
  });
  connect(process_, &QProcess::readyReadStandardError, this, [this] {
    for (const QByteArray& l : process_->readAllStandardError().split('\n'))
      if (!l.trimmed().isEmpty()) emit logLine("warning", QString::fromUtf8(l));
  });
  connect(process_, &QProcess::finished, this, [this](int code, QProcess::ExitStatus st) {
    process_->deleteLater();
    process_ = nullptr;
    if (st == QProcess::NormalExit && code == 0) finish("done", "");
    else if (code == 4 || sawCancelled_) finish("cancelled", "cancelled by the user");
    else finish("failed", lastError_.isEmpty() ? QString("engine exited with code %1").arg(code) : lastError_);
  });
  connect(process_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError err) {
    if (err == QProcess::FailedToStart) {
      process_->deleteLater();
      process_ = nullptr;
      finish("failed", "could not start the engine: " + QString::number(int(err)));
    }
  });
  emit logLine("info", "$ " + program + " " + args.join(' '));
  running_ = true;
  emit started();
  process_->start(program, args);
  return true;
}

void RunController::cancel() {
  if (process_ && running_) {
    emit logLine("warning", "cancel requested");
    process_->terminate();  // SIGTERM: the engine stops cleanly with code 4
  }
}

#endif
