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
#include <vector>

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
  // Non-blocking; when true, the same visibility as after wait().
  bool is_open() {
    std::lock_guard<std::mutex> lock(mutex_);
    return open_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable opened_;
  bool open_ = false;
};

// One-shot flags with the same sleeping waiters, for waiting on exactly the
// results one needs (one thread's segment sum, one tree node) instead of on
// every thread: a thread of the final phase starts as soon as what precedes
// its segment is known, not when the slowest sibling is done.
class ReadyFlags {
 public:
  // Only while no thread waits.
  void reset(std::size_t count) {
    std::lock_guard<std::mutex> lock(mutex_);
    ready_.assign(count, 0);
  }
  void set(std::size_t i) {
    std::lock_guard<std::mutex> lock(mutex_);
    ready_[i] = 1;
    changed_.notify_all();
  }
  // Everything written before set(i) is visible after wait(i), or after is_set(i) returned true.
  void wait(std::size_t i) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return ready_[i] != 0; });
  }
  bool is_set(std::size_t i) {
    std::lock_guard<std::mutex> lock(mutex_);
    return ready_[i] != 0;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<char> ready_;
};

}  // namespace driftscan::mpi
