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
// Any free thread may claim any unclaimed element whose P(a−1) is known
// (a is the segment's first element, or the owner's fold has passed a−1):
// the dearest one when costs are known (a dear element in mid-tail no longer
// waits until the claims from either end reach it: traced 8x8, K=16, a 59 ms
// element left for last in thread 0's tail ended its rank 26 ms after the
// others), else the highest, which needs the shortest prefix of the left
// fold (a only decreases as e increases). The owner, its fold done, also
// claims from its start up: its start element, never paid in the reduce and
// so unmeasured, is often the dear one left for last. A claim is one
// exchange on the element's flag: each element is run exactly once.
#include <atomic>
#include <cstddef>
#include <memory>
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
    remaining_.store(0, std::memory_order_relaxed);
  }
  // The owner: its segment [lo, hi) with the left part [lo, split) folded up
  // to `folded` already; elements [split, hi) may now be claimed.
  void open(std::size_t lo, std::size_t split, std::size_t hi, std::size_t folded) {
    lo_ = lo;
    split_ = split;
    hi_ = hi;
    if (capacity_ < hi - split) {
      claimed_ = std::make_unique<std::atomic<bool>[]>(hi - split);
      capacity_ = hi - split;
    }
    for (std::size_t i = 0; i < hi - split; ++i) claimed_[i].store(false, std::memory_order_relaxed);
    folded_.store(folded, std::memory_order_relaxed);
    remaining_.store(hi - split, std::memory_order_relaxed);
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
    return remaining_.load(std::memory_order_acquire);
  }
  std::size_t lo() const { return lo_; }

  // The unclaimed element whose P(a−1) is known (`first_of(e)`: a) with the
  // greatest `cost(e)`, the highest on ties; nothing claimed.
  template <class FirstOf, class Cost>
  std::optional<std::size_t> peek_dearest(FirstOf&& first_of, Cost&& cost) const {
    if (state_.load(std::memory_order_acquire) != State::open) return std::nullopt;
    const std::size_t folded = folded_.load(std::memory_order_acquire);
    std::optional<std::size_t> best;
    double best_cost = 0.0;
    for (std::size_t e = hi_; e-- > split_;) {
      if (claimed_[e - split_].load(std::memory_order_acquire)) continue;
      const std::size_t a = first_of(e);
      if (a != lo_ && folded < a) continue;  // P(a−1) not written yet
      const double c = cost(e);
      if (!best || c > best_cost) best = e, best_cost = c;
    }
    return best;
  }
  // Whether an unclaimed element needs exactly P(a−1) (`first_of(e)` == a).
  template <class FirstOf>
  bool waits_on(std::size_t a, FirstOf&& first_of) const {
    if (state_.load(std::memory_order_acquire) != State::open) return false;
    for (std::size_t e = hi_; e-- > split_;)
      if (!claimed_[e - split_].load(std::memory_order_acquire) && first_of(e) == a) return true;
    return false;
  }
  // The owner's next element from its start up (the lowest unclaimed).
  std::optional<std::size_t> peek_front() const {
    if (state_.load(std::memory_order_acquire) != State::open) return std::nullopt;
    for (std::size_t e = split_; e < hi_; ++e)
      if (!claimed_[e - split_].load(std::memory_order_acquire)) return e;
    return std::nullopt;
  }
  // Claims element e (one peek_*() returned): whether this call got it.
  bool claim(std::size_t e) {
    if (state_.load(std::memory_order_acquire) != State::open || e < split_ || e >= hi_) return false;
    if (claimed_[e - split_].exchange(true, std::memory_order_acq_rel)) return false;
    remaining_.fetch_sub(1, std::memory_order_acq_rel);
    return true;
  }
  // The owner, its left part folded (every element is claimable then):
  // the lowest unclaimed element.
  std::optional<std::size_t> claim_front() {
    while (auto e = peek_front())  // closed: its fold failed
      if (claim(*e)) return e;
    return std::nullopt;
  }

 private:
  enum class State { undecided, open, none };
  alignas(64) std::atomic<State> state_{State::undecided};
  std::atomic<std::size_t> remaining_{0};  // unclaimed elements of [split_, hi_)
  std::atomic<std::size_t> folded_{0};     // left part: P(k) written for k < folded_
  // Written by the owner before open(), read after it.
  std::unique_ptr<std::atomic<bool>[]> claimed_;  // element split_ + i is claimed
  std::size_t capacity_ = 0;
  std::size_t lo_ = 0, split_ = 0, hi_ = 0;
};

}  // namespace driftscan::mpi
