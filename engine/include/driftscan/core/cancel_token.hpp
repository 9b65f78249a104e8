#pragma once
// Cooperative cancellation: long loops poll cancelled() between units of work
// (a frame, an operator application) and throw via throw_if_cancelled().
// A signal handler may call request() (it only stores to a lock-free atomic).
#include <atomic>

#include "driftscan/core/error.hpp"

namespace driftscan {

class CancelToken {
 public:
  void request() noexcept { requests_.fetch_add(1, std::memory_order_relaxed); }
  bool cancelled() const noexcept { return requests_.load(std::memory_order_relaxed) > 0; }
  // How many requests came: `register --follow` takes the first as "stop
  // following and finish", a later one as a cancel of the finish.
  unsigned requests() const noexcept { return requests_.load(std::memory_order_relaxed); }
  void throw_if_cancelled() const {
    if (cancelled()) throw Error(ErrorKind::cancelled, "cancelled");
  }

 private:
  std::atomic<unsigned> requests_{0};  // lock-free: request() runs in signal handlers
};

}  // namespace driftscan
