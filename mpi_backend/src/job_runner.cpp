#include "driftscan/mpi/job_runner.hpp"

#include <omp.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "driftscan/error.hpp"
#include "driftscan/synthetic_series.hpp"

namespace driftscan::mpi {
namespace fs = std::filesystem;

namespace {

std::string host_name() {
  char buf[256] = {0};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

bool ends_with_tiff(const std::string& p) {
  std::string ext = fs::path(p).extension().string();
  for (auto& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext == ".tif" || ext == ".tiff";
}

void make_output_folder(const std::string& folder) {
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec || !fs::is_directory(folder))
    throw failure(folder + ": cannot create the results folder (" + ec.message() + ")");
}

// Rank 0 does the work, the others wait (cancellably); an exception on rank 0
// still releases them so nobody waits for a rank that has stopped.
template <class F>
void on_root(RunContext& ctx, F&& work) {
  if (ctx.rank == 0) {
    try {
      work();
    } catch (...) {
      if (ctx.size > 1) {
        try {
          cancellable_barrier(ctx);
        } catch (...) {
        }
      }
      throw;
    }
  }
  if (ctx.size > 1) cancellable_barrier(ctx);
}

int run_synth(const Job& job, RunContext& ctx) {
  std::string series = synth_series_path(job.output);
  nlohmann::json files;
  on_root(ctx, [&] {
    std::string folder = fs::path(series).parent_path().string();
    if (!folder.empty()) make_output_folder(folder);
    SynthOutputs out = write_synthetic_series(job.synth, series, &ctx.progress, &ctx.cancel);
    auto abs = [](const std::string& p) { return fs::absolute(p).lexically_normal().string(); };
    files = {{"series", abs(out.series)}, {"truth", abs(out.truth)}, {"reference", abs(out.reference)}};
  });
  if (ctx.rank == 0) ctx.progress.result(files);
  return 0;
}

[[noreturn]] void unavailable(const std::string& command, const std::string& what) {
  throw failure("'" + command + "' is not available in this build of driftscan-engine: " + what);
}

}  // namespace

std::string synth_series_path(const std::string& output) {
  return ends_with_tiff(output) ? output : (fs::path(output) / "series.tif").string();
}

bool job_command_available(const std::string& command) { return command == "synth"; }

void cancellable_barrier(RunContext& ctx) {
  MPI_Request req;
  MPI_Ibarrier(ctx.comm, &req);
  bool cancelled_seen = false;
  auto cancel_deadline = std::chrono::steady_clock::time_point::max();
  for (;;) {
    int flag = 0;
    MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
    if (flag) break;
    if (!cancelled_seen && ctx.cancel.cancelled()) {
      // Give the rank(s) still working a moment to reach the barrier too.
      cancelled_seen = true;
      cancel_deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
    }
    if (std::chrono::steady_clock::now() > cancel_deadline) {
      // The request stays pending (freeing a collective's request is not
      // allowed); main aborts the job if some rank is stuck.
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ctx.cancel.throw_if_cancelled();
}

int run_job(const Job& job, RunContext& ctx) {
  omp_set_num_threads(job.execution.threads);
  nlohmann::json details{{"ranks", ctx.size}, {"threads", job.execution.threads}, {"host", host_name()},
                         {"input", job.input}, {"output", job.output}};
  if (ctx.rank == 0) ctx.progress.start(job.command, details);
  if (job.command == "synth") return run_synth(job, ctx);
  if (job.command == "register") unavailable("register", "the registration pipeline has not been built in yet");
  if (job.command == "average") unavailable("average", "the averaging pipeline has not been built in yet");
  if (job.command == "spectrum") unavailable("spectrum", "the distributed spectrum has not been built in yet");
  throw bad_input("job: unknown command '" + job.command + "'");
}

}  // namespace driftscan::mpi
