#include "driftscan/mpi/runtime/cancel_relay.hpp"

#include <algorithm>
#include <chrono>

namespace driftscan::mpi {
namespace {
constexpr int kCancelTag = 4711;
}

CancelRelay::CancelRelay(MPI_Comm comm, CancelToken& token, bool active) : token_(token) {
  MPI_Comm_rank(comm, &rank_);
  MPI_Comm_size(comm, &size_);
  MPI_Comm_dup(comm, &comm_);
  MPI_Comm_dup(comm, &barrier_comm_);
  active_ = active && size_ > 1;
  if (active_) thread_ = std::thread([this] { loop(); });
}

CancelRelay::~CancelRelay() {
  stop();
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  if (barrier_comm_ != MPI_COMM_NULL) MPI_Comm_free(&barrier_comm_);
}

void CancelRelay::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void CancelRelay::loop() {
  int incoming = 0;
  MPI_Request recv = MPI_REQUEST_NULL;
  MPI_Irecv(&incoming, 1, MPI_INT, MPI_ANY_SOURCE, kCancelTag, comm_, &recv);
  std::vector<MPI_Request> sends;
  int one = 1;
  bool sent = false, received = false;
  while (!stop_) {
    if (!received) {
      int flag = 0;
      MPI_Test(&recv, &flag, MPI_STATUS_IGNORE);
      if (flag) {
        received = true;
        // An echo of a request this rank has had already (mpirun signalled
        // every rank) is not another request: `register --follow` counts them.
        if (!token_.cancelled()) token_.request();
      }
    }
    if (!sent && token_.cancelled()) {
      // Tell everyone (also after receiving: the sender's message may be the
      // only one, and a rank that missed it would wait; duplicates are harmless).
      sent = true;
      for (int r = 0; r < size_; ++r) {
        if (r == rank_) continue;
        sends.emplace_back();
        MPI_Isend(&one, 1, MPI_INT, r, kCancelTag, comm_, &sends.back());
      }
    }
    if (!sends.empty()) {
      int all = 0;
      MPI_Testall(static_cast<int>(sends.size()), sends.data(), &all, MPI_STATUSES_IGNORE);
      if (all) sends.clear();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!received) {
    MPI_Cancel(&recv);
    MPI_Wait(&recv, MPI_STATUS_IGNORE);
  }
  for (auto& s : sends) {
    // Small messages go eagerly; whatever is left is dropped with the communicator.
    int flag = 0;
    MPI_Test(&s, &flag, MPI_STATUS_IGNORE);
    if (!flag) MPI_Request_free(&s);
  }
}

bool CancelRelay::all_stopped(double timeout_s) {
  if (size_ == 1) return true;
  MPI_Request req;
  MPI_Ibarrier(barrier_comm_, &req);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    int flag = 0;
    MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
    if (flag) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::string CancelRelay::root_text(const std::string& text) {
  if (size_ == 1) return text;
  int len = rank_ == 0 ? static_cast<int>(std::min<std::size_t>(text.size(), 4096)) : 0;
  MPI_Bcast(&len, 1, MPI_INT, 0, barrier_comm_);
  std::string root =
      rank_ == 0 ? text.substr(0, static_cast<std::size_t>(len)) : std::string(static_cast<std::size_t>(len), '\0');
  MPI_Bcast(root.data(), len, MPI_CHAR, 0, barrier_comm_);
  return root;
}

}  // namespace driftscan::mpi
