#pragma once
// Reading a drift table back: the drift.csv of an earlier `register` run, or
// a synthetic series' *_truth.csv. Columns are found by name in the header:
// `frame,dx,dy` are required; `a,b,c,d,tx,ty` (affine) or `angle_deg`
// (rigid, about the frame centre) are used when present; a non-empty `flags`
// column marks frames the registration could not use.
#include <cstddef>
#include <iosfwd>
#include <string>
#include <vector>

#include "driftscan/core/transform.hpp"

namespace driftscan {

struct DriftTable {
  std::vector<Transform> to_frame0;  // T_{0,k}, k = 0..N-1
  std::vector<std::size_t> flagged;  // frames with registration flags
};

// `centre` is the frame centre ((w-1)/2, (h-1)/2) the dx,dy were measured at.
// Throws bad_input naming the file and line for a missing/garbled table, a
// missing frame or frame numbers out of order.
DriftTable read_drift_table(const std::string& path, Point centre);

// One frame of a drift table as written (what a viewer shows); a column the
// table lacks leaves its default.
struct DriftRecord {
  double dx = 0, dy = 0;  // displacement of the frame centre, pixels
  double angle_deg = 0;   // `angle_deg` (rigid and affine tables)
  Transform affine;       // `a,b,c,d,tx,ty` (affine tables)
  double quality = 0;     // `quality` (a register run's): NCC of the frame with the average
  bool used = true;       // `used` (a register run's): the frame went into the average
  bool flagged = false;   // a non-empty `flags`
  // `sigma_dx,sigma_dy,cov_dxdy` (a register run's since the uncertainty
  // estimate; older tables lack them): standard errors, px; inf = no information.
  double sigma_dx = 0, sigma_dy = 0, cov_dxdy = 0;
  double noise_var = 0;         // `noise_var`: the frame's pixel noise variance
  bool sigma_singular = false;  // a non-empty `sigma_flag`
};

struct DriftRecords {
  bool has_angle = false, has_affine = false, has_quality = false, has_used = false, has_sigma = false,
       has_noise_var = false;
  std::vector<DriftRecord> frames;  // frame k at index k
};

// The table behind read_drift_table, column by column; the same checks and
// errors, and the optional columns present must be numbers too.
DriftRecords read_drift_records(const std::string& path);
// The same from a stream; `path` names it in errors (a table still being
// written is read from the text up to its last complete line).
DriftRecords read_drift_records(std::istream& in, const std::string& path);

// The comma-separated fields of one CSV row (a trailing comma: an empty last field).
std::vector<std::string> split_csv_fields(const std::string& line);

}  // namespace driftscan
