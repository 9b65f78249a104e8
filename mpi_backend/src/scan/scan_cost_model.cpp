#include "driftscan/mpi/scan/scan_cost_model.hpp"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <numeric>
#include <string>

#include "driftscan/core/error.hpp"
#include "driftscan/mpi/scan/local_scan.hpp"
#include "driftscan/mpi/scan/stealing_reduce.hpp"

namespace driftscan::mpi {
namespace {

// The global elements a partial result covers (empty: last < first).
struct Span {
  std::int64_t first = 0, last = -1;
  bool empty() const { return last < first; }
};
Span join(Span a, Span b) { return a.empty() ? b : b.empty() ? a : Span{a.first, b.last}; }
Span single(std::int64_t k) { return {k, k}; }

// scan-bench's charge for l ⊕ r (nothing when either is empty: no application).
double cost(const std::vector<double>& c, Span l, Span r) {
  if (l.empty() || r.empty()) return 0.0;
  if (l.first == l.last && r.first != r.last) return c[static_cast<std::size_t>(l.first)];
  return c[static_cast<std::size_t>(r.last)];
}

// One rank's thread sums, the tree over them and what precedes each segment.
struct RankTimes {
  Span block;
  std::vector<Span> segments;
  double root_ready = 0.0;
  std::vector<double> before_ready;  // thread t ≥ 1: the sum of threads 0..t−1 known
  std::vector<double> head_ready;    // … and extended by the segment's first element
  double reduce_work = 0.0;          // the ideal reduce's (every element but the starting ones)
  std::vector<double> end_cost;      // ideal: the cheapest end of segment t − 1 (exclusive ⊕ before)
};

// The tree of thread_sum_tree.hpp: node (l+1, i) = (l, 2i) ⊕ (l, 2i+1), combined by
// thread i·2^(l+1) as soon as both are known; then each thread t ≥ 1 assembles
// blocks_before(t) in order.
void tree_and_prefixes(const std::vector<double>& c, const std::vector<double>& leaf_ready, RankTimes& rt) {
  const std::size_t workers = rt.segments.size();
  std::vector<std::vector<Span>> span(1);
  std::vector<std::vector<double>> ready(1, leaf_ready);
  for (const auto& s : rt.segments) span[0].push_back({s.first, s.last});
  while (span.back().size() > 1) {
    const auto& below = span.back();
    const auto& below_ready = ready.back();
    std::vector<Span> up;
    std::vector<double> up_ready;
    for (std::size_t i = 0; 2 * i < below.size(); ++i) {
      if (2 * i + 1 < below.size()) {
        up.push_back(join(below[2 * i], below[2 * i + 1]));
        up_ready.push_back(std::max(below_ready[2 * i], below_ready[2 * i + 1]) +
                           cost(c, below[2 * i], below[2 * i + 1]));
      } else {
        up.push_back(below[2 * i]);
        up_ready.push_back(below_ready[2 * i]);
      }
    }
    span.push_back(std::move(up));
    ready.push_back(std::move(up_ready));
  }
  rt.root_ready = ready.back()[0];
  rt.before_ready.assign(workers, 0.0);
  rt.head_ready.assign(workers, 0.0);
  for (std::size_t t = 1; t < workers; ++t) {
    std::size_t top = 0;  // the highest node thread t combined
    while (top + 1 < span.size() && t % (std::size_t(1) << (top + 1)) == 0) ++top;
    double clock = ready[top][t >> top];
    Span sum;
    std::size_t pos = 0;
    for (std::size_t level = span.size(); level-- > 0;)
      if ((t >> level) & 1) {
        const std::size_t i = pos >> level;
        clock = std::max(clock, ready[level][i]) + cost(c, sum, span[level][i]);
        sum = join(sum, span[level][i]);
        pos += std::size_t(1) << level;
      }
    rt.before_ready[t] = clock;
    rt.head_ready[t] = clock + cost(c, sum, single(rt.segments[t].first));
  }
}

std::vector<std::size_t> equal_blocks(std::size_t n, int ranks) {
  std::vector<std::size_t> sizes;
  sizes.reserve(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) sizes.push_back(static_segment(n, std::size_t(ranks), std::size_t(r)).size());
  return sizes;
}

// Blocks cut where the total cost is evenly shared (each with at least
// `threads` elements): where perfect stealing between ranks would leave the
// ranks' boundaries.
std::vector<std::size_t> cost_balanced_blocks(const std::vector<double>& c, int ranks, int threads) {
  const std::size_t n = c.size(), p = std::size_t(ranks), w = std::size_t(threads);
  const double total = std::accumulate(c.begin(), c.end(), 0.0);
  std::vector<std::size_t> lo(p + 1, n);
  lo[0] = 0;
  double running = 0.0;
  std::size_t k = 0;
  for (std::size_t r = 1; r < p; ++r) {
    const double target = total * double(r) / double(p);
    while (k < n && running + c[k] / 2 <= target) running += c[k++];  // the cut nearest the target
    lo[r] = std::clamp(k, lo[r - 1] + w, n - (p - r) * w);
    while (k < lo[r]) running += c[k++];
    while (k > lo[r]) running -= c[--k];
  }
  std::vector<std::size_t> sizes;
  for (std::size_t r = 0; r < p; ++r) sizes.push_back(lo[r + 1] - lo[r]);
  return sizes;
}

void check(const std::vector<double>& costs, int ranks, int threads) {
  if (ranks < 1 || threads < 1) throw bad_input("scan model: ranks and threads must be at least 1");
  if (costs.size() < std::size_t(ranks) * std::size_t(threads))
    throw bad_input("scan model: fewer elements than workers");
}

// Σ c over [lo, hi) of the global elements.
double sum_of(const std::vector<double>& c, std::int64_t lo, std::int64_t hi) {
  return std::accumulate(c.begin() + lo, c.begin() + hi, 0.0);
}

// Static segments of one rank and each thread's sum ready (reduce or local scan).
RankTimes static_rank(const std::vector<double>& c, std::int64_t offset, std::size_t n, std::size_t workers) {
  RankTimes rt;
  rt.block = {offset, offset + std::int64_t(n) - 1};
  std::vector<double> leaf(workers);
  for (std::size_t t = 0; t < workers; ++t) {
    const SegmentRange s = static_segment(n, workers, t);
    rt.segments.push_back({offset + std::int64_t(s.lo), offset + std::int64_t(s.hi) - 1});
    leaf[t] = sum_of(c, rt.segments[t].first + 1, rt.segments[t].last + 1);
  }
  tree_and_prefixes(c, leaf, rt);
  return rt;
}

// The tree of thread sums overlapped with the reduce, as the scan runs it
// (two leaves are combined as soon as both are known, while other threads
// still reduce), bounded from below whatever cuts the stealing leaves:
// thread j's segment holds its starting element s_j, so it ends somewhere in
// [s_j, s_{j+1} − 1] and an application whose right operand ends there costs
// at least the cheapest element of that range (the last segment ends on the
// block's last element: its cost, at every level of the right spine). A
// tree node is known no earlier than its children plus that, nor than the
// reduce work between its threads' starting elements shared by all the
// rank's threads from 0 (whole elements: nor before its dearest element
// ran); a leaf may be its starting element alone. Thread t's prefix within
// the rank is assembled from the nodes before it the same way.
void overlapped_tree(const std::vector<double>& c, std::int64_t offset, const std::vector<bool>& is_start,
                     bool whole_elements, RankTimes& rt) {
  const std::size_t workers = rt.segments.size(), n = is_start.size();
  const auto at = [&](std::size_t k) { return c[static_cast<std::size_t>(offset) + k]; };
  std::vector<double> work(n + 1, 0.0);  // the reduce work over elements [0, k)
  std::vector<std::size_t> start;
  for (std::size_t k = 0; k < n; ++k) {
    work[k + 1] = work[k] + (is_start[k] ? 0.0 : at(k));
    if (is_start[k]) start.push_back(k);
  }
  rt.reduce_work = work[n];
  // Threads [a, b]: the reduce work between s_a and s_b, over all threads.
  const auto floor = [&](std::size_t a, std::size_t b) {
    double fluid = (work[start[b] + 1] - work[start[a]]) / double(workers), dearest = 0.0;
    if (whole_elements)
      for (std::size_t k = start[a]; k <= start[b]; ++k)
        if (!is_start[k]) dearest = std::max(dearest, at(k));
    return std::max(fluid, dearest);
  };
  // The cheapest end of thread j's segment.
  const auto end_cost = [&](std::size_t j) {
    if (j + 1 == workers) return at(n - 1);
    double cheapest = at(start[j]);
    for (std::size_t k = start[j]; k < start[j + 1]; ++k) cheapest = std::min(cheapest, at(k));
    return cheapest;
  };
  // node (l, i): threads [i·2^l, min((i+1)·2^l, workers) − 1].
  std::vector<std::vector<double>> ready(1, std::vector<double>(workers, 0.0));
  std::size_t width = 1;
  while (ready.back().size() > 1) {
    const auto& below = ready.back();
    std::vector<double> up;
    for (std::size_t i = 0; 2 * i < below.size(); ++i) {
      if (2 * i + 1 == below.size()) {
        up.push_back(below[2 * i]);
        continue;
      }
      const std::size_t a = 2 * i * width, b = std::min(a + 2 * width, workers) - 1;
      double app = end_cost(b);
      if (width == 1) app = std::min(app, at(start[a]));  // a one-element left leaf is charged instead
      up.push_back(std::max({below[2 * i], below[2 * i + 1], floor(a, b)}) + app);
    }
    ready.push_back(std::move(up));
    width *= 2;
  }
  rt.root_ready = ready.back()[0];
  rt.before_ready.assign(workers, 0.0);
  rt.head_ready.assign(workers, 0.0);
  rt.end_cost.assign(workers, 0.0);
  for (std::size_t t = 1; t < workers; ++t) {
    double clock = 0.0;
    std::size_t pos = 0;
    for (std::size_t level = ready.size(); level-- > 0;)
      if ((t >> level) & 1) {
        const std::size_t b = pos + (std::size_t(1) << level) - 1;
        double app = pos == 0 ? 0.0 : end_cost(b);
        if (pos == 1) app = std::min(app, at(0));  // the sum so far may be element 0 alone
        clock = std::max(clock, ready[level][pos >> level]) + app;
        pos += std::size_t(1) << level;
      }
    rt.before_ready[t] = clock;
    double head = at(start[t]);  // the segment's first element lies in (s_{t−1}, s_t]
    for (std::size_t k = start[t - 1] + 1; k <= start[t]; ++k) head = std::min(head, at(k));
    rt.head_ready[t] = clock + head;
    rt.end_cost[t] = end_cost(t - 1);
  }
}

// Perfect stealing: the reduce work (every element but the threads' starting
// ones) shared evenly, overlapped with the tree (overlapped_tree(); with
// `whole_elements` no prefix before its dearest element ran); segments cut
// where the rank's cost is evenly shared.
RankTimes ideal_rank(const std::vector<double>& c, std::int64_t offset, std::size_t n, std::size_t workers,
                     bool last_inside, bool whole_elements) {
  RankTimes rt;
  rt.block = {offset, offset + std::int64_t(n) - 1};
  const double total = sum_of(c, rt.block.first, rt.block.last + 1);
  std::vector<bool> is_start(n, false);
  for (std::size_t t = 0; t < workers; ++t) is_start[stealing_start(n, workers, t, false, last_inside)] = true;
  std::vector<std::size_t> lo(workers + 1, n);
  lo[0] = 0;
  double running = 0.0;
  std::size_t k = 0;
  for (std::size_t t = 1; t < workers; ++t) {
    const double target = total * double(t) / double(workers);
    while (k < n && running + c[static_cast<std::size_t>(offset) + k] <= target) running += c[offset + k++];
    lo[t] = std::clamp(k, lo[t - 1] + 1, n - (workers - t));
    while (k < lo[t]) running += c[offset + k++];
  }
  for (std::size_t t = 0; t < workers; ++t)
    rt.segments.push_back({offset + std::int64_t(lo[t]), offset + std::int64_t(lo[t + 1]) - 1});
  overlapped_tree(c, offset, is_start, whole_elements, rt);
  return rt;
}

// The time at which `work` is done by workers joining at `starts`, shared perfectly.
double fluid_finish(std::vector<double> starts, double work) {
  std::sort(starts.begin(), starts.end());
  double sum = 0.0;
  for (std::size_t i = 0; i < starts.size(); ++i) {
    sum += starts[i];
    const double f = (work + sum) / double(i + 1);
    if (i + 1 == starts.size() || f <= starts[i + 1]) return f;
  }
  return starts.empty() ? 0.0 : starts.back();
}

// Thread t's final phase as the scan runs it (no stealing), after `start`.
double static_final(const std::vector<double>& c, LocalStrategy strategy, Span exclusive, Span before, Span seg) {
  double time = cost(c, exclusive, before);
  Span acc = join(exclusive, before);
  if (strategy == LocalStrategy::scan_then_map) {
    if (acc.empty()) return 0.0;  // the local prefixes are final
    for (std::int64_t k = seg.first; k <= seg.last; ++k) time += cost(c, acc, {seg.first, k});
    return time;
  }
  for (std::int64_t k = seg.first; k <= seg.last; ++k) {
    time += cost(c, acc, single(k));
    acc = join(acc, single(k));
  }
  return time;
}

using RankPlanner = std::function<RankTimes(const std::vector<double>&, std::int64_t, std::size_t, std::size_t)>;

struct Ranks {
  std::vector<RankTimes> times;
  GlobalPhaseTimes global;
  ScanModel model;
};

Ranks plan_ranks(const std::vector<double>& costs, int ranks, int threads, GlobalScanAlgorithm algorithm,
                 const RankPlanner& planner, bool balanced_blocks = false) {
  check(costs, ranks, threads);
  Ranks out;
  const auto sizes = balanced_blocks ? cost_balanced_blocks(costs, ranks, threads) : equal_blocks(costs.size(), ranks);
  std::vector<double> ready;
  std::int64_t offset = 0;
  for (int r = 0; r < ranks; ++r) {
    out.times.push_back(planner(costs, offset, sizes[std::size_t(r)], std::size_t(threads)));
    ready.push_back(out.times.back().root_ready);
    out.model.rank_sums_s = std::max(out.model.rank_sums_s, ready.back());
    offset += std::int64_t(sizes[std::size_t(r)]);
  }
  out.global = model_global_phase(costs, sizes, ready, algorithm);
  for (double d : out.global.done) out.model.global_s = std::max(out.model.global_s, d);
  out.model.makespan_s = out.model.global_s;
  return out;
}

// Global phase helpers: one algorithm each, as global_scan.hpp sends.
struct GlobalState {
  std::vector<double> t;  // each master's clock
  std::vector<Span> cur;  // each rank's partial
  std::vector<bool> needed;
  const std::vector<double>* c;
  // Rank r takes (from `from`'s partial and time at sending) cur = from ⊕ cur.
  void receive(std::size_t r, double sent_at, Span from) {
    t[r] = std::max(t[r], sent_at) + (needed[r] ? cost(*c, from, cur[r]) : 0.0);
    cur[r] = join(from, cur[r]);
  }
};

void dissemination(GlobalState& g) {
  const std::size_t p = g.t.size();
  for (std::size_t d = 1; d < p; d *= 2) {
    const auto t0 = g.t;
    const auto c0 = g.cur;
    for (std::size_t r = d; r < p; ++r) g.receive(r, t0[r - d], c0[r - d]);
  }
}

void blelloch(GlobalState& g) {
  const std::size_t p = g.t.size();
  std::size_t top = 1;
  for (std::size_t d = 1; d < p; d *= 2) {
    top = d;
    const auto t0 = g.t;
    const auto c0 = g.cur;
    for (std::size_t r = d; r < p; ++r)
      if ((r + 1) % (2 * d) == 0) g.receive(r, t0[r - d], c0[r - d]);
  }
  for (std::size_t d = top; d >= 1; d /= 2) {
    const auto t0 = g.t;
    const auto c0 = g.cur;
    for (std::size_t r = d; r < p; ++r)
      if ((r - d + 1) % (2 * d) == 0) g.receive(r, t0[r - d], c0[r - d]);
  }
}

void ladner_fischer(GlobalState& g) {
  const std::size_t p = g.t.size();
  {
    const auto t0 = g.t;
    const auto c0 = g.cur;
    for (std::size_t r = 1; r < p; r += 2) g.receive(r, t0[r - 1], c0[r - 1]);
  }
  const std::size_t odd = p / 2;
  for (std::size_t d = 1; d < odd; d *= 2) {
    const auto t0 = g.t;
    const auto c0 = g.cur;
    for (std::size_t j = 0; j < odd; ++j)
      if (j % (2 * d) >= d) {
        const std::size_t s = 2 * ((j / (2 * d)) * (2 * d) + d - 1) + 1;
        g.receive(2 * j + 1, t0[s], c0[s]);
      }
  }
  for (std::size_t r = 2; r < p; r += 2) g.receive(r, g.t[r - 1], g.cur[r - 1]);
}

void linear_chain(GlobalState& g) {
  for (std::size_t r = 1; r < g.t.size(); ++r) g.receive(r, g.t[r - 1], g.cur[r - 1]);
}

}  // namespace

GlobalPhaseTimes model_global_phase(const std::vector<double>& costs, const std::vector<std::size_t>& block_sizes,
                                    const std::vector<double>& ready, GlobalScanAlgorithm algorithm) {
  const std::size_t p = block_sizes.size();
  if (p == 0 || ready.size() != p) throw bad_input("scan model: one ready time per rank");
  GlobalState g{ready, std::vector<Span>(p), std::vector<bool>(p, true), &costs};
  std::int64_t offset = 0;
  std::vector<Span> blocks;
  for (std::size_t r = 0; r < p; ++r) {
    blocks.push_back({offset, offset + std::int64_t(block_sizes[r]) - 1});
    offset += std::int64_t(block_sizes[r]);
    g.cur[r] = r + 1 == p ? Span{} : blocks[r];  // the last rank's result goes to nobody
  }
  g.needed[p - 1] = false;
  switch (algorithm) {
    case GlobalScanAlgorithm::dissemination: dissemination(g); break;
    case GlobalScanAlgorithm::blelloch: blelloch(g); break;
    case GlobalScanAlgorithm::ladner_fischer: ladner_fischer(g); break;
    case GlobalScanAlgorithm::mpi_scan: linear_chain(g); break;
  }
  GlobalPhaseTimes out{g.t, std::vector<double>(p, 0.0)};
  // Rank 0 sends its own sum at once; rank r ≥ 1 its inclusive result once its global phase is done.
  for (std::size_t r = 1; r < p; ++r) out.exclusive[r] = r == 1 ? ready[0] : out.done[r - 1];
  return out;
}

ScanModel model_static_scan(const std::vector<double>& costs, int ranks, int threads, GlobalScanAlgorithm algorithm,
                            LocalStrategy strategy) {
  Ranks all = plan_ranks(costs, ranks, threads, algorithm, &static_rank);
  for (std::size_t r = 0; r < all.times.size(); ++r) {
    const RankTimes& rt = all.times[r];
    const Span exclusive{0, rt.block.first - 1};
    const double e = all.global.exclusive[r];
    for (std::size_t t = 0; t < rt.segments.size(); ++t) {
      const double start = t == 0 ? std::max(e, all.global.done[r]) : std::max(e, rt.before_ready[t]);
      const Span before = t == 0 ? Span{} : Span{rt.block.first, rt.segments[t].first - 1};
      all.model.makespan_s =
          std::max(all.model.makespan_s, start + static_final(costs, strategy, exclusive, before, rt.segments[t]));
    }
  }
  return all.model;
}

namespace {

ScanModel ideal_stealing(const std::vector<double>& costs, int ranks, int threads, GlobalScanAlgorithm algorithm,
                         bool between_ranks, bool shared_final_phase, bool whole_elements) {
  const bool last_inside = shared_final_phase && threads > 1;
  const RankPlanner planner = [last_inside, whole_elements](const std::vector<double>& c, std::int64_t offset,
                                                            std::size_t n, std::size_t workers) {
    return ideal_rank(c, offset, n, workers, last_inside, whole_elements);
  };
  Ranks all = plan_ranks(costs, ranks, threads, algorithm, planner, between_ranks);
  for (std::size_t r = 0; r < all.times.size(); ++r) {
    const RankTimes& rt = all.times[r];
    const double e = all.global.exclusive[r];
    // Every element once; on rank 0 (nothing precedes it) the first segment's
    // local prefixes, kept from the reduce when there is stealing, are final
    // already (one thread: its first element).
    const std::int64_t from = r > 0 ? rt.block.first : rt.segments.size() > 1 ? rt.segments[0].last + 1 : 1;
    double work = sum_of(costs, from, rt.block.last + 1);
    std::vector<bool> paid_ahead(static_cast<std::size_t>(rt.block.last + 1 - from), false);
    std::vector<double> starts{std::max(e, all.global.done[r])};
    for (std::size_t t = 1; t < rt.segments.size(); ++t) {
      // Start from the prefix within the rank (then exclusive ⊕ before costs the
      // element before the segment) or from it extended by the segment's first
      // element, paid ahead — whichever finishes earlier.
      const double plain_extra = r == 0 ? 0.0 : rt.end_cost[t];
      const double plain = std::max(e, rt.before_ready[t]), head = std::max(e, rt.head_ready[t]);
      const double head_saves = r == 0 ? costs[static_cast<std::size_t>(rt.segments[t].first)] : 0.0;
      if (head <= plain + plain_extra + head_saves) {
        starts.push_back(head);
        work -= head_saves;  // rank 0: x[lo] paid ahead is its prefix's last application
        if (head_saves > 0.0) paid_ahead[static_cast<std::size_t>(rt.segments[t].first - from)] = true;
      } else if (whole_elements) {
        starts.push_back(plain + plain_extra);  // exclusive ⊕ before: one application, its own
      } else {
        starts.push_back(plain);
        work += plain_extra;
      }
    }
    double finish = 0.0;
    if (whole_elements) {
      std::vector<double> items;
      for (std::size_t i = 0; i < paid_ahead.size(); ++i)
        if (!paid_ahead[i]) items.push_back(costs[static_cast<std::size_t>(from) + i]);
      // A bound, not a schedule: the fluid finish, and the dearest item
      // started no earlier than the first thread free.
      const double dearest = items.empty() ? 0.0 : *std::max_element(items.begin(), items.end());
      finish = std::max(fluid_finish(starts, work), *std::min_element(starts.begin(), starts.end()) + dearest);
    } else {
      finish = fluid_finish(starts, work);
    }
    // The tree lets a thread start before the rank's reduce is done: the rank's
    // reduce and final phase together, shared by its threads from 0.
    finish = std::max(finish, (rt.reduce_work + work) / double(rt.segments.size()));
    all.model.makespan_s = std::max(all.model.makespan_s, finish);
  }
  // Stealing that moves no boundary leaves the static schedule: with few
  // elements per thread, the cut points and free elements it keeps may be
  // the cheaper ones.
  const ScanModel fixed = model_static_scan(costs, ranks, threads, algorithm);
  return fixed.makespan_s < all.model.makespan_s ? fixed : all.model;
}

}  // namespace

ScanModel model_ideal_stealing_scan(const std::vector<double>& costs, int ranks, int threads,
                                    GlobalScanAlgorithm algorithm, bool between_ranks, bool shared_final_phase) {
  return ideal_stealing(costs, ranks, threads, algorithm, between_ranks, shared_final_phase, false);
}

ScanModel model_ideal_stealing_scan_whole(const std::vector<double>& costs, int ranks, int threads,
                                          GlobalScanAlgorithm algorithm, bool between_ranks, bool shared_final_phase) {
  return ideal_stealing(costs, ranks, threads, algorithm, between_ranks, shared_final_phase, true);
}

}  // namespace driftscan::mpi
