#pragma once
// The frames a job reads, one rule for every executor and caller (the
// command line's ranks, the Python package): job.input's signal job.signal,
// decoded on demand through a cache of execution.frame_cache_mb, and with
// scan.rotation turned back into frame 0's orientation
// (core/derotated_source.hpp); rotations that do not fit the series are bad
// input naming the frame.
#include <cstddef>
#include <memory>

#include "driftscan/core/frame_source.hpp"
#include "driftscan/job/job.hpp"

namespace driftscan {

// `first_frames` > 0: only the series' first frames (a followed series as
// far as the follow took it, while the file may have grown since).
std::unique_ptr<FrameSource> open_job_series(const Job& job, std::size_t first_frames = 0);

// `frames` (a series held elsewhere: a numpy array's) under the same rule.
std::unique_ptr<FrameSource> oriented_series(const Job& job, std::unique_ptr<FrameSource> frames);

}  // namespace driftscan
