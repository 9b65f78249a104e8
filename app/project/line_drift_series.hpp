#pragma once
// lines.csv of a scan-distortion run (frame,line,t,dx,dy,jitter,weight[,sigma_dx,sigma_dy,sigma_jitter]), read
// for plotting: every line when the table is small, else an even subsample of
// at most maxPoints lines (a 100,000-frame table has tens of millions of
// rows; a plot shows a few thousand pixels). Each frame's first and last line
// times are kept whatever the subsample, so frame boundaries stay exact.
#include <QString>
#include <cstddef>
#include <vector>

struct LineDriftSeries {
  std::vector<double> t, dx, dy, jitter;  // one entry per kept line; t in seconds
  // Their standard errors (lines.csv's sigma_dx, sigma_dy, sigma_jitter), when
  // the table has them (else empty); the path's relative to the common offset.
  std::vector<double> sigmaDx, sigmaDy, sigmaJitter;
  std::vector<int> frame;                     // the frame of each kept line
  std::vector<double> frameFirst, frameLast;  // per frame: the time of its first and last line
  std::size_t totalLines = 0;                 // rows in the table
  std::size_t stride = 1;                     // every stride-th row kept

  bool empty() const { return t.empty(); }
  int frameCount() const { return static_cast<int>(frameFirst.size()); }
  // Throws driftscan::Error (bad_input) naming the file for a table that is
  // not a lines.csv or has a malformed row.
  static LineDriftSeries read(const QString& path, std::size_t maxPoints = 200000);
};
