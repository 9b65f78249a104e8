#pragma once
// scripts/scan-sweep's CSV read back for the Load balance tab: one row per
// configuration (shape, K, global algorithm, local strategy), the measured
// figures beside the cost model's for the same draws (docs/benchmarks.md,
// "The scan from 16 to 1,024 workers").
#include <QString>
#include <vector>

struct ScanSweepRow {
  int workers = 0, ranks = 0, threads = 0, elementsPerWorker = 0;
  double meanMs = 0;
  QString algorithm, strategy;
  double makespan = 0, modelMakespan = 0;
  double speedup = 0, modelSpeedup = 0;
  double efficiency = 0, modelEfficiency = 0;
  double load = 0;  // the load average when its launch started
};

struct ScanSweepTable {
  QString path;
  std::vector<ScanSweepRow> rows;
  // The K values present, ascending.
  std::vector<int> elementsPerWorker() const;
};

// Throws std::runtime_error naming the file and line of what is wrong (a
// missing column, a field that is not a number, no rows).
ScanSweepTable read_scan_sweep(const QString& path);
