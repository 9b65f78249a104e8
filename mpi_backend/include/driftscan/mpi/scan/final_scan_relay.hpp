#pragma once
// The final phase of one thread's segment, begun by an idle sibling while the
// owner is still stuck in its reduce on a dear element, and handed back when
// the owner is free or the helper is needed for its own segment.
//
// Why: the element a thread takes last in the reduce is often a dear one
// (that is why the others finished first); its owner then pays it again at
// the head of its final phase, back to back, while the threads after it sit
// idle waiting for its segment sum. Once the exclusive prefix and the sums
// before the segment are known, such an idle thread can scan the segment's
// first elements, with the same bracketing as the owner would (exclusive ⊕
// before, then one element at a time), so the results do not change.
//
// One relay per thread, one stint per segment: free → helping → (stop
// requested) → handed over → owned; or free → owned when the owner comes
// first. All transitions under one mutex: a few per element of ms and more.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <utility>

#include "driftscan/mpi/scan/scan_partial.hpp"

namespace driftscan::mpi {

template <class T>
class FinalScanRelay {
 public:
  FinalScanRelay() = default;
  FinalScanRelay(const FinalScanRelay&) = delete;
  FinalScanRelay& operator=(const FinalScanRelay&) = delete;

  // A helper: true if the segment was free and is now its to scan.
  bool claim_for_helper() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (state_ != State::free) return false;
    state_ = State::helping;
    return true;
  }
  bool is_free() {
    std::lock_guard<std::mutex> lock(mutex_);
    return state_ == State::free;
  }
  // The helper, before each element: whether the owner wants its segment back.
  bool stop_requested() {
    std::lock_guard<std::mutex> lock(mutex_);
    return state_ == State::stop_requested;
  }
  // The helper, when it stops: the running prefix (exclusive ⊕ … ⊕ element
  // next−1, or a failure) and the first element it did not scan.
  void hand_over(ScanPartial<T> acc, std::size_t next) {
    std::lock_guard<std::mutex> lock(mutex_);
    acc_ = std::move(acc);
    next_ = next;
    state_ = State::handed_over;
    changed_.notify_all();
  }
  // The owner: nothing when it came first (it scans its segment itself),
  // else what the helper handed over (waiting for it to finish the element
  // it is applying).
  std::optional<std::pair<ScanPartial<T>, std::size_t>> take_over() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (state_ == State::free) {
      state_ = State::owned;
      return std::nullopt;
    }
    if (state_ == State::helping) state_ = State::stop_requested;
    changed_.wait(lock, [&] { return state_ == State::handed_over; });
    state_ = State::owned;
    return std::make_pair(std::move(acc_), next_);
  }

 private:
  enum class State { free, helping, stop_requested, handed_over, owned };
  std::mutex mutex_;
  std::condition_variable changed_;
  State state_ = State::free;
  ScanPartial<T> acc_;
  std::size_t next_ = 0;
};

// What idle threads wait on for a segment to help with: every event that can
// make one helpable (a segment sum published, the exclusive prefix known)
// bumps the epoch; the timeout is for what no event announces.
class RelayBoard {
 public:
  void notify() {
    std::lock_guard<std::mutex> lock(mutex_);
    ++epoch_;
    changed_.notify_all();
  }
  std::uint64_t epoch() {
    std::lock_guard<std::mutex> lock(mutex_);
    return epoch_;
  }
  void wait_change(std::uint64_t seen, int timeout_ms) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return epoch_ != seen; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::uint64_t epoch_ = 0;
};

}  // namespace driftscan::mpi
