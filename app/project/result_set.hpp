#pragma once
// What a finished run left in its results folder, read back for the views:
// drift.csv (frame,dx,dy[,angle_deg,...,quality,used]; read with the engine's
// read_drift_records), report.json (with the scan trace: one record per
// operator application), average.tif, coverage.tif, and the spectrum volume
// when present. Only a folder with report.json is a complete run's
// (docs/protocol.md, "Results folders").
#include <QPointF>
#include <QString>
#include <QStringList>
#include <vector>

#include <nlohmann/json.hpp>

#include "driftscan/registration/drift_table.hpp"
#include "driftscan/scan_distortion/line_field.hpp"
#include "project/line_drift_series.hpp"

struct DriftRow {
  int frame = 0;
  double dx = 0, dy = 0;
  double angle_deg = 0;
  double quality = -2;  // < -1: not given
  bool used = true;
  double sigma_dx = -1, sigma_dy = -1;  // standard errors (px); < 0: not given, inf: no information
};

struct TraceRecord {
  int rank = 0, thread = 0;
  long long first = 0, last = 0;
  QString phase;
  double start_s = 0, end_s = 0;
  bool stolen = false;
};

struct WorkerRow {
  int rank = 0, thread = 0;
  double busy_s = 0, idle_s = 0;
  int applications = 0, stolen = 0;
};

struct ScanTraceData {
  int ranks = 0, threads = 0;
  double makespan_s = 0;
  double imbalance = 1;
  std::vector<WorkerRow> workers;  // one per rank x thread
  std::vector<TraceRecord> records;
  bool empty() const { return workers.empty() && records.empty(); }
};

// bugprone-exception-escape: the implicit move operations only move Qt
// containers and nlohmann::json, all noexcept; the check cannot see through
// json's invariant assertions.
// NOLINTNEXTLINE(bugprone-exception-escape)
struct ResultSet {
  QString folder;
  QString averagePath, coveragePath, driftPath, reportPath, spectrumPath, input;
  QString sigmaPath;  // sigma.tif: the average's standard error per pixel (empty: none)
  std::vector<DriftRow> drift;
  ScanTraceData trace;
  nlohmann::json report;
  QStringList warnings;  // files missing or unreadable, one line each
  // The series' pixel size and unit from report.json (0 and empty: not recorded or none).
  double pixelSize = 0;
  QString pixelUnit;
  // A scan-distortion run: average.tif is in specimen coordinates (its pixel
  // (0, 0) shows specimen point specimenOrigin), the rigid average beside it,
  // and the per-line drift.
  QString averageRigidPath, linesPath;
  LineDriftSeries lines;
  // With a line field (register --line-field-knots): line_field.csv.
  QString lineFieldPath;
  driftscan::LineFieldTable lineField;
  QPointF specimenOrigin;
  bool specimenCoordinates = false;
  // Each frame's scan rotation as the run took it (report.json's job
  // scan.rotation: frame k at value k mod n; empty: one direction).
  std::vector<double> scanRotation;

  // Reads what is there; missing parts are listed in warnings (never throws
  // for a missing file; throws driftscan::Error for a corrupt drift.csv).
  static ResultSet load(const QString& folder);
  static bool looksLikeResults(const QString& folder);
};

ScanTraceData read_scan_trace(const nlohmann::json& report);
// The views' rows from the engine's reading of drift.csv.
std::vector<DriftRow> drift_rows(const driftscan::DriftRecords& table);
