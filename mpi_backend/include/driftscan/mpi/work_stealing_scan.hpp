#pragma once
// The hierarchical distributed inclusive scan: MPI ranks × OpenMP threads.
//
// The sequence is block-distributed over ranks (rank r holds a contiguous
// block, ranks in order, blocks may be empty) and each rank's block over its
// threads. Phases, per rank:
//   1. local: every thread reduces (reduce-then-scan, optionally with work
//      stealing between neighbouring threads) or scans (scan-then-map) its
//      segment;
//   2. the threads reduce their sums by a tree, then the master thread runs
//      the global scan over ranks (only ranks take part — global_scan.hpp),
//      while the other threads assemble the prefixes of their segments within
//      the rank; the exclusive prefix of the ranks before arrives whenever
//      rank r−1 is done, and the master hands it over at once;
//   3. local: every thread scans its segment — as stealing left it — from the
//      carried-in prefix (reduce-then-scan), or maps its local prefixes
//      (scan-then-map), as soon as that prefix and its own are known.
// Nothing waits on a barrier: each thread waits only for the results it needs.
// Results equal sequential_inclusive_scan for any associative operator, in
// any configuration; the operator must be thread-safe (it is applied
// concurrently) and may be expensive and of unpredictable cost. Only the
// master thread calls MPI (MPI_THREAD_FUNNELED suffices).
//
//   WorkStealingScan scan(MPI_COMM_WORLD, options);      // plan (collective)
//   std::vector<T> prefixes = scan.run(block, op, &trace);  // execute (collective)
#include <chrono>
#include <cstddef>
#include <deque>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include <mpi.h>
#include <omp.h>

#include "driftscan/error.hpp"
#include "driftscan/mpi/global_scan.hpp"
#include "driftscan/mpi/idle_wait.hpp"
#include "driftscan/mpi/local_scan.hpp"
#include "driftscan/mpi/scan_element_codec.hpp"
#include "driftscan/mpi/scan_partial.hpp"
#include "driftscan/mpi/scan_trace.hpp"
#include "driftscan/mpi/sleeping_barrier.hpp"
#include "driftscan/mpi/stealing_reduce.hpp"

namespace driftscan::mpi {

// run()'s default `on_output`: nothing to learn.
struct NoScanOutputHook {
  template <class T>
  void operator()(std::size_t, const T&) const {}
};

struct ScanOptions {
  GlobalScanAlgorithm algorithm = GlobalScanAlgorithm::dissemination;
  LocalStrategy strategy = LocalStrategy::reduce_then_scan;
  bool work_stealing = true;  // reduce-then-scan only; scan-then-map is always static
  int threads = 1;            // OpenMP threads per rank
};

class WorkStealingScan {
 public:
  // Collective over `comm` (duplicates it, so the scan's messages never meet the caller's).
  WorkStealingScan(MPI_Comm comm, ScanOptions options) : options_(options) {
    if (options_.threads < 1) throw bad_input("scan: threads must be at least 1");
    MPI_Comm_dup(comm, &comm_);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  ~WorkStealingScan() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }
  WorkStealingScan(const WorkStealingScan&) = delete;
  WorkStealingScan& operator=(const WorkStealingScan&) = delete;

  const ScanOptions& options() const { return options_; }
  // Whether the reduce phase steals (it needs reduce-then-scan).
  bool steals() const { return options_.work_stealing && options_.strategy == LocalStrategy::reduce_then_scan; }

  // Collective. `block`: this rank's elements; returns their inclusive
  // prefixes over the whole distributed sequence. `op(a, b)` returns a ⊕ b.
  // On an operator failure on any rank, every rank throws the same Error.
  // With `trace`, every application is recorded (trace->gather() afterwards).
  // `on_output(k, prefix)` is called as soon as block[k]'s final prefix is
  // known (checkpoints), from the worker thread that computed it: it runs
  // concurrently, must be cheap, thread-safe, and must not throw.
  template <class T, class Op, class Codec = ScanElementCodec<T>, class OnOutput = NoScanOutputHook>
  std::vector<T> run(const std::vector<T>& block, Op&& op, ScanTrace* trace = nullptr,
                     OnOutput&& on_output = OnOutput{}) {
    const std::size_t n = block.size();
    if (n >= (std::size_t(1) << 32) - 1) throw bad_input("scan: more than 2^32 elements on one rank");
    long long count = static_cast<long long>(n), before = 0;
    MPI_Request request;
    MPI_Iexscan(&count, &before, 1, MPI_LONG_LONG, MPI_SUM, comm_, &request);
    wait_idle(request);
    const std::int64_t offset = rank_ == 0 ? 0 : before;

    if (trace) {
      trace->begin(comm_, options_.threads);
      trace->details() = {{"algorithm", to_string(options_.algorithm)},
                          {"strategy", to_string(options_.strategy)},
                          {"work_stealing", steals()}};
    }
    const ScanClock clock = trace ? trace->clock() : ScanClock();
    // The operator, timed and recorded when tracing.
    auto applier = [&](int thread, ScanPhase phase, bool stolen) {
      return [&, thread, phase, stolen](const ScanPartial<T>& l, const ScanPartial<T>& r) -> T {
        if (!trace) return op(l.value(), r.value());
        const double start = clock.now();
        T result = op(l.value(), r.value());
        trace->record(thread, ScanRecord{rank_, thread, l.first(), r.last(), phase,
                                         static_cast<std::uint8_t>(stolen ? 1 : 0), start, clock.now()});
        return result;
      };
    };
    auto element = [&](std::size_t k) {
      return ScanPartial<T>::of(block[k], offset + static_cast<std::int64_t>(k), offset + static_cast<std::int64_t>(k));
    };

    std::vector<std::optional<T>> out(n);
    // tree[0][t]: thread t's segment sum; tree[l][i]: sum of threads i·2^l … (i+1)·2^l − 1.
    // Node (l, i) has the flag tree_base[l] + i, set once its value is written
    // (for a leaf, also the thread's final segment).
    std::vector<std::vector<ScanPartial<T>>> tree;
    std::vector<std::size_t> tree_base;
    ReadyFlags ready;
    std::vector<SegmentRange> segments;
    std::vector<SegmentGap> gaps(options_.threads > 1 ? static_cast<std::size_t>(options_.threads - 1) : 0);
    std::vector<WorkerPace> paces(static_cast<std::size_t>(options_.threads));
    // What precedes this rank: rank r−1's inclusive result. The final phase
    // needs nothing else from the global phase, so the master hands it over
    // (opens `exclusive_known`) the moment it arrives — often while it is
    // still waiting for its own threads or running its part of the global
    // phase. exclusive_ok: it did arrive (false only after an MPI-level error).
    ScanPartial<T> exclusive;
    bool exclusive_ok = false;
    SleepingGate exclusive_known;
    ExclusiveReceiver<T, Codec> receiver(comm_);
    // This rank's own failure (its sum, or its global result), reported
    // instead of any final-phase result.
    ScanPartial<T> rank_failure;
    std::exception_ptr global_error;
    std::vector<ScanPartial<T>> final_status(1);
    SleepingBarrier barrier;
    // Measured time of the reduce-phase application that took each element
    // (< 0: not measured — a thread's starting element).
    std::vector<double> element_seconds(steals() ? n : 0, -1.0);

    // Master thread only: the global scan over the ranks' sums. Only ranks
    // below the last need their inclusive result (values flow to higher
    // ranks), so the last rank enters with nothing and applies no operator.
    // A failure is kept as a value and agreed on once, after the final phase:
    // no rank waits for the slowest one's global phase before it starts its
    // own final phase.
    auto global_inclusive = [&](const ScanPartial<T>& total) {
      const ScanPartial<T> mine = rank_ + 1 == size_ ? ScanPartial<T>{} : total;
      ScanPartial<T> inclusive =
          global_inclusive_scan<T, Codec>(comm_, mine, options_.algorithm, applier(0, ScanPhase::global, false));
      if (total.failed()) rank_failure = total;
      else if (inclusive.failed() && rank_ + 1 < size_) rank_failure = inclusive;
      return inclusive;
    };
    auto publish_exclusive = [&](const ScanPartial<T>& value) {
      exclusive = value;
      exclusive_ok = true;
      exclusive_known.open();
    };
    if (receiver.done()) publish_exclusive(ScanPartial<T>{});  // rank 0: nothing precedes it

    if (n == 0) {
      ScanPartial<T> inclusive = global_inclusive(ScanPartial<T>{});
      ScanPartial<T> before_rank = exclusive_from_inclusive<T, Codec>(comm_, inclusive);
      if (before_rank.failed()) final_status[0] = before_rank;
      if (rank_failure.failed()) final_status[0] = rank_failure;
    } else {
      const std::size_t wanted = std::min<std::size_t>(static_cast<std::size_t>(options_.threads), n);
#pragma omp parallel num_threads(static_cast<int>(wanted))
      {
        const std::size_t t = static_cast<std::size_t>(omp_get_thread_num());
#pragma omp single
        {  // OpenMP may grant fewer threads than asked: size everything by what it gave.
          const std::size_t workers = static_cast<std::size_t>(omp_get_num_threads());
          tree.assign(1, std::vector<ScanPartial<T>>(workers));
          for (std::size_t width = 2; width / 2 < workers; width *= 2)
            tree.emplace_back((workers + width - 1) / width);
          tree_base.assign(tree.size(), 0);
          for (std::size_t l = 1; l < tree.size(); ++l) tree_base[l] = tree_base[l - 1] + tree[l - 1].size();
          ready.reset(tree_base.back() + tree.back().size());
          final_status.assign(workers, {});
          segments.assign(workers, {});
          for (std::size_t g = 0; g + 1 < workers; ++g)
            gaps[g].reset(stealing_start(n, workers, g) + 1, stealing_start(n, workers, g + 1));
          for (std::size_t w = 0; w < workers; ++w) paces[w].start();
          barrier.reset(workers);
        }  // implicit barrier (all threads arrive together here)
        const std::size_t workers = tree[0].size();
        const int thread = static_cast<int>(t);

        // Waiting for a tree node. The master polls for the exclusive prefix
        // meanwhile (MPI_THREAD_FUNNELED: nobody else may), so the final
        // phase is not held up by this rank's slowest reduce.
        auto wait_node = [&](std::size_t level, std::size_t i) {
          const std::size_t flag = tree_base[level] + i;
          if (t != 0) return ready.wait(flag);
          IdleBackoff backoff;
          while (!exclusive_known.is_open() && !ready.is_set(flag)) {
            try {
              if (receiver.poll()) publish_exclusive(receiver.value());
            } catch (...) {
              global_error = std::current_exception();
              exclusive_known.open();
            }
            if (!exclusive_known.is_open()) backoff.pause();
          }
          ready.wait(flag);
        };

        // Phase 1.
        SegmentRange seg = static_segment(n, workers, t);
        if (options_.strategy == LocalStrategy::scan_then_map) {
          ScanPartial<T> acc = element(seg.lo);
          out[seg.lo] = block[seg.lo];
          for (std::size_t k = seg.lo + 1; k < seg.hi && !acc.failed(); ++k) {
            acc = combine_partials(acc, element(k), applier(thread, ScanPhase::local_scan, false));
            if (acc.has_value()) out[k] = acc.value();
          }
          tree[0][t] = std::move(acc);
        } else if (steals() && workers > 1) {
          auto apply = [&](const ScanPartial<T>& l, const ScanPartial<T>& r, bool stolen) {
            const auto start = std::chrono::steady_clock::now();
            T result = applier(thread, ScanPhase::local_reduce, stolen)(l, r);
            const std::int64_t k = (l.first() == l.last() && r.first() != r.last()) ? l.first() : r.last();
            element_seconds[static_cast<std::size_t>(k - offset)] =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            return result;
          };
          tree[0][t] = stealing_reduce(block, offset, t, workers, gaps, paces, apply, seg);
        } else {
          ScanPartial<T> acc = element(seg.lo);
          for (std::size_t k = seg.lo + 1; k < seg.hi && !acc.failed(); ++k)
            acc = combine_partials(acc, element(k), applier(thread, ScanPhase::local_reduce, false));
          tree[0][t] = std::move(acc);
        }
        segments[t] = seg;
        ready.set(tree_base[0] + t);

        // Phase 2a: the rank's sum by a pairwise tree over the threads' sums
        // (⌈log2 T⌉ levels); each node is combined as soon as its two
        // children are known. It is all the global phase waits for; the
        // prefixes of the threads' sums come later, in its shadow.
        for (std::size_t level = 0; (std::size_t(1) << level) < workers; ++level) {
          const std::size_t width = std::size_t(2) << level;
          if (t % width != 0) break;
          const std::size_t i = t / width;
          if (2 * i + 1 < tree[level].size()) {
            wait_node(level, 2 * i + 1);
            tree[level + 1][i] = combine_partials(tree[level][2 * i], tree[level][2 * i + 1],
                                                  applier(thread, ScanPhase::thread_combine, false));
          } else {
            tree[level + 1][i] = tree[level][2 * i];
          }
          ready.set(tree_base[level + 1] + i);
        }

        // Phase 2b: the master runs the global phase (MPI_THREAD_FUNNELED);
        // meanwhile every other thread assembles what precedes its segment
        // inside the rank from the tree's blocks, waiting only for those.
        ScanPartial<T> before, head;  // sums of threads 0..t−1; and through the segment's first element
        seg = segments[t];
        // The tree blocks that make up threads 0..u−1, in order.
        auto blocks_before = [&](std::size_t u) {
          std::vector<std::pair<std::size_t, std::size_t>> blocks;  // (level, index)
          std::size_t pos = 0;
          for (std::size_t level = tree.size(); level-- > 0;)
            if ((u >> level) & 1) {
              blocks.emplace_back(level, pos >> level);
              pos += std::size_t(1) << level;
            }
          return blocks;
        };
        auto assemble = [&](std::size_t u) {
          ScanPartial<T> sum;
          for (auto [level, i] : blocks_before(u)) {
            wait_node(level, i);
            sum = combine_partials(sum, tree[level][i], applier(thread, ScanPhase::thread_combine, false));
          }
          return sum;
        };
        // With stealing, what the final phase starts from is chosen by the
        // costs measured in the reduce phase (an application's cost is taken
        // as that of the element its result ends on; the slow element a
        // reduce ended on is often at a segment boundary, so paying it again
        // on the critical path hurts). After the global phase, thread t pays
        //   plain: exclusive ⊕ before            — the cost of element lo−1 (none on rank 0);
        //   head:  exclusive ⊕ (before ⊕ x[lo])  — nothing beyond its own elements,
        //          having paid lo once more ahead;
        //   shift: exclusive ⊕ (before_{t−1} ⊕ (segment_{t−1} ⊕ x[lo])) — the same,
        //          never paying lo−1 again, having paid lo twice ahead.
        // Each also costs assembling its blocks. Take the cheapest in total
        // (what is paid ahead is hidden only if the global phase takes
        // longer); on a tie, the one that pays less after it.
        enum class Start { plain, head, shift };
        Start start = Start::plain;
        if (!element_seconds.empty() && t > 0) {
          for (std::size_t u = 0; u < t; ++u) ready.wait(tree_base[0] + u);  // their segments are final
          constexpr double unknown = 1e300;
          auto cost = [&](std::size_t k) { return element_seconds[k] >= 0.0 ? element_seconds[k] : unknown; };
          auto assembly_cost = [&](std::size_t u) {  // each combine after the first ends where a block does
            double c = 0.0;
            std::size_t pos = 0;
            for (auto [level, i] : blocks_before(u)) {
              pos += std::size_t(1) << level;
              if (pos > (std::size_t(1) << level)) c += cost(segments[pos].lo - 1);
            }
            return c;
          };
          const double plain = assembly_cost(t) + (rank_ > 0 ? cost(seg.lo - 1) : 0.0);
          const double with_head = assembly_cost(t) + (rank_ > 0 ? cost(seg.lo) : 0.0);
          const double shift = assembly_cost(t - 1) + (rank_ > 0 ? 2.0 : 1.0) * cost(seg.lo);
          if (with_head < unknown && with_head <= plain && with_head <= shift) start = Start::head;
          else if (shift < unknown && shift <= plain) start = Start::shift;
        }
        if (t > 0) {
          if (start == Start::shift) {
            wait_node(0, t - 1);
            ScanPartial<T> extended =
                combine_partials(tree[0][t - 1], element(seg.lo), applier(thread, ScanPhase::final_scan, false));
            head = combine_partials(assemble(t - 1), extended, applier(thread, ScanPhase::final_scan, false));
          } else {
            before = assemble(t);
            if (start == Start::head)
              head = combine_partials(before, element(seg.lo), applier(thread, ScanPhase::final_scan, false));
          }
        }
        if (t == 0) {
          try {
            std::deque<detail::PendingSend> pending;
            // Rank 0's inclusive result is its own sum: rank 1 gets it now,
            // not after the global phase (MPI_Scan may wait for rank 1 itself).
            if (rank_ == 0) send_inclusive_right<T, Codec>(comm_, tree.back()[0], pending);
            const ScanPartial<T> inclusive = global_inclusive(tree.back()[0]);
            if (rank_ != 0) send_inclusive_right<T, Codec>(comm_, inclusive, pending);
            if (!exclusive_known.is_open()) {
              receiver.wait();
              publish_exclusive(rank_failure.failed() ? rank_failure : receiver.value());
            }
            detail::wait_all(pending);
          } catch (...) {
            global_error = std::current_exception();
            if (!exclusive_known.is_open()) exclusive_known.open();
          }
        } else {
          exclusive_known.wait();  // not a barrier: no thread waits for another's assembly
        }

        // Phase 3.
        if (!exclusive_ok) {
          // an MPI-level error: rethrown below
        } else if (exclusive.failed()) {
          if (t == 0) final_status[0] = exclusive;
        } else if (options_.strategy == LocalStrategy::scan_then_map) {
          ScanPartial<T> prefix = combine_partials(exclusive, before, applier(thread, ScanPhase::map, false));
          if (prefix.has_value()) {
            for (std::size_t k = seg.lo; k < seg.hi && !prefix.failed(); ++k) {
              auto local_prefix = ScanPartial<T>::of(*out[k], offset + static_cast<std::int64_t>(seg.lo),
                                                     offset + static_cast<std::int64_t>(k));
              auto r = combine_partials(prefix, local_prefix, applier(thread, ScanPhase::map, false));
              if (r.has_value()) {
                out[k] = r.value();
                on_output(k, *out[k]);
              } else {
                final_status[t] = r;
              }
            }
          } else if (prefix.failed()) {
            final_status[t] = prefix;
          } else {  // nothing before this segment: its local prefixes are final
            for (std::size_t k = seg.lo; k < seg.hi; ++k)
              if (out[k]) on_output(k, *out[k]);
          }
        } else {
          const bool has_head = !head.empty();
          ScanPartial<T> acc =
              combine_partials(exclusive, has_head ? head : before, applier(thread, ScanPhase::final_scan, false));
          if (has_head && acc.has_value()) {
            out[seg.lo] = acc.value();
            on_output(seg.lo, *out[seg.lo]);
          }
          for (std::size_t k = has_head ? seg.lo + 1 : seg.lo; k < seg.hi && !acc.failed(); ++k) {
            acc = combine_partials(acc, element(k), applier(thread, ScanPhase::final_scan, false));
            if (acc.has_value()) {
              out[k] = acc.value();
              on_output(k, *out[k]);
            }
          }
          if (acc.failed()) final_status[t] = acc;
        }
        barrier.arrive_and_wait();  // so nobody spins in the region's closing barrier
      }
      if (global_error) {
        if (trace) trace->end();
        std::rethrow_exception(global_error);
      }
      // The rank's own failure is what it reports (the final phase may have
      // run on a prefix that arrived before the failure was known).
      if (rank_failure.failed()) final_status.assign(1, rank_failure);
    }
    if (trace) trace->end();

    // Every element must have its prefix unless something failed; a gap here
    // would be a bug in the scan, reported like any failure (on all ranks).
    std::optional<std::size_t> missing;
    for (std::size_t k = 0; k < n && !missing; ++k)
      if (!out[k]) missing = k;
    const ScanPartial<T>* bad = nullptr;
    for (const auto& s : final_status)
      if (s.failed()) bad = &s;
    if (bad) agree_on_failure(comm_, true, bad->error_kind(), bad->message());
    else if (missing)
      agree_on_failure(comm_, true, ErrorKind::failure,
                       "scan: internal error: element " + std::to_string(offset + std::int64_t(*missing)) +
                           " has no prefix");
    else agree_on_failure(comm_, false, ErrorKind::failure, "");

    std::vector<T> result;
    result.reserve(n);
    for (auto& v : out) result.push_back(std::move(*v));
    return result;
  }

 private:
  ScanOptions options_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace driftscan::mpi
