#pragma once
// Waiting for MPI without burning a core. Blocking MPI calls busy-poll; with
// several ranks on a node (a laptop, an oversubscribed test) a rank waiting
// for a slower one then takes the core that the slower rank's operator
// threads need, and every wait makes the slowest rank slower still. The scan's
// operator is expensive (ms to s), so the scan instead polls with short
// sleeps (backing off from 10 µs to 0.2 ms): a little latency per message,
// no stolen cores.
#include <functional>

#include <mpi.h>

namespace driftscan::mpi {

// Sleeps between polls, backing off from 10 µs to `max_us` (0.2 ms unless
// the wait is known to be long: every poll is a wake-up, and hundreds of
// oversubscribed ranks polling every 0.2 ms take the cores from the work).
class IdleBackoff {
 public:
  explicit IdleBackoff(int max_us = 200) : max_us_(max_us) {}
  void pause();

 private:
  int us_ = 10;
  int max_us_;
};

// What a waiting thread does between polls besides sleeping (may be empty):
// the scan's master hands over messages that arrived meanwhile.
using WhileWaiting = std::function<void()>;

// MPI_Wait, sleeping between tests.
void wait_idle(MPI_Request& request, MPI_Status* status = MPI_STATUS_IGNORE, const WhileWaiting& meanwhile = {});
// MPI_Probe, sleeping between probes.
MPI_Status probe_idle(int source, int tag, MPI_Comm comm, const WhileWaiting& meanwhile = {});
// MPI_Barrier, sleeping while waiting.
void barrier_idle(MPI_Comm comm);

}  // namespace driftscan::mpi
