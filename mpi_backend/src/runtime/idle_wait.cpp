#include "driftscan/mpi/runtime/idle_wait.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

namespace driftscan::mpi {
void IdleBackoff::pause() {
  std::this_thread::sleep_for(std::chrono::microseconds(us_));
  us_ = std::min(us_ * 2, max_us_);
}

void wait_idle(MPI_Request& request, MPI_Status* status, const WhileWaiting& meanwhile) {
  IdleBackoff backoff;
  int done = 0;
  for (MPI_Test(&request, &done, status); !done; MPI_Test(&request, &done, status)) {
    if (meanwhile) meanwhile();
    backoff.pause();
  }
}

MPI_Status probe_idle(int source, int tag, MPI_Comm comm, const WhileWaiting& meanwhile) {
  IdleBackoff backoff;
  MPI_Status status;
  int found = 0;
  for (MPI_Iprobe(source, tag, comm, &found, &status); !found; MPI_Iprobe(source, tag, comm, &found, &status)) {
    if (meanwhile) meanwhile();
    backoff.pause();
  }
  return status;
}

void barrier_idle(MPI_Comm comm) {
  MPI_Request request;
  MPI_Ibarrier(comm, &request);
  wait_idle(request);
}

}  // namespace driftscan::mpi
