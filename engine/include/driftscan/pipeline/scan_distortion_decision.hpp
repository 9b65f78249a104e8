#pragma once
// scan.auto_distortion: a register run over a series whose file records its
// scan clock corrects the scan distortion unless told not to (on the
// benchmark the correction is never worse than rigid). Decided once, from
// the file's index alone, before any executor runs, so that every phase and
// rank — and an in-process caller (the Python package) — sees the same job.
#include <string>

#include "driftscan/job/job.hpp"

namespace driftscan {

// `job` with scan.correct_distortion set when the rule above says so.
// `said` gets the line that tells the user why (empty: nothing changed); a
// correction the file's timing makes impossible keeps the rigid result, and
// `said` then is a warning. An unreadable input is left to the caller's checks.
Job with_scan_distortion_decided(const Job& job, std::string& said);

}  // namespace driftscan
