#include "driftscan/mpi/runtime/collectives.hpp"

#include <chrono>
#include <thread>

#include "driftscan/mpi/runtime/idle_wait.hpp"

namespace driftscan::mpi {

void agree_on_failure(MPI_Comm comm, bool failed, ErrorKind kind, const std::string& message) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int mine = failed ? rank : size, first = size;
  MPI_Request request;
  MPI_Iallreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm, &request);
  wait_idle(request);
  if (first == size) return;
  // The lowest failing rank tells everyone what went wrong.
  int header[2] = {static_cast<int>(kind), static_cast<int>(std::min<std::size_t>(message.size(), 4096))};
  MPI_Bcast(header, 2, MPI_INT, first, comm);
  std::string text = rank == first ? message.substr(0, static_cast<std::size_t>(header[1]))
                                   : std::string(static_cast<std::size_t>(header[1]), '\0');
  MPI_Bcast(text.data(), header[1], MPI_CHAR, first, comm);
  auto error_kind = static_cast<ErrorKind>(header[0]);
  if (error_kind == ErrorKind::cancelled) throw Error(error_kind, text);
  throw Error(error_kind, "rank " + std::to_string(first) + ": " + text);
}

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

void agree_on_outcome(RunContext& ctx, const Error* local_error) {
  // status: 0 fine, 1 error, 2 cancelled; MPI_MAXLOC picks the worst and,
  // among equals, the lowest rank.
  struct {
    int status;
    int rank;
  } mine{ctx.cancel.cancelled() ? 2 : (local_error ? 1 : 0), ctx.rank}, worst{0, 0};
  // Waited for asleep: ranks idle here while rank 0 works (writes, a spectrum)
  // must leave it the cores.
  MPI_Request request;
  MPI_Iallreduce(&mine, &worst, 1, MPI_2INT, MPI_MAXLOC, ctx.comm, &request);
  wait_idle(request);
  if (worst.status == 0) return;
  if (worst.status == 2) throw Error(ErrorKind::cancelled, "cancelled");
  int kind = local_error ? static_cast<int>(local_error->kind()) : 0;
  std::string msg = local_error ? local_error->what() : std::string();
  int len = static_cast<int>(msg.size());
  MPI_Bcast(&kind, 1, MPI_INT, worst.rank, ctx.comm);
  MPI_Bcast(&len, 1, MPI_INT, worst.rank, ctx.comm);
  msg.resize(static_cast<std::size_t>(len));
  MPI_Bcast(msg.data(), len, MPI_CHAR, worst.rank, ctx.comm);
  throw Error(static_cast<ErrorKind>(kind), msg);
}

void open_output_set(const Job& job, RunContext& ctx, const std::vector<std::string>& inputs,
                     std::optional<OutputSet>& set) {
  std::optional<Error> error;
  if (ctx.rank == 0) {
    try {
      set.emplace(job.output, job.command, inputs);  // locks the folder (results_lock.hpp)
      if (!set->lock_warning().empty()) ctx.progress.log(LogLevel::warning, set->lock_warning());
    } catch (const Error& e) {
      error = e;
    }
  }
  agree_on_outcome(ctx, error ? &*error : nullptr);
}

void commit_outputs(RunContext& ctx, std::optional<OutputSet>& set) {
  // Only once every rank has done its part (none failed, none cancelled).
  agree_on_outcome(ctx, nullptr);
  std::optional<Error> error;
  if (set) {
    try {
      set->commit();
    } catch (const Error& e) {
      error = e;
    }
  }
  // Committed is committed: a cancel arriving now does not make it an error
  // (the agreement below ignores the cancel token); rank 0 says so.
  if (ctx.size > 1) agree_on_failure(ctx.comm, error.has_value(), ErrorKind::failure, error ? error->what() : "");
  else if (error) throw *error;
  if (ctx.rank == 0 && ctx.cancel.cancelled())
    ctx.progress.log(LogLevel::warning,
                     "a cancel request arrived after the outputs were complete: they are kept, and the run is done");
}

}  // namespace driftscan::mpi
