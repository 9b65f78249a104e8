#include "driftscan/mpi/scan/scan_schedule_model.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <optional>
#include <random>
#include <utility>

#include "driftscan/core/error.hpp"
#include "driftscan/mpi/scan/local_scan.hpp"
#include "driftscan/mpi/scan/stealing_reduce.hpp"

namespace driftscan::mpi {
namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();
// The scan's constants (scan_run.hpp, stealing_reduce.hpp).
constexpr std::size_t kDearEndMinPerThread = 8;
constexpr double kDear = 2.0;
constexpr std::size_t kMinCut = 2;
// The threads of a rank never start together (OpenMP wakes them one by one),
// and the greedy stealing's choices follow who is first: one element dearer
// than the rest lands at a segment's end, charged by every tree level above
// it, or not. So the model is the median of kSamples simulations, the first
// with every thread starting at 0, the others each thread's first decision
// drawn from [0, kStartSpread x the mean cost), as the measured makespan is
// the median of repeated runs (traced 16x64, K=16: rank 12's sum known at
// 0.95 s in one simulation, a 104 ms element ending thread 31's segment and
// paid at five levels; 0.60 s measured).
constexpr unsigned kSamples = 5;
constexpr double kStartSpread = 0.02;

// One rank's schedule. Indices are the rank's own (0..n−1); `off` maps them to
// the global cost table.
class RankSchedule {
 public:
  // `begin[t]`: when thread t takes its first decision (its pace counts from 0).
  RankSchedule(const std::vector<double>& c, std::size_t off, std::size_t n, std::size_t workers,
               std::vector<double> begin)
      : c_(c), off_(off), n_(n), w_(workers), begin_(std::move(begin)) {}

  // The reduce phase and the tree: when the rank's sum is known.
  double reduce_and_tree() {
    reduce();
    tree();
    return root_ready_;
  }

  // The final phase from the exclusive prefix (arrived at `exclusive`) and
  // the master's global phase (done at `master`): when the last application ends.
  double final_phase(double exclusive, double master);

 private:
  // scan-bench's charge for l ⊕ r, l = [l0, l1], r = [r0, r1] (global; l empty: nothing).
  double charge(std::int64_t l0, std::int64_t l1, std::int64_t r0, std::int64_t r1) const {
    if (l1 < l0 || r1 < r0) return 0.0;
    if (l0 == l1 && r0 != r1) return c_[static_cast<std::size_t>(l0)];
    return c_[static_cast<std::size_t>(r1)];
  }
  std::int64_t g(std::size_t k) const { return static_cast<std::int64_t>(off_ + k); }
  double cost(std::size_t k) const { return c_[off_ + k]; }

  void reduce();
  void tree();

  // --- the reduce (stealing_reduce.hpp) ---
  struct Gap {
    std::size_t front = 0, back = 0;
    std::size_t size() const { return back - front; }
  };
  double pace(std::size_t j, double now) const {  // WorkerPace::seconds_per_application
    return std::max(1e-9, now / static_cast<double>(applied_[j] + 1));
  }
  double unclaimed(std::size_t lo, std::size_t hi) const {
    double work = 0.0;
    for (std::size_t q = lo; q < hi; ++q) work += static_cast<double>(gaps_[q].size());
    return work;
  }
  double speed(std::size_t lo, std::size_t hi, double now) const {
    double s = 0.0;
    for (std::size_t j = lo; j < hi; ++j) s += 1.0 / pace(j, now);
    return s;
  }
  bool leave_last_left(std::size_t t) const { return t > 0 && t % 4 == 0 && n_ >= kDearEndMinPerThread * w_; }

  const std::vector<double>& c_;
  std::size_t off_, n_, w_;
  std::vector<double> begin_;
  std::vector<std::size_t> starts_;
  std::vector<Gap> gaps_;  // gap q between threads q and q+1; gaps_[w−1]: the last thread's own
  std::vector<std::size_t> applied_;
  std::vector<std::size_t> lo_, hi_;  // each thread's segment [lo, hi)
  std::vector<double> leaf_ready_;
  std::vector<double> measured_;          // element_seconds_ (< 0: not measured)
  std::vector<std::size_t> local_first_;  // right-taken elements and starts: their local prefix's first
  double root_ready_ = 0.0;
  std::vector<double> start_ready_;  // thread t ≥ 1: the sum of threads 0..t−1 known; 0: its tree done

  // --- the final phase (shared_segment_tail.hpp) ---
  enum class TailState { undecided, open, closed };
  struct Tail {
    TailState state = TailState::undecided;
    std::size_t lo = 0, split = 0, hi = 0, fold_front = 0, fold_end = 0, folded = 0, cut = 0, cut_ready = 0,
                remaining = 0;
    std::vector<char> claimed, done;
  };
  std::vector<Tail> tails_;
  double mean_ = 0.0;

  bool base_known(const Tail& tail, std::size_t a) const {
    return a == tail.lo || tail.folded >= a || (a > tail.lo && a - 1 < tail.hi && tail.done[a - 1 - tail.lo]);
  }
  double measured_or(std::size_t e, double otherwise) const { return measured_[e] >= 0.0 ? measured_[e] : otherwise; }
  std::optional<std::size_t> peek_front(std::size_t u) const;
  std::optional<std::size_t> peek_dearest(std::size_t u, double unmeasured) const;
  std::optional<std::pair<std::size_t, std::size_t>> claim_dearest(std::size_t x, bool own_front, bool siblings,
                                                                   double at_least);
  std::optional<std::pair<std::size_t, std::size_t>> cut_fold(std::size_t x, bool urgent);
  // Thread t's exclusive ⊕ before is known: its tail [its start, hi) opens, its left part is to fold.
  void open_tail(std::size_t t);
  bool all_done() const {
    for (const Tail& tail : tails_)
      if (tail.state == TailState::undecided || (tail.state == TailState::open && tail.remaining > 0)) return false;
    return true;
  }
  // Element e of a tail: P(a−1) ⊕ local(e), a = local_first_[e].
  double element_charge(std::size_t e) const {
    const std::size_t a = local_first_[e];
    return charge(0, g(a) - 1, g(a), g(e));
  }
};

void RankSchedule::reduce() {
  starts_.assign(w_, 0);
  for (std::size_t t = 0; t < w_; ++t) starts_[t] = stealing_start(n_, w_, t, false, true);
  gaps_.assign(w_, {});
  for (std::size_t q = 0; q + 1 < w_; ++q) gaps_[q] = {starts_[q] + 1, std::max(starts_[q] + 1, starts_[q + 1])};
  gaps_[w_ - 1] = {starts_[w_ - 1] + 1, n_};
  applied_.assign(w_, 0);
  lo_ = starts_;
  hi_.assign(w_, 0);
  for (std::size_t t = 0; t < w_; ++t) hi_[t] = starts_[t] + 1;
  leaf_ready_.assign(w_, 0.0);
  measured_.assign(n_, -1.0);
  local_first_.assign(n_, 0);
  for (std::size_t t = 0; t < w_; ++t) local_first_[starts_[t]] = starts_[t];

  std::vector<double> free_at = begin_;
  std::vector<char> running(w_, 0), finished(w_, 0), first_step(w_, 1);
  for (std::size_t left = w_; left > 0;) {
    std::size_t me = w_;
    for (std::size_t t = 0; t < w_; ++t)
      if (!finished[t] && (me == w_ || free_at[t] < free_at[me])) me = t;
    const double now = free_at[me];
    if (running[me]) ++applied_[me], running[me] = 0;
    const bool has_left = me > 0, right_is_own = me + 1 == w_;
    Gap* lg = has_left ? &gaps_[me - 1] : nullptr;
    Gap& rg = gaps_[me];
    const std::size_t keep = leave_last_left(me) ? 1 : 0;
    bool go_right = true;
    if (!has_left) {
      go_right = true;
    } else if (right_is_own) {  // own_side_is_behind
      const double left_work = unclaimed(0, me), left_speed = speed(0, me + 1, now);
      go_right = lg->size() <= keep ||
                 (left_speed <= 0.0 ? left_work <= 0.0
                                    : static_cast<double>(rg.size()) * pace(me, now) >= left_work / left_speed);
    } else if (first_step[me]) {
      go_right = true;
    } else if (lg->size() <= keep) {
      go_right = true;
    } else if (rg.size() == 0) {
      go_right = false;
    } else {  // right_is_behind
      const double left_work = unclaimed(0, me) - static_cast<double>(keep), right_work = unclaimed(me, w_);
      const double ls = speed(0, me, now), rs = speed(me + 1, w_, now);
      go_right = right_work / rs >= left_work / ls;
    }
    first_step[me] = 0;
    std::optional<std::size_t> e;
    bool to_right = go_right;
    if (to_right && rg.size() > 0) e = rg.front++;
    if (!e && has_left && lg->front + keep < lg->back) to_right = false, e = --lg->back;
    if (!e && !go_right && rg.size() > 0) to_right = true, e = rg.front++;
    if (!e) {
      leaf_ready_[me] = now;
      finished[me] = 1;
      --left;
      continue;
    }
    double d = 0.0;
    if (to_right) {
      d = charge(g(lo_[me]), g(hi_[me] - 1), g(*e), g(*e));
      measured_[*e] = d;
      local_first_[*e] = lo_[me];
      hi_[me] = *e + 1;
    } else {
      d = charge(g(*e), g(*e), g(lo_[me]), g(hi_[me] - 1));
      measured_[hi_[me] - lo_[me] == 1 ? lo_[me] : *e] = d;  // charged as steal_segment() measures
      lo_[me] = *e;
    }
    free_at[me] = now + d;
    running[me] = 1;
  }
}

// combine_up_tree(), then each thread's plain start: assemble(t, t).
void RankSchedule::tree() {
  std::vector<std::vector<std::pair<std::size_t, std::size_t>>> span(1);  // [lo, hi) per node
  std::vector<std::vector<double>> ready(1, std::vector<double>(w_, kNever));
  for (std::size_t t = 0; t < w_; ++t) span[0].emplace_back(lo_[t], hi_[t]);
  for (std::size_t width = 2; width / 2 < w_; width *= 2) {
    span.emplace_back((w_ + width - 1) / width);
    ready.emplace_back((w_ + width - 1) / width, kNever);
  }
  std::vector<double> clock(w_);
  for (std::size_t t = 0; t < w_; ++t) clock[t] = leaf_ready_[t];
  ready[0] = leaf_ready_;
  // Level by level: a node's children are known before it (its combining thread waits for them).
  for (std::size_t level = 0; level + 1 < span.size(); ++level) {
    const std::size_t width = std::size_t(2) << level;
    for (std::size_t t = 0; t < w_; t += width) {
      const std::size_t i = t / width;
      const auto left = span[level][2 * i];
      if (2 * i + 1 < span[level].size()) {
        const auto right = span[level][2 * i + 1];
        clock[t] = std::max(clock[t], ready[level][2 * i + 1]) +
                   charge(g(left.first), g(left.second - 1), g(right.first), g(right.second - 1));
        span[level + 1][i] = {left.first, right.second};
      } else {
        span[level + 1][i] = left;
      }
      ready[level + 1][i] = clock[t];
    }
  }
  root_ready_ = ready.back()[0];
  start_ready_.assign(w_, 0.0);
  start_ready_[0] = clock[0];
  for (std::size_t t = 1; t < w_; ++t) {
    double at = clock[t];
    std::size_t pos = 0;
    bool empty = true;
    for (std::size_t level = span.size(); level-- > 0;)
      if ((t >> level) & 1) {
        const std::size_t i = pos >> level;
        const auto block = span[level][i];
        at = std::max(at, ready[level][i]) +
             (empty ? 0.0 : charge(g(0), g(block.first) - 1, g(block.first), g(block.second - 1)));
        empty = false;
        pos += std::size_t(1) << level;
      }
    start_ready_[t] = at;
  }
}

std::optional<std::size_t> RankSchedule::peek_front(std::size_t u) const {
  const Tail& tail = tails_[u];
  if (tail.state != TailState::open) return std::nullopt;
  for (std::size_t e = tail.split; e < tail.hi; ++e)
    if (!tail.claimed[e - tail.lo])
      return base_known(tail, local_first_[e]) ? std::optional<std::size_t>(e) : std::nullopt;
  return std::nullopt;
}

std::optional<std::size_t> RankSchedule::peek_dearest(std::size_t u, double unmeasured) const {
  const Tail& tail = tails_[u];
  if (tail.state != TailState::open) return std::nullopt;
  std::optional<std::size_t> best;
  double best_cost = 0.0;
  for (std::size_t e = tail.hi; e-- > tail.cut;) {
    if (e < tail.split && e >= tail.cut_ready) continue;
    if (tail.claimed[e - tail.lo]) continue;
    if (!base_known(tail, local_first_[e])) continue;
    const double c = measured_or(e, unmeasured);
    if (!best || c > best_cost) best = e, best_cost = c;
  }
  return best;
}

std::optional<std::pair<std::size_t, std::size_t>> RankSchedule::claim_dearest(std::size_t x, bool own_front,
                                                                               bool siblings, double at_least) {
  const double unmeasured = at_least > 0.0 ? mean_ : kNever;
  double best = -1.0;
  std::size_t owner = 0, element = 0;
  if (auto e = own_front ? peek_front(x) : std::nullopt; e && measured_or(*e, unmeasured) >= at_least) {
    best = measured_or(*e, unmeasured);
    owner = x;
    element = *e;
  }
  for (std::size_t u = siblings ? 0 : x; u < (siblings ? w_ : x + 1); ++u)
    if (auto e = peek_dearest(u, unmeasured);
        e && measured_or(*e, unmeasured) >= at_least && measured_or(*e, unmeasured) > best) {
      best = measured_or(*e, unmeasured);
      owner = u;
      element = *e;
    }
  if (best < 0.0) return std::nullopt;
  Tail& tail = tails_[owner];
  tail.claimed[element - tail.lo] = 1;
  --tail.remaining;
  return std::make_pair(owner, element);
}

// The cut of scan_run.hpp's cut_fold(): (owner, end) with the owner's fold
// now ending at the cut's first element m (tail.cut), or nothing.
std::optional<std::pair<std::size_t, std::size_t>> RankSchedule::cut_fold(std::size_t x, bool urgent) {
  auto cost_of = [&](std::size_t e) { return measured_or(e, mean_); };
  std::size_t owner = 0;
  double longest = 0.0, unrun = 0.0;
  for (std::size_t u = 0; u < w_; ++u) {
    const Tail& tail = tails_[u];
    if (tail.state != TailState::open) continue;
    const std::size_t next = tail.fold_front, end = tail.fold_end;
    double c = 0.0;
    for (std::size_t e = next; e < end; ++e) c += cost_of(e);
    unrun += c + mean_ * static_cast<double>(tail.remaining);
    if (u == x || end < next + 2 * kMinCut) continue;
    if (c > longest) longest = c, owner = u;
  }
  if (longest <= 0.0) return std::nullopt;
  if (urgent && longest * static_cast<double>(w_) <= unrun) return std::nullopt;
  Tail& tail = tails_[owner];
  if (tail.cut != tail.split) return std::nullopt;  // at most one cut per tail
  const std::size_t next = tail.fold_front, end = tail.fold_end;
  if (end != tail.split || end < next + 2 * kMinCut) return std::nullopt;
  double total = 0.0, before = 0.0;
  for (std::size_t e = next; e < end; ++e) total += cost_of(e);
  std::size_t m = next;
  while (m < end && before + cost_of(m) <= total / 2) before += cost_of(m++);
  m = std::clamp(m, next + kMinCut, end - kMinCut);
  tail.fold_end = m;
  tail.cut = m;
  tail.cut_ready = m + 1;  // the cutter's local prefix of m is the element itself
  tail.remaining += end - m;
  for (std::size_t e = m; e < end; ++e) local_first_[e] = m;
  return std::make_pair(owner, end);
}

void RankSchedule::open_tail(std::size_t t) {
  Tail& tail = tails_[t];
  tail.state = TailState::open;
  tail.lo = lo_[t], tail.split = starts_[t], tail.hi = hi_[t];
  tail.fold_front = tail.lo, tail.fold_end = tail.split, tail.folded = tail.lo;
  tail.cut = tail.cut_ready = tail.split;
  tail.remaining = tail.hi - tail.split;
  tail.claimed.assign(tail.hi - tail.lo, 0);
  tail.done.assign(tail.hi - tail.lo, 0);
}

double RankSchedule::final_phase(double exclusive, double master) {
  double sum = 0.0;
  std::size_t count = 0;
  for (double s : measured_)
    if (s >= 0.0) sum += s, ++count;
  mean_ = count > 0 ? sum / static_cast<double>(count) : 0.0;
  tails_.assign(w_, {});
  const bool first_rank = off_ == 0;

  // Each thread's next action, run when it is free: what its pending
  // application finishes, then what it decides (scan_run.hpp's worker()).
  enum class Step { begin, own_dear, fold, help, cutting, done };
  enum class Ends { nothing, base, element, fold, cut_local };
  struct Worker {
    Step step = Step::begin;
    Ends ends = Ends::nothing;
    double free_at = kNever;
    bool idle = false;
    std::size_t owner = 0, element = 0, cut_end = 0;
  };
  std::vector<Worker> workers(w_);
  for (std::size_t t = 0; t < w_; ++t)
    workers[t].free_at = t == 0 ? std::max(exclusive, master) : std::max(exclusive, start_ready_[t]);
  double finish = 0.0;
  while (true) {
    std::size_t x = w_;
    for (std::size_t t = 0; t < w_; ++t)
      if (workers[t].step != Step::done && !workers[t].idle && (x == w_ || workers[t].free_at < workers[x].free_at))
        x = t;
    if (x == w_) break;  // everybody done (or waiting for nothing more to come)
    Worker& me = workers[x];
    const double now = me.free_at;
    finish = std::max(finish, now);
    bool changed = me.ends != Ends::nothing;
    switch (me.ends) {
      case Ends::base: open_tail(x); break;  // exclusive ⊕ before known
      case Ends::element: tails_[me.owner].done[me.element - tails_[me.owner].lo] = 1; break;
      case Ends::fold: tails_[x].folded = me.element + 1; break;
      case Ends::cut_local: tails_[me.owner].cut_ready = me.element + 1; break;
      case Ends::nothing: break;
    }
    me.ends = Ends::nothing;
    auto run = [&](Ends ends, std::size_t owner, std::size_t element, double d) {
      me.ends = ends, me.owner = owner, me.element = element, me.free_at = now + d;
    };
    while (me.ends == Ends::nothing && !me.idle && me.step != Step::done) {
      switch (me.step) {
        case Step::begin:
          if (first_rank && x == 0) {  // publish_head(): its prefixes are final since the reduce
            tails_[0].state = TailState::closed;
            me.step = Step::help;
          } else {
            me.step = Step::own_dear;
            run(Ends::base, x, 0, charge(0, g(0) - 1, g(0), g(lo_[x]) - 1));
          }
          changed = true;
          break;
        case Step::own_dear:
          if (auto claimed = claim_dearest(x, false, false, kDear * mean_)) {
            run(Ends::element, claimed->first, claimed->second, element_charge(claimed->second));
            changed = true;
          } else {
            me.step = Step::fold;
          }
          break;
        case Step::fold:
          if (tails_[x].fold_front < tails_[x].fold_end) {
            const std::size_t k = tails_[x].fold_front++;
            run(Ends::fold, x, k, cost(k));
            changed = true;
          } else {
            me.step = Step::help;
          }
          break;
        case Step::cutting:
          if (me.element + 1 < me.cut_end) {
            run(Ends::cut_local, me.owner, me.element + 1, cost(me.element + 1));
          } else {
            me.step = Step::help;
          }
          break;
        case Step::help: {
          auto cut = cut_fold(x, true);
          std::optional<std::pair<std::size_t, std::size_t>> claimed;
          if (!cut) claimed = claim_dearest(x, true, true, 0.0);
          if (!cut && !claimed) cut = cut_fold(x, false);
          if (cut) {
            me.step = Step::cutting;
            me.owner = cut->first;
            me.cut_end = cut->second;
            me.element = tails_[cut->first].cut;  // the cut's first element needs no application
            changed = true;
          } else if (claimed) {
            run(Ends::element, claimed->first, claimed->second, element_charge(claimed->second));
            changed = true;
          } else if (all_done()) {
            me.step = Step::done;
          } else {
            me.idle = true;  // woken by the next change
          }
          break;
        }
        case Step::done: break;
      }
    }
    if (changed)
      for (std::size_t t = 0; t < w_; ++t)
        if (workers[t].idle) workers[t].idle = false, workers[t].free_at = now;
  }
  for (const Tail& tail : tails_)
    if (tail.state != TailState::closed && (tail.state != TailState::open || tail.remaining > 0))
      throw failure("scan schedule model: internal error: an element was never run");
  return finish;
}

// One simulation, each thread's first decision at begin[t] drawn from [0, spread).
ScanModel simulate(const std::vector<double>& costs, int ranks, int threads, GlobalScanAlgorithm algorithm,
                   double spread, unsigned seed) {
  const std::size_t p = static_cast<std::size_t>(ranks), w = static_cast<std::size_t>(threads);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> late(0.0, spread);
  std::vector<RankSchedule> schedules;
  std::vector<std::size_t> sizes;
  std::vector<double> ready;
  ScanModel model;
  std::size_t offset = 0;
  for (std::size_t r = 0; r < p; ++r) {
    sizes.push_back(static_segment(costs.size(), p, r).size());
    std::vector<double> begin(w, 0.0);
    if (spread > 0.0)
      for (double& b : begin) b = late(rng);
    schedules.emplace_back(costs, offset, sizes.back(), w, std::move(begin));
    ready.push_back(schedules.back().reduce_and_tree());
    model.rank_sums_s = std::max(model.rank_sums_s, ready.back());
    offset += sizes.back();
  }
  const GlobalPhaseTimes global = model_global_phase(costs, sizes, ready, algorithm);
  for (std::size_t r = 0; r < p; ++r) {
    model.global_s = std::max(model.global_s, global.done[r]);
    model.makespan_s = std::max(model.makespan_s, schedules[r].final_phase(global.exclusive[r], global.done[r]));
  }
  model.makespan_s = std::max(model.makespan_s, model.global_s);
  return model;
}

}  // namespace

ScanModel model_simulated_stealing_scan(const std::vector<double>& costs, int ranks, int threads,
                                        GlobalScanAlgorithm algorithm) {
  if (ranks < 1 || threads < 1) throw bad_input("scan model: ranks and threads must be at least 1");
  if (costs.size() < std::size_t(ranks) * std::size_t(threads))
    throw bad_input("scan model: fewer elements than workers");
  if (threads == 1) return model_static_scan(costs, ranks, threads, algorithm);
  const double spread = kStartSpread * std::accumulate(costs.begin(), costs.end(), 0.0) / double(costs.size());
  std::vector<ScanModel> runs;
  for (unsigned s = 0; s < kSamples; ++s)
    runs.push_back(simulate(costs, ranks, threads, algorithm, s == 0 ? 0.0 : spread, 1410 + s));
  std::sort(runs.begin(), runs.end(),
            [](const ScanModel& a, const ScanModel& b) { return a.makespan_s < b.makespan_s; });
  return runs[runs.size() / 2];
}

}  // namespace driftscan::mpi
