// Averaging over MPI ranks; see distributed_average.hpp.
#include "driftscan/mpi/register/distributed_average.hpp"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <new>

#include "driftscan/core/error.hpp"
#include "driftscan/mpi/runtime/idle_wait.hpp"

namespace driftscan::mpi {
namespace {

std::string this_host() {
  char name[256] = {0};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown host";
  return name;
}

// The kind and message of an exception (bad_alloc says "out of memory").
void describe(const std::exception_ptr& error, ErrorKind& kind, std::string& message) {
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    kind = e.kind(), message = e.what();
  } catch (const std::bad_alloc&) {
    kind = ErrorKind::failure, message = "out of memory while averaging";
  } catch (const std::exception& e) {
    kind = ErrorKind::failure, message = e.what();
  } catch (...) {
    kind = ErrorKind::failure, message = "unknown error while averaging";
  }
}

}  // namespace

MpiAveragingTeam::MpiAveragingTeam(MPI_Comm comm) : comm_(comm), host_(this_host()) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

void MpiAveragingTeam::sum(std::vector<double>& values) const {
  if (size_ == 1) return;
  constexpr std::size_t kChunk = std::size_t(1) << 28;
  for (std::size_t at = 0; at < values.size(); at += kChunk) {
    const int count = static_cast<int>(std::min(kChunk, values.size() - at));
    MPI_Request request;
    MPI_Iallreduce(MPI_IN_PLACE, values.data() + at, count, MPI_DOUBLE, MPI_SUM, comm_, &request);
    wait_idle(request);
  }
}

void MpiAveragingTeam::agree(const std::exception_ptr& error) const {
  if (size_ == 1) {
    if (error) std::rethrow_exception(error);
    return;
  }
  ErrorKind kind = ErrorKind::failure;
  std::string message;
  if (error) describe(error, kind, message);
  // status: 0 fine, 1 error, 2 cancelled; MAXLOC picks the worst, among equals the lowest rank.
  struct {
    int status;
    int rank;
  } mine{error ? (kind == ErrorKind::cancelled ? 2 : 1) : 0, rank_}, worst{0, 0};
  MPI_Request request;
  MPI_Iallreduce(&mine, &worst, 1, MPI_2INT, MPI_MAXLOC, comm_, &request);
  wait_idle(request);
  if (worst.status == 0) return;
  if (worst.status == 2) throw Error(ErrorKind::cancelled, "cancelled");
  if (worst.rank == rank_) message = "rank " + std::to_string(rank_) + " on " + host_ + ": " + message;
  int header[2] = {static_cast<int>(kind), static_cast<int>(std::min<std::size_t>(message.size(), 4096))};
  MPI_Bcast(header, 2, MPI_INT, worst.rank, comm_);
  message.resize(static_cast<std::size_t>(header[1]));
  MPI_Bcast(message.data(), header[1], MPI_CHAR, worst.rank, comm_);
  throw Error(static_cast<ErrorKind>(header[0]), message);
}

AverageResult average_distributed(MPI_Comm comm, const FrameSource& frames, const std::vector<Transform>& transforms,
                                  const AveragingOptions& options, Progress* progress, const CancelToken* cancel) {
  const MpiAveragingTeam team(comm);
  return average_series(frames, transforms, options, team, progress, cancel);
}

}  // namespace driftscan::mpi
