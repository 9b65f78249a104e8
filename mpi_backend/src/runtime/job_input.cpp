#include "driftscan/mpi/runtime/job_input.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "driftscan/job/job_series.hpp"

namespace driftscan::mpi {

namespace fs = std::filesystem;

namespace {

bool ends_with_tiff(const std::string& p) {
  std::string ext = fs::path(p).extension().string();
  for (auto& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext == ".tif" || ext == ".tiff";
}

}  // namespace

std::string host_name() {
  char buf[256] = {0};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

std::unique_ptr<FrameSource> open_job_input(const Job& job, std::size_t first_frames) {
  return open_job_series(job, first_frames);
}

std::string synth_series_path(const std::string& output) {
  return ends_with_tiff(output) ? output : (fs::path(output) / "series.tif").string();
}

}  // namespace driftscan::mpi
