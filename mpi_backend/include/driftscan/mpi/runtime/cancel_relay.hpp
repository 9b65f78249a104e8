#pragma once
// Makes a cancel request on any rank a cancel request on every rank.
// A signal may reach only some ranks (a kill of one pid, a scheduler that
// signals one node), and a rank that stops while its peers wait for it in a
// collective would hang them. The relay is a thread with its own duplicated
// communicator (so it never matches the computation's messages): when the
// local CancelToken is set it sends one message to every other rank; when
// such a message arrives it sets the local token (unless it is set already:
// an echo is not a further request). Needs MPI_THREAD_MULTIPLE;
// without it the relay is inert and the ranks rely on mpirun/srun
// forwarding the signal to all of them.
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <mpi.h>

#include "driftscan/core/cancel_token.hpp"

namespace driftscan::mpi {

class CancelRelay {
 public:
  // Collective over `comm` (it duplicates it). `active` = MPI granted THREAD_MULTIPLE.
  CancelRelay(MPI_Comm comm, CancelToken& token, bool active);
  ~CancelRelay();  // collective-free; cancels what is pending
  CancelRelay(const CancelRelay&) = delete;
  CancelRelay& operator=(const CancelRelay&) = delete;

  bool active() const { return active_; }

  // After a cancel: waits (at most timeout_s) until every rank has reached
  // this point. False means some rank is stuck (e.g. in a collective) and the
  // job must be aborted. Collective-free on the computation's communicator.
  bool all_stopped(double timeout_s);
  // After all_stopped() was true: rank 0's `text` on every rank (so a rank
  // can leave out an error line rank 0 already prints). Collective on the
  // relay's own communicator.
  std::string root_text(const std::string& text);
  void stop();

 private:
  void loop();
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Comm barrier_comm_ = MPI_COMM_NULL;
  CancelToken& token_;
  bool active_ = false;
  int rank_ = 0, size_ = 1;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace driftscan::mpi
