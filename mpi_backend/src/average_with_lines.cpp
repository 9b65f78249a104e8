// `average --lines`: re-averaging with a scan-distortion run's per-line model.
#include <omp.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "driftscan/error.hpp"
#include "driftscan/line_drift_table.hpp"
#include "driftscan/mpi/job_runner.hpp"
#include "driftscan/scan_distortion.hpp"
#include "driftscan/tiff_writer.hpp"

namespace driftscan::mpi {
namespace fs = std::filesystem;

int run_average_with_lines(const Job& job, RunContext& ctx) {
  nlohmann::json files;
  std::optional<Error> error;
  if (ctx.rank == 0) {
    try {
      auto frames = open_job_input(job);
      const ScanTiming timing(job.scan.timing(), frames->width(), frames->height());
      const std::string& table = job.averaging.lines;
      std::vector<Point> drift;
      std::vector<double> jitter;
      std::size_t k = 0;
      // Pass 1: the specimen region every frame covers (the table streamed, never held).
      SpecimenExtent extent;
      std::size_t rows = 0;
      {
        LineDriftReader reader(table, timing);
        while (reader.next_frame(k, drift, jitter)) {
          if (k >= frames->frame_count()) break;
          extent.merge(frame_extent(FrameScanMap::from_lines(timing, drift, jitter), timing));
          ++rows;
        }
      }
      if (rows != frames->frame_count())
        throw bad_input(table + ": " + std::to_string(rows) + " frames, but " + job.input + " has " +
                        std::to_string(frames->frame_count()));
      const SpecimenGrid grid = SpecimenGrid::covering(extent, timing);
      const std::size_t size = static_cast<std::size_t>(grid.width) * static_cast<std::size_t>(grid.height);
      std::vector<double> sum(size, 0.0), coverage(size, 0.0);
      omp_set_num_threads(std::max(1, job.execution.threads));
      ctx.progress.phase("average", rows);
      LineDriftReader reader(table, timing);
      while (reader.next_frame(k, drift, jitter) && k < rows) {
        ctx.cancel.throw_if_cancelled();
        accumulate_in_specimen_coordinates(frames->frame(k), FrameScanMap::from_lines(timing, drift, jitter), grid, sum,
                                           coverage);
        ctx.progress.advance(k + 1);
      }
      const SpecimenImage average = finish_specimen_average(grid, sum, coverage);
      std::error_code ec;
      fs::create_directories(job.output, ec);
      if (!fs::is_directory(job.output)) throw failure(job.output + ": cannot create the output folder");
      ctx.progress.phase("write", 2);
      TiffWriteOptions tw;
      tw.pixel_size = frames->pixel_size();
      tw.unit = frames->pixel_unit();
      const fs::path out(job.output);
      write_tiff((out / "average.tif").string(), average.image, tw);
      write_tiff((out / "coverage.tif").string(), average.coverage, tw);
      ctx.progress.advance(2);
      auto abs = [](const fs::path& p) { return fs::absolute(p).lexically_normal().string(); };
      files = {{"average", abs(out / "average.tif")},
               {"coverage", abs(out / "coverage.tif")},
               {"specimen_origin", {average.origin.x, average.origin.y}}};
    } catch (const Error& e) {
      error = e;
    } catch (const std::exception& e) {
      error = Error(ErrorKind::failure, e.what());
    }
  }
  agree_on_outcome(ctx, error ? &*error : nullptr);
  if (ctx.rank == 0) ctx.progress.result(files);
  return 0;
}

}  // namespace driftscan::mpi
