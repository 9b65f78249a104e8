#include "run/follow_monitor.hpp"

#include <sys/stat.h>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QTimer>
#include <sstream>
#include <string>

#include "driftscan/formats/tiff/tiff_series.hpp"
#include "driftscan/registration/drift_table.hpp"

FollowMonitor::FollowMonitor(QObject* parent) : QObject(parent), timer_(new QTimer(this)) {
  connect(timer_, &QTimer::timeout, this, &FollowMonitor::poll);
}

void FollowMonitor::start(const QString& folder, int intervalMs) {
  folder_ = folder;
  // The engine's coarse file clock may lag the wall clock by a tick.
  started_ = QDateTime::currentDateTime().addMSecs(-100);
  rows_.clear();
  driftBytes_ = -1;
  averageStamp_ = FileStamp{};
  lastLoad_ = QDateTime();
  average_.reset();
  averageLoads_ = 0;
  lastProblem_.clear();
  timer_->start(intervalMs);
}

void FollowMonitor::stop() {
  if (!timer_->isActive()) return;
  timer_->stop();
  lastLoad_ = QDateTime();  // the last look takes the newest average whatever the rate
  poll();
}

bool FollowMonitor::active() const { return timer_->isActive(); }

bool FollowMonitor::current(const QDateTime& modified) const { return modified >= started_; }

void FollowMonitor::poll() {
  pollDrift();
  pollAverage();
}

void FollowMonitor::pollDrift() {
  const QString path = QDir(folder_).filePath("drift.csv");
  const QFileInfo fi(path);
  if (!fi.exists() || !current(fi.lastModified())) return;
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return;  // being replaced: the next look
  const QByteArray bytes = f.readAll();
  // Rows are appended one write each; a row caught half-written waits for the next look.
  const qsizetype complete = bytes.lastIndexOf('\n') + 1;
  if (complete == driftBytes_) return;
  driftBytes_ = complete;
  std::istringstream in(std::string(bytes.constData(), std::size_t(complete)));
  std::vector<DriftRow> rows;
  try {
    if (bytes.count('\n') > 1) {
      const driftscan::DriftRecords table = driftscan::read_drift_records(in, path.toStdString());
      rows = drift_rows(table);
      // The running table's quality is 0 until the end (the final table, with
      // the sigma columns, has the real one): not shown as if it were measured.
      if (!table.has_sigma)
        for (DriftRow& r : rows) r.quality = -2;
    }
  } catch (const std::exception& e) {
    const QString message = QString::fromUtf8(e.what());
    if (message != lastProblem_) emit problem(message);
    lastProblem_ = message;
    return;
  }
  rows_ = std::move(rows);
  emit driftChanged();
}

void FollowMonitor::pollAverage() {
  const QString path = QDir(folder_).filePath("average.tif");
  const QFileInfo fi(path);
  if (!fi.exists() || !current(fi.lastModified())) return;
  // Replaced by rename: a new inode each time, even within one tick of the file clock.
  struct stat st {};
  if (::stat(QFile::encodeName(path).constData(), &st) != 0) return;
  const FileStamp stamp{st.st_ino, static_cast<long long>(st.st_mtim.tv_sec),
                        static_cast<long long>(st.st_mtim.tv_nsec), static_cast<long long>(st.st_size)};
  if (stamp == averageStamp_) return;
  const QDateTime now = QDateTime::currentDateTime();
  if (lastLoad_.isValid() && lastLoad_.msecsTo(now) < minReloadMs()) return;
  try {
    // Replaced by rename, never rewritten in place: what is opened is whole.
    const auto tiff = driftscan::TiffSeries::open(path.toStdString());
    average_ = std::make_shared<const driftscan::Frame>(tiff->frame(0));
    pixelSize_ = tiff->pixel_size();
    pixelUnit_ = QString::fromStdString(tiff->pixel_unit());
  } catch (const std::exception& e) {
    const QString message = QString::fromUtf8(e.what());
    if (message != lastProblem_) emit problem(message);
    lastProblem_ = message;
    return;
  }
  averageStamp_ = stamp;
  lastLoad_ = now;
  ++averageLoads_;
  emit averageChanged();
}
