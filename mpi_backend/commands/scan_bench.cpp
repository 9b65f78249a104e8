// driftscan-engine scan-bench: the paper's microbenchmark of the distributed
// scan. The operator's cost is a sleep, so load-balance effects are exact even
// with many more workers than cores (run oversubscribed ranks with
// --mca mpi_yield_when_idle 1). Prints one JSON object per line and
// configuration on rank 0:
//   {"algorithm","strategy","ranks","threads","elements_per_worker",
//    "makespan_s","work_bound_s","efficiency","speedup_vs_static","imbalance",...}
// operator_overrun = measured time inside the operator / drawn cost (how late
// the sleeps woke up: close to 1 unless the node is overloaded).
// work_bound_s = sum of all operator costs / workers; efficiency =
// work_bound_s / makespan_s; speedup_vs_static = makespan of the static
// hierarchical reduce-then-scan with the same algorithm and draws / makespan.
// Each configuration runs --repeat times (interleaved with its static
// baseline); the line reports the run with the median makespan, and the
// spread (makespan_min_s, makespan_max_s).
#include <sys/prctl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <omp.h>

#include "driftscan/core/error.hpp"
#include "driftscan/mpi/runtime/command.hpp"
#include "driftscan/mpi/scan/scan_cost_model.hpp"
#include "driftscan/mpi/scan/scan_schedule_model.hpp"
#include "driftscan/mpi/scan/work_stealing_scan.hpp"

namespace driftscan::mpi {
namespace {

struct ScanBenchOptions {
  int threads = 1;
  int elements_per_worker = 16;
  std::string cost = "exponential";  // static | exponential
  double mean_ms = 1.0;
  double tail_fraction = 0.0;        // a fraction f of elements ...
  double tail_factor = 1.0;          // ... m times slower
  std::string cost_per = "element";  // element | application
  std::string algorithm = "all";
  std::string strategy = "all";        // scan-then-map | reduce-then-scan | work-stealing | all
  int repeat = 3;                      // runs per configuration; the median makespan is reported
  bool between_ranks = false;          // work-stealing: also between neighbouring ranks (rank_line.hpp)
  std::string final_phase = "shared";  // work-stealing inside ranks: shared | fold (ScanOptions::share_final_phase)
  std::string trace_out;               // file for the last work-stealing run's trace (JSON), if any
};

// The scanned element: the range of global element indices a result covers.
// The operator checks adjacency, so every benchmark run also verifies itself.
struct Span {
  std::int64_t first = 0;
  std::int64_t last = 0;
};

// Operator costs drawn from std::mt19937 seeded 1410. Per element: cost_k is
// fixed for element k (a hard frame stays hard in every phase): extending a
// partial result by element k costs cost_k, combining two partial results
// costs the cost of the right operand's last element. Per application: each
// worker draws a fresh cost per application from its own fixed stream, so
// static and work-stealing runs see identical draws.
class SleepOperator {
 public:
  SleepOperator(const ScanBenchOptions& o, int ranks, int rank) : per_element_(o.cost_per == "element") {
    const std::size_t workers = static_cast<std::size_t>(ranks) * static_cast<std::size_t>(o.threads);
    const std::size_t n = workers * static_cast<std::size_t>(o.elements_per_worker);
    const double mean = o.mean_ms * 1e-3;
    std::mt19937 rng(1410);
    std::exponential_distribution<double> exponential(1.0 / mean);
    auto draw = [&] { return o.cost == "static" ? mean : exponential(rng); };
    if (per_element_) {
      costs_.resize(n);
      for (auto& c : costs_) c = draw();
      // Exactly round(f·n) elements, chosen uniformly, are m times slower.
      std::vector<std::size_t> order(n);
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), rng);
      const auto slow = static_cast<std::size_t>(std::llround(o.tail_fraction * static_cast<double>(n)));
      for (std::size_t i = 0; i < slow && i < n; ++i) costs_[order[i]] *= o.tail_factor;
    } else {
      // Enough draws per worker for any run (a worker applies the operator
      // fewer than ~3 K + 2 log P + threads times); streams wrap around.
      stream_ = 4 * static_cast<std::size_t>(o.elements_per_worker) + 64 + 4 * static_cast<std::size_t>(o.threads);
      std::uniform_real_distribution<double> uniform(0.0, 1.0);
      costs_.resize(workers * stream_);
      for (auto& c : costs_) {
        c = draw();
        if (uniform(rng) < o.tail_fraction) c *= o.tail_factor;
      }
      first_stream_ = static_cast<std::size_t>(rank) * static_cast<std::size_t>(o.threads);
    }
    per_thread_.resize(static_cast<std::size_t>(o.threads));
  }

  // Element k's cost (per-element draws; empty when drawn per application).
  const std::vector<double>& element_costs() const {
    static const std::vector<double> none;
    return per_element_ ? costs_ : none;
  }

  void reset() {
    for (auto& t : per_thread_) t = PerThread{};
  }
  // Sum of the costs drawn by this rank's applications since reset().
  double drawn_cost_s() const {
    double s = 0.0;
    for (const auto& t : per_thread_) s += t.drawn_s;
    return s;
  }

  Span operator()(const Span& a, const Span& b) {
    if (a.last + 1 != b.first)
      throw failure("scan-bench: operator applied to non-adjacent ranges " + std::to_string(a.first) + ".." +
                    std::to_string(a.last) + " and " + std::to_string(b.first) + ".." + std::to_string(b.last));
    const auto start = std::chrono::steady_clock::now();
    const std::size_t t = static_cast<std::size_t>(omp_get_thread_num());
    auto& mine = per_thread_.at(t);
    double cost;
    if (per_element_) {
      const bool extends_left = a.first == a.last && b.first != b.last;
      cost = costs_[static_cast<std::size_t>(extends_left ? a.first : b.last)];
    } else {
      cost = costs_[(first_stream_ + t) * stream_ + mine.applications % stream_];
    }
    mine.applications += 1;
    mine.drawn_s += cost;
    static thread_local bool precise = [] {
      prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);  // default 50 µs slack would skew ms sleeps
      return true;
    }();
    (void)precise;
    std::this_thread::sleep_until(start + std::chrono::duration<double>(cost));
    return Span{a.first, b.last};
  }

 private:
  struct alignas(64) PerThread {
    std::size_t applications = 0;
    double drawn_s = 0.0;
  };
  bool per_element_;
  std::vector<double> costs_;
  std::size_t stream_ = 0;
  std::size_t first_stream_ = 0;
  std::vector<PerThread> per_thread_;
};

struct RunResult {
  double makespan_s = 0.0;
  double work_s = 0.0;  // sum of operator costs over all ranks
  double imbalance = 1.0;
  double critical_path_s = 0.0;
  std::size_t stolen = 0;
  double busy_s = 0.0;  // measured time inside the operator, all workers
};

RunResult run_once(RunContext& ctx, const ScanBenchOptions& o, SleepOperator& op, const ScanOptions& scan_options) {
  const std::size_t per_rank = static_cast<std::size_t>(o.threads) * static_cast<std::size_t>(o.elements_per_worker);
  const std::int64_t offset = static_cast<std::int64_t>(per_rank) * ctx.rank;
  std::vector<Span> block(per_rank);
  for (std::size_t k = 0; k < per_rank; ++k) block[k] = {offset + std::int64_t(k), offset + std::int64_t(k)};

  WorkStealingScan scan(ctx.comm, scan_options);
  ScanTrace trace;
  op.reset();
  std::vector<Span> result = scan.run(
      block, [&op](const Span& a, const Span& b) { return op(a, b); }, &trace);
  gather_trace(trace, ctx.comm);
  // The last work-stealing run's trace, for timelines (which thread applied what, when).
  if (!o.trace_out.empty() && ctx.rank == 0 && scan_options.work_stealing) {
    std::ofstream file(o.trace_out);
    file << trace.to_json().dump() << '\n';
    if (!file) throw failure("scan-bench: cannot write " + o.trace_out);
  }

  int wrong = 0;
  for (std::size_t k = 0; k < per_rank; ++k)
    if (result[k].first != 0 || result[k].last != offset + std::int64_t(k)) ++wrong;
  int any_wrong = 0;
  MPI_Allreduce(&wrong, &any_wrong, 1, MPI_INT, MPI_SUM, ctx.comm);
  if (any_wrong) throw failure("scan-bench: " + std::to_string(any_wrong) + " wrong prefixes");

  RunResult r;
  double mine = op.drawn_cost_s();
  MPI_Allreduce(&mine, &r.work_s, 1, MPI_DOUBLE, MPI_SUM, ctx.comm);
  ScanSummary s = trace.summary();
  r.makespan_s = s.makespan_s;
  r.imbalance = s.imbalance;
  r.critical_path_s = s.critical_path_s;
  r.busy_s = s.total_busy_s;
  for (const auto& w : s.workers) r.stolen += w.stolen;
  MPI_Bcast(&r.makespan_s, 1, MPI_DOUBLE, 0, ctx.comm);
  return r;
}

// The cost model's figures for a configuration (null with costs drawn per
// application: no fixed cost per element to model). With stealing inside
// ranks and the shared final phase, the model is the scan's own schedule
// simulated with no overheads (scan_schedule_model.hpp): what the algorithm
// gives; the bound (model_ideal_stealing_scan) holds whatever cuts stealing
// leaves, below it. Otherwise both are the ideal (along a line, or with the
// fold, no simulation is built).
struct ModelFigures {
  std::optional<double> makespan_s, speedup_vs_static, bound_s;
  // The bound with whole elements (model_ideal_stealing_scan_whole(); the
  // static schedule already is one).
  std::optional<double> makespan_whole_s, speedup_whole_vs_static;
};
ModelFigures model_for(const std::vector<double>& costs, int ranks, int threads, GlobalScanAlgorithm algorithm,
                       const std::string& strategy, bool between_ranks, bool shared_final_phase) {
  if (costs.empty()) return {};
  const double baseline = model_static_scan(costs, ranks, threads, algorithm).makespan_s;
  double makespan = 0.0, bound = 0.0, whole = 0.0;
  if (strategy == "work-stealing") {
    bound = model_ideal_stealing_scan(costs, ranks, threads, algorithm, between_ranks, shared_final_phase).makespan_s;
    makespan = shared_final_phase && !between_ranks
                   ? model_simulated_stealing_scan(costs, ranks, threads, algorithm).makespan_s
                   : bound;
    whole =
        model_ideal_stealing_scan_whole(costs, ranks, threads, algorithm, between_ranks, shared_final_phase).makespan_s;
  } else {
    makespan = model_static_scan(costs, ranks, threads, algorithm, local_strategy_from_string(strategy)).makespan_s;
    bound = whole = makespan;
  }
  return {makespan, baseline / makespan, bound, whole, baseline / whole};
}

nlohmann::json or_null(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); }

int run_bench(RunContext& ctx, const ScanBenchOptions& o) {
  std::vector<GlobalScanAlgorithm> algorithms;
  if (o.algorithm == "all") algorithms = all_global_scan_algorithms();
  else algorithms.push_back(global_scan_algorithm_from_string(o.algorithm));
  const std::vector<std::string> all_strategies{"scan-then-map", "reduce-then-scan", "work-stealing"};
  std::vector<std::string> strategies;
  if (o.strategy == "all") strategies = all_strategies;
  else if (std::find(all_strategies.begin(), all_strategies.end(), o.strategy) != all_strategies.end())
    strategies.push_back(o.strategy);
  else
    throw bad_input("scan-bench: unknown --strategy '" + o.strategy +
                    "' (scan-then-map, reduce-then-scan, work-stealing or all)");

  if (o.repeat < 1) throw bad_input("scan-bench: --repeat must be at least 1");
  SleepOperator op(o, ctx.size, ctx.rank);
  const double workers = static_cast<double>(ctx.size) * o.threads;
  auto options_for = [&](GlobalScanAlgorithm algorithm, const std::string& name) {
    if (name == "scan-then-map") return ScanOptions{algorithm, LocalStrategy::scan_then_map, false, o.threads};
    if (name == "work-stealing")
      return ScanOptions{algorithm,       LocalStrategy::reduce_then_scan, true, o.threads,
                         o.between_ranks, o.final_phase == "shared"};
    return ScanOptions{algorithm, LocalStrategy::reduce_then_scan, false, o.threads};
  };
  // The run with the median makespan of a configuration's repetitions.
  auto median_run = [](std::vector<RunResult> runs) {
    std::sort(runs.begin(), runs.end(),
              [](const RunResult& a, const RunResult& b) { return a.makespan_s < b.makespan_s; });
    return runs[runs.size() / 2];
  };
  for (auto algorithm : algorithms) {
    // Repetitions interleave the static baseline and the strategies, so a
    // disturbance of the shared machine hits them alike; 16 sleeping threads
    // on 2 cores make single runs vary by several per cent.
    std::vector<RunResult> baseline_runs;
    std::vector<std::vector<RunResult>> runs(strategies.size());
    for (int rep = 0; rep < o.repeat; ++rep) {
      ctx.cancel.throw_if_cancelled();
      baseline_runs.push_back(run_once(ctx, o, op, options_for(algorithm, "reduce-then-scan")));
      for (std::size_t i = 0; i < strategies.size(); ++i) {
        ctx.cancel.throw_if_cancelled();
        if (strategies[i] == "reduce-then-scan") runs[i].push_back(baseline_runs.back());
        else runs[i].push_back(run_once(ctx, o, op, options_for(algorithm, strategies[i])));
      }
    }
    const RunResult baseline = median_run(baseline_runs);
    for (std::size_t i = 0; i < strategies.size(); ++i) {
      if (ctx.rank != 0) continue;
      const RunResult r = median_run(runs[i]);
      const bool along_line = strategies[i] == "work-stealing" && o.between_ranks && ctx.size > 1;
      const ModelFigures model = model_for(op.element_costs(), ctx.size, o.threads, algorithm, strategies[i],
                                           along_line, o.final_phase == "shared" && !along_line);
      double lo = r.makespan_s, hi = r.makespan_s;
      for (const RunResult& x : runs[i]) lo = std::min(lo, x.makespan_s), hi = std::max(hi, x.makespan_s);
      const double work_bound = r.work_s / workers;
      nlohmann::json line{
          {"algorithm", to_string(algorithm)},
          {"strategy", strategies[i]},
          {"ranks", ctx.size},
          {"threads", o.threads},
          {"elements_per_worker", o.elements_per_worker},
          {"cost", o.cost},
          {"cost_per", o.cost_per},
          {"mean_ms", o.mean_ms},
          {"tail_fraction", o.tail_fraction},
          {"tail_factor", o.tail_factor},
          {"repeat", o.repeat},
          {"makespan_s", r.makespan_s},
          {"makespan_min_s", lo},
          {"makespan_max_s", hi},
          {"work_bound_s", work_bound},
          {"efficiency", work_bound / r.makespan_s},
          {"speedup_vs_static", baseline.makespan_s / r.makespan_s},
          {"imbalance", r.imbalance},
          {"critical_path_s", r.critical_path_s},
          {"operator_overrun", r.busy_s / r.work_s},
          {"stolen_elements", r.stolen},
          {"between_ranks", along_line},
          {"final_phase", strategies[i] == "work-stealing" ? o.final_phase : "fold"},
          // Which ideal the model figures are: stealing along the whole line
          // of workers (the ranks' blocks cut by cost), or inside each rank.
          {"model", strategies[i] != "work-stealing" ? "static"
                    : along_line                     ? "ideal-line"
                    : o.final_phase == "shared"      ? "simulated-schedule"
                                                     : "ideal-within-ranks"},
          {"model_makespan_s", or_null(model.makespan_s)},
          {"model_speedup_vs_static", or_null(model.speedup_vs_static)},
          {"model_efficiency",
           or_null(model.makespan_s ? std::optional<double>(work_bound / *model.makespan_s) : std::nullopt)},
          {"model_bound_s", or_null(model.bound_s)},
          {"model_makespan_whole_s", or_null(model.makespan_whole_s)},
          {"model_speedup_whole_vs_static", or_null(model.speedup_whole_vs_static)}};
      std::cout << line.dump() << std::endl;
    }
  }
  return 0;
}

const CommandRegistrar registrar(
    {"scan-bench", "Benchmark the distributed scan with a sleeping operator", [](CLI::App& app) -> Runner {
       auto o = std::make_shared<ScanBenchOptions>();
       app.add_option("--threads", o->threads, "OpenMP threads per rank")->check(CLI::Range(1, 1024));
       app.add_option("--elements-per-worker", o->elements_per_worker, "Elements per thread (K)")
           ->check(CLI::Range(1, 1 << 20));
       app.add_option("--cost", o->cost, "Operator cost: static or exponential")
           ->check(CLI::IsMember({"static", "exponential"}));
       app.add_option("--mean-ms", o->mean_ms, "Mean operator cost in milliseconds")->check(CLI::Range(1e-6, 1e6));
       app.add_option("--tail-fraction", o->tail_fraction, "Fraction of elements (or applications) that are slower")
           ->check(CLI::Range(0.0, 1.0));
       app.add_option("--tail-factor", o->tail_factor, "How many times slower they are")->check(CLI::Range(1e-6, 1e6));
       app.add_option("--cost-per", o->cost_per, "Draw a cost per element (default) or per application")
           ->check(CLI::IsMember({"element", "application"}));
       app.add_option("--algorithm", o->algorithm,
                      "Global scan: mpi-scan, dissemination, blelloch, ladner-fischer or all");
       app.add_option("--repeat", o->repeat, "Runs per configuration (median makespan reported)")
           ->capture_default_str();
       app.add_option("--strategy", o->strategy, "scan-then-map, reduce-then-scan, work-stealing or all");
       app.add_flag("--between-ranks", o->between_ranks,
                    "work-stealing: steal between neighbouring ranks too (when they share a node)");
       app.add_option("--final-phase", o->final_phase,
                      "work-stealing: 'shared' (any free thread of the rank runs the elements right of a "
                      "thread's start, one application each; the default here) or 'fold' (each thread its own "
                      "segment, as the registration runs)")
           ->check(CLI::IsMember({"shared", "fold"}))
           ->capture_default_str();
       app.add_option("--trace-out", o->trace_out,
                      "Write the last work-stealing run's trace (every application: rank, thread, phase, "
                      "elements, start/end) as JSON");
       return [o](RunContext& ctx) { return run_bench(ctx, *o); };
     }});

}  // namespace
}  // namespace driftscan::mpi
