#pragma once
// Gathers every rank's trivially copyable records to all ranks, in rank
// order: results each rank computed for its own frames (registrations, band
// samples, applications) that every rank, or rank 0, needs whole.
#include <mpi.h>

#include <cstring>
#include <type_traits>
#include <vector>

#include "driftscan/error.hpp"

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
  std::vector<unsigned char> buffer(static_cast<std::size_t>(total));
  MPI_Allgatherv(mine.data(), bytes, MPI_BYTE, buffer.data(), counts.data(), displs.data(), MPI_BYTE, comm);
  std::vector<T> out(buffer.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), buffer.data(), out.size() * sizeof(T));
  return out;
}

}  // namespace driftscan::mpi
