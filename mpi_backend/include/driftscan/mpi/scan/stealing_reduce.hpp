#pragma once
// The reduce phase with work stealing between neighbouring workers: the
// threads of one rank, or all threads of all ranks as one line when the ranks
// share a node (rank_line.hpp) (docs/method.md; Algorithm 1 of the published
// work-stealing prefix scan).
//
// The first thread starts at the rank's first element and extends to the
// right, the last starts at the last element and extends to the left, every
// other thread starts in the middle of its static segment and extends
// outward. Between two neighbours lies a gap of unclaimed elements; either
// neighbour takes the element at its own end of the gap, so a fast thread
// keeps taking elements its slow neighbour has not reached. Each gap is one
// 64-bit word [front, back) changed only by compare-and-swap: an element is
// taken by exactly one thread under any interleaving, and none is skipped
// (a thread stops only when both its gaps are empty).
//
// Direction (greedy): a middle thread extends towards the neighbour that
// would need longer to finish on its own — the unclaimed elements of all gaps
// on that side over the summed speed of the workers there (each measured as
// time per application, including an application still running, so a
// neighbour stuck on a hard element looks slow at once). The very first step
// goes right, before any rate has been measured.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "driftscan/mpi/scan/local_scan.hpp"
#include "driftscan/mpi/scan/scan_partial.hpp"

namespace driftscan::mpi {

class SegmentGap {
 public:
  SegmentGap() = default;
  SegmentGap(const SegmentGap&) = delete;
  SegmentGap& operator=(const SegmentGap&) = delete;

  // Requires hi < 2^32 (checked by the caller).
  void reset(std::size_t lo, std::size_t hi) { bounds_.store(pack(lo, hi < lo ? lo : hi), std::memory_order_relaxed); }
  std::size_t size() const {
    auto b = bounds_.load(std::memory_order_relaxed);
    return back(b) - front(b);
  }
  // Where the gap begins: every element from the left neighbour's first up
  // to here is (being) taken by it.
  std::size_t front_position() const { return front(bounds_.load(std::memory_order_acquire)); }
  // The left neighbour takes the gap's first element.
  std::optional<std::size_t> take_front() {
    auto b = bounds_.load(std::memory_order_relaxed);
    while (front(b) < back(b))
      if (bounds_.compare_exchange_weak(b, pack(front(b) + 1, back(b)), std::memory_order_acq_rel)) return front(b);
    return std::nullopt;
  }
  // The right neighbour takes the gap's last element; it leaves the gap's
  // final `keep` elements to the left neighbour (which takes them, since it
  // stops only when the gap is empty).
  std::optional<std::size_t> take_back(std::size_t keep = 0) {
    auto b = bounds_.load(std::memory_order_relaxed);
    while (front(b) + keep < back(b))
      if (bounds_.compare_exchange_weak(b, pack(front(b), back(b) - 1), std::memory_order_acq_rel)) return back(b) - 1;
    return std::nullopt;
  }

 private:
  static std::uint64_t pack(std::size_t lo, std::size_t hi) { return (std::uint64_t(lo) << 32) | std::uint64_t(hi); }
  static std::size_t front(std::uint64_t b) { return static_cast<std::size_t>(b >> 32); }
  static std::size_t back(std::uint64_t b) { return static_cast<std::size_t>(b & 0xFFFFFFFFu); }
  alignas(64) std::atomic<std::uint64_t> bounds_{0};
};

// What a thread publishes about its pace for its neighbours' greedy choice.
class WorkerPace {
 public:
  WorkerPace() = default;
  WorkerPace(const WorkerPace&) = delete;
  WorkerPace& operator=(const WorkerPace&) = delete;

  void start() {
    applications_.store(0, std::memory_order_relaxed);
    const std::int64_t now = now_ns();
    started_ns_.store(now, std::memory_order_relaxed);
    last_ns_.store(now, std::memory_order_relaxed);
  }
  // Not working (before start(), after stop()): its neighbours leave it out of the speeds they sum.
  void stop() { started_ns_.store(0, std::memory_order_relaxed); }
  bool working() const { return started_ns_.load(std::memory_order_relaxed) != 0; }
  void applied() {
    applications_.fetch_add(1, std::memory_order_relaxed);
    last_ns_.store(now_ns(), std::memory_order_relaxed);
  }
  // Whether the application running now has taken `factor` times longer
  // than the finished ones on average (a dear element; false before any).
  bool stuck(double factor) const {
    const auto started = started_ns_.load(std::memory_order_relaxed);
    const auto done = applications_.load(std::memory_order_relaxed);
    const auto last = last_ns_.load(std::memory_order_relaxed);
    if (started == 0 || done == 0) return false;
    return static_cast<double>(now_ns() - last) > factor * static_cast<double>(last - started) / double(done);
  }
  // Seconds per application so far, counting a running one as finishing now.
  double seconds_per_application() const {
    auto started = started_ns_.load(std::memory_order_relaxed);
    if (started == 0) return 0.0;
    auto done = applications_.load(std::memory_order_relaxed);
    return static_cast<double>(now_ns() - started) * 1e-9 / static_cast<double>(done + 1);
  }

 private:
  static std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  alignas(64) std::atomic<std::int64_t> started_ns_{0};
  std::atomic<std::int64_t> applications_{0};
  std::atomic<std::int64_t> last_ns_{0};  // when the last application ended (or the start)
};

// Where each worker starts and what lies between them, for n elements over
// `workers` threads (n ≥ workers ≥ 1). With `edges`, the first thread has a
// left gap and the last a right one (neighbour ranks), so they start inside
// their segments as the middle threads do.
inline std::size_t stealing_start(std::size_t n, std::size_t workers, std::size_t t, bool left_edge = false,
                                  bool right_edge = false) {
  SegmentRange s = static_segment(n, workers, t);
  if (t == 0 && !left_edge) return s.lo;
  if (t + 1 == workers && !right_edge) return s.hi - 1;
  return s.lo + s.size() / 2;
}

// What one worker sees of the line it steals along: every gap (gaps[i] lies
// between workers i and i+1; a null gap holds nothing) and every pace, its
// own position, which gaps are its own two, and how a position in each of
// those maps to an element index (index = position + shift).
struct StealingView {
  std::vector<SegmentGap*> gaps;
  std::vector<WorkerPace*> paces;
  // Per worker (empty: none): how many applications later than the others
  // its final phase starts (its rank's wait for the global phase). A side
  // whose final phase starts later should reduce less: counted as time left.
  std::vector<double> delay;
  // Whether this worker leaves its left gap's last element to the left
  // neighbour. Where two neighbours meet, the element one of them is still
  // applying when the other empties the gap ends its segment; the left side's
  // end is charged again by every combine with its sum as the right operand
  // (the tree, the global rounds) and the longer an element takes, the likelier
  // it is in progress then (ends measured at 1.3-2.2x the mean element cost).
  // The left neighbour takes the last element itself, just as it becomes the
  // last: its end is then an element picked regardless of its cost.
  bool leave_last_left = false;
  // Whether the right gap is this worker's alone (the rank's last thread
  // when the final phase is shared): taken once the left side would finish
  // sooner (detail::own_side_is_behind), so that most elements in it have a
  // local prefix from the segment's first element (shared_segment_tail.hpp).
  bool right_is_own = false;
  std::size_t me = 0;
  std::optional<std::size_t> left, right;
  std::int64_t left_shift = 0, right_shift = 0;
};

namespace detail {
// Unclaimed elements in gaps [lo, hi) and the summed speed of the working
// workers in [plo, phi).
inline double unclaimed(const StealingView& v, std::size_t lo, std::size_t hi) {
  double work = 0.0;
  for (std::size_t g = lo; g < hi; ++g)
    if (v.gaps[g]) work += static_cast<double>(v.gaps[g]->size());
  return work;
}
// The summed speed (applications per second) of the working workers in
// [lo, hi), and their speed-weighted delay (applications).
struct SideSpeed {
  double speed = 0.0, delay = 0.0;
};
inline SideSpeed speed(const StealingView& v, std::size_t lo, std::size_t hi) {
  SideSpeed s;
  for (std::size_t j = lo; j < hi; ++j)
    if (v.paces[j]->working()) {
      const double speed = 1.0 / std::max(1e-9, v.paces[j]->seconds_per_application());
      s.speed += speed;
      if (!v.delay.empty()) s.delay += speed * v.delay[j];
    }
  if (s.speed > 0.0) s.delay /= s.speed;
  return s;
}
// Whether the right side would take longer to finish than the left
// (delays in applications at this worker's own pace).
inline bool right_is_behind(const StealingView& v) {
  const double left_work = unclaimed(v, 0, *v.left + 1) - (v.leave_last_left ? 1.0 : 0.0),
               right_work = unclaimed(v, *v.right, v.gaps.size());
  const SideSpeed left = speed(v, 0, v.me), right = speed(v, v.me + 1, v.paces.size());
  if (right.speed <= 0.0) return right_work > 0.0;  // nobody working there: help it
  if (left.speed <= 0.0) return left_work <= 0.0;
  const double pace = v.paces[v.me]->seconds_per_application();
  return right_work / right.speed + right.delay * pace >= left_work / left.speed + left.delay * pace;
}
// The rank's last thread with a right gap of its own: whether what it alone
// can take would take it longer than the workers to its left (itself
// included, at their summed speed) need for everything they may take. Until
// then it takes from its left gap, so that most of its own elements are taken
// once the left gap is empty (their local prefixes then begin at the
// segment's first element), yet it is not left alone with them at the end.
inline bool own_side_is_behind(const StealingView& v) {
  const double own_work = static_cast<double>(v.gaps[*v.right]->size()), left_work = unclaimed(v, 0, *v.left + 1);
  const SideSpeed left = speed(v, 0, v.me + 1);
  if (left.speed <= 0.0) return left_work <= 0.0;
  return own_work * v.paces[v.me]->seconds_per_application() >= left_work / left.speed;
}
}  // namespace detail

// One worker's reduce with stealing. `at(k)` is element k (k = a gap
// position + its shift, or `start`), `offset` the global index of element 0;
// `own` its static segment (elements outside it count as stolen).
// `apply(l, r, stolen)` applies the operator. Returns the sum of [lo, hi) as
// left in `taken`.
template <class T, class At, class Apply>
ScanPartial<T> stealing_reduce(At&& at, std::int64_t offset, std::size_t start, const SegmentRange& own,
                               StealingView& view, Apply&& apply, SegmentRange& taken) {
  const auto global = [&](std::size_t k) { return offset + static_cast<std::int64_t>(k); };
  ScanPartial<T> acc = ScanPartial<T>::of(at(start), global(start), global(start));
  taken = {start, start + 1};
  const bool has_left = view.left.has_value(), has_right = view.right.has_value();
  SegmentGap* left = has_left ? view.gaps[*view.left] : nullptr;
  SegmentGap* right = has_right ? view.gaps[*view.right] : nullptr;
  const std::size_t keep = view.leave_last_left ? 1 : 0;
  bool first_step = true;
  while (!acc.failed()) {
    bool go_right;
    if (!has_left) go_right = true;
    else if (!has_right) go_right = false;
    else if (view.right_is_own) go_right = left->size() <= keep || detail::own_side_is_behind(view);
    else if (first_step) go_right = true;
    else go_right = left->size() <= keep || (right->size() > 0 && detail::right_is_behind(view));
    first_step = false;
    std::optional<std::size_t> k;
    bool to_right = go_right;
    if (to_right) k = right->take_front();
    if (!k && has_left) {
      to_right = false;
      k = left->take_back(keep);
    }
    if (!k && has_right && !go_right) {
      to_right = true;
      k = right->take_front();
    }
    if (!k) break;  // both gaps closed: the segment is final
    const std::size_t e =
        static_cast<std::size_t>(static_cast<std::int64_t>(*k) + (to_right ? view.right_shift : view.left_shift));
    const bool stolen = !own.contains(e);
    auto element = ScanPartial<T>::of(at(e), global(e), global(e));
    auto op = [&](const ScanPartial<T>& l, const ScanPartial<T>& r) { return apply(l, r, stolen); };
    if (to_right) {
      acc = combine_partials(acc, element, op);
      taken.hi = e + 1;
    } else {
      acc = combine_partials(element, acc, op);
      taken.lo = e;
    }
    view.paces[view.me]->applied();
  }
  return acc;
}

}  // namespace driftscan::mpi
