#pragma once
// Watches the results folder of a running `register --follow` (the GUI reads
// only what the engine writes there): drift.csv, which grows by one row per
// frame (read with the engine's read_drift_records up to its last complete
// line), and average.tif, which the engine replaces atomically every
// follow.average_every_frames frames / average_every_s seconds (reloaded at
// most every minReloadMs). Files older than start() are an earlier run's and
// are ignored.
#include <QDateTime>
#include <QObject>
#include <QString>
#include <memory>
#include <vector>

#include "driftscan/core/frame.hpp"
#include "project/result_set.hpp"

class QTimer;

class FollowMonitor : public QObject {
  Q_OBJECT
 public:
  explicit FollowMonitor(QObject* parent = nullptr);
  // Starts looking at `folder` every intervalMs (4 per second by default).
  void start(const QString& folder, int intervalMs = 250);
  // One last look, then no more.
  void stop();
  bool active() const;

  const std::vector<DriftRow>& drift() const { return rows_; }
  std::shared_ptr<const driftscan::Frame> average() const { return average_; }
  // The calibration average.tif carries (the series'; 0 and empty: none).
  double pixelSize() const { return pixelSize_; }
  QString pixelUnit() const { return pixelUnit_; }
  int averageLoads() const { return averageLoads_; }
  int minReloadMs() const { return 250; }

 signals:
  void driftChanged();
  void averageChanged();
  // A file that could not be read (said once per file and reason).
  void problem(const QString& message);

 private:
  void poll();
  void pollDrift();
  void pollAverage();
  bool current(const QDateTime& modified) const;

  QTimer* timer_;
  QString folder_;
  QDateTime started_;
  std::vector<DriftRow> rows_;
  qint64 driftBytes_ = -1;  // the complete lines read last time
  struct FileStamp {
    unsigned long long inode = 0;
    long long seconds = 0, nanoseconds = 0, bytes = -1;
    bool operator==(const FileStamp& o) const {
      return inode == o.inode && seconds == o.seconds && nanoseconds == o.nanoseconds && bytes == o.bytes;
    }
  };
  FileStamp averageStamp_;
  QDateTime lastLoad_;
  std::shared_ptr<const driftscan::Frame> average_;
  double pixelSize_ = 0;
  QString pixelUnit_;
  int averageLoads_ = 0;
  QString lastProblem_;
};
