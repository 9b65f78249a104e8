#include "driftscan/mpi/distributed_register.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <type_traits>

#include "driftscan/error.hpp"
#include "driftscan/mpi/distributed_checkpoint.hpp"
#include "driftscan/mpi/register_checkpoint.hpp"
#include "driftscan/mpi/job_runner.hpp"
#include "driftscan/mpi/scan_trace.hpp"
#include "driftscan/mpi/work_stealing_scan.hpp"
#include "driftscan/tiff_series.hpp"

namespace driftscan::mpi {
namespace fs = std::filesystem;
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Gathers every rank's trivially copyable records to all ranks, in rank order.
template <class T>
std::vector<T> allgather_records(MPI_Comm comm, const std::vector<T>& mine) {
  static_assert(std::is_trivially_copyable_v<T>, "records travel bitwise");
  int size = 1;
  MPI_Comm_size(comm, &size);
  int bytes = static_cast<int>(mine.size() * sizeof(T));
  std::vector<int> counts(static_cast<std::size_t>(size)), displs(static_cast<std::size_t>(size), 0);
  MPI_Allgather(&bytes, 1, MPI_INT, counts.data(), 1, MPI_INT, comm);
  long long total = 0;
  for (int r = 0; r < size; ++r) {
    displs[static_cast<std::size_t>(r)] = static_cast<int>(total);
    total += counts[static_cast<std::size_t>(r)];
  }
  if (total > (long long)(1u << 31) - 1) throw failure("register: gathered results exceed 2 GB");
  std::vector<unsigned char> buffer(static_cast<std::size_t>(total));
  MPI_Allgatherv(mine.data(), bytes, MPI_BYTE, buffer.data(), counts.data(), displs.data(), MPI_BYTE, comm);
  std::vector<T> out(buffer.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), buffer.data(), out.size() * sizeof(T));
  return out;
}

}  // namespace

RegisterResult register_distributed(const Job& job, RunContext& ctx) {
  const auto t_start = Clock::now();
  const int threads = std::max(1, job.execution.threads);
  const std::size_t ranks = static_cast<std::size_t>(ctx.size), rank = static_cast<std::size_t>(ctx.rank);
  // Every rank indexes the file (IFD offsets only) and decodes frames on demand.
  auto frames = open_job_input(job);
  const std::size_t n = frames->frame_count();
  if (n < 2) throw bad_input(job.input + ": a series of one frame has nothing to register");
  RegistrationOperator op(*frames, job.registration, 1, prepared_cache_bytes(job));

  // What is done already. Every rank reads the same files, so every rank
  // derives the same plan; nobody writes a checkpoint before all have read.
  const double interval = job.execution.checkpoint_interval_s;
  const nlohmann::json fingerprint = checkpoint_fingerprint(job, *frames);
  std::error_code ec;
  fs::create_directories(job.output, ec);  // every rank saves its checkpoint there
  CheckpointState known(n);
  if (job.execution.resume) known = load_checkpoints(job.output, fingerprint, n);
  else if (ctx.rank == 0) remove_checkpoints(job.output);  // an earlier run's: never mixed with this one's
  cancellable_barrier(ctx);
  const std::size_t loaded_pairs = known.element_count(), loaded_outputs = known.output_count();
  const std::vector<OutputGap> gaps = missing_outputs(known.outputs);
  std::size_t left = 0;
  for (const auto& g : gaps) left += g.size();
  if (ctx.rank == 0 && job.execution.resume) {
    if (known.files == 0)
      ctx.progress.log(LogLevel::warning, "--resume: no checkpoint in " + job.output + "; starting from the beginning");
    else
      ctx.progress.log(LogLevel::info, "resumed: " + std::to_string(loaded_pairs) + " pairs and " +
                                           std::to_string(loaded_outputs) + " scan outputs from " +
                                           std::to_string(known.files) + " checkpoint file(s); " +
                                           std::to_string(left) + " outputs left in " + std::to_string(gaps.size()) +
                                           " gap(s)");
  }

  // The plan. One gap (always so in a fresh run: all of 0..n-1) is scanned
  // by the work-stealing scan, from the known output before it: sequence
  // position p is frame start + p, position 0 holds (0 -> start) when the gap
  // does not begin at frame 0. Several gaps are what an interrupted final
  // phase leaves (one per worker, each after the prefix that worker had
  // reached): each is finished as a chain from its known prefix, as that
  // worker would have, gaps spread over ranks x threads.
  const bool scan_mode = gaps.size() == 1;
  std::size_t start = 0, seq_lo = 0, seq_hi = 0;  // scan mode: this rank's positions [seq_lo, seq_hi)
  std::vector<OutputGap> my_gaps;                   // chain mode
  std::vector<std::pair<std::size_t, std::size_t>> needed;  // frame ranges [a, b) whose e_k this rank uses
  if (scan_mode) {
    start = gaps[0].first > 0 ? gaps[0].first - 1 : 0;
    const std::size_t length = gaps[0].last - start + 1;
    seq_lo = length * rank / ranks;
    seq_hi = length * (rank + 1) / ranks;
    const std::size_t from = seq_lo == 0 && gaps[0].first > 0 ? 1 : seq_lo;
    if (from < seq_hi) needed.push_back({start + from, start + seq_hi});
  } else {
    const std::vector<int> worker = assign_gaps(gaps, ctx.size * threads);
    for (std::size_t i = 0; i < gaps.size(); ++i)
      if (static_cast<std::size_t>(worker[i] / threads) == rank) my_gaps.push_back(gaps[i]);
    std::stable_sort(my_gaps.begin(), my_gaps.end(), [](auto& a, auto& b) { return a.size() > b.size(); });
    for (const auto& g : my_gaps) needed.push_back({g.first, g.last + 1});
  }

  // This rank's checkpoint: what its file held already (an earlier run's
  // rank r, whatever its share was: rewriting the file must not lose it;
  // files of ranks this run does not have stay as they are), plus what it
  // computes now.
  const std::string ck_path = rank_checkpoint_path(job.output, ctx.rank);
  RegisterCheckpoint ck;
  if (job.execution.resume && fs::exists(ck_path)) ck = read_checkpoint_file(ck_path, fingerprint);
  ck.fingerprint = fingerprint;
  std::mutex ck_mu;
  auto last_save = Clock::now();
  bool dirty = false;
  std::string ck_error;  // a failed write; agreed on by all ranks after the phase
  auto save_locked = [&](bool force) {
    if (interval <= 0 || !dirty || (!force && since(last_save) < interval)) return;
    try {
      save_checkpoint(ck, ck_path);
    } catch (const Error& e) {
      if (ck_error.empty()) ck_error = e.what();
    }
    dirty = false;
    last_save = Clock::now();
  };
  // A cancel keeps what is done: the next --resume starts from there.
  auto keep_on_cancel = [&](auto&& body) {
    try {
      body();
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::cancelled) {
        std::lock_guard<std::mutex> lock(ck_mu);
        save_locked(true);
      }
      throw;
    }
  };
  auto agree_on_checkpoints = [&] { agree_on_failure(ctx.comm, !ck_error.empty(), ErrorKind::failure, ck_error); };

  RegisterResult res;
  // Phase "pairs": the elements this rank's share of the scan needs and no
  // checkpoint holds, in chunks between which the checkpoint is saved.
  auto t0 = Clock::now();
  std::size_t to_compute = 0;
  for (auto [a, b] : needed)
    for (std::size_t k = a; k < b; ++k) to_compute += known.elements[k] ? 0 : 1;
  ctx.progress.phase("pairs", to_compute);
  keep_on_cancel([&] {
    const std::size_t chunk = interval > 0 ? std::max<std::size_t>(64, static_cast<std::size_t>(threads) * 16) : n;
    std::size_t done = 0;
    for (auto [a, b] : needed)
      for (std::size_t k = a; k < b;) {
        if (known.elements[k]) {
          ++k;
          continue;
        }
        std::size_t end = k;
        while (end < b && end - k < chunk && !known.elements[end]) ++end;
        auto part = compute_pair_elements(op, k, end, threads, &ctx.progress, &ctx.cancel, done);
        done += part.size();
        std::lock_guard<std::mutex> lock(ck_mu);
        for (const auto& e : part) {
          known.elements[e.to] = e;
          ck.elements.push_back(e);
        }
        dirty = true;
        save_locked(false);
        k = end;
      }
    std::lock_guard<std::mutex> lock(ck_mu);
    save_locked(true);  // the scan's reduce phase completes no output for a while
  });
  agree_on_checkpoints();
  res.seconds.pairs = since(t0);

  // Phase "scan".
  t0 = Clock::now();
  ScanTrace trace;
  std::mutex mu;
  std::vector<OperatorApplication> applications;
  std::size_t applied = 0;
  auto combine = [&](const Registration& a, const Registration& b) {
    ctx.cancel.throw_if_cancelled();
    Registration r = op(a, b);
    std::lock_guard<std::mutex> lock(mu);
    applications.push_back({r.from, r.to, r.iterations, r.seconds, r.cost, r.flags});
    ctx.progress.advance(++applied);
    return r;
  };
  auto completed = [&](const Registration& r) {  // any worker thread
    std::lock_guard<std::mutex> lock(ck_mu);
    ck.prefix.push_back(r);
    dirty = true;
    save_locked(false);
  };
  std::vector<Registration> computed;  // the outputs this rank computed
  if (scan_mode) {
    ScanOptions options;
    options.algorithm = global_scan_algorithm_from_string(job.execution.scan_algorithm);
    options.strategy = local_strategy_from_string(job.execution.local_strategy);
    options.work_stealing = job.execution.work_stealing;
    options.threads = threads;
    WorkStealingScan scan(ctx.comm, options);
    // Position 0 of a gap after a known output is that output, not a new one.
    const bool skip_first = seq_lo == 0 && gaps[0].first > 0;
    std::vector<Registration> block;
    block.reserve(seq_hi - seq_lo);
    for (std::size_t p = seq_lo; p < seq_hi; ++p)
      block.push_back(p == 0 && skip_first ? *known.outputs[start] : *known.elements[start + p]);
    ctx.progress.phase("scan", block.size());
    keep_on_cancel([&] {
      computed = scan.run(block, combine, &trace, [&](std::size_t k, const Registration& r) {
        if (k != 0 || !skip_first) completed(r);
      });
    });
    if (skip_first) computed.erase(computed.begin());
  } else {
    std::size_t mine = 0;
    for (const auto& g : my_gaps) mine += g.size();
    ctx.progress.phase("scan", mine);
    trace.begin(ctx.comm, threads);
    trace.details() = {{"resume", "chains"}, {"gaps", gaps.size()}};
    std::vector<std::vector<Registration>> chains(my_gaps.size());
    std::mutex error_mu;
    std::string error;
    ErrorKind error_kind = ErrorKind::failure;
    const long count = static_cast<long>(my_gaps.size());
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (long i = 0; i < count; ++i) {
      const OutputGap g = my_gaps[static_cast<std::size_t>(i)];
      const int thread = omp_get_thread_num();
      auto& chain = chains[static_cast<std::size_t>(i)];
      try {
        Registration acc = g.first == 0 ? *known.elements[0] : *known.outputs[g.first - 1];
        if (g.first == 0) {
          chain.push_back(acc);
          completed(acc);
        }
        for (std::size_t k = std::max<std::size_t>(g.first, 1); k <= g.last; ++k) {
          const double t_begin = trace.clock().now();
          acc = combine(acc, *known.elements[k]);
          trace.record(thread, ScanRecord{ctx.rank, thread, 0, static_cast<std::int64_t>(k), ScanPhase::final_scan, 0,
                                          t_begin, trace.clock().now()});
          chain.push_back(acc);
          completed(acc);
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
    keep_on_cancel([&] { agree_on_failure(ctx.comm, !error.empty(), error_kind, error); });
    for (auto& c : chains) computed.insert(computed.end(), c.begin(), c.end());
  }
  agree_on_checkpoints();
  trace.end();
  trace.gather(ctx.comm);
  // Every rank ends with all outputs: those loaded, and everyone's new ones.
  res.registrations.resize(n);
  std::vector<bool> have(n, false);
  auto take = [&](const Registration& r) {
    if (r.to >= n) return;
    res.registrations[r.to] = r;
    have[r.to] = true;
  };
  for (const auto& o : known.outputs)
    if (o) take(*o);
  for (const Registration& r : allgather_records(ctx.comm, computed)) take(r);
  res.applications = allgather_records(ctx.comm, applications);
  res.seconds.scan = since(t0);
  if (const auto missing = std::count(have.begin(), have.end(), false))
    throw failure("register: the scan left " + std::to_string(missing) + " of " + std::to_string(n) +
                  " frames without a result");

  // Phases "average" and "write" on rank 0; the others wait (cancellably).
  std::exception_ptr root_error;
  if (ctx.rank == 0) {
    try {
      t0 = Clock::now();
      const int saved = omp_get_max_threads();
      omp_set_num_threads(threads);
      try {
        res.average = average_registered(*frames, res.registrations, job.averaging, res.warnings, &ctx.progress,
                                         &ctx.cancel);
      } catch (...) {
        omp_set_num_threads(saved);
        throw;
      }
      omp_set_num_threads(saved);
      res.seconds.average = since(t0);

      t0 = Clock::now();
      ctx.progress.phase("write", 4);
      nlohmann::json extra;
      extra["execution"] = {{"threads", threads},
                            {"ranks", ctx.size},
                            {"scan", scan_mode ? "work-stealing" : "chains from checkpointed outputs"},
                            {"resumed", known.files > 0},
                            {"resumed_pairs", loaded_pairs},
                            {"resumed_outputs", loaded_outputs},
                            {"scan_algorithm", job.execution.scan_algorithm},
                            {"local_strategy", job.execution.local_strategy},
                            {"work_stealing", job.execution.work_stealing}};
      extra["scan_trace"] = trace.to_json(false);  // its records are streamed (below)
      res.seconds.total = since(t_start);
      extra["timings_s"] = {{"pairs", res.seconds.pairs},
                            {"scan", res.seconds.scan},
                            {"average", res.seconds.average},
                            {"before_write_total", res.seconds.total}};
      const auto& records = trace.records();
      res.files = write_register_outputs(
          job.output, *frames, job.registration, job.averaging, res.registrations, res.applications, res.average,
          res.warnings, extra,
          {{{"scan_trace", "records"}, records.size(), [&](std::size_t i) { return ScanTrace::record_json(records[i]); }}});
      ctx.progress.advance(4);
      remove_checkpoints(job.output);  // the outputs are complete: nothing left to resume
      res.seconds.write = since(t0);
    } catch (...) {
      root_error = std::current_exception();
    }
  }
  // Everyone leaves together (the others must not sit in MPI_Finalize while
  // rank 0 still writes), and still stops when cancelled.
  try {
    cancellable_barrier(ctx);
  } catch (...) {
    if (!root_error) root_error = std::current_exception();
  }
  res.seconds.total = since(t_start);
  if (root_error) std::rethrow_exception(root_error);
  return res;
}

}  // namespace driftscan::mpi
