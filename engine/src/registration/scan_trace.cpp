#include "driftscan/registration/scan_trace.hpp"

#include <algorithm>
#include <map>
#include <type_traits>

#include "driftscan/core/error.hpp"

namespace driftscan {

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

void ScanTrace::begin(int rank, int ranks, int threads) {
  rank_ = rank;
  ranks_ = ranks;
  threads_ = std::max(1, threads);
  per_thread_.assign(static_cast<std::size_t>(threads_), {});
  records_.clear();
  rank_end_s_.clear();
  end_s_ = 0.0;
  clock_ = ScanClock();
}

namespace {
bool mergeable(const ScanRecord& a, const ScanRecord& b) {
  return a.rank == b.rank && a.thread == b.thread && a.phase == b.phase;
}
void merge_into(ScanRecord& a, const ScanRecord& b) {
  a.first = std::min(a.first, b.first);
  a.last = std::max(a.last, b.last);
  a.start_s = std::min(a.start_s, b.start_s);
  a.end_s = std::max(a.end_s, b.end_s);
  a.stolen = (a.stolen || b.stolen) ? 1 : 0;
  a.applications += b.applications;
  a.stolen_applications += b.stolen_applications;
  a.busy_s += b.busy_s;
}
}  // namespace

void ScanTrace::record(int thread, ScanRecord r) {
  r.applications = 1;
  r.stolen_applications = r.stolen ? 1 : 0;
  r.busy_s = r.end_s - r.start_s;
  Worker& w = per_thread_[static_cast<std::size_t>(thread)];
  if (w.merge > 1 && !w.records.empty() && w.records.back().applications < w.merge && mergeable(w.records.back(), r)) {
    merge_into(w.records.back(), r);
    return;
  }
  w.records.push_back(r);
  if (w.records.size() < kMaxRecordsPerWorker) return;
  // Full: neighbours of one phase pairwise into one record, and twice as
  // many applications per record from now on (the same resolution throughout).
  std::size_t out = 0;
  for (std::size_t i = 0; i < w.records.size(); ++out) {
    w.records[out] = w.records[i];
    if (i + 1 < w.records.size() && mergeable(w.records[i], w.records[i + 1])) {
      merge_into(w.records[out], w.records[i + 1]);
      i += 2;
    } else {
      i += 1;
    }
  }
  w.records.resize(out);
  w.merge *= 2;
}

std::vector<ScanRecord> ScanTrace::take_local_records() {
  std::vector<ScanRecord> local;
  for (auto& w : per_thread_) {
    local.insert(local.end(), w.records.begin(), w.records.end());
    w.records.clear();
    w.records.shrink_to_fit();
  }
  return local;
}

void ScanTrace::set_records(std::vector<ScanRecord> all, std::vector<double> rank_end_s) {
  rank_end_s_ = std::move(rank_end_s);
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
    const double d = r.busy_s;
    auto& w = loads[{r.rank, r.thread}];
    w.rank = r.rank;
    w.thread = r.thread;
    w.busy_s += d;
    w.applications += r.applications;
    w.stolen += r.stolen_applications;
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
  return {{"rank", r.rank},    {"thread", r.thread},          {"first", r.first},
          {"last", r.last},    {"phase", to_string(r.phase)}, {"start_s", r.start_s},
          {"end_s", r.end_s},  {"stolen", r.stolen != 0},     {"applications", r.applications},
          {"busy_s", r.busy_s}};
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

}  // namespace driftscan
