#pragma once
// Instrumentation of the prefix scan (sequential or distributed): one record per operator
// application (rank, thread, element range, phase, start/end on a clock
// common to all ranks, stolen or not), gathered to rank 0 and summarised as
// per-worker busy/idle time, the imbalance factor (max/mean busy) and the
// critical path. to_json() is what goes into a run's report.json under
// "scan_trace"; the desktop app's imbalance view draws exactly this.
// A worker keeps at most kMaxRecordsPerWorker records: past that, runs of
// consecutive applications of one phase share a record (their element range,
// first start to last end, summed busy time and counts), so a long series'
// trace stays bounded in memory and in report.json while the summary stays
// exact.
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace driftscan {

enum class ScanPhase : std::uint8_t {
  local_reduce,    // reduce-then-scan, first phase: segment sums (work stealing happens here)
  local_scan,      // scan-then-map, first phase: prefixes of the segment
  thread_combine,  // the rank's master combines its threads' segment sums
  global,          // the scan over ranks (master thread only)
  final_scan,      // reduce-then-scan, last phase: prefixes from the carried-in offset
  map,             // scan-then-map, last phase: offset ⊕ each local prefix
};
const char* to_string(ScanPhase phase);

struct ScanRecord {
  std::int32_t rank = 0;
  std::int32_t thread = 0;
  // Global indices of the first and last element the result covers (inclusive).
  std::int64_t first = 0;
  std::int64_t last = 0;
  ScanPhase phase = ScanPhase::local_reduce;
  // The element taken lies outside the thread's static segment.
  std::uint8_t stolen = 0;
  double start_s = 0.0;
  double end_s = 0.0;
  // Set by ScanTrace::record: the applications the record stands for (1
  // until records are merged), their time inside the operator, how many were stolen.
  std::uint32_t applications = 1;
  std::uint32_t stolen_applications = 0;
  double busy_s = 0.0;
};

// Seconds since the trace began. Distributed runs begin it on every rank
// right after a barrier (mpi/scan/scan_trace.hpp), so the zero is shared by
// all ranks (MPI_Wtime is not global on most systems, and worker threads
// must not call MPI under MPI_THREAD_FUNNELED).
class ScanClock {
 public:
  ScanClock() : zero_(std::chrono::steady_clock::now()) {}
  double now() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - zero_).count(); }

 private:
  std::chrono::steady_clock::time_point zero_;
};

struct WorkerLoad {
  int rank = 0;
  int thread = 0;
  double busy_s = 0.0;  // time inside operator applications
  double idle_s = 0.0;  // makespan − busy
  std::size_t applications = 0;
  std::size_t stolen = 0;
};

// On the critical path, per phase: the worker everyone waited for (the one
// whose last application of that phase ended latest).
struct CriticalStep {
  ScanPhase phase = ScanPhase::local_reduce;
  int rank = 0;
  int thread = 0;
  double start_s = 0.0;
  double end_s = 0.0;
  double busy_s = 0.0;
};

struct ScanSummary {
  double makespan_s = 0.0;  // zero to the end of the slowest rank
  double total_busy_s = 0.0;
  double imbalance = 1.0;  // max busy / mean busy over all workers (1 = perfect)
  std::vector<WorkerLoad> workers;
  std::vector<CriticalStep> critical_path;
  double critical_path_s = 0.0;  // operator time along the critical path
};

class ScanTrace {
 public:
  static constexpr std::size_t kMaxRecordsPerWorker = 2048;

  // Starts a new trace: this process is `rank` of `ranks`, with `threads`
  // workers; the clock starts now (a distributed run calls it right after a
  // barrier: mpi/scan/scan_trace.hpp begin_trace).
  void begin(int rank, int ranks, int threads);
  const ScanClock& clock() const { return clock_; }
  int rank() const { return rank_; }
  int threads() const { return threads_; }
  // Thread-safe for distinct `thread` values (each thread has its own buffer).
  void record(int thread, ScanRecord r);
  // Marks the end of the scan on this rank.
  void end() { end_s_ = clock_.now(); }

  // This process's records, taken out of the per-thread buffers (for a
  // gather over ranks), and the end of its scan.
  std::vector<ScanRecord> take_local_records();
  double end_s() const { return end_s_; }
  // Every rank's records (rank 0: all of them; another rank: its own) and
  // the end of each rank's scan, sorted by start; what a gather brings.
  void set_records(std::vector<ScanRecord> records, std::vector<double> rank_end_s);
  // A run in one process: its own records (no gather needed).
  void collect_local() { set_records(take_local_records(), {end_s_}); }

  // Records held here (all ranks' on rank 0 after gather()), sorted by start.
  const std::vector<ScanRecord>& records() const { return records_; }
  ScanSummary summary() const;
  // Free-form description of the run (algorithm, strategy, ...), copied into to_json().
  nlohmann::json& details() { return details_; }
  // {"details", "ranks", "threads", "makespan_s", "imbalance", "workers": [...],
  //  "critical_path": [...], "records": [...]}; without "records" when
  //  `with_records` is false (a long run's report streams them: record_json).
  nlohmann::json to_json(bool with_records = true) const;
  static nlohmann::json record_json(const ScanRecord& r);

 private:
  ScanClock clock_;
  int rank_ = 0;
  int ranks_ = 1;
  int threads_ = 1;
  double end_s_ = 0.0;
  std::vector<double> rank_end_s_;
  struct Worker {
    std::vector<ScanRecord> records;
    std::uint32_t merge = 1;  // applications per record, at most
  };
  std::vector<Worker> per_thread_;
  std::vector<ScanRecord> records_;
  nlohmann::json details_ = nlohmann::json::object();
};

}  // namespace driftscan
