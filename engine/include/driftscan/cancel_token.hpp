#pragma once
// Cooperative cancellation: long loops poll cancelled() between units of work
// (a frame, an operator application) and throw via throw_if_cancelled().
// A signal handler may call request() (it only stores to a lock-free atomic).
#include <atomic>

#include "driftscan/error.hpp"

namespace driftscan {

class CancelToken {
 public:
  void request() noexcept { flag_.store(true, std::memory_order_relaxed); }
  bool cancelled() const noexcept { return flag_.load(std::memory_order_relaxed); }
  void throw_if_cancelled() const {
    if (cancelled()) throw Error(ErrorKind::cancelled, "cancelled");
  }

 private:
  std::atomic<bool> flag_{false};
};

}  // namespace driftscan
