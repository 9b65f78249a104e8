#pragma once
// The reduce phase with work stealing between the neighbouring threads of one
// rank (docs/method.md; Algorithm 1 of the published work-stealing prefix scan).
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
// would need longer to close the gap on its own — gap size × the neighbour's
// measured time per application (which includes an application still
// running, so a neighbour stuck on a hard element looks slow at once). The
// very first step goes right, before any rate has been measured.
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
  // The left neighbour takes the gap's first element.
  std::optional<std::size_t> take_front() {
    auto b = bounds_.load(std::memory_order_relaxed);
    while (front(b) < back(b))
      if (bounds_.compare_exchange_weak(b, pack(front(b) + 1, back(b)), std::memory_order_acq_rel)) return front(b);
    return std::nullopt;
  }
  // The right neighbour takes the gap's last element.
  std::optional<std::size_t> take_back() {
    auto b = bounds_.load(std::memory_order_relaxed);
    while (front(b) < back(b))
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
    started_ns_.store(now_ns(), std::memory_order_relaxed);
  }
  void applied() { applications_.fetch_add(1, std::memory_order_relaxed); }
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
};

// Where each worker of a rank starts and what lies between them, for a block
// of n elements over `workers` threads (n ≥ workers ≥ 1).
inline std::size_t stealing_start(std::size_t n, std::size_t workers, std::size_t t) {
  SegmentRange s = static_segment(n, workers, t);
  if (t == 0) return s.lo;
  if (t + 1 == workers) return s.hi - 1;
  return s.lo + s.size() / 2;
}

// Thread t's reduce with stealing. `x[k]` is element k of the rank's block,
// `offset` the block's global index; gaps[t-1] and gaps[t] are the gaps to
// the neighbours, paces[] everyone's published pace. `apply(l, r, stolen)`
// applies the operator. Returns the sum of [lo, hi) as left in `taken`.
template <class T, class Apply>
ScanPartial<T> stealing_reduce(const std::vector<T>& x, std::int64_t offset, std::size_t t, std::size_t workers,
                               std::vector<SegmentGap>& gaps, std::vector<WorkerPace>& paces, Apply&& apply,
                               SegmentRange& taken) {
  const SegmentRange own = static_segment(x.size(), workers, t);
  const std::size_t start = stealing_start(x.size(), workers, t);
  const auto global = [&](std::size_t k) { return offset + static_cast<std::int64_t>(k); };
  ScanPartial<T> acc = ScanPartial<T>::of(x[start], global(start), global(start));
  taken = {start, start + 1};
  const bool has_left = t > 0, has_right = t + 1 < workers;
  bool first_step = true;
  while (!acc.failed()) {
    bool go_right;
    if (!has_left) go_right = true;
    else if (!has_right) go_right = false;
    else if (first_step) go_right = true;
    else {
      // Unclaimed work on each side per unit of the processing speed of the
      // threads on that side (speed = 1 / seconds per application).
      double left_work = 0.0, left_speed = 0.0, right_work = 0.0, right_speed = 0.0;
      for (std::size_t g = 0; g < t; ++g) left_work += static_cast<double>(gaps[g].size());
      for (std::size_t g = t; g + 1 < workers; ++g) right_work += static_cast<double>(gaps[g].size());
      for (std::size_t j = 0; j < t; ++j) left_speed += 1.0 / std::max(1e-9, paces[j].seconds_per_application());
      for (std::size_t j = t + 1; j < workers; ++j)
        right_speed += 1.0 / std::max(1e-9, paces[j].seconds_per_application());
      const bool left_open = gaps[t - 1].size() > 0, right_open = gaps[t].size() > 0;
      go_right = !left_open || (right_open && right_work / right_speed >= left_work / left_speed);
    }
    first_step = false;
    std::optional<std::size_t> k;
    bool right = go_right;
    if (right) k = gaps[t].take_front();
    if (!k && has_left) {
      right = false;
      k = gaps[t - 1].take_back();
    }
    if (!k && has_right && !go_right) {
      right = true;
      k = gaps[t].take_front();
    }
    if (!k) break;  // both gaps closed: the segment is final
    const bool stolen = !own.contains(*k);
    auto element = ScanPartial<T>::of(x[*k], global(*k), global(*k));
    auto op = [&](const ScanPartial<T>& l, const ScanPartial<T>& r) { return apply(l, r, stolen); };
    if (right) {
      acc = combine_partials(acc, element, op);
      taken.hi = *k + 1;
    } else {
      acc = combine_partials(element, acc, op);
      taken.lo = *k;
    }
    paces[t].applied();
  }
  return acc;
}

}  // namespace driftscan::mpi
