#include "driftscan/mpi/jobs/preflight.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include "driftscan/core/error.hpp"
#include "driftscan/mpi/runtime/collectives.hpp"
#include "driftscan/mpi/runtime/command_report.hpp"
#include "driftscan/mpi/runtime/job_input.hpp"

namespace driftscan::mpi {
namespace fs = std::filesystem;

namespace {

std::string gigabytes(double bytes) {
  char s[32];
  std::snprintf(s, sizeof s, "%.3g GB", bytes / 1e9);
  return s;
}

void check_threads(const Job& job) {
  const unsigned cores = std::thread::hardware_concurrency();
  if (cores == 0) return;  // unknown: nothing to compare with
  const long limit = static_cast<long>(kThreadsPerCore) * cores;
  if (job.execution.threads > limit)
    throw bad_input("execution.threads: " + std::to_string(job.execution.threads) + " threads per rank on " +
                    host_name() + ", which has " + std::to_string(cores) + " cores; at most " + std::to_string(limit) +
                    " (" + std::to_string(kThreadsPerCore) + " per core)");
}

// The folder the job writes to: created if missing, and a file written and
// removed there, so a read-only or missing mount is found now, not after the scan.
// Sets `created` when the folder was made here (removed again if the job is refused).
void check_writable(const std::string& folder, int rank, std::string& created) {
  std::error_code ec;
  if (!fs::exists(folder, ec)) created = folder;
  fs::create_directories(folder, ec);
  if (!fs::is_directory(folder))
    throw bad_input(folder + ": cannot create the results folder (" +
                    (ec ? ec.message() : std::string("a file of that name exists")) + ")");
  const fs::path probe =
      fs::path(folder) / (".driftscan-write-test-" + std::to_string(rank) + "-" + std::to_string(::getpid()));
  {
    std::ofstream out(probe);
    out << "x";
    out.flush();
    if (!out) {
      const std::string why = std::strerror(errno);
      fs::remove(probe, ec);
      throw bad_input(folder + ": cannot write in the results folder (" + why + ")");
    }
  }
  fs::remove(probe, ec);
}

void check_space(const std::string& folder, double need, const std::string& what) {
  std::error_code ec;
  const fs::space_info s = fs::space(folder, ec);
  if (ec) return;  // no figure to check against
  if (need > static_cast<double>(s.available))
    throw bad_input(what + " need about " + gigabytes(need) + "; " + folder + " has " +
                    gigabytes(static_cast<double>(s.available)) + " free");
}

double physical_memory() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0.0;
}

// Everything but the collective part, for this rank.
void check_locally(const Job& job, RunContext& ctx, std::string& created) {
  check_threads(job);
  if (job.command == "synth") {
    std::string folder = fs::path(synth_series_path(job.output)).parent_path().string();
    if (folder.empty()) folder = ".";
    const double frame = 4.0 * job.synth.width * job.synth.height;  // float32 at most
    const double ram = physical_memory();
    // The generator holds a specimen several times a frame and a few frames.
    if (ram > 0 && 16.0 * frame > ram)
      throw bad_input("synth.width x synth.height: frames of " + std::to_string(job.synth.width) + "x" +
                      std::to_string(job.synth.height) + " need about " + gigabytes(16.0 * frame) + " of memory; " +
                      host_name() + " has " + gigabytes(ram));
    if (ctx.rank == 0) {
      check_writable(folder, ctx.rank, created);
      check_space(folder, frame * static_cast<double>(job.synth.frames),
                  "synth.frames: " + std::to_string(job.synth.frames) + " frames of " +
                      std::to_string(job.synth.width) + "x" + std::to_string(job.synth.height));
    }
    return;
  }
  if (ctx.rank != 0) {
    check_writable(job.output, ctx.rank, created);
    return;
  }
  // A followed series is still being written: it may not be a readable
  // series yet (no page, a page half written); the follow itself checks it.
  if (job.follow.enabled) {
    check_writable(job.output, ctx.rank, created);
    return;
  }
  // Rank 0 looks at the input once: the settings that refer to its frames,
  // and the outputs' size.
  const auto frames = open_job_input(job);
  for (std::size_t k : job.averaging.exclude_frames)
    if (k >= frames->frame_count())
      throw bad_input("averaging.exclude_frames: frame " + std::to_string(k) + " is not in " + job.input + " (" +
                      std::to_string(frames->frame_count()) + " frames, 0 to " +
                      std::to_string(frames->frame_count() - 1) + ")");
  check_writable(job.output, ctx.rank, created);
  const double n = static_cast<double>(frames->frame_count());
  const double image = 4.0 * (frames->width() + 64.0) * (frames->height() + 64.0);
  // average + coverage (twice for a scan-distortion run), drift.csv, report.json, checkpoints.
  const double need = (job.scan.correct_distortion ? 4.0 : 2.0) * image + 600.0 * n +
                      (job.scan.correct_distortion ? 120.0 * n * frames->height() : 0.0);
  check_space(job.output, need,
              "the outputs of " + job.command + " (" + std::to_string(frames->frame_count()) + " frames of " +
                  std::to_string(frames->width()) + "x" + std::to_string(frames->height()) + ")");
}

}  // namespace

void preflight(const Job& job, RunContext& ctx) {
  std::optional<Error> error;
  std::string created;
  try {
    check_locally(job, ctx, created);
  } catch (const Error& e) {
    error = e;
  } catch (const std::exception& e) {
    error = Error(ErrorKind::failure, e.what());
  }
  try {
    agree_on_outcome(ctx, error ? &*error : nullptr);
  } catch (...) {
    // A refused job leaves no folder behind that it made (only if still empty).
    std::error_code ec;
    if (!created.empty()) fs::remove(created, ec);
    throw;
  }
}

}  // namespace driftscan::mpi
