#pragma once
// One execution of WorkStealingScan::run (work_stealing_scan.hpp describes the
// algorithm): the state its phases share for the length of one run, and each
// phase as a member function. Every thread of the rank runs worker(); thread
// 0, the master, also runs the global phase and is the only one to call MPI
// (MPI_THREAD_FUNNELED).
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <mpi.h>
#include <omp.h>

#include "driftscan/core/error.hpp"
#include "driftscan/mpi/runtime/idle_wait.hpp"
#include "driftscan/mpi/runtime/sleeping_barrier.hpp"
#include "driftscan/mpi/scan/boundary_elements.hpp"
#include "driftscan/mpi/scan/final_scan_relay.hpp"
#include "driftscan/mpi/scan/global_scan.hpp"
#include "driftscan/mpi/scan/local_scan.hpp"
#include "driftscan/mpi/scan/rank_line.hpp"
#include "driftscan/mpi/scan/scan_element_codec.hpp"
#include "driftscan/mpi/scan/scan_options.hpp"
#include "driftscan/mpi/scan/scan_partial.hpp"
#include "driftscan/mpi/scan/scan_trace.hpp"
#include "driftscan/mpi/scan/shared_segment_tail.hpp"
#include "driftscan/mpi/scan/stealing_reduce.hpp"
#include "driftscan/mpi/scan/thread_sum_tree.hpp"

namespace driftscan::mpi::detail {

// `Op` and `OnOutput` are the caller's callables (held by reference); see
// WorkStealingScan::run for their contracts. The block must have fewer than
// 2^32 − 1 elements (checked by the caller). The prefixes are written into
// the caller's `out` (sized to the block here): on_output(k, out[k]) is
// called once out[k] is final, and that element stays where it is, even when
// the run fails (a checkpoint may keep reading it instead of a copy).
template <class T, class Codec, class Op, class OnOutput>
class ScanRun {
 public:
  // Collective (the block's global offset is an exclusive scan of the counts).
  ScanRun(MPI_Comm comm, int rank, int size, const ScanOptions& options, const std::vector<T>& block,
          std::vector<T>& out, Op& op, ScanTrace* trace, OnOutput& on_output, const RankLine* line = nullptr)
      : comm_(comm),
        rank_(rank),
        size_(size),
        options_(options),
        block_(block),
        op_(op),
        trace_(trace),
        on_output_(on_output),
        n_(block.size()),
        offset_(global_offset(comm, rank, n_)),
        out_(out),
        has_out_(n_, 0),
        line_(line && line->active() && options.steals() ? line : nullptr),
        origin_(offset_),
        gaps_(static_cast<std::size_t>(std::max(options.threads, 1))),
        paces_(static_cast<std::size_t>(options.threads)),
        receiver_(comm) {
    out_.assign(n_, T{});
    if (trace_) {
      begin_trace(*trace_, comm_, options_.threads);
      trace_->details() = {{"algorithm", to_string(options_.algorithm)},
                           {"strategy", to_string(options_.strategy)},
                           {"work_stealing", options_.steals()}};
      clock_ = trace_->clock();
    }
    if (receiver_.done()) publish_exclusive(ScanPartial<T>{});  // rank 0: nothing precedes it
  }
  ScanRun(const ScanRun&) = delete;
  ScanRun& operator=(const ScanRun&) = delete;

  // Collective; once per object. On success every out[k] is block k's prefix.
  void run() {
    if (n_ == 0) {
      run_without_elements();
    } else {
      run_workers();
      if (line_ && !global_error_) return_borrowed();
      if (global_error_) {  // an MPI-level error: no agreement possible, every rank has its own
        if (trace_) trace_->end();
        std::rethrow_exception(global_error_);
      }
      // The rank's own failure is what it reports (the final phase may have
      // run on a prefix that arrived before the failure was known).
      if (rank_failure_.failed()) final_status_.assign(1, rank_failure_);
    }
    if (trace_) trace_->end();
    agree_on_result();
  }

 private:
  // Elements by their index in this rank's extended range: the left
  // neighbour's tail it may take (L of them), its own block, the right
  // neighbour's head (rank_line.hpp). Without stealing between ranks L = R = 0.
  std::size_t ext_size() const { return left_.size() + n_ + right_.size(); }
  bool own(std::size_t e) const { return e >= left_.size() && e < left_.size() + n_; }
  const T& at(std::size_t e) const {
    if (e < left_.size()) return left_[e];
    if (e < left_.size() + n_) return block_[e - left_.size()];
    return right_[e - left_.size() - n_];
  }
  // Where element e's final prefix goes: the caller's out_, or (borrowed) kept
  // until return_borrowed() sends it to its rank.
  T& slot(std::size_t e) {
    if (e < left_.size()) return left_out_[e];
    if (e < left_.size() + n_) return out_[e - left_.size()];
    return right_out_[e - left_.size() - n_];
  }

  // What thread t's final phase starts from besides the ranks' exclusive
  // prefix: `before` (threads 0..t−1), or `head` (`before` already extended
  // by the segment's first element, whose prefix is then one application away).
  struct SegmentStart {
    ScanPartial<T> before, head;
  };
  enum class StartChoice { plain, head, shift };
  // What a helper handed over: the running prefix and the next element.
  using Relayed = std::pair<ScanPartial<T>, std::size_t>;

  // Element k of the block as a partial covering its global index.
  ScanPartial<T> element(std::size_t k) const {
    const std::int64_t index = origin_ + static_cast<std::int64_t>(k);
    return ScanPartial<T>::of(at(k), index, index);
  }

  // The operator for combine_partials, timed and recorded when tracing.
  auto applier(std::size_t t, ScanPhase phase, bool stolen) {
    const int thread = static_cast<int>(t);
    return [this, thread, phase, stolen](const ScanPartial<T>& l, const ScanPartial<T>& r) -> T {
      if (!trace_) return op_(l.value(), r.value());
      const double start = clock_.now();
      T result = op_(l.value(), r.value());
      trace_->record(thread, ScanRecord{rank_, thread, l.first(), r.last(), phase,
                                        static_cast<std::uint8_t>(stolen ? 1 : 0), start, clock_.now()});
      return result;
    };
  }

  static std::int64_t global_offset(MPI_Comm comm, int rank, std::size_t n) {
    long long count = static_cast<long long>(n), before = 0;
    MPI_Request request;
    MPI_Iexscan(&count, &before, 1, MPI_LONG_LONG, MPI_SUM, comm, &request);
    wait_idle(request);
    return rank == 0 ? 0 : before;
  }

  // A rank without elements still takes part in the global phase and in the
  // shift of inclusive results, so its neighbours are not left waiting.
  void run_without_elements() {
    if (line_) {
      share_edges(0);
      for (int g = 0; g + 1 < line_->slots(); ++g) line_->gap(rank_, g).reset(0, 0);
      line_->sync();
    }
    ScanPartial<T> inclusive = global_inclusive(ScanPartial<T>{});
    ScanPartial<T> before_rank = exclusive_from_inclusive<T, Codec>(comm_, inclusive);
    if (before_rank.failed()) final_status_[0] = before_rank;
    if (rank_failure_.failed()) final_status_[0] = rank_failure_;
    if (line_) return_borrowed();
  }

  void run_workers() {
    const std::size_t wanted = std::min<std::size_t>(static_cast<std::size_t>(options_.threads), n_);
#pragma omp parallel num_threads(static_cast <int>(wanted))
    {
      const std::size_t t = static_cast<std::size_t>(omp_get_thread_num());
#pragma omp master
      prepare(static_cast<std::size_t>(omp_get_num_threads()));  // MPI with a line: the master only
#pragma omp barrier
      worker(t);
    }
  }

  // OpenMP may grant fewer threads than asked: size everything by what it gave.
  // With a line, the edge threads start inside their segments and the edges
  // go to the neighbours first (share_edges()).
  void prepare(std::size_t workers) {
    tree_.reset(workers);
    final_status_.assign(workers, {});
    segments_.assign(workers, {});
    const bool left_edge = line_ && rank_ > 0, right_edge = line_ && rank_ + 1 < size_;
    // Along a line too: each rank shares its own threads' tails (the
    // elements a thread took from a neighbour rank included: their prefixes
    // go back to it as before). Without it a line lost what the fold loses
    // inside ranks, and rank 0's thread 0, whose reduce leaves its prefixes
    // final, sat idle through the whole final phase (traced case B: 0.15 s).
    sharing_ = options_.steals() && options_.share_final_phase && workers > 1;
    // Sharing: the last thread, too, starts inside its segment, so that the
    // elements after its start have local prefixes (shared_segment_tail.hpp);
    // they lie in a gap of its own, taken once its left gap is empty. Along
    // a line a rank's last thread has the boundary gap to its right instead
    // (the last rank's starts on its last element, as without sharing).
    own_last_gap_ = sharing_ && !line_;
    starts_.assign(workers, 0);
    for (std::size_t w = 0; w < workers; ++w)
      starts_[w] = stealing_start(n_, workers, w, left_edge, right_edge || own_last_gap_);
    if (line_) {
      try {
        share_edges(workers);
      } catch (...) {  // an MPI-level failure: no agreement possible
        global_error_ = std::current_exception();
      }
    }
    const std::size_t shift = left_.size();
    for (auto& s : starts_) s += shift;
    for (std::size_t g = 0; g + 1 < workers; ++g) gap(g).reset(starts_[g] + 1, starts_[g + 1]);
    if (own_last_gap_) gaps_[workers - 1].reset(starts_[workers - 1] + 1, n_);
    if (line_)
      for (std::size_t g = workers > 0 ? workers - 1 : 0; g + 1 < std::size_t(line_->slots()); ++g) gap(g).reset(0, 0);
    for (std::size_t w = 0; w < workers; ++w) pace(w).start();
    if (line_) line_->sync();
    // One thread alone on its rank steals only along a line, and chooses no start.
    if (options_.steals() && (workers > 1 || line_)) element_seconds_.assign(ext_size(), -1.0);
    relays_ = std::vector<FinalScanRelay<T>>(workers);
    relaying_ = options_.steals() && workers > 2 && !line_;
    tails_ = std::vector<SharedSegmentTail>(workers);
    tail_base_.assign(workers, {});
    if (sharing_) {
      local_.assign(ext_size(), T{});
      local_first_.assign(ext_size(), 0);
    }
    barrier_.reset(workers);
  }

  SegmentGap& gap(std::size_t g) { return line_ ? line_->gap(rank_, int(g)) : gaps_[g]; }
  WorkerPace& pace(std::size_t t) { return line_ ? line_->pace(rank_, int(t)) : paces_[t]; }

  // Master, with a line: the edges of the block (the elements before thread
  // 0's start, those after the last thread's) go to the neighbours, theirs
  // come here, and this rank opens the gap to its right neighbour, its edge
  // and their head, before it sends its edge (what tells the neighbour the gap
  // is ready). `workers` = 0: a rank without elements.
  void share_edges(std::size_t workers) {
    std::deque<detail::PendingSend> pending;
    const std::size_t head = workers > 0 && rank_ > 0 ? starts_[0] : 0;
    const std::size_t tail = workers > 0 && rank_ + 1 < size_ ? n_ - 1 - starts_[workers - 1] : 0;
    if (rank_ > 0) {
      ByteBuffer bytes;
      encode_elements<T, Codec>(block_.data(), head, bytes);
      detail::isend_bytes(comm_, rank_ - 1, kEdgeTag, pending, std::move(bytes));
    }
    if (rank_ + 1 < size_) {
      ByteBuffer theirs = detail::recv_bytes(comm_, rank_ + 1, kEdgeTag);
      right_ = decode_elements<T, Codec>(theirs.data(), theirs.size());
      line_->boundary(rank_).reset(0, tail + right_.size());
      line_->sync();
      ByteBuffer bytes;
      encode_elements<T, Codec>(block_.data() + (n_ - tail), tail, bytes);
      detail::isend_bytes(comm_, rank_ + 1, kEdgeTag, pending, std::move(bytes));
    }
    if (rank_ > 0) {
      ByteBuffer theirs = detail::recv_bytes(comm_, rank_ - 1, kEdgeTag);
      left_ = decode_elements<T, Codec>(theirs.data(), theirs.size());
      line_->sync();
    }
    detail::wait_all(pending);
    origin_ = offset_ - static_cast<std::int64_t>(left_.size());
    left_out_.assign(left_.size(), T{});
    right_out_.assign(right_.size(), T{});
    left_has_.assign(left_.size(), 0);
    right_has_.assign(right_.size(), 0);
    right_tail_ = tail;
  }

  // Thread t's view of the gaps it steals along: its rank's threads, or the
  // whole line of ranks.
  StealingView stealing_view(std::size_t t) {
    StealingView v;
    const std::size_t workers = tree_.workers();
    v.leave_last_left = leave_last_left(t);
    if (!line_) {
      for (std::size_t g = 0; g + 1 < workers; ++g) v.gaps.push_back(&gaps_[g]);
      if (own_last_gap_) v.gaps.push_back(&gaps_[workers - 1]);  // the last thread's own
      for (std::size_t w = 0; w < workers; ++w) v.paces.push_back(&paces_[w]);
      v.me = t;
      if (t > 0) v.left = t - 1;
      if (t + 1 < workers || own_last_gap_) v.right = t;
      v.right_is_own = own_last_gap_ && t + 1 == workers;
      return v;
    }
    const std::size_t slots = std::size_t(line_->slots()), r = std::size_t(rank_);
    for (int q = 0; q < size_; ++q) {
      for (int g = 0; g + 1 < line_->slots(); ++g) v.gaps.push_back(&line_->gap(q, g));
      if (q + 1 < size_) v.gaps.push_back(&line_->boundary(q));
      for (int w = 0; w < line_->slots(); ++w) v.paces.push_back(&line_->pace(q, w));
      v.delay.insert(v.delay.end(), slots, applications_before_exclusive(options_.algorithm, q, size_));
    }
    v.me = r * slots + t;
    if (t > 0) v.left = r * slots + t - 1;
    else if (r > 0) v.left = r * slots - 1;  // the left neighbour's boundary: positions are ours from 0
    if (t + 1 < workers) v.right = r * slots + t;
    else if (r + 1 < std::size_t(size_)) {
      v.right = r * slots + slots - 1;
      v.right_shift = static_cast<std::int64_t>(left_.size() + n_ - right_tail_);
    }
    return v;
  }

  // Along a line, a rank's first thread leaves the boundary gap's last
  // element to the rank before (StealingView::leave_last_left): that rank's
  // last element is charged by each level of its tree and each global round.
  // Not between threads: there the end is charged once or twice, and the
  // left thread's extra element cost more than it saved (case B: 0.84-0.86
  // against 0.87-0.88 along the line). Only when the rank before sent its
  // tail: a rank without elements has no thread to take the element (and
  // one whose tail is empty, one element per thread, loses nothing).
  //
  // Between threads, with the final phase shared (scan-bench), where thread
  // t−1 ends a block of 4 or more leaves of the thread tree (t ≡ 0 mod 4):
  // its end is charged by each tree level it ends (t = 32: five), by the
  // assembly of what precedes each later thread of that block's parent, and
  // by t's start (traced 16x64, K=16: a 115 ms end charged five times in one
  // rank's tree, its sum known 0.48 s after its last reduce). Not where it
  // is charged once or twice (above). Not in the registration (its final
  // phase is the fold): its segments stay as they were. Only with 8 or more
  // elements per thread: with 4 the element left is a quarter of t−1's
  // reduce, and 16x16 K=4 ran 0.905 s with it against 0.855 s without.
  static constexpr std::size_t kDearEndMinPerThread = 8;
  bool leave_last_left(std::size_t t) const {
    if (!line_) return sharing_ && t > 0 && t % 4 == 0 && n_ >= kDearEndMinPerThread * tree_.workers();
    return t == 0 && rank_ > 0 && !left_.empty();
  }

  // Master, after the parallel region: the final prefixes of the elements
  // taken from a neighbour go back to it, and this rank's elements taken by
  // a neighbour come back (one message each way per neighbour, maybe empty).
  void return_borrowed() {
    std::deque<detail::PendingSend> pending;
    const std::size_t lo = n_ > 0 && !segments_.empty() ? segments_.front().lo : left_.size();
    const std::size_t hi = n_ > 0 && !segments_.empty() ? segments_.back().hi : left_.size() + n_;
    if (rank_ > 0) send_borrowed(rank_ - 1, lo < left_.size() ? lo : left_.size(), left_.size(), pending);
    if (rank_ + 1 < size_) send_borrowed(rank_ + 1, left_.size() + n_, std::max(hi, left_.size() + n_), pending);
    if (rank_ > 0) receive_lent(rank_ - 1, true);
    if (rank_ + 1 < size_) receive_lent(rank_ + 1, false);
    detail::wait_all(pending);
    for (std::size_t w = 0; w < segments_.size(); ++w) pace(w).stop();  // segments_: one per worker
  }

  // Ext elements [lo, hi) (all borrowed from `to`): their prefixes, or the
  // failure that left some without one.
  void send_borrowed(int to, std::size_t lo, std::size_t hi, std::deque<detail::PendingSend>& pending) {
    ByteBuffer bytes;
    bool complete = true;
    for (std::size_t e = lo; e < hi; ++e) complete = complete && borrowed_known(e);
    if (complete) {
      bytes.push_back(1);
      std::vector<T> values;
      for (std::size_t e = lo; e < hi; ++e) values.push_back(slot(e));
      encode_elements<T, Codec>(values.data(), values.size(), bytes);
    } else {
      bytes.push_back(0);
      ScanPartial<T> why = ScanPartial<T>::failure(ErrorKind::failure, "scan: a borrowed element has no prefix");
      for (const auto& s : final_status_)
        if (s.failed()) why = s;
      if (rank_failure_.failed()) why = rank_failure_;
      why.template encode<Codec>(bytes);
    }
    detail::isend_bytes(comm_, to, kReturnTag, pending, std::move(bytes));
  }

  bool borrowed_known(std::size_t e) const {
    return e < left_.size() ? left_has_.size() > e && left_has_[e]
                            : right_has_.size() > e - left_.size() - n_ && right_has_[e - left_.size() - n_];
  }

  // From the left neighbour: this block's first elements; from the right: its last.
  void receive_lent(int from, bool head) {
    ByteBuffer bytes = detail::recv_bytes(comm_, from, kReturnTag);
    if (bytes.empty()) throw failure("scan: an empty message of returned prefixes");
    if (bytes[0] == 0) {
      final_status_.push_back(ScanPartial<T>::template decode<Codec>(bytes.data() + 1, bytes.size() - 1));
      return;
    }
    std::vector<T> values = decode_elements<T, Codec>(bytes.data() + 1, bytes.size() - 1);
    if (values.size() > n_) throw failure("scan: more returned prefixes than elements");
    const std::size_t first = head ? 0 : n_ - values.size();
    for (std::size_t i = 0; i < values.size(); ++i) {
      out_[first + i] = std::move(values[i]);
      has_out_[first + i] = 1;
      on_output_(first + i, out_[first + i]);
    }
  }

  // Thread t's whole run. Nothing waits on a barrier until the very end:
  // each step waits only for the results it needs.
  void worker(std::size_t t) {
    reduce_phase(t);
    combine_up_tree(t);
    if (t != 0) help_siblings(t);
    std::optional<Relayed> relayed;
    if (relaying_ && t != 0) relayed = relays_[t].take_over();
    const SegmentStart start = relayed ? SegmentStart{} : segment_start(t);  // in the shadow of the global phase
    if (t == 0) global_phase();
    else exclusive_known_.wait();  // not a barrier: no thread waits for another's assembly
    if (relaying_ && t == 0) relayed = relays_[0].take_over();
    final_phase(t, start, relayed);
    help_tails(t);
    barrier_.arrive_and_wait();  // so nobody spins in the region's closing barrier
  }

  // Thread u (not the master), while the sums before its own segment are not
  // all known: it scans the head of the first sibling still reducing, once
  // the exclusive prefix is here and that sibling is stuck on a dear element
  // (final_scan_relay.hpp). Never on rank 0's master, whose reduce already
  // leaves its final prefixes.
  // A sibling is helped only on a dear element: the application it runs has
  // taken kStuck times its average. Helping costs the helper up to one
  // element when its own segment becomes ready (measured: helping whenever
  // possible lost ~3% on uniform exponential costs, case B).
  static constexpr double kStuck = 3.0;
  void help_siblings(std::size_t u) {
    if (!relaying_) return;
    while (true) {
      const std::uint64_t seen = board_.epoch();
      const std::size_t published = published_leaves(u);
      if (published == u) return;  // its own final phase can start
      bool waiting_on_reduce = false;
      if (exclusive_known_.is_open()) {
        if (!exclusive_ok_ || exclusive_.failed()) return;
        waiting_on_reduce = rank_ > 0 || published > 0;
        if (waiting_on_reduce && pace(published).stuck(kStuck) && relays_[published].claim_for_helper()) {
          help(u, published);
          continue;
        }
      }
      // Events (a sum published, the prefix known) wake it; whether a
      // sibling is stuck is looked at again every 2 ms.
      board_.wait_change(seen, waiting_on_reduce ? 2 : 50);
    }
  }

  // How many of the leaves 0..u−1, from the first, are published.
  std::size_t published_leaves(std::size_t u) {
    std::size_t published = 0;
    while (published < u && tree_.is_ready(0, published)) ++published;
    return published;
  }

  // Thread u scans thread t's segment from its first element, as t's plain
  // start would (exclusive ⊕ before, then element by element), up to the
  // elements t is known to hold, until t wants it back or u's own final
  // phase can start.
  void help(std::size_t u, std::size_t t) {
    const std::size_t lo = t == 0 ? 0 : segments_[t - 1].hi;  // leaf t−1 is published: final
    ScanPartial<T> acc = combine_partials(exclusive_, assemble(u, t), applier(u, ScanPhase::final_scan, false));
    tail_base_[t] = acc;  // what t's shared tail starts from (its elements' local prefixes are t's own)
    std::size_t k = lo;
    // Sharing: only t's left part, which only a fold can give.
    auto held = [&] {
      const std::size_t front = t + 1 < tree_.workers() ? gap(t).front_position() : n_;
      return sharing_ ? std::min(front, starts_[t]) : front;
    };
    while (!acc.failed() && k < held() && !relays_[t].stop_requested() && published_leaves(u) < u) {
      acc = combine_partials(acc, element(k), applier(u, ScanPhase::final_scan, false));
      if (acc.has_value()) finish(k, acc.value());
      ++k;
    }
    relays_[t].hand_over(std::move(acc), k);
  }

  // Phase 1: thread t's segment sum (reduce-then-scan; stealing moves the
  // segment's bounds), or its local prefixes (scan-then-map). It becomes
  // leaf t of the tree; publishing it also makes segments_[t] final.
  void reduce_phase(std::size_t t) {
    SegmentRange seg = static_segment(n_, tree_.workers(), t);  // no line here: ext = local
    ScanPartial<T> sum;
    if (options_.strategy == LocalStrategy::scan_then_map) sum = scan_segment_locally(t, seg);
    else if (options_.steals() && (tree_.workers() > 1 || line_)) sum = steal_segment(t, seg);
    else if (folds_head(t)) sum = fold_head(t, seg);
    else sum = reduce_segment(t, seg);
    tree_.node(0, t) = std::move(sum);
    segments_[t] = seg;
    tree_.publish(0, t);
    board_.notify();
  }

  ScanPartial<T> scan_segment_locally(std::size_t t, const SegmentRange& seg) {
    ScanPartial<T> acc = element(seg.lo);
    set_out(seg.lo, block_[seg.lo]);
    for (std::size_t k = seg.lo + 1; k < seg.hi && !acc.failed(); ++k) {
      acc = combine_partials(acc, element(k), applier(t, ScanPhase::local_scan, false));
      if (acc.has_value()) set_out(k, acc.value());
    }
    return acc;
  }

  // Reduce-then-scan without stealing, rank 0's master: its segment begins
  // the sequence, so the running sum of its reduce is each element's final
  // prefix, bracketed as its final phase would (a left fold from the first
  // element). Reported at once, the reduce is also its final phase: with one
  // worker in all (one rank, one thread) each element is combined once, not
  // twice.
  bool folds_head(std::size_t t) const {
    return t == 0 && rank_ == 0 && options_.strategy == LocalStrategy::reduce_then_scan &&
           !(options_.steals() && (tree_.workers() > 1 || line_));
  }
  ScanPartial<T> fold_head(std::size_t t, const SegmentRange& seg) {
    ScanPartial<T> acc = element(seg.lo);
    finish(seg.lo, at(seg.lo));
    for (std::size_t k = seg.lo + 1; k < seg.hi && !acc.failed(); ++k) {
      acc = combine_partials(acc, element(k), applier(t, ScanPhase::final_scan, false));
      if (acc.has_value()) finish(k, acc.value());
    }
    if (acc.failed()) final_status_[t] = acc;
    return acc;
  }

  ScanPartial<T> reduce_segment(std::size_t t, const SegmentRange& seg) {
    ScanPartial<T> acc = element(seg.lo);
    for (std::size_t k = seg.lo + 1; k < seg.hi && !acc.failed(); ++k)
      acc = combine_partials(acc, element(k), applier(t, ScanPhase::local_reduce, false));
    return acc;
  }

  // The steal step: thread t reduces outward from its starting element,
  // taking elements from the gaps to its neighbours (stealing_reduce.hpp);
  // `seg` becomes what it took. Each application's cost is measured and
  // charged to one element, for segment_start()'s choice.
  //
  // On rank 0 thread 0 starts at the block's first element and only extends
  // right, so its running sum is the final prefix of every element it takes,
  // bracketed as its final phase would (a left fold from the first element):
  // kept in out_, its final phase only publishes them (publish_head()).
  ScanPartial<T> steal_segment(std::size_t t, SegmentRange& seg) {
    const bool keep = t == 0 && rank_ == 0;
    if (keep) out_[0] = block_[0];
    const std::int64_t first = origin_ + static_cast<std::int64_t>(starts_[t]);
    if (sharing_) {
      local_[starts_[t]] = at(starts_[t]);
      local_first_[starts_[t]] = starts_[t];
    }
    auto apply = [this, t, keep, first](const ScanPartial<T>& l, const ScanPartial<T>& r, bool stolen) {
      const auto start = std::chrono::steady_clock::now();
      T result = applier(t, ScanPhase::local_reduce, stolen)(l, r);
      const std::int64_t k = (l.first() == l.last() && r.first() != r.last()) ? l.first() : r.last();
      element_seconds_[static_cast<std::size_t>(k - origin_)] =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (keep) slot(static_cast<std::size_t>(k - origin_)) = result;
      // Taken to the right (a single right operand other than the start):
      // the result is that element's local prefix (shared_segment_tail.hpp).
      if (sharing_ && r.first() == r.last() && r.first() != first) {
        local_[static_cast<std::size_t>(k - origin_)] = result;
        local_first_[static_cast<std::size_t>(k - origin_)] = static_cast<std::size_t>(l.first() - origin_);
      }
      return result;
    };
    StealingView view = stealing_view(t);
    const SegmentRange own = static_segment(n_, tree_.workers(), t);
    return stealing_reduce<T>([this](std::size_t e) -> const T& { return at(e); }, origin_, starts_[t],
                              SegmentRange{own.lo + left_.size(), own.hi + left_.size()}, view, apply, seg);
  }

  // Phase 2a: the rank's sum, up the tree; a node is combined as soon as its
  // two children are known. It is all the global phase waits for; the
  // prefixes of the threads' sums come later, in its shadow.
  void combine_up_tree(std::size_t t) {
    for (std::size_t level = 0; (std::size_t(1) << level) < tree_.workers(); ++level) {
      const std::size_t width = std::size_t(2) << level;
      if (t % width != 0) break;
      const std::size_t i = t / width;
      if (2 * i + 1 < tree_.nodes(level)) {
        wait_node(t, level, 2 * i + 1);
        tree_.node(level + 1, i) = combine_partials(tree_.node(level, 2 * i), tree_.node(level, 2 * i + 1),
                                                    applier(t, ScanPhase::thread_combine, false));
      } else {
        tree_.node(level + 1, i) = tree_.node(level, 2 * i);
      }
      tree_.publish(level + 1, i);
    }
  }

  // Waiting for a tree node. The master polls for the exclusive prefix
  // meanwhile (MPI_THREAD_FUNNELED: nobody else may), so the final phase is
  // not held up by this rank's slowest reduce.
  void wait_node(std::size_t t, std::size_t level, std::size_t i) {
    if (t != 0) return tree_.wait(level, i);
    // Waiting for other threads' operator applications (ms and more): a
    // millisecond more before the prefix is handed over costs little, the
    // polls of every oversubscribed master would cost the cores.
    IdleBackoff backoff(1000);
    while (!exclusive_known_.is_open() && !tree_.is_ready(level, i)) {
      try {
        if (receiver_.poll()) publish_exclusive(receiver_.value());
      } catch (...) {
        global_error_ = std::current_exception();
        exclusive_known_.open();
      }
      if (!exclusive_known_.is_open()) backoff.pause();
    }
    tree_.wait(level, i);
  }

  // Phase 2b (threads other than the master, while it runs the global
  // phase): what precedes thread t's segment inside the rank, assembled from
  // the tree's blocks as chosen by choose_start().
  SegmentStart segment_start(std::size_t t) {
    SegmentStart start;
    if (t == 0) return start;
    const SegmentRange seg = segments_[t];
    const StartChoice choice = choose_start(t);
    if (choice == StartChoice::shift) {
      wait_node(t, 0, t - 1);
      ScanPartial<T> extended =
          combine_partials(tree_.node(0, t - 1), element(seg.lo), applier(t, ScanPhase::final_scan, false));
      start.head = combine_partials(assemble(t, t - 1), extended, applier(t, ScanPhase::final_scan, false));
    } else {
      start.before = assemble(t, t);
      if (choice == StartChoice::head)
        start.head = combine_partials(start.before, element(seg.lo), applier(t, ScanPhase::final_scan, false));
    }
    return start;
  }

  // With stealing, what the final phase starts from is chosen by the costs
  // measured in the reduce phase (an application's cost is taken as that of
  // the element its result ends on; the slow element a reduce ended on is
  // often at a segment boundary, so paying it again on the critical path
  // hurts). After the global phase, thread t pays
  //   plain: exclusive ⊕ before            — the cost of element lo−1 (none on rank 0);
  //   head:  exclusive ⊕ (before ⊕ x[lo])  — nothing beyond its own elements,
  //          having paid lo once more ahead;
  //   shift: exclusive ⊕ (before_{t−1} ⊕ (segment_{t−1} ⊕ x[lo])) — the same,
  //          never paying lo−1 again, having paid lo twice ahead.
  // Each also costs assembling its blocks. Take the cheapest in total (what
  // is paid ahead is hidden only if the global phase takes longer); on a
  // tie, the one that pays less after it. Without stealing: plain.
  StartChoice choose_start(std::size_t t) {
    if (element_seconds_.empty()) return StartChoice::plain;
    // Sharing: only a plain start gives the shared tail's base (exclusive ⊕
    // before); and the application it costs more than head's is shared work.
    if (sharing_) return StartChoice::plain;
    for (std::size_t u = 0; u < t; ++u) tree_.wait(0, u);  // their segments are final
    constexpr double unknown = 1e300;
    auto cost = [&](std::size_t k) { return element_seconds_[k] >= 0.0 ? element_seconds_[k] : unknown; };
    auto assembly_cost = [&](std::size_t u) {  // each combine after the first ends where a block does
      double c = 0.0;
      std::size_t pos = 0;
      for (auto [level, i] : tree_.blocks_before(u)) {
        pos += std::size_t(1) << level;
        if (pos > (std::size_t(1) << level)) c += cost(segments_[pos].lo - 1);
      }
      return c;
    };
    const SegmentRange seg = segments_[t];
    const double plain = assembly_cost(t) + (rank_ > 0 ? cost(seg.lo - 1) : 0.0);
    const double with_head = assembly_cost(t) + (rank_ > 0 ? cost(seg.lo) : 0.0);
    const double shift = assembly_cost(t - 1) + (rank_ > 0 ? 2.0 : 1.0) * cost(seg.lo);
    if (with_head < unknown && with_head <= plain && with_head <= shift) return StartChoice::head;
    if (shift < unknown && shift <= plain) return StartChoice::shift;
    return StartChoice::plain;
  }

  // The sum of threads 0..u−1, waiting only for the tree blocks that make it up.
  ScanPartial<T> assemble(std::size_t t, std::size_t u) {
    ScanPartial<T> sum;
    for (auto [level, i] : tree_.blocks_before(u)) {
      wait_node(t, level, i);
      sum = combine_partials(sum, tree_.node(level, i), applier(t, ScanPhase::thread_combine, false));
    }
    return sum;
  }

  // Master only, once the rank's sum is known: the global phase, and the
  // shift that gives rank r+1 its exclusive prefix. Rank 0's inclusive
  // result is its own sum: rank 1 gets it at once, not after the global
  // phase (MPI_Scan may wait for rank 1 itself). The exclusive prefix is
  // handed over the moment it arrives (wait_node polls for it earlier).
  void global_phase() {
    try {
      std::deque<PendingSend> pending;
      if (rank_ == 0) send_inclusive_right<T, Codec>(comm_, tree_.root(), pending);
      const ScanPartial<T> inclusive = global_inclusive(tree_.root());
      if (rank_ != 0) send_inclusive_right<T, Codec>(comm_, inclusive, pending);
      if (!exclusive_known_.is_open()) {
        receiver_.wait();
        publish_exclusive(rank_failure_.failed() ? rank_failure_ : receiver_.value());
      }
      wait_all(pending);
    } catch (...) {
      global_error_ = std::current_exception();
      if (!exclusive_known_.is_open()) exclusive_known_.open();
    }
  }

  // The global scan over the ranks' sums (master only). Only ranks below the
  // last need their inclusive result (values flow to higher ranks), so the
  // last rank enters with nothing and applies no operator. A failure is kept
  // as a value and agreed on once, after the final phase: no rank waits for
  // the slowest one's global phase before it starts its own final phase.
  ScanPartial<T> global_inclusive(const ScanPartial<T>& total) {
    const ScanPartial<T> mine = rank_ + 1 == size_ ? ScanPartial<T>{} : total;
    // Before each application too: a round's message may already be here
    // (no wait, so no poll), and the prefix may have come during the last
    // application. Not inside MPI_Scan's user operator (no MPI calls there).
    auto apply = [this, polls = options_.algorithm != GlobalScanAlgorithm::mpi_scan,
                  timed = applier(0, ScanPhase::global, false)](const ScanPartial<T>& l, const ScanPartial<T>& r) {
      if (polls) hand_over_exclusive();
      return timed(l, r);
    };
    ScanPartial<T> inclusive =
        global_inclusive_scan<T, Codec>(comm_, mine, options_.algorithm, apply,
                                        /*result_needed=*/rank_ + 1 < size_, [this] { hand_over_exclusive(); });
    if (total.failed()) rank_failure_ = total;
    else if (inclusive.failed() && rank_ + 1 < size_) rank_failure_ = inclusive;
    return inclusive;
  }

  // While the master waits inside the global phase: the ranks' exclusive
  // prefix may be here long before this rank's own global result (a rank
  // whose block ends on an expensive element pays it in every round), and
  // the other threads' final phase needs nothing else.
  // (A rank without elements takes the prefix in run_without_elements() instead.)
  void hand_over_exclusive() {
    if (n_ > 0 && !exclusive_known_.is_open() && receiver_.poll()) publish_exclusive(receiver_.value());
  }

  void publish_exclusive(const ScanPartial<T>& value) {
    exclusive_ = value;
    exclusive_ok_ = true;
    exclusive_known_.open();
    board_.notify();
  }

  // Phase 3: thread t's final prefixes, as soon as the exclusive prefix is
  // known. A failure is recorded, not thrown (every rank must reach the
  // agreement in agreed_result()).
  void final_phase(std::size_t t, const SegmentStart& start, const std::optional<Relayed>& relayed) {
    if (shares_tail(t, start, relayed)) return share_tail(t, start, relayed);
    tails_[t].close();
    if (sharing_) board_.notify();  // the idle siblings stop waiting for this tail
    if (!exclusive_ok_) return;     // an MPI-level error: rethrown after the parallel region
    if (relayed) {
      scan_rest(t, relayed->first, relayed->second);
    } else if (exclusive_.failed()) {
      if (t == 0) final_status_[0] = exclusive_;
    } else if (options_.strategy == LocalStrategy::scan_then_map) {
      map_segment(t, start.before);
    } else if (t == 0 && rank_ == 0 && options_.steals() && (tree_.workers() > 1 || line_)) {
      publish_head();
    } else if (folds_head(t)) {
      return;  // fold_head() left every prefix of its segment, and reported them
    } else {
      scan_segment(t, start);
    }
  }

  // Whether thread t's final phase shares its right part (shared_segment_tail.hpp):
  // with stealing inside the rank, from a plain start (exclusive ⊕ before is
  // the base of the elements whose local prefix begins at the segment's first).
  bool shares_tail(std::size_t t, const SegmentStart& start, const std::optional<Relayed>& relayed) {
    if (!sharing_ || !exclusive_ok_ || exclusive_.failed() || tree_.node(0, t).failed()) return false;
    if (t == 0 && rank_ == 0) return false;  // publish_head(): its prefixes are final already
    if (relayed) return relayed->first.has_value() && relayed->second <= starts_[t];
    return start.head.empty();
  }

  // What share_tail() runs before its fold: elements dearer than this many
  // times the mean.
  static constexpr double kDear = 2.0;
  // Thread t: opens its right part [start, hi) to every thread of the rank,
  // then folds its left part [lo, start) from exclusive ⊕ before (or from
  // where a helper stopped), publishing how far it got: the right part's
  // elements need P(a−1) for their local prefixes' first elements a.
  void share_tail(std::size_t t, const SegmentStart& start, const std::optional<Relayed>& relayed) {
    const SegmentRange seg = segments_[t];
    ScanPartial<T> acc;
    std::size_t k = seg.lo;
    if (relayed) {  // the helper left tail_base_[t]
      acc = relayed->first;
      k = relayed->second;
    } else {
      acc = combine_partials(exclusive_, start.before, applier(t, ScanPhase::final_scan, false));
      tail_base_[t] = acc;
    }
    if (acc.failed()) {
      tails_[t].close();
      final_status_[t] = acc;
      return;
    }
    tails_[t].open(seg.lo, starts_[t], seg.hi, k);
    board_.notify();
    // Its own dear elements first, even before its fold: its fold is a
    // chain of (mostly) ordinary ones. Not a sibling's: with claims anywhere
    // in the tails there is nearly always one, and the fold (and the start
    // and mid-tail elements waiting for it), which no other thread can run,
    // then waits (traced 8x8, K=16: a 143 ms element of a sibling's tail
    // put off a fold and its start element to the end of the run).
    const double mean = mean_element_seconds();
    while (auto claimed = claim_dearest(t, false, false, kDear * mean, mean)) {
      if (tails_[claimed->first].exhausted()) board_.notify();
      run_tail_element(t, claimed->first, claimed->second);
    }
    for (; tails_[t].fold_step(k); ++k) {  // up to its start, or where a helper cut the fold (cut_fold())
      acc = combine_partials(acc, element(k), applier(t, ScanPhase::final_scan, false));
      if (acc.failed()) {  // what is left unclaimed needs this fold: the failure is reported instead
        tails_[t].close();
        board_.notify();
        final_status_[t] = acc;
        return;
      }
      finish(k, acc.value());
      tails_[t].folded_to(k + 1);
      // Wake the idle siblings only when an element became claimable (a
      // wake-up per step costs the cores at 1,024 threads).
      if (tails_[t].waits_on(k + 1, [this](std::size_t i) { return local_first_[i]; })) board_.notify();
    }
  }

  // Thread x, its own final phase done: the rank's shared tails' elements,
  // the dearest claimable first (claim_dearest()), until none is left (some
  // become claimable only as their owner's fold advances).
  void help_tails(std::size_t x) {
    if (!sharing_) return;
    const double mean = mean_element_seconds();
    while (true) {
      const std::uint64_t seen = board_.epoch();
      if (cut_fold(x, mean, true)) continue;
      if (auto claimed = claim_dearest(x, true, true, 0.0, mean)) {
        if (tails_[claimed->first].exhausted()) board_.notify();  // the others may be done waiting
        run_tail_element(x, claimed->first, claimed->second);
        continue;
      }
      if (cut_fold(x, mean, false)) continue;
      bool all_done = true;
      for (std::size_t u = 0; u < tree_.workers(); ++u)
        if (!tails_[u].decided() || !tails_[u].exhausted()) all_done = false;
      if (all_done) return;
      // Woken when a tail opens, closes, runs out, or its last element
      // becomes claimable; the timeout is a safety net only.
      board_.wait_change(seen, 50);
    }
  }

  // Claims the dearest element thread x may run now among its own tail's
  // (`siblings`: every tail's) claimable ones and (`own_front`: x's fold is
  // done) x's own first; (owner,
  // element), or nothing costing at least `at_least`. Dearest first, as in
  // list scheduling: an element of 7x the mean started last is what the
  // fluid sharing of the model never pays (traced 8x8: 143 ms begun 0.13 s
  // before the rank's other threads were done). Costs are the reduce's
  // measurements. A start element, never measured there, goes first once
  // the thread's own fold is done (`at_least` 0): with claims anywhere in
  // the tails, counting it as the mean left it for last behind every dearer
  // measured one (traced 8x8, K=16: a 60 ms start begun at 0.943 s ended the
  // run at 1.004 s, 33 ms after the ends-only claims' run); before, it counts
  // as the mean. On ties the owner's front, then each tail's highest: by
  // position.
  std::optional<std::pair<std::size_t, std::size_t>> claim_dearest(std::size_t x, bool own_front, bool siblings,
                                                                   double at_least, double mean) {
    auto first_of = [this](std::size_t e) { return local_first_[e]; };
    const double unmeasured = at_least > 0.0 ? mean : std::numeric_limits<double>::infinity();
    auto cost = [&](std::size_t e) { return element_seconds_[e] >= 0.0 ? element_seconds_[e] : unmeasured; };
    for (int attempt = 0; attempt < 8; ++attempt) {  // another thread may take the element first
      double best = -1.0;
      std::size_t owner = 0;
      bool front = false;
      if (auto e = own_front ? tails_[x].peek_front(first_of) : std::nullopt; e && cost(*e) >= at_least) {
        best = cost(*e);
        owner = x;
        front = true;
      }
      std::size_t element = 0;
      for (std::size_t u = siblings ? 0 : x; u < (siblings ? tree_.workers() : x + 1); ++u)
        if (auto e = tails_[u].peek_dearest(first_of, cost); e && cost(*e) >= at_least && cost(*e) > best) {
          best = cost(*e);
          owner = u;
          element = *e;
          front = false;
        }
      if (best < 0.0) return std::nullopt;
      if (front) {
        if (const auto e = tails_[owner].claim_front(first_of)) return std::make_pair(owner, *e);
      } else if (tails_[owner].claim(element)) {
        return std::make_pair(owner, element);
      }
    }
    return std::nullopt;
  }

  // Thread x, nothing claimable: takes the back of the longest unfolded left
  // part of a sibling (SharedSegmentTail::cut(); at least kMinCut elements
  // each side, the cut where the owner's part and the taken part cost about
  // the same by the reduce's measurements) and folds its local prefixes,
  // [m, e] for each e, publishing them as it goes. Whether it cut one.
  // `urgent`: even with elements left to claim, when that fold alone would
  // take longer than the rank's unrun work spread over its threads (the
  // claims' work counted at the mean): waiting until nothing is claimable
  // left too little of the fold to cut (traced 16x64, K=16: a 9-element
  // fold of 0.36 s with 75 and 98 ms elements near its end, uncut, ended
  // its rank 0.19 s after the median thread).
  static constexpr std::size_t kMinCut = 2;
  bool cut_fold(std::size_t x, double mean, bool urgent) {
    auto cost = [&](std::size_t e) { return element_seconds_[e] >= 0.0 ? element_seconds_[e] : mean; };
    std::size_t owner = 0;
    double longest = 0.0, unrun = 0.0;
    for (std::size_t u = 0; u < tree_.workers(); ++u) {
      const auto [next, end] = tails_[u].unfolded();
      double c = 0.0;
      for (std::size_t e = next; e < end; ++e) c += cost(e);
      unrun += c + mean * double(tails_[u].remaining());
      if (u == x || end < next + 2 * kMinCut) continue;
      if (c > longest) longest = c, owner = u;
    }
    if (longest <= 0.0) return false;
    if (urgent && longest * double(tree_.workers()) <= unrun) return false;
    const auto cut = tails_[owner].cut(kMinCut, [&](std::size_t next, std::size_t end) {
      double total = 0.0, before = 0.0;
      for (std::size_t e = next; e < end; ++e) total += cost(e);
      std::size_t m = next;
      while (m < end && before + cost(m) <= total / 2) before += cost(m++);
      return std::clamp(m, next + kMinCut, end - kMinCut);
    });
    if (!cut) return false;
    const auto [m, end] = *cut;
    ScanPartial<T> acc = element(m);
    local_[m] = at(m);
    local_first_[m] = m;
    tails_[owner].cut_local(m + 1);
    // Wake the others only for claimable elements (the owner's fold wakes
    // them when it reaches m).
    if (tails_[owner].folded() >= m) board_.notify();
    for (std::size_t e = m + 1; e < end; ++e) {
      acc = combine_partials(acc, element(e), applier(x, ScanPhase::final_scan, false));
      if (acc.failed()) {  // its elements keep no prefix: the failure is reported instead
        final_status_[x] = acc;
        tails_[owner].close();
        board_.notify();
        return true;
      }
      local_[e] = acc.value();
      local_first_[e] = m;
      tails_[owner].cut_local(e + 1);
      if (tails_[owner].folded() >= m) board_.notify();
    }
    return true;
  }

  // The mean of the reduce's measured element costs (0 if none).
  double mean_element_seconds() const {
    double sum = 0.0;
    std::size_t count = 0;
    for (double s : element_seconds_)
      if (s >= 0.0) {
        sum += s;
        ++count;
      }
    return count > 0 ? sum / double(count) : 0.0;
  }

  // Element e of thread u's right part, run by thread x: P(a−1) ⊕ local(e).
  void run_tail_element(std::size_t x, std::size_t u, std::size_t e) {
    const std::size_t a = local_first_[e];
    const std::int64_t before_a = origin_ + static_cast<std::int64_t>(a) - 1;
    const ScanPartial<T> base = a == tails_[u].lo() ? tail_base_[u] : ScanPartial<T>::of(slot(a - 1), 0, before_a);
    const ScanPartial<T> local = ScanPartial<T>::of(local_[e], before_a + 1, origin_ + static_cast<std::int64_t>(e));
    const ScanPartial<T> prefix = combine_partials(base, local, applier(x, ScanPhase::final_scan, false));
    if (prefix.has_value()) {
      finish(e, prefix.value());
      tails_[u].done(e);  // after a cut, elements may start from P(e)
      if (tails_[u].waits_on(e + 1, [this](std::size_t i) { return local_first_[i]; })) board_.notify();
    } else {
      final_status_[x] = prefix;
    }
  }

  // Rank 0 with stealing: thread 0's reduce left the final prefixes of its
  // segment in out_ (steal_segment()). Not on other ranks: exclusive ⊕ local
  // prefix would bracket each prefix otherwise than the scan from the
  // exclusive prefix, and the operator is only approximately associative, so
  // results would depend on the decomposition.
  void publish_head() {
    if (tree_.node(0, 0).failed()) return;  // not all prefixes there: the rank's failure is reported
    for (std::size_t k = segments_[0].lo; k < segments_[0].hi; ++k) finish(k, slot(k));
  }

  // Scan-then-map: exclusive ⊕ before ⊕ each local prefix of the segment.
  void map_segment(std::size_t t, const ScanPartial<T>& before) {
    const SegmentRange seg = segments_[t];
    ScanPartial<T> prefix = combine_partials(exclusive_, before, applier(t, ScanPhase::map, false));
    if (prefix.has_value()) {
      // Up to where the local scan got (past a failure there, which is the
      // rank's, there is no local prefix to map).
      for (std::size_t k = seg.lo; k < seg.hi && !prefix.failed() && has_out_[k]; ++k) {
        auto local_prefix = ScanPartial<T>::of(out_[k], offset_ + static_cast<std::int64_t>(seg.lo),
                                               offset_ + static_cast<std::int64_t>(k));
        auto r = combine_partials(prefix, local_prefix, applier(t, ScanPhase::map, false));
        if (r.has_value()) {
          out_[k] = r.value();
          on_output_(k, out_[k]);
        } else {
          final_status_[t] = r;
        }
      }
    } else if (prefix.failed()) {
      final_status_[t] = prefix;
    } else {  // nothing before this segment: its local prefixes are final
      for (std::size_t k = seg.lo; k < seg.hi; ++k)
        if (has_out_[k]) on_output_(k, out_[k]);
    }
  }

  // Reduce-then-scan: the segment (as stealing left it) scanned from
  // exclusive ⊕ before, or from exclusive ⊕ head (then the first element's
  // prefix is that one application).
  void scan_segment(std::size_t t, const SegmentStart& start) {
    const SegmentRange seg = segments_[t];
    const bool has_head = !start.head.empty();
    ScanPartial<T> acc =
        combine_partials(exclusive_, has_head ? start.head : start.before, applier(t, ScanPhase::final_scan, false));
    if (has_head && acc.has_value()) finish(seg.lo, acc.value());
    for (std::size_t k = has_head ? seg.lo + 1 : seg.lo; k < seg.hi && !acc.failed(); ++k) {
      acc = combine_partials(acc, element(k), applier(t, ScanPhase::final_scan, false));
      if (acc.has_value()) finish(k, acc.value());
    }
    if (acc.failed()) final_status_[t] = acc;
  }

  // The rest of thread t's segment after a helper's stint (it stopped before
  // element `next`, with `acc` the prefix of next − 1 or its failure).
  void scan_rest(std::size_t t, ScanPartial<T> acc, std::size_t next) {
    const SegmentRange seg = segments_[t];
    for (std::size_t k = next; k < seg.hi && !acc.failed(); ++k) {
      acc = combine_partials(acc, element(k), applier(t, ScanPhase::final_scan, false));
      if (acc.has_value()) finish(k, acc.value());
    }
    if (acc.failed()) final_status_[t] = acc;
  }

  // Collective. Every element must have its prefix unless something failed;
  // a gap here would be a bug in the scan, reported like any failure (on all
  // ranks).
  void agree_on_result() {
    std::optional<std::size_t> missing;
    for (std::size_t k = 0; k < n_ && !missing; ++k)
      if (!has_out_[k]) missing = k;
    const ScanPartial<T>* bad = nullptr;
    for (const auto& s : final_status_)
      if (s.failed()) bad = &s;
    if (bad) agree_on_failure(comm_, true, bad->error_kind(), bad->message());
    else if (missing)
      agree_on_failure(
          comm_, true, ErrorKind::failure,
          "scan: internal error: element " + std::to_string(offset_ + std::int64_t(*missing)) + " has no prefix");
    else agree_on_failure(comm_, false, ErrorKind::failure, "");
  }

  // Element e's prefix (ext index; local prefixes of scan-then-map too).
  void set_out(std::size_t e, const T& value) {
    if (&slot(e) != &value) slot(e) = value;
    if (own(e)) has_out_[e - left_.size()] = 1;
    else if (e < left_.size()) left_has_[e] = 1;
    else right_has_[e - left_.size() - n_] = 1;
  }
  // Element e's final prefix: the caller hears of its own ones at once.
  void finish(std::size_t e, const T& value) {
    set_out(e, value);
    if (own(e)) on_output_(e - left_.size(), out_[e - left_.size()]);
  }

  // The caller's.
  MPI_Comm comm_;
  int rank_, size_;
  ScanOptions options_;
  const std::vector<T>& block_;
  Op& op_;
  ScanTrace* trace_;
  OnOutput& on_output_;
  ScanClock clock_;  // the trace's, when tracing

  const std::size_t n_;
  const std::int64_t offset_;  // global index of block_[0]
  // The caller's: final prefixes (scan-then-map: local ones first); has_out_:
  // which are written (bytes, not bits: threads write their own elements).
  std::vector<T>& out_;
  std::vector<unsigned char> has_out_;

  // Stealing between ranks (rank_line.hpp), when the ranks share a node.
  // origin_: global index of ext element 0; left_/right_: the neighbours'
  // edges (what this rank may take), *_out_/*_has_: the prefixes it computed
  // for those it took; starts_: each thread's first element (ext);
  // right_tail_: how many of this block's last elements lie in the gap to
  // the right neighbour.
  static constexpr int kEdgeTag = kScanTagBase + 80, kReturnTag = kScanTagBase + 81;
  const RankLine* line_;
  std::int64_t origin_;
  std::vector<T> left_, right_, left_out_, right_out_;
  std::vector<unsigned char> left_has_, right_has_;
  std::vector<std::size_t> starts_;
  std::size_t right_tail_ = 0;

  // Within the rank.
  ThreadSumTree<T> tree_;
  std::vector<SegmentRange> segments_;  // thread t's final segment, once leaf t is published
  std::vector<SegmentGap> gaps_;        // stealing: between threads g and g+1 (sharing: the last thread's own last)
  std::vector<WorkerPace> paces_;
  // Stealing: measured time of the reduce-phase application charged to each
  // element (< 0: not measured — a thread's starting element).
  std::vector<double> element_seconds_;
  SleepingBarrier barrier_;
  // Helping with a busy sibling's final phase (final_scan_relay.hpp): one
  // relay per thread; relaying_: with stealing inside ranks, 3+ threads.
  std::vector<FinalScanRelay<T>> relays_;
  RelayBoard board_;
  bool relaying_ = false;
  // Sharing each segment's right part in the final phase
  // (shared_segment_tail.hpp): with stealing inside the rank. local_[e]: the
  // reduce's partial sum [local_first_[e], e] for the elements a thread took
  // to the right of its start (and the start); tail_base_[t]: exclusive ⊕
  // before for thread t.
  bool sharing_ = false;
  bool own_last_gap_ = false;  // sharing inside ranks: the last thread's right gap is its own
  std::vector<SharedSegmentTail> tails_;
  std::vector<ScanPartial<T>> tail_base_;
  std::vector<T> local_;
  std::vector<std::size_t> local_first_;

  // What precedes this rank: rank r−1's inclusive result. The final phase
  // needs nothing else from the global phase, so the master hands it over
  // (opens `exclusive_known_`) the moment it arrives — often while it is
  // still waiting for its own threads or running its part of the global
  // phase. exclusive_ok_: it did arrive (false only after an MPI-level error).
  ScanPartial<T> exclusive_;
  bool exclusive_ok_ = false;
  SleepingGate exclusive_known_;
  ExclusiveReceiver<T, Codec> receiver_;

  // Outcome. rank_failure_: this rank's own failure (its sum, or its global
  // result), reported instead of any final-phase result; global_error_: an
  // MPI-level error on the master; final_status_[t]: thread t's failure.
  ScanPartial<T> rank_failure_;
  std::exception_ptr global_error_;
  std::vector<ScanPartial<T>> final_status_ = std::vector<ScanPartial<T>>(1);
};

}  // namespace driftscan::mpi::detail
