#pragma once
// report.json of the commands other than register (average, spectrum).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "driftscan/core/frame_source.hpp"
#include "driftscan/job/job.hpp"

namespace driftscan::mpi {

// report.json of a command other than register (average, spectrum): the
// command, the input, the job and the files of the set it completes.
void write_command_report(const std::string& path, const Job& job, const FrameSource& frames,
                          const nlohmann::json& files, const std::vector<std::string>& warnings);

}  // namespace driftscan::mpi
