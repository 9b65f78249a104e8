#include "driftscan/mpi/runtime/command_report.hpp"

#include "driftscan/core/atomic_file.hpp"

namespace driftscan::mpi {

// report.json of a command other than register: what was run on what, and
// the files of the set it completes.
void write_command_report(const std::string& path, const Job& job, const FrameSource& frames,
                          const nlohmann::json& files, const std::vector<std::string>& warnings) {
  const nlohmann::json report{{"driftscan_report", 1},
                              {"command", job.command},
                              {"version", DRIFTSCAN_VERSION},
                              {"input",
                               {{"description", frames.describe()},
                                {"frames", frames.frame_count()},
                                {"width", frames.width()},
                                {"height", frames.height()},
                                {"pixel_size", frames.pixel_size()},
                                {"unit", frames.pixel_unit()}}},
                              {"job", to_json(job)},
                              {"files", files},
                              {"warnings", warnings}};
  AtomicFile file(path, "report");
  file.stream() << report.dump(2) << '\n';
  file.commit();
}

}  // namespace driftscan::mpi
