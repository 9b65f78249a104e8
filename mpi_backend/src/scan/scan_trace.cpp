#include "driftscan/mpi/scan/scan_trace.hpp"

#include <type_traits>
#include <vector>

#include "driftscan/core/error.hpp"
#include "driftscan/mpi/runtime/idle_wait.hpp"

namespace driftscan::mpi {

static_assert(std::is_trivially_copyable_v<ScanRecord>, "records travel as bytes");

void begin_trace(ScanTrace& trace, MPI_Comm comm, int threads) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  barrier_idle(comm);  // the clocks start together
  trace.begin(rank, ranks, threads);
}

void gather_trace(ScanTrace& trace, MPI_Comm comm) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  std::vector<ScanRecord> local = trace.take_local_records();
  double end_s = trace.end_s();
  int bytes = static_cast<int>(local.size() * sizeof(ScanRecord));
  std::vector<int> counts(static_cast<std::size_t>(ranks)), displs(static_cast<std::size_t>(ranks));
  MPI_Gather(&bytes, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm);
  std::vector<double> rank_end_s(static_cast<std::size_t>(ranks), 0.0);
  MPI_Gather(&end_s, 1, MPI_DOUBLE, rank_end_s.data(), 1, MPI_DOUBLE, 0, comm);
  std::vector<ScanRecord> all;
  if (rank == 0) {
    long long total = 0;
    for (int r = 0; r < ranks; ++r) {
      displs[static_cast<std::size_t>(r)] = static_cast<int>(total);
      total += counts[static_cast<std::size_t>(r)];
    }
    if (total > 2147483647LL) throw failure("scan trace: too many records to gather");
    all.resize(static_cast<std::size_t>(total) / sizeof(ScanRecord));
  }
  MPI_Gatherv(local.data(), bytes, MPI_BYTE, all.data(), counts.data(), displs.data(), MPI_BYTE, 0, comm);
  if (rank != 0) {
    all = std::move(local);
    rank_end_s.assign(1, end_s);
  }
  trace.set_records(std::move(all), std::move(rank_end_s));
}

}  // namespace driftscan::mpi
