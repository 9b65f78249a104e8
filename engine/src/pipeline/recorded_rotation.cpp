#include "driftscan/pipeline/recorded_rotation.hpp"

#include <cmath>
#include <cstddef>
#include <memory>

#include "driftscan/core/error.hpp"
#include "driftscan/core/scan_rotation.hpp"
#include "driftscan/pipeline/indexed_series.hpp"

namespace driftscan {
namespace {

// The shortest prefix of `values` that repeats into all of them (a partial
// last cycle too: frame k is at value k mod p).
std::vector<double> shortest_period(const std::vector<double>& values) {
  const std::size_t n = values.size();
  for (std::size_t p = 1; p < n; ++p) {
    bool repeats = true;
    for (std::size_t k = p; k < n && repeats; ++k) repeats = values[k] == values[k % p];
    if (repeats) return {values.begin(), values.begin() + static_cast<std::ptrdiff_t>(p)};
  }
  return values;
}

}  // namespace

std::vector<double> relative_scan_rotations(const RecordedRotations& recorded, const std::string& path) {
  if (!recorded.known()) return {};
  const std::vector<double>& deg = recorded.deg;
  std::size_t first_known = 0;
  while (first_known < deg.size() && !std::isfinite(deg[first_known])) ++first_known;
  for (std::size_t k = 0; k < deg.size(); ++k)
    if (!std::isfinite(deg[k]))
      throw bad_input(path + ": frame " + std::to_string(k) + ": its scan rotation is unknown (the " + recorded.source +
                      " has none for it) while frame " + std::to_string(first_known) +
                      "'s is known; give every frame's with scan.rotation (--scan-rotation)");
  std::vector<double> relative;
  relative.reserve(deg.size());
  for (double d : deg) relative.push_back(relative_scan_rotation(d, deg.front()));
  bool all_as_frame0 = true;
  for (double r : relative) all_as_frame0 = all_as_frame0 && r == 0.0;
  if (all_as_frame0) return {};
  return shortest_period(relative);
}

Job with_recorded_rotations(const Job& job, std::string& said) {
  said.clear();
  if (job.command != "register" && job.command != "average") return job;
  if (!job.scan.rotation.empty()) {  // given: taken relative to frame 0's, as the file's are
    Job out = job;
    out.scan.rotation = rotations_from_frame0(job.scan.rotation);
    if (out.scan.rotation != job.scan.rotation)
      said = "scan rotations relative to frame 0's: " + scan_rotation_text(out.scan.rotation) + " deg";
    return out;
  }
  if (job.follow.enabled) return job;
  const std::unique_ptr<FrameSource> frames = open_indexed_series(job);
  if (!frames) return job;
  const RecordedRotations recorded = frames->recorded_rotations();
  const std::vector<double> relative = relative_scan_rotations(recorded, job.input);
  if (relative.empty()) return job;
  Job out = job;
  out.scan.rotation = relative;
  said = "scan rotations from the file's " + recorded.source + ": " + scan_rotation_text(relative) +
         " deg (frame k at value k mod " + std::to_string(relative.size()) + ")";
  return out;
}

}  // namespace driftscan
