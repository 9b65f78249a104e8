#pragma once
// Gathers every rank's trivially copyable records to all ranks, in rank
// order: results each rank computed for its own frames (registrations, band
// samples, applications) that every rank, or rank 0, needs whole.
#include <mpi.h>

#include <cstring>
#include <type_traits>
#include <vector>

#include "driftscan/core/error.hpp"

namespace driftscan::mpi {

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
  if (total > (long long)(1u << 31) - 1) throw failure("gathered results exceed 2 GB");
  // Straight into the result (no second copy of a long series' records).
  std::vector<T> out(static_cast<std::size_t>(total) / sizeof(T));
  MPI_Allgatherv(mine.data(), bytes, MPI_BYTE, out.data(), counts.data(), displs.data(), MPI_BYTE, comm);
  return out;
}

}  // namespace driftscan::mpi
