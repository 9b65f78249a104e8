#include "driftscan/mpi/scan_trace.hpp"

#include <algorithm>
#include <map>
#include <type_traits>

#include "driftscan/error.hpp"
#include "driftscan/mpi/idle_wait.hpp"

namespace driftscan::mpi {

static_assert(std::is_trivially_copyable_v<ScanRecord>, "records travel as bytes");

const char* to_string(ScanPhase phase) {
  switch (phase) {
    case ScanPhase::local_reduce: return "local-reduce";
    case ScanPhase::local_scan: return "local-scan";
    case ScanPhase::thread_combine: return "thread-combine";
    case ScanPhase::global: return "global";
    case ScanPhase::final_scan: return "final-scan";
    case ScanPhase::map: return "map";
  }
  return "unknown";
}

ScanClock ScanClock::synchronised(MPI_Comm comm) {
  barrier_idle(comm);
  return ScanClock();
}

void ScanTrace::begin(MPI_Comm comm, int threads) {
  MPI_Comm_rank(comm, &rank_);
  MPI_Comm_size(comm, &ranks_);
  threads_ = std::max(1, threads);
  per_thread_.assign(static_cast<std::size_t>(threads_), {});
  records_.clear();
  rank_end_s_.clear();
  end_s_ = 0.0;
  clock_ = ScanClock::synchronised(comm);
}

void ScanTrace::gather(MPI_Comm comm) {
  std::vector<ScanRecord> local;
  for (auto& buffer : per_thread_) {
    local.insert(local.end(), buffer.begin(), buffer.end());
    buffer.clear();
  }
  int bytes = static_cast<int>(local.size() * sizeof(ScanRecord));
  std::vector<int> counts(static_cast<std::size_t>(ranks_)), displs(static_cast<std::size_t>(ranks_));
  MPI_Gather(&bytes, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm);
  rank_end_s_.assign(static_cast<std::size_t>(ranks_), 0.0);
  MPI_Gather(&end_s_, 1, MPI_DOUBLE, rank_end_s_.data(), 1, MPI_DOUBLE, 0, comm);
  std::vector<ScanRecord> all;
  if (rank_ == 0) {
    long long total = 0;
    for (int r = 0; r < ranks_; ++r) {
      displs[static_cast<std::size_t>(r)] = static_cast<int>(total);
      total += counts[static_cast<std::size_t>(r)];
    }
    if (total > 2147483647LL) throw failure("scan trace: too many records to gather");
    all.resize(static_cast<std::size_t>(total) / sizeof(ScanRecord));
  }
  MPI_Gatherv(local.data(), bytes, MPI_BYTE, all.data(), counts.data(), displs.data(), MPI_BYTE, 0, comm);
  if (rank_ != 0) {
    all = std::move(local);
    rank_end_s_.assign(1, end_s_);
  }
  std::sort(all.begin(), all.end(), [](const ScanRecord& a, const ScanRecord& b) {
    return a.start_s < b.start_s ||
           (a.start_s == b.start_s && (a.rank < b.rank || (a.rank == b.rank && a.thread < b.thread)));
  });
  records_ = std::move(all);
}

ScanSummary ScanTrace::summary() const {
  ScanSummary s;
  for (double e : rank_end_s_) s.makespan_s = std::max(s.makespan_s, e);
  for (const auto& r : records_) s.makespan_s = std::max(s.makespan_s, r.end_s);

  const int ranks = rank_ == 0 ? ranks_ : 1;
  std::map<std::pair<int, int>, WorkerLoad> loads;
  for (int r = 0; r < ranks; ++r)
    for (int t = 0; t < threads_; ++t) loads[{rank_ == 0 ? r : rank_, t}] = WorkerLoad{rank_ == 0 ? r : rank_, t};
  struct PhaseSpan {
    double start = 1e300, end = -1.0, busy = 0.0;
  };
  std::map<std::pair<int, std::pair<int, int>>, PhaseSpan> spans;  // (phase, worker) → span
  for (const auto& r : records_) {
    double d = r.end_s - r.start_s;
    auto& w = loads[{r.rank, r.thread}];
    w.rank = r.rank;
    w.thread = r.thread;
    w.busy_s += d;
    w.applications += 1;
    w.stolen += r.stolen ? 1 : 0;
    auto& sp = spans[{static_cast<int>(r.phase), {r.rank, r.thread}}];
    sp.start = std::min(sp.start, r.start_s);
    sp.end = std::max(sp.end, r.end_s);
    sp.busy += d;
  }
  double max_busy = 0.0;
  for (auto& [key, w] : loads) {
    w.idle_s = std::max(0.0, s.makespan_s - w.busy_s);
    s.total_busy_s += w.busy_s;
    max_busy = std::max(max_busy, w.busy_s);
    s.workers.push_back(w);
  }
  double mean_busy = s.workers.empty() ? 0.0 : s.total_busy_s / static_cast<double>(s.workers.size());
  s.imbalance = mean_busy > 0.0 ? max_busy / mean_busy : 1.0;

  // Per phase (in execution order), the worker whose last application ended latest.
  std::map<int, CriticalStep> steps;
  for (const auto& [key, sp] : spans) {
    auto it = steps.find(key.first);
    if (it == steps.end() || sp.end > it->second.end_s)
      steps[key.first] = CriticalStep{
          static_cast<ScanPhase>(key.first), key.second.first, key.second.second, sp.start, sp.end, sp.busy};
  }
  for (const auto& [phase, step] : steps) {
    s.critical_path.push_back(step);
    s.critical_path_s += step.busy_s;
  }
  return s;
}

nlohmann::json ScanTrace::record_json(const ScanRecord& r) {
  return {{"rank", r.rank},   {"thread", r.thread},          {"first", r.first},
          {"last", r.last},   {"phase", to_string(r.phase)}, {"start_s", r.start_s},
          {"end_s", r.end_s}, {"stolen", r.stolen != 0}};
}

nlohmann::json ScanTrace::to_json(bool with_records) const {
  ScanSummary s = summary();
  nlohmann::json j;
  j["details"] = details_;
  j["ranks"] = ranks_;
  j["threads"] = threads_;
  j["makespan_s"] = s.makespan_s;
  j["total_busy_s"] = s.total_busy_s;
  j["imbalance"] = s.imbalance;
  j["critical_path_s"] = s.critical_path_s;
  auto& workers = j["workers"] = nlohmann::json::array();
  for (const auto& w : s.workers)
    workers.push_back({{"rank", w.rank},
                       {"thread", w.thread},
                       {"busy_s", w.busy_s},
                       {"idle_s", w.idle_s},
                       {"applications", w.applications},
                       {"stolen", w.stolen}});
  auto& path = j["critical_path"] = nlohmann::json::array();
  for (const auto& c : s.critical_path)
    path.push_back({{"phase", to_string(c.phase)},
                    {"rank", c.rank},
                    {"thread", c.thread},
                    {"start_s", c.start_s},
                    {"end_s", c.end_s},
                    {"busy_s", c.busy_s}});
  if (!with_records) return j;
  auto& records = j["records"] = nlohmann::json::array();
  for (const auto& r : records_) records.push_back(record_json(r));
  return j;
}

}  // namespace driftscan::mpi
