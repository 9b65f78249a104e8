#pragma once
// What a file records of its scan (clock, rotations) is read before any
// executor runs, to decide the job (scan_distortion_decision.hpp,
// recorded_rotation.hpp) — but only where it is cheap: formats that keep it
// in the index read on opening (DM, EMD: format_reader.hpp's
// scan_clock_in_index). Other series (a TIFF index can take a second to
// read) are not opened an extra time.
#include <memory>

#include "driftscan/core/frame_source.hpp"
#include "driftscan/job/job.hpp"

namespace driftscan {

// The job's input opened for its recorded scan, or nullptr when its format
// does not record it in its index or it cannot be opened (the caller's own
// checks then name what is wrong with the input).
std::unique_ptr<FrameSource> open_indexed_series(const Job& job);

}  // namespace driftscan
