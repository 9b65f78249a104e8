// `average --lines`: re-averaging with a scan-distortion run's per-line model.
#include <omp.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "driftscan/core/derotated_source.hpp"
#include "driftscan/core/error.hpp"
#include "driftscan/core/omp_threads.hpp"
#include "driftscan/formats/tiff/tiff_writer.hpp"
#include "driftscan/mpi/jobs/job_runner.hpp"
#include "driftscan/mpi/runtime/collectives.hpp"
#include "driftscan/mpi/runtime/command_report.hpp"
#include "driftscan/mpi/runtime/job_input.hpp"
#include "driftscan/scan_distortion/line_drift_table.hpp"
#include "driftscan/scan_distortion/line_field.hpp"
#include "driftscan/scan_distortion/scan_distortion.hpp"

namespace driftscan::mpi {
namespace fs = std::filesystem;

namespace {
// Whether the report beside a lines.csv says its run fitted line fields (a
// report that is missing or unreadable says nothing).
bool ran_with_line_field(const fs::path& report) {
  std::ifstream in(report);
  if (!in) return false;
  const nlohmann::json r = nlohmann::json::parse(in, nullptr, false);
  if (!r.is_object() || !r.contains("scan_distortion") || !r["scan_distortion"].is_object()) return false;
  const nlohmann::json& d = r["scan_distortion"];
  return d.contains("line_field_knots") && d["line_field_knots"].is_number() && d["line_field_knots"].get<int>() > 0;
}
}  // namespace

int run_average_with_lines(const Job& job, RunContext& ctx) {
  nlohmann::json files;
  std::optional<Error> error;
  std::optional<OutputSet> set;
  open_output_set(job, ctx, {job.input, job.averaging.lines}, set);
  if (ctx.rank == 0) {
    try {
      auto frames = open_job_input(job);
      // The timing the register run used: the job's, completed from the file.
      std::string note;
      const ScanTiming timing(job.scan.timing(frames->recorded_scan(), frames->width(), frames->height(), &note),
                              frames->width(), frames->height());
      if (!note.empty()) ctx.progress.log(LogLevel::info, note);
      const std::string& table = job.averaging.lines;
      // The frames' line fields, where the register run estimated them
      // (line_field.csv beside lines.csv): a few numbers a frame.
      const fs::path field_table = fs::path(table).parent_path() / "line_field.csv";
      LineFieldTable fields;
      if (fs::exists(field_table)) {
        fields = read_line_field_csv(field_table.string(), frames->frame_count(), timing.samples_per_line());
        ctx.progress.log(LogLevel::info, "line fields from " + field_table.string());
      } else if (ran_with_line_field(fs::path(table).parent_path() / "report.json")) {
        ctx.progress.log(LogLevel::warning, "the run that wrote " + table + " fitted line fields, but " +
                                                field_table.string() + " is missing: averaging without them");
      }
      // A frame's field at every sample of a line (empty: none).
      auto field_of = [&](std::size_t frame) {
        return frame < fields.fields.size() ? fields.basis.tabulate(fields.fields[frame]) : std::vector<double>{};
      };
      std::vector<Point> drift;
      std::vector<double> jitter;
      std::size_t k = 0;
      // Pass 1: the specimen region every frame covers (the table streamed, never held).
      // Frames none of whose bands registered were left out of the run's
      // average (rigid failures, --exclude, frames not followed): here too.
      SpecimenExtent extent;
      std::size_t rows = 0, left_out = 0;
      bool registered = false;
      // --exclude: frames left out too (an odd/even split checks sigma.tif).
      std::vector<char> listed(frames->frame_count(), 0);
      for (const std::size_t e : job.averaging.exclude_frames)
        if (e < listed.size()) listed[e] = 1;
      auto take = [&](std::size_t frame) { return registered && !(frame < listed.size() && listed[frame]); };
      {
        LineDriftReader reader(table, timing);
        while (reader.next_frame(k, drift, jitter, &registered)) {
          if (k >= frames->frame_count()) break;
          if (take(k))
            extent.merge(frame_extent(FrameScanMap::from_lines(timing, drift, jitter, field_of(k), k), timing));
          else if (!registered) ++left_out;
          ++rows;
        }
      }
      if (rows != frames->frame_count())
        throw bad_input(table + ": " + std::to_string(rows) + " frames, but " + job.input + " has " +
                        std::to_string(frames->frame_count()));
      if (extent.empty()) throw bad_input(table + ": no frame left to average (every frame excluded or unregistered)");
      const SpecimenGrid grid = SpecimenGrid::covering(extent, timing);
      const std::size_t size = static_cast<std::size_t>(grid.width) * static_cast<std::size_t>(grid.height);
      std::vector<double> sum(size, 0.0), coverage(size, 0.0), squares(size, 0.0);
      const OmpThreadCount guard(job.execution.threads);
      ctx.progress.phase("average", rows);
      LineDriftReader reader(table, timing);
      if (left_out > 0)
        ctx.progress.log(LogLevel::info, std::to_string(left_out) + " frame(s) of " + table +
                                             " have no registered band (left out of that run's average): left out");
      while (reader.next_frame(k, drift, jitter, &registered) && k < rows) {
        ctx.cancel.throw_if_cancelled();
        if (take(k)) {
          const FrameContribution c = sample_in_specimen_coordinates(
              recorded_frames(*frames).frame(k), FrameScanMap::from_lines(timing, drift, jitter, field_of(k), k), grid);
          add_contribution(c, grid, sum, coverage);
          add_contribution_squares(c, grid, squares);
        }
        ctx.progress.advance(k + 1);
      }
      const SpecimenImage average = finish_specimen_average(grid, sum, coverage);
      const Frame sigma = specimen_sigma(grid, sum, squares, coverage);
      ctx.progress.phase("write", 4);
      TiffWriteOptions tw;
      tw.pixel_size = frames->pixel_size();
      tw.unit = frames->pixel_unit();
      set->write("average.tif", [&](const std::string& path) { write_tiff(path, average.image, tw); });
      set->write("coverage.tif", [&](const std::string& path) { write_tiff(path, average.coverage, tw); });
      set->write("sigma.tif", [&](const std::string& path) { write_tiff(path, sigma, tw); });
      auto abs = [&](const char* name) { return fs::absolute(set->final_path(name)).lexically_normal().string(); };
      files = {{"average", abs("average.tif")},
               {"coverage", abs("coverage.tif")},
               {"sigma", abs("sigma.tif")},
               {"report", abs(kOutputRecord)},
               {"specimen_origin", {average.origin.x, average.origin.y}}};
      set->write(kOutputRecord, [&](const std::string& path) { write_command_report(path, job, *frames, files, {}); });
      ctx.progress.advance(4);
    } catch (const Error& e) {
      error = set->explain(e);
    } catch (const std::exception& e) {
      error = set->explain(Error(ErrorKind::failure, e.what()));
    }
  }
  agree_on_outcome(ctx, error ? &*error : nullptr);
  commit_outputs(ctx, set);
  if (ctx.rank == 0) ctx.progress.result(files);
  return 0;
}

}  // namespace driftscan::mpi
