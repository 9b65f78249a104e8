#include "driftscan/mpi/register/distributed_register.hpp"
#include "driftscan/core/derotated_source.hpp"
#include "driftscan/core/kept_frames.hpp"
#include "driftscan/core/omp_threads.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "driftscan/core/error.hpp"
#include "driftscan/core/large_allocations.hpp"
#include "driftscan/core/peak_memory.hpp"
#include "driftscan/formats/tiff/tiff_series.hpp"
#include "driftscan/formats/tiff/tiff_writer.hpp"
#include "driftscan/job/job.hpp"
#include "driftscan/mpi/register/distributed_average.hpp"
#include "driftscan/mpi/register/distributed_drift.hpp"
#include "driftscan/mpi/register/distributed_scan_distortion.hpp"
#include "driftscan/mpi/register/uncertainty_in_scan.hpp"
#include "driftscan/mpi/runtime/allgather_records.hpp"
#include "driftscan/mpi/runtime/collectives.hpp"
#include "driftscan/mpi/runtime/command_report.hpp"
#include "driftscan/mpi/runtime/job_input.hpp"
#include "driftscan/mpi/scan/scan_trace.hpp"
#include "driftscan/mpi/scan/work_stealing_scan.hpp"
#include "driftscan/pipeline/phase_timer.hpp"
#include "driftscan/pipeline/rank_checkpoints.hpp"
#include "driftscan/pipeline/register_checkpoint.hpp"
#include "driftscan/pipeline/register_plan.hpp"
#include "driftscan/scan_distortion/line_drift_table.hpp"
#include "driftscan/scan_distortion/line_field.hpp"

namespace driftscan::mpi {
namespace fs = std::filesystem;
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Every rank indexes the file (IFD offsets only) and decodes frames on demand.
std::unique_ptr<FrameSource> open_series(const Job& job, std::size_t first_frames) {
  auto frames = open_job_input(job, first_frames);
  if (frames->frame_count() < 2) throw bad_input(job.input + ": a series of one frame has nothing to register");
  return frames;
}

// Every rank's operator applications counted together (on every rank).
ApplicationSummary sum_over_ranks(MPI_Comm comm, const ApplicationSummary& mine) {
  unsigned long long size = mine.iterations_histogram.size(), longest = 0;
  MPI_Allreduce(&size, &longest, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, comm);
  std::vector<unsigned long long> local(longest + 2, 0), all(longest + 2, 0);
  for (std::size_t i = 0; i < mine.iterations_histogram.size(); ++i) local[i] = mine.iterations_histogram[i];
  local[longest] = mine.count;
  local[longest + 1] = mine.iterations_total;
  MPI_Allreduce(local.data(), all.data(), static_cast<int>(all.size()), MPI_UNSIGNED_LONG_LONG, MPI_SUM, comm);
  ApplicationSummary sum;
  sum.iterations_histogram.assign(all.begin(), all.begin() + static_cast<long>(longest));
  sum.count = all[longest];
  sum.iterations_total = all[longest + 1];
  return sum;
}

// This rank's share of what the checkpoints leave to do. One gap (always so
// in a fresh run: all of 0..n-1) is scanned by the work-stealing scan, from
// the known output before it: sequence position p is frame start + p,
// position 0 holds (0 -> start) when the gap does not begin at frame 0.
// Several gaps are what an interrupted final phase leaves (one per worker,
// each after the prefix that worker had reached): each is finished as a
// chain from its known prefix, as that worker would have, gaps spread over
// ranks x threads.
struct ScanPlan {
  bool scan_mode = false;                                   // one gap: the work-stealing scan
  std::size_t start = 0, seq_lo = 0, seq_hi = 0;            // scan mode: this rank's positions [seq_lo, seq_hi)
  bool skip_first = false;                                  // scan mode: position 0 is a known output
  std::vector<OutputGap> my_gaps;                           // chain mode
  std::vector<std::pair<std::size_t, std::size_t>> needed;  // frame ranges [a, b) whose e_k this rank uses
  // The frame ranges of this rank's element table: `needed`, or in scan
  // mode its block of the scan (`needed` and, with skip_first, the known output).
  std::vector<std::pair<std::size_t, std::size_t>> table;
};

// The same on every rank (assign_gaps is deterministic).
ScanPlan plan_scan(const std::vector<OutputGap>& gaps, const RunContext& ctx, int threads) {
  const std::size_t ranks = static_cast<std::size_t>(ctx.size), rank = static_cast<std::size_t>(ctx.rank);
  ScanPlan plan;
  plan.scan_mode = gaps.size() == 1;
  if (plan.scan_mode) {
    plan.start = gaps[0].first > 0 ? gaps[0].first - 1 : 0;
    const std::size_t length = gaps[0].last - plan.start + 1;
    plan.seq_lo = length * rank / ranks;
    plan.seq_hi = length * (rank + 1) / ranks;
    plan.skip_first = plan.seq_lo == 0 && gaps[0].first > 0;
    const std::size_t from = plan.skip_first ? 1 : plan.seq_lo;
    if (from < plan.seq_hi) plan.needed.push_back({plan.start + from, plan.start + plan.seq_hi});
    plan.table.push_back({plan.start + plan.seq_lo, plan.start + plan.seq_hi});
  } else {
    const std::vector<int> worker = assign_gaps(gaps, ctx.size * threads);
    for (std::size_t i = 0; i < gaps.size(); ++i)
      if (static_cast<std::size_t>(worker[i] / threads) == rank) plan.my_gaps.push_back(gaps[i]);
    std::stable_sort(plan.my_gaps.begin(), plan.my_gaps.end(), [](auto& a, auto& b) { return a.size() > b.size(); });
    for (const auto& g : plan.my_gaps) plan.needed.push_back({g.first, g.last + 1});
    plan.table = plan.needed;
  }
  return plan;
}

// The elements e_k this rank's share of the scan uses (the frame ranges of
// ScanPlan::table), from the checkpoints or computed here: never all n. In
// scan mode the table is the rank's block of the scan, read in place by the
// scan. Records never move once the table is made: the checkpoint saves
// them from here.
class NeededElements {
 public:
  NeededElements() = default;
  NeededElements(const std::vector<std::pair<std::size_t, std::size_t>>& table, const CheckpointState& known) {
    for (auto [a, b] : table) {
      Range r{a, std::vector<Registration>(b - a), std::vector<unsigned char>(b - a, 0)};
      for (std::size_t k = a; k < b && k < known.elements.size(); ++k)
        if (known.elements[k]) {
          r.values[k - a] = *known.elements[k];
          r.known[k - a] = 1;
        }
      ranges_.push_back(std::move(r));
    }
  }
  bool has(std::size_t k) const {
    const auto [r, i] = locate(k);
    return ranges_[r].known[i] != 0;
  }
  const Registration& operator[](std::size_t k) const {
    const auto [r, i] = locate(k);
    if (!ranges_[r].known[i]) throw failure("register: element " + std::to_string(k) + " is not known");
    return ranges_[r].values[i];
  }
  // Stores `e` as frame e.to's; returns where it is kept.
  const Registration& set(const Registration& e) {
    const auto [r, i] = locate(e.to);
    ranges_[r].values[i] = e;
    ranges_[r].known[i] = 1;
    return ranges_[r].values[i];
  }
  std::size_t missing() const {
    std::size_t m = 0;
    for (const auto& r : ranges_)
      for (unsigned char k : r.known) m += k ? 0 : 1;
    return m;
  }
  // Scan mode: the block of the scan (empty when the rank has none).
  const std::vector<Registration>& block() const {
    static const std::vector<Registration> none;
    return ranges_.empty() ? none : ranges_[0].values;
  }

 private:
  struct Range {
    std::size_t first;
    std::vector<Registration> values;
    std::vector<unsigned char> known;
  };
  std::pair<std::size_t, std::size_t> locate(std::size_t k) const {
    for (std::size_t r = 0; r < ranges_.size(); ++r)
      if (k >= ranges_[r].first && k - ranges_[r].first < ranges_[r].values.size()) return {r, k - ranges_[r].first};
    throw failure("register: element " + std::to_string(k) + " is outside this rank's share of the scan");
  }
  std::vector<Range> ranges_;
};

// This rank's checkpoint: what its file held already (an earlier run's
// rank r, whatever its share was: rewriting the file must not lose it;
// files of ranks this run does not have stay as they are), plus what it
// computes now, saved from the run's own tables (elements, scan outputs,
// uncertainty), never copied: a copy would be one more record a frame.
// Any worker thread adds to it; it is saved at most every
// checkpoint_interval_s (never when that is <= 0).
class RankCheckpoint {
 public:
  RankCheckpoint(const Job& job, int rank, const nlohmann::json& fingerprint)
      : interval_(job.execution.checkpoint_interval_s), path_(rank_checkpoint_path(job.output, rank)) {
    if (interval_ > 0 && job.execution.resume && fs::exists(path_)) ck_ = read_checkpoint_file(path_, fingerprint);
    ck_.fingerprint = fingerprint;
    last_save_ = Clock::now();
  }

  // Room for what this rank will add (no growth slack in a long series' tables).
  void reserve(std::size_t elements, std::size_t outputs) {
    if (interval_ <= 0) return;
    std::lock_guard<std::mutex> lock(mu_);
    add_.elements.reserve(add_.elements.size() + elements);
    add_.prefix.reserve(add_.prefix.size() + outputs);
  }
  // Pair elements, saved from where the caller keeps them (until scan_saved()).
  void add_elements(const std::vector<const Registration*>& elements) {
    if (interval_ <= 0) return;  // never saved: nothing to keep
    std::lock_guard<std::mutex> lock(mu_);
    add_.elements.insert(add_.elements.end(), elements.begin(), elements.end());
    dirty_ = true;
    save_locked(false);
  }
  // Frames lo.. of the uncertainty phase (replacing what an earlier run
  // saved for them), saved from `u` itself: the caller keeps it until release().
  void add_uncertainty(std::size_t lo, const std::vector<DriftUncertainty>& u) {
    if (interval_ <= 0) return;
    std::lock_guard<std::mutex> lock(mu_);
    auto& v = ck_.uncertainty;
    v.erase(std::remove_if(v.begin(), v.end(), [&](const auto& r) { return r.first >= lo && r.first < lo + u.size(); }),
            v.end());
    add_.uncertainty_first = lo;
    add_.uncertainty = &u;
    dirty_ = true;
  }
  // A final scan output, saved from `r` itself: the caller keeps it where it
  // is until keep_outputs() or release().
  void add_output(const Registration& r) {
    if (interval_ <= 0) return;
    std::lock_guard<std::mutex> lock(mu_);
    add_.prefix.push_back(&r);
    dirty_ = true;
    save_locked(false);
  }
  // Before the outputs given to add_output move or go (a resumed run's
  // tables are reshaped): copies of them are kept here instead.
  void keep_outputs() {
    std::lock_guard<std::mutex> lock(mu_);
    for (const Registration* r : add_.prefix) ck_.prefix.push_back(*r);
    add_.prefix = std::vector<const Registration*>();
  }
  // Saves what is not saved yet, however recent the last save.
  void flush() {
    std::lock_guard<std::mutex> lock(mu_);
    save_locked(true);
  }
  // Once every rank has saved its share of the finished scan, the files
  // together hold every output, so a resume skips pairs and scan: the
  // elements are dead weight in memory and in the next save.
  void scan_saved() {
    std::lock_guard<std::mutex> lock(mu_);
    if (ck_.elements.empty() && add_.elements.empty()) return;
    // Assigning a new vector frees it (`= {}` would assign an empty list and keep the capacity).
    ck_.elements = std::vector<Registration>();
    add_.elements = std::vector<const Registration*>();
    dirty_ = true;
  }
  // After the last save of the run (the uncertainty's): the records are on
  // disk and no longer needed here.
  void release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    ck_ = RegisterCheckpoint();
    add_ = CheckpointAdditions();
  }
  // Runs `body`; a cancel keeps what is done: the next --resume starts from there.
  template <class Body>
  void keep_on_cancel(Body&& body) {
    try {
      body();
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::cancelled) flush();
      throw;
    }
  }
  // Collective: a failed write (kept until a phase ends) fails every rank.
  void agree(MPI_Comm comm) const { agree_on_failure(comm, !error_.empty(), ErrorKind::failure, error_); }

 private:
  void save_locked(bool force) {
    if (interval_ <= 0 || released_ || !dirty_ || (!force && since(last_save_) < interval_)) return;
    try {
      save_checkpoint(ck_, path_, &add_);
    } catch (const Error& e) {
      if (error_.empty()) error_ = e.what();
    }
    dirty_ = false;
    last_save_ = Clock::now();
  }

  const double interval_;
  const std::string path_;
  RegisterCheckpoint ck_;
  std::mutex mu_;
  Clock::time_point last_save_;
  bool dirty_ = false;
  bool released_ = false;
  CheckpointAdditions add_;  // the run's records, where the run keeps them
  std::string error_;        // the first failed write
};

// What the phases of one run share, on every rank.
struct RegisterRun {
  RegisterRun(const Job& job_, RunContext& ctx_, std::size_t first_frames)
      : job(job_),
        ctx(ctx_),
        threads(std::max(1, job.execution.threads)),
        frames(open_series(job, first_frames)),
        followed_prefix(first_frames > 0),
        n(frames->frame_count()),
        block(own_block(ctx.comm, n)),
        op(*frames, job.registration, 1, prepared_cache_bytes(job, frames->width(), frames->height())),
        scan_threads(registration_scan_threads(job, frames->width(), frames->height())) {
    res.seconds.open = timer.total();  // indexing the file (and the operator's set-up)
    if (job.scan.correct_distortion) {
      // Checked before any work: impossible timing or bands that do not fit
      // a frame are one-line errors naming the setting, and nothing is written.
      timing.emplace(job.scan.timing(frames->recorded_scan(), frames->width(), frames->height(), &timing_note),
                     frames->width(), frames->height());
      ScanDistortionSteps check(*timing, job.scan.distortion(), n);
    }
  }

  // The scan's operator: polls the cancel, records the application and counts it.
  Registration combine(const Registration& a, const Registration& b) {
    ctx.cancel.throw_if_cancelled();
    Registration r = op(a, b);
    std::lock_guard<std::mutex> lock(applications_mu);
    applications.add(r.iterations);
    ctx.progress.advance(++applied);
    return r;
  }

  // Times the phases (register_distributed); its clock starts with the run.
  PhaseTimer timer{res.seconds};
  const Job& job;
  RunContext& ctx;
  const int threads;
  const std::unique_ptr<FrameSource> frames;
  const bool followed_prefix;  // over a follow's first frames: its checkpoint.dsck stays
  const std::size_t n;
  const FrameBlock block;  // this rank's frames from the scan on (res.registrations, res.uncertainty)
  RegistrationOperator op;
  // The scan's threads per rank: those of the job that the memory budget holds (register_plan.hpp).
  const int scan_threads;

  // From the resume phase on.
  CheckpointState known;    // what the checkpoints held (sized only when resuming from some)
  NeededElements elements;  // this rank's share of e_k
  std::size_t loaded_pairs = 0, loaded_outputs = 0;
  std::vector<OutputGap> gaps;
  ScanPlan plan;
  std::optional<RankCheckpoint> checkpoint;
  bool scan_skipped = false;  // the checkpoints held the whole scan

  // The scan phase's.
  ScanTrace trace;
  std::mutex applications_mu;
  ApplicationSummary applications;  // this rank's, then (after the scan) every rank's
  std::size_t applied = 0;
  std::optional<UncertaintyInScan> in_scan;  // each frame's uncertainty as the scan finishes it (one thread per rank)

  std::optional<ScanTiming> timing;  // with the scan-distortion correction
  std::string timing_note;           // what of it came from the file's metadata
  std::optional<DistributedDistortion> distortion;
  // The correction's decoded frames, kept through the rigid average (which
  // reads them all once more) when that reads the same frames; then freed.
  std::unique_ptr<KeptFrames> kept;
  int line_field_unseen = 0;  // samples at each line's start no line field could be measured at

  // Of every frame, combined over ranks after the scan; the transforms (the
  // averaging and the distortion correction take every frame's) once the
  // failures are classified.
  std::vector<Transform> transforms;
  RegistrationFailures failures;
  UncertaintySummary uncertainty_summary;
  double frame0_noise = 0.0;
  std::vector<std::size_t> above_sigma;  // frames over averaging.max_sigma
  std::vector<double> weights;           // inverse-variance weights, when the averaging takes them
  // This rank's block of drift.csv, once the failures are classified (the
  // block's records in res are dropped then).
  DriftRows rows;

  RegisterResult res;  // registrations and uncertainty: this rank's block, until `rows` holds them
};

// What is done already, and this rank's share of what is not. Every rank
// reads the same files, so every rank derives the same plan; nobody writes a
// checkpoint before all have read.
void resume(RegisterRun& run) {
  const Job& job = run.job;
  RunContext& ctx = run.ctx;
  const nlohmann::json fingerprint = checkpoint_fingerprint(job, *run.frames);
  std::error_code ec;
  fs::create_directories(job.output, ec);  // every rank saves its checkpoint there
  if (job.execution.resume) run.known = load_checkpoints(job.output, fingerprint, run.n);
  else if (ctx.rank == 0 && run.followed_prefix) remove_rank_checkpoints(job.output);  // the follow's stays
  else if (ctx.rank == 0) remove_checkpoints(job.output);  // an earlier run's: never mixed with this one's
  cancellable_barrier(ctx);
  run.loaded_pairs = run.known.element_count();
  run.loaded_outputs = run.known.output_count();
  const std::size_t files = run.known.files;
  if (files == 0) run.known = CheckpointState();  // nothing known: no per-frame table at all
  run.known.files = files;
  run.gaps = run.known.outputs.empty() ? std::vector<OutputGap>{{0, run.n - 1}} : missing_outputs(run.known.outputs);
  std::size_t left = 0;
  for (const auto& g : run.gaps) left += g.size();
  const bool uncertainty_known = std::all_of(run.known.uncertainty.begin(), run.known.uncertainty.end(),
                                             [](const auto& u) { return u.has_value(); });
  if (ctx.rank == 0 && job.execution.resume) {
    if (run.known.files == 0)
      ctx.progress.log(LogLevel::warning, "--resume: no checkpoint in " + job.output + "; starting from the beginning");
    else
      ctx.progress.log(
          LogLevel::info,
          "resumed: " + std::to_string(run.loaded_pairs) + " pairs and " + std::to_string(run.loaded_outputs) +
              " scan outputs from " + std::to_string(run.known.files) + " checkpoint file(s); " +
              (run.gaps.empty()
                   ? std::string("the scan is complete: pairs and scan skipped") +
                         (uncertainty_known ? ", and the uncertainty" : "")
                   : std::to_string(left) + " outputs left in " + std::to_string(run.gaps.size()) + " gap(s)"));
  }
  if (ctx.rank == 0 && run.scan_threads < run.threads && !run.gaps.empty())
    ctx.progress.log(LogLevel::info,
                     "scan: " + std::to_string(run.scan_threads) + " of " + std::to_string(run.threads) +
                         " threads per rank: the memory budget (" + message_number(job.execution.memory_budget_mb) +
                         " MB, execution.memory_budget_mb) holds the pyramids of " + std::to_string(run.scan_threads) +
                         " at " + std::to_string(run.frames->width()) + "x" + std::to_string(run.frames->height()));
  run.plan = plan_scan(run.gaps, ctx, run.scan_threads);
  run.elements = NeededElements(run.plan.table, run.known);
  // Position 0 of a gap after a known output is that output, not a new one.
  if (run.plan.skip_first && run.plan.seq_hi > 0) run.elements.set(*run.known.outputs[run.plan.start]);
  // What this rank needs of them is in run.elements. (A new vector frees the
  // table: `= {}` would assign an empty list and keep its capacity.)
  run.known.elements = std::vector<std::optional<Registration>>();
  run.checkpoint.emplace(job, ctx.rank, fingerprint);
}

// Phase "pairs": the elements this rank's share of the scan needs and no
// checkpoint holds, in chunks between which the checkpoint is saved.
void compute_pairs(RegisterRun& run) {
  auto& known = run.elements;
  const std::size_t to_compute = known.missing();
  std::size_t outputs = 0;
  if (run.plan.scan_mode) outputs = run.plan.seq_hi - run.plan.seq_lo;
  for (const auto& g : run.plan.my_gaps) outputs += g.size();
  run.checkpoint->reserve(to_compute, outputs);
  run.ctx.progress.phase("pairs", to_compute);
  run.checkpoint->keep_on_cancel([&] {
    const std::size_t chunk = run.job.execution.checkpoint_interval_s > 0
                                  ? std::max<std::size_t>(64, static_cast<std::size_t>(run.threads) * 16)
                                  : run.n;
    std::size_t done = 0;
    for (auto [a, b] : run.plan.needed)
      for (std::size_t k = a; k < b;) {
        if (known.has(k)) {
          ++k;
          continue;
        }
        std::size_t end = k;
        while (end < b && end - k < chunk && !known.has(end)) ++end;
        auto part = compute_pair_elements(run.op, k, end, run.threads, &run.ctx.progress, &run.ctx.cancel, done);
        done += part.size();
        std::vector<const Registration*> kept;
        kept.reserve(part.size());
        for (const auto& e : part) kept.push_back(&known.set(e));
        run.checkpoint->add_elements(kept);
        k = end;
      }
    run.checkpoint->flush();  // the scan's reduce phase completes no output for a while
  });
  run.checkpoint->agree(run.ctx.comm);
}

// Phase "scan" over one gap: the work-stealing scan over all ranks. Returns
// the outputs this rank computed.
std::vector<Registration> scan_gap(RegisterRun& run) {
  const Job& job = run.job;
  const ScanPlan& plan = run.plan;
  ScanOptions options;
  options.algorithm = global_scan_algorithm_from_string(job.execution.scan_algorithm);
  options.strategy = local_strategy_from_string(job.execution.local_strategy);
  options.work_stealing = job.execution.work_stealing;
  options.threads = run.scan_threads;
  WorkStealingScan scan(run.ctx.comm, options);
  // The element table is the block (position 0 after a known output: that output).
  const std::vector<Registration>& block = run.elements.block();
  run.ctx.progress.phase("scan", block.size());
  // The checkpoint saves the outputs from `computed` (outliving a cancel).
  std::vector<Registration> computed;
  run.in_scan.emplace(run.op, run.block.first, run.block.last, run.scan_threads == 1);
  run.checkpoint->keep_on_cancel([&] {
    scan.run_into(
        block, computed, [&run](const Registration& a, const Registration& b) { return run.combine(a, b); }, &run.trace,
        [&](std::size_t k, const Registration& r) {
          if (k != 0 || !plan.skip_first) run.checkpoint->add_output(r);
          run.in_scan->add(r);
        });
  });
  if (plan.skip_first && !computed.empty()) {
    run.checkpoint->keep_outputs();  // the erase moves them
    computed.erase(computed.begin());
  }
  return computed;
}

// Phase "scan" over several gaps: this rank's, each finished as a chain from
// its known prefix by one of its threads. Returns the outputs it computed.
std::vector<Registration> finish_chains(RegisterRun& run) {
  RunContext& ctx = run.ctx;
  const std::vector<OutputGap>& my_gaps = run.plan.my_gaps;
  const auto& known = run.known;
  auto& elements = run.elements;
  std::size_t mine = 0;
  for (const auto& g : my_gaps) mine += g.size();
  ctx.progress.phase("scan", mine);
  begin_trace(run.trace, ctx.comm, run.scan_threads);
  run.trace.details() = {{"resume", "chains"}, {"gaps", run.gaps.size()}};
  std::vector<std::vector<Registration>> chains(my_gaps.size());
  std::mutex error_mu;
  std::string error;
  ErrorKind error_kind = ErrorKind::failure;
  const long count = static_cast<long>(my_gaps.size());
#pragma omp parallel for schedule(dynamic, 1) num_threads(run.scan_threads)
  for (long i = 0; i < count; ++i) {
    const OutputGap g = my_gaps[static_cast<std::size_t>(i)];
    const int thread = omp_get_thread_num();
    auto& chain = chains[static_cast<std::size_t>(i)];
    chain.reserve(g.size());  // never reallocated: the checkpoint reads the outputs there
    try {
      Registration acc = g.first == 0 ? elements[0] : *known.outputs[g.first - 1];
      if (g.first == 0) {
        chain.push_back(acc);
        run.checkpoint->add_output(chain.back());
      }
      for (std::size_t k = std::max<std::size_t>(g.first, 1); k <= g.last; ++k) {
        const double t_begin = run.trace.clock().now();
        acc = run.combine(acc, elements[k]);
        run.trace.record(thread, ScanRecord{ctx.rank, thread, 0, static_cast<std::int64_t>(k), ScanPhase::final_scan, 0,
                                            t_begin, run.trace.clock().now()});
        chain.push_back(acc);
        run.checkpoint->add_output(chain.back());
      }
    } catch (const Error& e) {
      std::lock_guard<std::mutex> lock(error_mu);
      if (error.empty() || e.kind() == ErrorKind::cancelled) {
        error = e.what();
        error_kind = e.kind();
      }
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(error_mu);
      if (error.empty()) error = e.what();
    }
  }
  run.checkpoint->keep_outputs();  // `chains` go below
  run.checkpoint->keep_on_cancel([&] { agree_on_failure(ctx.comm, !error.empty(), error_kind, error); });
  std::vector<Registration> computed;
  for (auto& c : chains) computed.insert(computed.end(), c.begin(), c.end());
  return computed;
}

// Phase "scan", then every rank ends with its own block's outputs (those
// loaded and everyone's new ones, cut to the block) and every frame's
// transform (the averaging's).
void scan(RegisterRun& run) {
  std::vector<Registration> computed = run.plan.scan_mode ? scan_gap(run) : finish_chains(run);
  // Every rank's share of the finished scan is saved now, so an interruption
  // in a later phase resumes with this drift instead of scanning again.
  run.checkpoint->flush();
  run.checkpoint->agree(run.ctx.comm);
  run.checkpoint->scan_saved();
  run.elements = NeededElements();  // saved, and the scan is done with them
  run.trace.end();
  gather_trace(run.trace, run.ctx.comm);
  const std::size_t n = run.n;
  const FrameBlock& mine = run.block;
  RegisterResult& res = run.res;
  // A fresh run: each rank computed exactly its own block (the scan's
  // blocks are the later phases'), kept as it is.
  int exact = computed.size() == mine.size() ? 1 : 0;
  for (std::size_t i = 0; exact && i < computed.size(); ++i) exact = computed[i].to == mine.first + i ? 1 : 0;
  int all_exact = 0;
  MPI_Allreduce(&exact, &all_exact, 1, MPI_INT, MPI_LAND, run.ctx.comm);
  if (all_exact) {
    res.registrations = std::move(computed);  // the same records: the checkpoint saves them from there
  } else {
    run.checkpoint->keep_outputs();  // `computed` goes below
    // Resumed: outputs from the checkpoints and from whichever rank
    // finished their gap, put together whole, then cut to this rank's block.
    std::vector<Registration> gathered = allgather_records(run.ctx.comm, computed);
    computed = std::vector<Registration>();
    std::vector<Registration> all(n);
    std::vector<bool> have(n, false);
    auto take = [&](const Registration& r) {
      if (r.to >= n) return;
      all[r.to] = r;
      have[r.to] = true;
    };
    for (const auto& o : run.known.outputs)
      if (o) take(*o);
    for (const Registration& r : gathered) take(r);
    if (const auto missing = std::count(have.begin(), have.end(), false))
      throw failure("register: the scan left " + std::to_string(missing) + " of " + std::to_string(n) +
                    " frames without a result");
    res.registrations.assign(all.begin() + static_cast<long>(mine.first), all.begin() + static_cast<long>(mine.last));
  }
  run.known.outputs = std::vector<std::optional<Registration>>();
  run.applications = sum_over_ranks(run.ctx.comm, run.applications);
}

// Phase "uncertainty": each rank its own block of frames (it holds frame 0
// and reads its own); the summary and frame 0's noise combined over ranks.
void uncertainty(RegisterRun& run) {
  const FrameBlock& mine = run.block;
  const auto& known = run.known.uncertainty;
  if (run.scan_skipped && std::all_of(known.begin(), known.end(), [](const auto& u) { return u.has_value(); })) {
    // Kept with the scan by the interrupted run (the same on every rank).
    run.res.uncertainty.reserve(mine.size());
    for (std::size_t k = mine.first; k < mine.last; ++k) run.res.uncertainty.push_back(*known[k]);
  } else {
    run.ctx.progress.phase("uncertainty", mine.size());
    std::string error;
    ErrorKind kind = ErrorKind::failure;
    try {
      std::optional<std::vector<DriftUncertainty>> in_scan;
      if (run.in_scan) in_scan = run.in_scan->take(run.res.registrations, &run.ctx.progress, &run.ctx.cancel);
      run.res.uncertainty = in_scan ? std::move(*in_scan)
                                    : estimate_drift_uncertainty(run.op, run.res.registrations, 0, mine.size(),
                                                                 run.threads, &run.ctx.progress, &run.ctx.cancel);
    } catch (const Error& e) {
      error = e.what();
      kind = e.kind();
    }
    agree_on_failure(run.ctx.comm, !error.empty(), kind, error);
    run.checkpoint->add_uncertainty(mine.first, run.res.uncertainty);
    run.checkpoint->flush();
    run.checkpoint->agree(run.ctx.comm);
  }
  run.checkpoint->release();  // the run's last save is done
  run.known.uncertainty = std::vector<std::optional<DriftUncertainty>>();
  run.uncertainty_summary = summarize_uncertainty_over_ranks(run.ctx.comm, run.res.uncertainty, mine);
  run.frame0_noise = frame0_noise_over_ranks(run.ctx.comm, run.res.uncertainty, mine);
  const AveragingOptions& averaging = run.job.averaging;
  if (averaging.max_sigma > 0) {
    // The limit holds for the sigma drift.csv gives (the series' common part included), as written below.
    std::vector<DriftUncertainty> written = run.res.uncertainty;
    share_series_common(written, run.uncertainty_summary, mine.first);
    run.above_sigma = frames_above_sigma_over_ranks(run.ctx.comm, written, mine, averaging.max_sigma);
  }
  if (averaging.weights == FrameWeighting::inverse_variance)
    run.weights = uncertainty_weights_over_ranks(run.ctx.comm, run.res.uncertainty, run.frame0_noise);
  if (run.ctx.rank == 0)
    if (std::string w = singular_warning(run.uncertainty_summary); !w.empty()) run.res.warnings.push_back(std::move(w));
}

// Phase "distortion" (with --scan-distortion): the drift line by line and the
// average in specimen coordinates, started from the rigid result.
void correct_distortion(RegisterRun& run) {
  const Job& job = run.job;
  if (run.ctx.rank == 0 && !run.timing_note.empty()) run.ctx.progress.log(LogLevel::info, run.timing_note);
  if (run.ctx.rank == 0 && job.scan.dwell <= 0 && !run.frames->recorded_scan().known())
    run.ctx.progress.log(LogLevel::warning,
                         "scan timing: no dwell time given (scan.dwell, --scan-dwell) nor recorded in the file: "
                         "assuming " +
                             run.timing->describe());
  const Point centre{(run.frames->width() - 1) / 2.0, (run.frames->height() - 1) / 2.0};
  std::vector<Point> rigid;
  rigid.reserve(run.n);
  for (const Transform& t : run.transforms) rigid.push_back(t.displacement(centre));
  // The frames the rigid average leaves out stay out of this one: failed
  // registrations (their drift is no start), those over averaging.max_sigma
  // and those the user excluded.
  std::vector<std::size_t> leave_out = job.averaging.exclude_frames;
  const std::vector<std::size_t> failed = run.failures.failed();
  leave_out.insert(leave_out.end(), failed.begin(), failed.end());
  leave_out.insert(leave_out.end(), run.above_sigma.begin(), run.above_sigma.end());
  const ScanDistortionSettings settings = job.scan.distortion();
  run.line_field_unseen = line_field_unseen_samples(*run.timing, settings, rigid, leave_out);
  if (run.ctx.rank == 0 && run.line_field_unseen > 0) {
    const std::string said =
        "scan distortion: the drift spans too little along the fast axis for the line field's " +
        message_number(settings.line_field_extent * run.timing->samples_per_line()) +
        "-sample extent: each line's first " + std::to_string(run.line_field_unseen) +
        " samples show specimen no other frame saw clear of its own line start, and the field there stays near "
        "its prior (0); a shorter scan.line_field_extent or a series that drifts further measures them";
    run.ctx.progress.log(LogLevel::warning, said);
    run.res.warnings.push_back(said);
  }
  run.op.release_prepared();  // the rigid phases are done: their pyramids' memory goes to the correction's grids
  release_free_memory();
  const int threads = scan_distortion_threads(job, run.frames->width(), run.frames->height());
  if (run.ctx.rank == 0 && threads < run.threads)
    run.ctx.progress.log(LogLevel::info,
                         "scan distortion: " + std::to_string(threads) + " of " + std::to_string(run.threads) +
                             " threads per rank: the memory budget (" + message_number(job.execution.memory_budget_mb) +
                             " MB, execution.memory_budget_mb) holds the working grids of " + std::to_string(threads) +
                             " at " + std::to_string(run.frames->width()) + "x" + std::to_string(run.frames->height()));
  // Frames scanned in several directions are corrected as recorded (the timing turns each one).
  // The correction reads each of this rank's frames five times: as many as the budget holds are kept decoded.
  const std::size_t n = run.frames->frame_count(), ranks = static_cast<std::size_t>(run.ctx.size),
                    rank = static_cast<std::size_t>(run.ctx.rank);
  const std::size_t own = n * (rank + 1) / ranks - n * rank / ranks;  // correct_scan_distortion's split
  run.kept = std::make_unique<KeptFrames>(
      recorded_frames(*run.frames),
      correction_kept_frame_bytes(job, run.frames->width(), run.frames->height(), threads, own));
  const KeptFrames& frames = *run.kept;
  run.distortion = correct_scan_distortion(frames, *run.timing, rigid, settings, run.ctx, threads, leave_out,
                                           kept_contribution_bytes(job));
  if (run.ctx.rank == 0)
    run.ctx.progress.log(LogLevel::info, "scan distortion: " + std::to_string(frames.cache().count()) +
                                             " frame(s) kept decoded (" +
                                             message_number(frames.cache().size_bytes() / (1024.0 * 1024.0)) +
                                             " MB), " + std::to_string(frames.cache().hits()) + " of " +
                                             std::to_string(frames.cache().hits() + frames.cache().misses()) +
                                             " reads served from them");
  if (run.ctx.rank == 0 && !run.distortion->not_followed.empty()) {
    std::string list;
    for (std::size_t i = 0; i < run.distortion->not_followed.size() && i < 20; ++i)
      list += (i ? ", " : "") + std::to_string(run.distortion->not_followed[i]);
    if (run.distortion->not_followed.size() > 20) list += ", ...";
    const std::string said = "scan distortion: " + std::to_string(run.distortion->not_followed.size()) +
                             " frame(s) could not be followed (fewer than half their bands registered against the "
                             "average): " +
                             list + "; left out of average.tif (report: scan_distortion.not_followed)";
    run.ctx.progress.log(LogLevel::warning, said);
    run.res.warnings.push_back(said);
  }
  if (run.ctx.rank == 0 && !run.distortion->converged && run.distortion->rounds.size() > 1)
    run.ctx.progress.log(LogLevel::info, "scan distortion: the drift path still moved by " +
                                             message_number(run.distortion->rounds.back().path_change) +
                                             " px in the last round (rounds: scan.rounds)");
}

// The corrected average, its coverage and lines.csv (rank 0), before the
// report that records them; the report fields that describe them.
nlohmann::json write_distortion_outputs(RegisterRun& run, OutputSet& set) {
  const Job& job = run.job;
  const DistributedDistortion& d = *run.distortion;
  RegisterOutputs& files = run.res.files;
  files.average = set.final_path("average.tif");
  files.coverage = set.final_path("coverage.tif");
  files.lines = set.final_path("lines.csv");
  files.average_rigid = set.final_path("average_rigid.tif");
  TiffWriteOptions tw;
  tw.format = SampleFormat::float32;
  tw.pixel_size = run.frames->pixel_size();
  tw.unit = run.frames->pixel_unit();
  set.write("average.tif", [&](const std::string& path) { write_tiff(path, d.average.image, tw); });
  set.write("coverage.tif", [&](const std::string& path) { write_tiff(path, d.average.coverage, tw); });
  files.sigma = set.final_path("sigma.tif");
  set.write("sigma.tif", [&](const std::string& path) { write_tiff(path, d.average.sigma, tw); });
  set.write("lines.csv", [&](const std::string& path) {
    const LineSigmas sigmas{&d.path_sigma, &d.jitter_sigma};
    write_line_drift_csv(path, *run.timing, run.n, d.model, d.band_samples, job.scan.band_lines, &sigmas);
  });
  double field2 = 0.0, field_samples = 0.0;
  if (!d.model.field.empty()) {
    set.write("line_field.csv",
              [&](const std::string& path) { write_line_field_csv(path, d.model.field_basis, d.model.field); });
    for (const auto& f : d.model.field)
      for (double v : d.model.field_basis.tabulate(f)) field2 += v * v, field_samples += 1;
  }
  double jitter2 = 0.0, lines = 0.0;
  for (const auto& row : d.model.jitter)
    for (double j : row) jitter2 += j * j, lines += 1;
  nlohmann::json rounds = nlohmann::json::array();
  for (const auto& r : d.rounds) rounds.push_back({{"path_change_px", r.path_change}, {"seconds", r.seconds}});
  const ScanTiming& t = *run.timing;
  return {{"timing",
           {{"dwell_s", t.dwell()},
            {"line_time_s", t.line_time()},
            {"frame_time_s", t.frame_time()},
            {"direction", to_string(t.direction())},
            {"dwell_given", job.scan.dwell > 0}}},
          {"average_origin", {d.average.origin.x, d.average.origin.y}},
          {"line_sigma",
           {{"common_offset_sigma_px", {d.path_sigma.offset_sigma().x, d.path_sigma.offset_sigma().y}},
            {"weights_scale", {d.path_sigma.scale().x, d.path_sigma.scale().y}},
            {"method",
             "lines.csv sigma_dx, sigma_dy: standard error of the path at each line relative to the series' common "
             "offset (the path's mean over every line, which the gauge d(0) = 0 leaves to the template; its own "
             "sigma is common_offset_sigma_px), from the penalised spline fit's Bayesian covariance s^2 M^-1 with "
             "the band samples' weights scaled by their residuals (weights_scale) - with frames in several "
             "directions the sandwich M^-1 (A^T W V A + s^2 lambda P) M^-1, each band sample's variance V along "
             "its frame's fast and slow axes from the residuals - plus the drift no band resolves; sigma_jitter: the "
             "jitter shrinkage's posterior standard error, sqrt(tau^2 v / (tau^2 + v)) (v: the line fit's variance, "
             "tau^2: the frame's jitter variance), nan where jitter is not estimated"}}},
          {"sigma_method",
           "sigma.tif: standard error of each pixel of average.tif, s / sqrt(n) of the frames sampled at that specimen "
           "point under the final model (cubic B-spline); NaN below 2 frames"},
          {"average_convention",
           "average.tif pixel (i, j) shows specimen point origin + (i, j); specimen coordinates are frame 0's pixels "
           "at the start of frame 0 (d = 0)"},
          {"rounds", rounds},
          {"converged", d.converged},
          {"band_samples", d.band_samples.size()},
          {"jitter_rms_px", lines > 0 ? std::sqrt(jitter2 / lines) : 0.0},
          {"jitter_precision_px", d.jitter_precision_px},
          {"left_out", d.left_out},
          {"not_followed", d.not_followed},
          {"line_field_knots", job.scan.line_field_knots},
          {"line_field_unseen_samples", run.line_field_unseen},
          {"line_field_rms_px", field_samples > 0 ? std::sqrt(field2 / field_samples) : 0.0},
          {"seconds", run.res.seconds.distortion},
          {"files",
           {{"average", files.average},
            {"coverage", files.coverage},
            {"lines", files.lines},
            {"line_field", d.model.field.empty() ? std::string() : set.final_path("line_field.csv")},
            {"sigma", files.sigma},
            {"average_rigid", files.average_rigid},
            {"coverage_rigid", set.final_path("coverage_rigid.tif")},
            {"sigma_rigid", set.final_path("sigma_rigid.tif")}}}};
}

// Phase "average" (every rank, collective): each rank warps and sums its own
// frames (the median: its band of rows) with the job's thread count; every
// rank ends with the whole average, rank 0 writes it.
void average(RegisterRun& run) {
  RegisterResult& res = run.res;
  {
    const OmpThreadCount guard(run.threads);
    const MpiAveragingTeam team(run.ctx.comm);
    // The correction's kept frames, where it corrected the frames as they are read (no rotation to undo).
    const bool same = run.kept && &recorded_frames(*run.frames) == run.frames.get();
    res.average = average_selected(same ? *run.kept : *run.frames, run.transforms, run.job.averaging, run.failures,
                                   run.above_sigma, std::move(run.weights), res.warnings, &run.ctx.progress,
                                   &run.ctx.cancel, &team);
  }
  run.kept.reset();
}

// Phase "write" (rank 0): average.tif, coverage.tif and report.json with
// the scan trace, staged in the set after drift.csv (stage_drift) (the
// caller commits it once every rank has succeeded, then removes the
// checkpoints).
void write_outputs(RegisterRun& run, OutputSet& set) {
  const Job& job = run.job;
  RegisterResult& res = run.res;
  run.ctx.progress.phase("write", 4);
  nlohmann::json extra;
  extra["execution"] = {{"threads", run.threads},
                        {"scan_threads", run.scan_threads},
                        {"ranks", run.ctx.size},
                        {"scan", run.plan.scan_mode ? "work-stealing" : "chains from checkpointed outputs"},
                        {"resumed", run.known.files > 0},
                        {"resumed_pairs", run.loaded_pairs},
                        {"resumed_outputs", run.loaded_outputs},
                        {"resumed_scan_complete", run.scan_skipped},
                        {"scan_algorithm", job.execution.scan_algorithm},
                        {"local_strategy", job.execution.local_strategy},
                        {"work_stealing", job.execution.work_stealing}};
  extra["scan_trace"] = run.trace.to_json(false);  // its records are streamed (below)
  extra["job"] = to_json(job);  // the job as run: with what was decided from the file (scan.rotation)
  res.seconds.total = run.timer.total();
  extra["timings_s"] = {{"open", res.seconds.open},       {"pairs", res.seconds.pairs},
                        {"scan", res.seconds.scan},       {"uncertainty", res.seconds.uncertainty},
                        {"average", res.seconds.average}, {"before_write_total", res.seconds.total}};
  // Rank 0's peak (every rank's is logged at exit, job_runner.cpp).
  extra["memory"] = {{"peak_mb", static_cast<double>(peak_resident_bytes()) / (1024.0 * 1024.0)},
                     {"budget_mb", job.execution.memory_budget_mb}};
  const auto& records = run.trace.records();
  // An earlier run's files that this one does not write (lines.csv of a
  // corrected run, …) go when the set is committed.
  if (run.distortion) {
    extra["timings_s"]["distortion"] = res.seconds.distortion;
    extra["scan_distortion"] = write_distortion_outputs(run, set);
    extra["files"] = {{"average", run.res.files.average},
                      {"coverage", run.res.files.coverage},
                      {"sigma", run.res.files.sigma},
                      {"lines", run.res.files.lines}};
  }
  const RegisterOutputs corrected = res.files;
  res.files = write_register_report(
      set, *run.frames, job.registration, job.averaging, run.n, run.failures, &run.uncertainty_summary,
      run.applications, res.average, res.warnings, extra,
      {{{"scan_trace", "records"}, records.size(), [&](std::size_t i) { return ScanTrace::record_json(records[i]); }}},
      run.distortion ? "_rigid" : "");
  if (run.distortion) {
    res.files.average_rigid = res.files.average;
    res.files.average = corrected.average;
    res.files.coverage = corrected.coverage;
    res.files.sigma = corrected.sigma;
    res.files.lines = corrected.lines;
  }
  run.ctx.progress.advance(4);
}

// Runs `body` on rank 0 while the others wait; then everyone leaves
// together with the same outcome (rank 0's error, or a cancel, on every rank).
template <class Body>
void on_root_then_together(RegisterRun& run, Body&& body) {
  std::optional<Error> root_error;
  if (run.ctx.rank == 0) {
    try {
      body();
    } catch (const Error& e) {
      root_error = e;
    } catch (const std::exception& e) {
      root_error = Error(ErrorKind::failure, e.what());
    }
  }
  run.res.seconds.total = run.timer.total();
  cancellable_barrier(run.ctx);  // a cancelled rank leaves within the deadline while rank 0 writes
  agree_on_outcome(run.ctx, root_error ? &*root_error : nullptr);
}

// After a resume whose checkpoints hold the whole scan: the drift as saved.
void take_checkpointed_scan(RegisterRun& run) {
  run.scan_skipped = true;
  run.res.registrations.reserve(run.block.size());
  for (std::size_t k = run.block.first; k < run.block.last; ++k) run.res.registrations.push_back(*run.known.outputs[k]);
  run.known.outputs = std::vector<std::optional<Registration>>();
}

// drift.csv from every rank's rows (collective), with the average's
// quality and use of each frame when there is one; rank 0's failure to
// write it is kept for on_root_then_together.
std::exception_ptr stage_drift(RegisterRun& run, OutputSet* set, const AverageResult* average) {
  const Point centre{(run.frames->width() - 1) / 2.0, (run.frames->height() - 1) / 2.0};
  return stage_drift_csv(run.ctx.comm, set, run.rows, run.transforms, run.block, run.job.registration.model, centre,
                         average, run.frame0_noise);
}

// When most frames failed (the classification is every frame's, on every
// rank, so all decide alike): drift.csv from every rank's rows, rank 0
// stages report.json without an average, then every rank throws
// Error(registration_failed); run_register commits the set.
void stop_if_failed(RegisterRun& run, OutputSet* set) {
  run.failures = classify_failures_over_ranks(run.ctx.comm, run.res.registrations, run.block);
  // drift.csv and the report with the series' common part in every frame's
  // sigma (the weights above used the frames' own estimate; max_sigma this sigma).
  share_series_common(run.res.uncertainty, run.uncertainty_summary, run.block.first);
  run.uncertainty_summary = summarize_uncertainty_over_ranks(run.ctx.comm, run.res.uncertainty, run.block);
  run.rows = DriftRows(run.res.registrations, run.res.uncertainty, run.job.registration.model);
  run.res.uncertainty = std::vector<DriftUncertainty>();
  // Gathered only now, so the phases before never hold the whole table
  // beside the block's records.
  run.transforms = gather_transforms(run.ctx.comm, run.res.registrations);
  run.res.registrations = std::vector<Registration>();
  const RegistrationFailures& failures = run.failures;
  if (!failures.most_failed()) return;
  RegisterResult& res = run.res;
  const std::exception_ptr drift_error = stage_drift(run, set, nullptr);
  on_root_then_together(run, [&] {
    stop_if_registration_failed(failures, run.job.input, &run.ctx.progress, res.warnings, [&] {
      run.ctx.progress.phase("write", 2);
      if (drift_error) std::rethrow_exception(drift_error);
      nlohmann::json extra;
      extra["execution"] = {{"threads", run.threads}, {"ranks", run.ctx.size}};
      // Staged; the caller commits the set on registration_failed too.
      res.files = write_register_report(*set, *run.frames, run.job.registration, run.job.averaging, run.n, failures,
                                        &run.uncertainty_summary, run.applications, AverageResult{}, res.warnings,
                                        extra, {}, "");
      run.ctx.progress.advance(2);
    });
  });
  throw Error(ErrorKind::registration_failed, failures.failure_message(run.job.input));
}

}  // namespace

DistributedRegisterResult register_distributed(const Job& job, RunContext& ctx, OutputSet* set,
                                               std::size_t first_frames) {
  RegisterRun run(job, ctx, first_frames);
  resume(run);
  if (run.gaps.empty()) {
    take_checkpointed_scan(run);
  } else {
    run.timer.run(RegisterPhase::pairs, [&] {
      compute_pairs(run);
      release_pair_buffers(run.threads);
    });
    run.timer.run(RegisterPhase::scan, [&] { scan(run); });
  }
  run.timer.run(RegisterPhase::uncertainty, [&] { uncertainty(run); });
  if (run.in_scan) {  // what the scan spent on the uncertainty is the uncertainty's
    run.res.seconds.scan -= run.in_scan->seconds(), run.res.seconds.uncertainty += run.in_scan->seconds();
    run.in_scan.reset();
  }
  stop_if_failed(run, set);
  if (run.timing) {
    run.timer.run(RegisterPhase::scan_distortion, [&] { correct_distortion(run); });
    release_free_memory();  // the correction's grids and templates: not the sizes the averaging asks for
  }
  run.timer.run(RegisterPhase::average, [&] { average(run); });
  if (run.timing) release_free_memory();  // nor the sizes the writing asks for
  const std::exception_ptr drift_error = stage_drift(run, set, &run.res.average);
  run.timer.run(RegisterPhase::write, [&] {
    on_root_then_together(run, [&] {
      if (drift_error) std::rethrow_exception(drift_error);
      if (!set) throw failure("register: rank 0 has no output set");
      write_outputs(run, *set);
    });
  });
  DistributedRegisterResult out;
  out.frames = run.n;
  out.uncertainty = run.uncertainty_summary;
  out.result = std::move(run.res);
  return out;
}

}  // namespace driftscan::mpi
