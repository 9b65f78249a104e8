#include "driftscan/mpi/distributed_register.hpp"

#include <omp.h>

#include <chrono>
#include <cstring>
#include <mutex>
#include <type_traits>

#include "driftscan/error.hpp"
#include "driftscan/mpi/job_runner.hpp"
#include "driftscan/mpi/scan_trace.hpp"
#include "driftscan/mpi/work_stealing_scan.hpp"
#include "driftscan/tiff_series.hpp"

namespace driftscan::mpi {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Gathers every rank's trivially copyable records to all ranks, in rank order.
template <class T>
std::vector<T> allgather_records(MPI_Comm comm, const std::vector<T>& mine) {
  static_assert(std::is_trivially_copyable_v<T>, "records travel bitwise");
  int size = 1;
  MPI_Comm_size(comm, &size);
  int bytes = static_cast<int>(mine.size() * sizeof(T));
  std::vector<int> counts(static_cast<std::size_t>(size)), displs(static_cast<std::size_t>(size), 0);
  MPI_Allgather(&bytes, 1, MPI_INT, counts.data(), 1, MPI_INT, comm);
  long long total = 0;
  for (int r = 0; r < size; ++r) {
    displs[static_cast<std::size_t>(r)] = static_cast<int>(total);
    total += counts[static_cast<std::size_t>(r)];
  }
  if (total > (long long)(1u << 31) - 1) throw failure("register: gathered results exceed 2 GB");
  std::vector<unsigned char> buffer(static_cast<std::size_t>(total));
  MPI_Allgatherv(mine.data(), bytes, MPI_BYTE, buffer.data(), counts.data(), displs.data(), MPI_BYTE, comm);
  std::vector<T> out(buffer.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), buffer.data(), out.size() * sizeof(T));
  return out;
}

}  // namespace

RegisterResult register_distributed(const Job& job, RunContext& ctx) {
  const auto t_start = Clock::now();
  const int threads = std::max(1, job.execution.threads);
  // Every rank indexes the file (IFD offsets only) and decodes frames on demand.
  auto frames = open_job_input(job);
  const std::size_t n = frames->frame_count();
  if (n < 2) throw bad_input(job.input + ": a series of one frame has nothing to register");
  if (ctx.rank == 0 && job.execution.resume)
    ctx.progress.log(LogLevel::warning, "--resume applies to single-rank runs; this run starts afresh");
  RegistrationOperator op(*frames, job.registration);

  RegisterResult res;
  const std::size_t lo = n * static_cast<std::size_t>(ctx.rank) / static_cast<std::size_t>(ctx.size);
  const std::size_t hi = n * static_cast<std::size_t>(ctx.rank + 1) / static_cast<std::size_t>(ctx.size);

  // Phase "pairs": this rank's elements (rank 0 reports its share).
  auto t0 = Clock::now();
  ctx.progress.phase("pairs", hi - lo);
  std::vector<Registration> block = compute_pair_elements(op, lo, hi, threads, &ctx.progress, &ctx.cancel);
  res.seconds.pairs = since(t0);

  // Phase "scan": the hierarchical work-stealing scan with the refine operator.
  t0 = Clock::now();
  ScanOptions options;
  options.algorithm = global_scan_algorithm_from_string(job.execution.scan_algorithm);
  options.strategy = local_strategy_from_string(job.execution.local_strategy);
  options.work_stealing = job.execution.work_stealing;
  options.threads = threads;
  WorkStealingScan scan(ctx.comm, options);
  ScanTrace trace;
  std::mutex mu;
  std::vector<OperatorApplication> applications;
  std::size_t applied = 0;
  ctx.progress.phase("scan", hi > lo ? hi - lo : 0);
  auto combine = [&](const Registration& a, const Registration& b) {
    ctx.cancel.throw_if_cancelled();
    Registration r = op(a, b);
    std::lock_guard<std::mutex> lock(mu);
    applications.push_back({r.from, r.to, r.iterations, r.seconds, r.cost, r.flags});
    ctx.progress.advance(++applied);
    return r;
  };
  std::vector<Registration> prefixes = scan.run(block, combine, &trace);
  trace.end();
  trace.gather(ctx.comm);
  res.registrations = allgather_records(ctx.comm, prefixes);
  res.applications = allgather_records(ctx.comm, applications);
  res.seconds.scan = since(t0);
  if (res.registrations.size() != n) throw failure("register: the scan returned " +
                                                   std::to_string(res.registrations.size()) + " of " +
                                                   std::to_string(n) + " frames");

  // Phases "average" and "write" on rank 0; the others wait (cancellably).
  std::exception_ptr root_error;
  if (ctx.rank == 0) {
    try {
      t0 = Clock::now();
      const int saved = omp_get_max_threads();
      omp_set_num_threads(threads);
      try {
        res.average = average_registered(*frames, res.registrations, job.averaging, res.warnings, &ctx.progress,
                                         &ctx.cancel);
      } catch (...) {
        omp_set_num_threads(saved);
        throw;
      }
      omp_set_num_threads(saved);
      res.seconds.average = since(t0);

      t0 = Clock::now();
      ctx.progress.phase("write", 4);
      nlohmann::json extra;
      extra["execution"] = {{"threads", threads},
                            {"ranks", ctx.size},
                            {"scan", "work-stealing"},
                            {"scan_algorithm", job.execution.scan_algorithm},
                            {"local_strategy", job.execution.local_strategy},
                            {"work_stealing", job.execution.work_stealing}};
      extra["scan_trace"] = trace.to_json();
      res.seconds.total = since(t_start);
      extra["timings_s"] = {{"pairs", res.seconds.pairs},
                            {"scan", res.seconds.scan},
                            {"average", res.seconds.average},
                            {"before_write_total", res.seconds.total}};
      res.files = write_register_outputs(job.output, *frames, job.registration, job.averaging, res.registrations,
                                         res.applications, res.average, res.warnings, extra);
      ctx.progress.advance(4);
      res.seconds.write = since(t0);
    } catch (...) {
      root_error = std::current_exception();
    }
  }
  // Everyone leaves together (the others must not sit in MPI_Finalize while
  // rank 0 still writes), and still stops when cancelled.
  try {
    cancellable_barrier(ctx);
  } catch (...) {
    if (!root_error) root_error = std::current_exception();
  }
  res.seconds.total = since(t_start);
  if (root_error) std::rethrow_exception(root_error);
  return res;
}

}  // namespace driftscan::mpi
