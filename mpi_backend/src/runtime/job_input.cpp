#include "driftscan/mpi/runtime/job_input.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "driftscan/core/derotated_source.hpp"
#include "driftscan/core/scan_rotation.hpp"
#include "driftscan/formats/series_opener.hpp"

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

std::unique_ptr<FrameSource> open_job_input(const Job& job) {
  auto frames =
      open_series(job.input, job.signal, static_cast<std::size_t>(job.execution.frame_cache_mb * 1024.0 * 1024.0));
  if (job.scan.rotation.empty()) return frames;
  const std::string where = job.input + ": ";
  if (!has_scan_rotation(job.scan.rotation)) {  // every frame at 0: served as recorded, once checked
    check_scan_rotations(job.scan.rotation, frames->frame_count(), frames->width(), frames->height(), where);
    return frames;
  }
  return std::make_unique<DerotatedSource>(std::shared_ptr<const FrameSource>(std::move(frames)), job.scan.rotation,
                                           where);
}

std::string synth_series_path(const std::string& output) {
  return ends_with_tiff(output) ? output : (fs::path(output) / "series.tif").string();
}

}  // namespace driftscan::mpi
