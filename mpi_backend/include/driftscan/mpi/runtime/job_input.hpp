#pragma once
// What a job reads on each rank: its input series (each rank opens it and
// reads only the frames it needs), the caches it may hold, where synth writes,
// and the host it runs on.
#include <cstddef>
#include <memory>
#include <string>

#include "driftscan/core/frame_source.hpp"
#include "driftscan/job/job.hpp"

namespace driftscan::mpi {

// The job's input series, decoded on demand through a cache of
// execution.frame_cache_mb (each rank opens it and reads only what it needs).
// Any supported format (series_opener.hpp), the signal job.signal. With
// scan.rotation the frames come turned back into frame 0's orientation
// (core/derotated_source.hpp); rotations that do not fit the series are
// bad input naming the frame. The engine's rule (job/job_series.hpp).
// `first_frames` > 0: only the first frames (what a follow took).
std::unique_ptr<FrameSource> open_job_input(const Job& job, std::size_t first_frames = 0);

// This host's name, for the lines that say where something happened.
std::string host_name();

// Where `synth` writes the series for a job's output: the path itself when it
// ends in .tif/.tiff, else <output>/series.tif.
std::string synth_series_path(const std::string& output);

}  // namespace driftscan::mpi
