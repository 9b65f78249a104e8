#pragma once
// A barrier for the threads of one rank whose waiters sleep instead of spin.
// OpenMP barriers spin first (libgomp's default wait policy); while a rank's
// master is in the global phase, or a static thread waits for its slowest
// sibling, spinning threads take the cores that other ranks' masters need for
// MPI progress and that sleeping operators need to wake up on — on an
// oversubscribed node this slowed a scan of cheap operators ~100×. The
// operator is expensive, so a futex wake-up per phase costs nothing.
#include <condition_variable>
#include <cstddef>
#include <mutex>

namespace driftscan::mpi {

class SleepingBarrier {
 public:
  explicit SleepingBarrier(std::size_t parties = 1) : parties_(parties) {}
  SleepingBarrier(const SleepingBarrier&) = delete;
  SleepingBarrier& operator=(const SleepingBarrier&) = delete;

  // Only while no thread waits.
  void reset(std::size_t parties) {
    std::lock_guard<std::mutex> lock(mutex_);
    parties_ = parties;
    arrived_ = 0;
  }
  // Returns once all parties have arrived; everything written before by any
  // party is visible after (the mutex orders it).
  void arrive_and_wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    const std::size_t generation = generation_;
    if (++arrived_ == parties_) {
      arrived_ = 0;
      ++generation_;
      woken_.notify_all();
      return;
    }
    woken_.wait(lock, [&] { return generation_ != generation; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable woken_;
  std::size_t parties_;
  std::size_t arrived_ = 0;
  std::size_t generation_ = 0;
};

// A one-shot gate with the same sleeping waiters: threads that only need the
// master's result (the global phase) wait for it without waiting for each other.
class SleepingGate {
 public:
  void open() {
    std::lock_guard<std::mutex> lock(mutex_);
    open_ = true;
    opened_.notify_all();
  }
  // Everything written before open() is visible after wait().
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    opened_.wait(lock, [&] { return open_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable opened_;
  bool open_ = false;
};

}  // namespace driftscan::mpi
