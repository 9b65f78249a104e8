#pragma once
// The part of one thread's final phase that any thread of the rank may run:
// the elements its reduce took to the right of its starting element.
//
// Why: the final phase was one left fold per segment, so a thread whose
// segment is dear (typically one that started on a dear element, which its
// reduce never paid) finished long after its idle siblings (traced 8×8, K=16:
// 0.2 s). Each element e the reduce took rightwards (and the start itself)
// left a local prefix [a, e] (a: the segment's left end at that moment,
// e's partial sum then), so e's final prefix is P(a−1) ⊕ local(e): one
// application, charged to e as the fold's step is, independent of the other
// elements. P(a−1) is the segment's start (exclusive ⊕ before) when a is the
// segment's first element, else an element of the left part [lo, start),
// which the owner folds as before. Order is kept (the operator need not
// commute); only the bracketing differs from the fold, as stealing's moving
// cut points already make it differ between runs.
//
// a only decreases as e increases, so the other threads claim from the
// segment's last element down (each needs a shorter prefix of the left fold
// than the one above it), while the owner, its fold done, claims from the
// start up: its start element, never paid in the reduce and so often the
// dear one left for last, is run first. Claims are compare-and-swaps on one
// word [front, back), as SegmentGap's: each element is run exactly once.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace driftscan::mpi {

class SharedSegmentTail {
 public:
  SharedSegmentTail() = default;
  SharedSegmentTail(const SharedSegmentTail&) = delete;
  SharedSegmentTail& operator=(const SharedSegmentTail&) = delete;

  // Before the run (no thread looks at it yet).
  void reset() {
    state_.store(State::undecided, std::memory_order_relaxed);
    bounds_.store(0, std::memory_order_relaxed);
  }
  // The owner: its segment [lo, hi) with the left part [lo, split) folded up
  // to `folded` already; elements [split, hi) may now be claimed.
  void open(std::size_t lo, std::size_t split, std::size_t hi, std::size_t folded) {
    lo_ = lo;
    split_ = split;
    folded_.store(folded, std::memory_order_relaxed);
    bounds_.store(pack(split, hi), std::memory_order_relaxed);
    state_.store(State::open, std::memory_order_release);
  }
  // The owner: nothing to share (its whole segment is its own fold).
  void close() { state_.store(State::none, std::memory_order_release); }
  // The owner: P(k) is written for every k < `folded` of the left part.
  void folded_to(std::size_t folded) { folded_.store(folded, std::memory_order_release); }

  bool decided() const { return state_.load(std::memory_order_acquire) != State::undecided; }
  // No element left to claim (or none to share).
  bool exhausted() const {
    const State s = state_.load(std::memory_order_acquire);
    return s == State::none || (s == State::open && remaining() == 0);
  }
  std::size_t remaining() const {
    if (state_.load(std::memory_order_acquire) != State::open) return 0;
    const std::uint64_t b = bounds_.load(std::memory_order_acquire);
    return back(b) - front(b);
  }
  std::size_t lo() const { return lo_; }

  // What claim_back() would claim now, if anything (no claim).
  template <class FirstOf>
  std::optional<std::size_t> peek_back(FirstOf&& first_of) const {
    if (state_.load(std::memory_order_acquire) != State::open) return std::nullopt;
    const std::uint64_t b = bounds_.load(std::memory_order_acquire);
    if (front(b) >= back(b)) return std::nullopt;
    const std::size_t a = first_of(back(b) - 1);
    if (a != lo_ && folded_.load(std::memory_order_acquire) < a) return std::nullopt;
    return back(b) - 1;
  }
  // What claim_front() would claim now.
  std::optional<std::size_t> peek_front() const {
    if (state_.load(std::memory_order_acquire) != State::open) return std::nullopt;
    const std::uint64_t b = bounds_.load(std::memory_order_acquire);
    return front(b) < back(b) ? std::optional<std::size_t>(front(b)) : std::nullopt;
  }
  // Another thread: claims the highest unclaimed element whose P(a−1) is
  // known, where `first_of(e)` is a (e's local prefix's first element).
  template <class FirstOf>
  std::optional<std::size_t> claim_back(FirstOf&& first_of) {
    if (state_.load(std::memory_order_acquire) != State::open) return std::nullopt;
    std::uint64_t b = bounds_.load(std::memory_order_acquire);
    while (front(b) < back(b)) {
      const std::size_t a = first_of(back(b) - 1);
      if (a != lo_ && folded_.load(std::memory_order_acquire) < a) return std::nullopt;
      if (bounds_.compare_exchange_weak(b, pack(front(b), back(b) - 1), std::memory_order_acq_rel)) return back(b) - 1;
    }
    return std::nullopt;
  }
  // The owner, its left part folded (every element is claimable then):
  // the lowest unclaimed element.
  std::optional<std::size_t> claim_front() {
    if (state_.load(std::memory_order_acquire) != State::open) return std::nullopt;  // closed: its fold failed
    std::uint64_t b = bounds_.load(std::memory_order_acquire);
    while (front(b) < back(b))
      if (bounds_.compare_exchange_weak(b, pack(front(b) + 1, back(b)), std::memory_order_acq_rel)) return front(b);
    return std::nullopt;
  }

 private:
  enum class State { undecided, open, none };
  alignas(64) std::atomic<State> state_{State::undecided};
  static std::uint64_t pack(std::size_t lo, std::size_t hi) { return (std::uint64_t(lo) << 32) | std::uint64_t(hi); }
  static std::size_t front(std::uint64_t b) { return static_cast<std::size_t>(b >> 32); }
  static std::size_t back(std::uint64_t b) { return static_cast<std::size_t>(b & 0xFFFFFFFFu); }
  std::atomic<std::uint64_t> bounds_{0};  // unclaimed elements [front, back), within [split_, hi)
  std::atomic<std::size_t> folded_{0};    // left part: P(k) written for k < folded_
  std::size_t lo_ = 0, split_ = 0;        // written before open(), read after
};

}  // namespace driftscan::mpi
