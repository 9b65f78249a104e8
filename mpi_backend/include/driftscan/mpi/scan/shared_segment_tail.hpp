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
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>

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
    if (capacity_ < hi - lo) {
      claimed_ = std::make_unique<std::atomic<bool>[]>(hi - lo);
      capacity_ = hi - lo;
    }
    if (done_capacity_ < hi - lo) {
      done_ = std::make_unique<std::atomic<bool>[]>(hi - lo);
      done_capacity_ = hi - lo;
    }
    for (std::size_t i = 0; i < hi - lo; ++i) {
      claimed_[i].store(false, std::memory_order_relaxed);
      done_[i].store(false, std::memory_order_relaxed);
    }
    folded_.store(folded, std::memory_order_relaxed);
    fold_.store(pack(folded, split), std::memory_order_relaxed);
    cut_.store(split, std::memory_order_relaxed);
    cut_ready_.store(split, std::memory_order_relaxed);
    remaining_.store(hi - split, std::memory_order_relaxed);
    state_.store(State::open, std::memory_order_release);
  }
  // The owner, about to fold element k of its left part: whether k is still
  // its own (a helper may have cut the fold's back off, cut()).
  bool fold_step(std::size_t k) {
    auto b = fold_.load(std::memory_order_acquire);
    while (k < back(b))
      if (fold_.compare_exchange_weak(b, pack(k + 1, back(b)), std::memory_order_acq_rel)) return true;
    return false;
  }
  // Why a cut: the left part is a fold only its owner can run, and a long
  // one holds the rank while its siblings idle (traced 32x32, K=16: a
  // 10-element fold of 0.69 s, 20 of 31 siblings done 0.36 s earlier).
  // A free thread takes the back [m, end) of the owner's unfolded left part
  // (at least `min_cut` elements left to the owner and taken; m
  // chosen by `choose(next, end)`), folds local prefixes [m, e] there
  // (cut_local()), and each such element becomes claimable as P(m−1) ⊕
  // [m, e] once the owner's fold has reached m: one application more per
  // element moved, run by threads that would otherwise wait. At most one
  // cut per tail. Returns [m, end) or nothing.
  template <class Choose>
  std::optional<std::pair<std::size_t, std::size_t>> cut(std::size_t min_cut, Choose&& choose) {
    if (state_.load(std::memory_order_acquire) != State::open) return std::nullopt;
    if (cut_.load(std::memory_order_acquire) != split_) return std::nullopt;  // cut already
    auto b = fold_.load(std::memory_order_acquire);
    const std::size_t next = front(b), end = back(b);
    if (end != split_ || end < next + 2 * min_cut) return std::nullopt;
    const std::size_t m = choose(next, end);
    if (m < next + min_cut || m + min_cut > end) return std::nullopt;
    if (!fold_.compare_exchange_strong(b, pack(next, m), std::memory_order_acq_rel)) return std::nullopt;
    cut_ready_.store(m, std::memory_order_relaxed);
    remaining_.fetch_add(end - m, std::memory_order_acq_rel);
    cut_.store(m, std::memory_order_release);
    return std::make_pair(m, end);
  }
  // The owner's left part not yet taken by its fold: [next, end) (empty
  // unless open).
  std::pair<std::size_t, std::size_t> unfolded() const {
    if (state_.load(std::memory_order_acquire) != State::open) return {0, 0};
    const auto b = fold_.load(std::memory_order_acquire);
    return {front(b), back(b)};
  }
  // The cutting thread: local prefixes are written for every e < `ready` of the cut.
  void cut_local(std::size_t ready) { cut_ready_.store(ready, std::memory_order_release); }

  // The owner: nothing to share (its whole segment is its own fold).
  void close() { state_.store(State::none, std::memory_order_release); }
  // The owner: P(k) is written for every k < `folded` of the left part.
  void folded_to(std::size_t folded) { folded_.store(folded, std::memory_order_release); }
  std::size_t folded() const { return folded_.load(std::memory_order_acquire); }

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
    const std::size_t from = cut_.load(std::memory_order_acquire), ready = cut_ready_.load(std::memory_order_acquire);
    std::optional<std::size_t> best;
    double best_cost = 0.0;
    for (std::size_t e = hi_; e-- > from;) {
      if (e < split_ && e >= ready) continue;  // a cut element whose local prefix is not written yet
      if (claimed_[e - lo_].load(std::memory_order_acquire)) continue;
      if (!base_known(first_of(e), folded)) continue;  // P(a−1) not written yet
      const double c = cost(e);
      if (!best || c > best_cost) best = e, best_cost = c;
    }
    return best;
  }
  // Whether an unclaimed element needs exactly P(a−1) (`first_of(e)` == a).
  template <class FirstOf>
  bool waits_on(std::size_t a, FirstOf&& first_of) const {
    if (state_.load(std::memory_order_acquire) != State::open) return false;
    const std::size_t from = cut_.load(std::memory_order_acquire), ready = cut_ready_.load(std::memory_order_acquire);
    for (std::size_t e = hi_; e-- > from;)
      if ((e >= split_ || e < ready) && !claimed_[e - lo_].load(std::memory_order_acquire) && first_of(e) == a)
        return true;
    return false;
  }
  // The owner's next element from its start up (the lowest unclaimed), if
  // its P(a−1) is known (after a cut it may be a cut element's).
  template <class FirstOf>
  std::optional<std::size_t> peek_front(FirstOf&& first_of) const {
    if (state_.load(std::memory_order_acquire) != State::open) return std::nullopt;
    const std::size_t folded = folded_.load(std::memory_order_acquire);
    for (std::size_t e = split_; e < hi_; ++e)
      if (!claimed_[e - lo_].load(std::memory_order_acquire))
        return base_known(first_of(e), folded) ? std::optional<std::size_t>(e) : std::nullopt;
    return std::nullopt;
  }
  // Element e's final prefix is written (a cut element's P(e) is what the
  // elements after the cut may start from).
  void done(std::size_t e) {
    if (e >= lo_ && e < hi_) done_[e - lo_].store(true, std::memory_order_release);
  }
  // Claims element e (one peek_*() returned): whether this call got it.
  bool claim(std::size_t e) {
    if (state_.load(std::memory_order_acquire) != State::open || e < cut_.load(std::memory_order_acquire) || e >= hi_)
      return false;
    if (claimed_[e - lo_].exchange(true, std::memory_order_acq_rel)) return false;
    remaining_.fetch_sub(1, std::memory_order_acq_rel);
    return true;
  }
  // The owner, its left part folded (every element is claimable then):
  // the lowest unclaimed element.
  template <class FirstOf>
  std::optional<std::size_t> claim_front(FirstOf&& first_of) {
    while (auto e = peek_front(first_of))  // closed: its fold failed
      if (claim(*e)) return e;
    return std::nullopt;
  }

 private:
  enum class State { undecided, open, none };
  alignas(64) std::atomic<State> state_{State::undecided};
  std::atomic<std::size_t> remaining_{0};  // unclaimed elements of [split_, hi_)
  std::atomic<std::size_t> folded_{0};     // left part: P(k) written for k < folded_
  // The owner's fold: the next element it takes and where it stops (a cut
  // moves the end), packed as in SegmentGap; cut_: the cut's first element
  // (split_: no cut); cut_ready_: local prefixes written below it.
  std::atomic<std::uint64_t> fold_{0};
  std::atomic<std::size_t> cut_{0}, cut_ready_{0};
  // Written by the owner before open(), read after it.
  std::unique_ptr<std::atomic<bool>[]> claimed_;  // element lo_ + i is claimed
  std::unique_ptr<std::atomic<bool>[]> done_;     // element lo_ + i's prefix is written (claimed ones)
  std::size_t capacity_ = 0, done_capacity_ = 0;
  std::size_t lo_ = 0, split_ = 0, hi_ = 0;

  // P(a−1) is known: a is the segment's first element, the owner's fold
  // passed a−1, or a−1 is a cut element whose prefix is written.
  bool base_known(std::size_t a, std::size_t folded) const {
    return a == lo_ || folded >= a || (a > lo_ && a - 1 < hi_ && done_[a - 1 - lo_].load(std::memory_order_acquire));
  }
  static std::uint64_t pack(std::size_t lo, std::size_t hi) { return (std::uint64_t(lo) << 32) | std::uint64_t(hi); }
  static std::size_t front(std::uint64_t b) { return static_cast<std::size_t>(b >> 32); }
  static std::size_t back(std::uint64_t b) { return static_cast<std::size_t>(b & 0xFFFFFFFFu); }
};

}  // namespace driftscan::mpi
