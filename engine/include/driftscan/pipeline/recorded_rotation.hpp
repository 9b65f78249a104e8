#pragma once
// Scan rotations read from the file: a register or average run whose job
// gives no scan.rotation takes each frame's rotation from the file's
// metadata where it records one (Velox's per-frame Scan.ScanRotation,
// DigiScan's Rotation tag), relative to frame 0's, as if the user had given
// it. Decided once, before any executor runs, like scan.auto_distortion, so
// that every phase and rank, the report's job block (hence the app) and an
// in-process caller (the Python package) see the same job.
#include <string>
#include <vector>

#include "driftscan/core/scan_timing.hpp"
#include "driftscan/job/job.hpp"

namespace driftscan {

// The rotations of `recorded` relative to its frame 0, as scan.rotation
// takes them: each turned into [0, 360), a value within 0.01° of a multiple
// of 90° set to it (a file writes radians to a few digits), and a list that
// repeats itself shortened to its period (0,90,0,90 -> 0,90). Empty when
// every frame is scanned as frame 0 is. Bad input naming `path` and the frame:
// a frame the metadata says nothing of while others' it does.
std::vector<double> relative_scan_rotations(const RecordedRotations& recorded, const std::string& path);

// `job` with scan.rotation taken from the file (rule above) when the job
// gives none, or the given values relative to the first when it does; `said` gets the line that tells the user (empty:
// nothing changed). Only formats that record the scan in their index are opened for it (DM, EMD: format_reader.hpp's
// scan_clock_in_index); an unreadable input is left to the caller's checks. Any angle is taken (frames off the pixel
// grid are turned back by DerotatedSource); a frame with no recorded angle among frames with one is bad input naming
// the file and the frame (relative_scan_rotations).
Job with_recorded_rotations(const Job& job, std::string& said);

}  // namespace driftscan
