// driftscan-engine fft-bench: the distributed 3-D DFT against FFTW-MPI on the
// same data, in one launch. Prints one JSON object per line (rank 0):
//   {"bench":"network", alpha/beta of a ping-pong}            (2+ ranks)
//   {"bench":"fft","implementation":"fftw-mpi"|"driftscan","decomposition",
//    "layout","grid","ranks","median_s","gflops","breakdown",
//    "max_error_vs_fftw","ratio_vs_fftw_mpi","oversubscribed","lower_bound_s"}
// GFlop/s = 5 N log2 N / t. Ratios compare like with like (natural with
// natural, transposed with FFTW_MPI_TRANSPOSED_OUT). --scaling repeats it for
// 1..P ranks (sub-communicators; idle ranks sleep) with the all-to-all lower
// bounds of Bruck et al. (1 port) for the plan's exchanges.
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "driftscan/core/error.hpp"
#include "driftscan/core/fftw_traits.hpp"
#include "driftscan/mpi/dft/dft_plan.hpp"
#include "driftscan/mpi/dft/dft_reshape.hpp"
#include "driftscan/mpi/runtime/command.hpp"
#include "driftscan/mpi/runtime/fftw_mpi_traits.hpp"

namespace driftscan::mpi {
namespace {

struct FftBenchOptions {
  std::string size = "256x256x256";
  int runs = 5;
  int threads = 1;
  std::string decompositions = "slab-pencil,pencil-pencil-pencil,volumetric";
  std::string planner = "measure";
  bool scaling = false;
  bool skip_fftw = false;
  bool local_block_direct = false;
  bool slab_axis2_last = false;
  bool final_through_work = false;
  bool pack_after_fft = false;
  bool no_autotune = false;
  std::string precision = "double";
};

Extent3 parse_size(const std::string& s) {
  Extent3 n{0, 0, 0};
  std::stringstream in(s);
  std::string part;
  int k = 0;
  while (std::getline(in, part, 'x')) {
    if (k == 3) throw bad_input("--size '" + s + "': expected N0xN1xN2");
    try {
      std::size_t used = 0;
      n[k] = std::stoll(part, &used);
      if (used != part.size() || n[k] < 1) throw std::invalid_argument(part);
    } catch (const std::exception&) {
      throw bad_input("--size '" + s + "': '" + part + "' is not a positive integer");
    }
    ++k;
  }
  if (k != 3) throw bad_input("--size '" + s + "': expected N0xN1xN2");
  return n;
}

double hash_unit(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return static_cast<double>(x >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

// The benchmark data, a function of the global index only.
template <class C>
void fill(C* v, const Box3& b, const Extent3& n) {
  using R = typename C::value_type;
  const std::int64_t e1 = b.size(1), e2 = b.size(2);
#pragma omp parallel for schedule(static)
  for (std::int64_t i0 = b.lo[0]; i0 < b.hi[0]; ++i0)
    for (std::int64_t i1 = b.lo[1]; i1 < b.hi[1]; ++i1)
      for (std::int64_t i2 = b.lo[2]; i2 < b.hi[2]; ++i2) {
        const auto k = static_cast<std::uint64_t>((i0 * n[1] + i1) * n[2] + i2);
        v[((i0 - b.lo[0]) * e1 + (i1 - b.lo[1])) * e2 + (i2 - b.lo[2])] = {static_cast<R>(hash_unit(2 * k)),
                                                                           static_cast<R>(hash_unit(2 * k + 1))};
      }
}

// CPU seconds of this process (all threads): next to wall time, a figure
// less disturbed by other load on a shared machine.
double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

double max_over(MPI_Comm c, double v) {
  double r = 0;
  MPI_Allreduce(&v, &r, 1, MPI_DOUBLE, MPI_MAX, c);
  return r;
}

// A barrier that does not spin: idle oversubscribed ranks must not steal the
// cores of the ranks being timed.
void sleepy_barrier(MPI_Comm c) {
  MPI_Request req;
  MPI_Ibarrier(c, &req);
  int done = 0;
  while (true) {
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (done) break;
    usleep(500);
  }
}

struct Network {
  double alpha = 0, beta = 0;  // s per message, s per byte
};

// Ping-pong between ranks 0 and 1 of `c`: latency of 8 bytes, bandwidth of 16 MiB.
Network measure_network(MPI_Comm c) {
  int rank = 0, size = 1;
  MPI_Comm_rank(c, &rank);
  MPI_Comm_size(c, &size);
  Network net;
  if (size < 2) return net;
  auto pingpong = [&](std::size_t bytes, int reps) {
    std::vector<char> buf(bytes);
    std::vector<double> t;
    for (int r = 0; r < reps; ++r) {
      MPI_Barrier(c);
      const double a = MPI_Wtime();
      if (rank == 0) {
        MPI_Send(buf.data(), static_cast<int>(bytes), MPI_CHAR, 1, 0, c);
        MPI_Recv(buf.data(), static_cast<int>(bytes), MPI_CHAR, 1, 0, c, MPI_STATUS_IGNORE);
      } else if (rank == 1) {
        MPI_Recv(buf.data(), static_cast<int>(bytes), MPI_CHAR, 0, 0, c, MPI_STATUS_IGNORE);
        MPI_Send(buf.data(), static_cast<int>(bytes), MPI_CHAR, 0, 0, c);
      }
      t.push_back((MPI_Wtime() - a) / 2);
    }
    double m = median(t);
    MPI_Bcast(&m, 1, MPI_DOUBLE, 0, c);
    return m;
  };
  net.alpha = pingpong(8, 200);
  const std::size_t big = std::size_t(16) << 20;
  net.beta = std::max(0.0, pingpong(big, 10) - net.alpha) / static_cast<double>(big);
  return net;
}

// Bruck et al.'s lower bounds for one all-to-all of n bytes in total among p
// processes with k = 1 port: (18) fewest rounds, (19) least data per round.
nlohmann::json lower_bounds(const std::vector<DftExchangeInfo>& xs, const Network& net) {
  double l18 = 0, b18 = 0, l19 = 0, b19 = 0;
  for (const auto& x : xs) {
    const double p = x.comm_size, n = static_cast<double>(x.bytes);
    if (p < 2) continue;
    const double rounds = std::ceil(std::log2(p));
    l18 += rounds * net.alpha;
    b18 += rounds * n / (2 * p) * net.beta;
    l19 += (p - 1) * net.alpha;
    b19 += (p - 1) * n / (p * p) * net.beta;
  }
  return {{"all_to_alls", xs.size()},
          {"min_rounds", {{"latency_s", l18}, {"bandwidth_s", b18}, {"total_s", l18 + b18}}},
          {"min_volume", {{"latency_s", l19}, {"bandwidth_s", b19}, {"total_s", l19 + b19}}}};
}

class FftBench {
 public:
  FftBench(const FftBenchOptions& o, MPI_Comm comm, const Network& net, bool oversubscribed)
      : o_(o), comm_(comm), net_(net), oversubscribed_(oversubscribed) {
    MPI_Comm_rank(comm, &rank_);
    MPI_Comm_size(comm, &size_);
    n_ = parse_size(o.size);
    N_ = static_cast<double>(n_[0]) * n_[1] * n_[2];
  }

  void run() {
    if (o_.precision == "single") run_all<float>();
    else run_all<double>();
  }

 private:
  template <class R>
  void run_all() {
    double fftw_time[2] = {0, 0}, fftw_min[2] = {0, 0};
    std::vector<std::complex<R>> fftw_out[2];
    Box3 fftw_box[2];
    if (!o_.skip_fftw) {
      for (int t = 0; t < 2; ++t) run_fftw_mpi<R>(t == 1, fftw_time[t], fftw_min[t], fftw_out[t], fftw_box[t]);
    }
    std::stringstream list(o_.decompositions);
    std::string name;
    while (std::getline(list, name, ',')) {
      const Decomposition d = parse_decomposition(name);
      for (int t = 0; t < 2; ++t)
        run_driftscan<R>(d, t == 1, o_.skip_fftw ? 0.0 : fftw_time[t], fftw_min[t], fftw_out[t], fftw_box[t]);
    }
  }

  FftPlanner planner() const {
    if (o_.planner == "estimate") return FftPlanner::estimate;
    if (o_.planner == "patient") return FftPlanner::patient;
    return FftPlanner::measure;
  }

  nlohmann::json base(const std::string& impl, const std::string& decomp, bool transposed,
                      const std::string& grid) const {
    return {{"bench", "fft"},
            {"implementation", impl},
            {"size", {n_[0], n_[1], n_[2]}},
            {"decomposition", decomp},
            {"layout", transposed ? "transposed" : "natural"},
            {"grid", grid},
            {"ranks", size_},
            {"threads", o_.threads},
            {"precision", o_.precision},
            {"oversubscribed", oversubscribed_}};
  }

  double gflops(double t) const { return t > 0 ? 5.0 * N_ * std::log2(N_) / t * 1e-9 : 0.0; }

  void print(const nlohmann::json& j) const {
    if (rank_ == 0) std::cout << j.dump() << std::endl;
  }

  template <class R>
  void run_fftw_mpi(bool transposed, double& time, double& best, std::vector<std::complex<R>>& out_copy,
                    Box3& out_box) {
    using F = FftwTraits<R>;
    using M = FftwMpiTraits<R>;
    using C = std::complex<R>;
    ptrdiff_t ln0 = 0, s0 = 0, ln1 = 0, s1 = 0;
    const ptrdiff_t alloc = M::local_size_3d_transposed(n_[0], n_[1], n_[2], comm_, &ln0, &s0, &ln1, &s1);
    typename F::complex* in = F::alloc_complex(static_cast<std::size_t>(std::max<ptrdiff_t>(alloc, 1)));
    typename F::complex* out = F::alloc_complex(static_cast<std::size_t>(std::max<ptrdiff_t>(alloc, 1)));
    const unsigned flags = fftw_planner_flags(planner()) | (transposed ? FFTW_MPI_TRANSPOSED_OUT : 0u);
    F::plan_with_nthreads(o_.threads);
    typename F::plan p = M::plan_dft_3d(n_[0], n_[1], n_[2], in, out, comm_, FFTW_FORWARD, flags);
    if (!p) throw failure("FFTW-MPI could not plan the " + o_.size + " transform");
    const Box3 in_box{{s0, 0, 0}, {s0 + ln0, n_[1], n_[2]}};
    std::vector<C> pristine(static_cast<std::size_t>(in_box.count()));
    fill(pristine.data(), in_box, n_);
    std::vector<double> times, cpu;
    for (int r = 0; r <= o_.runs; ++r) {  // run 0 warms up
      // FFTW-MPI may overwrite its input: restore it outside the timing.
      std::memcpy(in, pristine.data(), pristine.size() * sizeof(C));
      MPI_Barrier(comm_);
      const double a = MPI_Wtime(), c = cpu_seconds();
      F::execute(p);
      const double cc = cpu_seconds() - c;
      const double t = max_over(comm_, MPI_Wtime() - a);
      if (r > 0) times.push_back(t), cpu.push_back(max_over(comm_, cc));
    }
    time = median(times);
    best = *std::min_element(times.begin(), times.end());
    // Its output: slabs of axis 0 (natural), or of axis 1 stored (i1, i0, i2).
    out_box = transposed ? Box3{{0, s1, 0}, {n_[0], s1 + ln1, n_[2]}} : in_box;
    out_copy.assign(reinterpret_cast<C*>(out), reinterpret_cast<C*>(out) + out_box.count());
    F::destroy_plan(p);
    F::free(in);
    F::free(out);
    nlohmann::json j = base("fftw-mpi", "slab", transposed, std::to_string(size_));
    j["median_s"] = time;
    j["min_s"] = best;
    j["cpu_s"] = median(cpu);
    j["gflops"] = gflops(time);
    print(j);
  }

  template <class R>
  void run_driftscan(Decomposition d, bool transposed, double fftw_time, double fftw_min,
                     const std::vector<std::complex<R>>& fftw_out, const Box3& fftw_box) {
    using C = std::complex<R>;
    DftOptions o;
    o.precision = std::is_same_v<R, float> ? DftPrecision::single : DftPrecision::double_;
    o.size = n_;
    o.decomposition = d;
    o.output_layout = transposed ? DftLayout::transposed : DftLayout::natural;
    o.threads = o_.threads;
    o.planner = planner();
    o.local_block_direct = o_.local_block_direct;
    o.slab_axis2_last = o_.slab_axis2_last;
    o.final_through_work = o_.final_through_work;
    o.pack_after_fft = o_.pack_after_fft;
    o.autotune =
        !(o_.no_autotune || o_.local_block_direct || o_.slab_axis2_last || o_.final_through_work || o_.pack_after_fft);
    auto plan = std::make_unique<DftPlan>(comm_, o);
    std::vector<C> in(plan->input_count()), out(plan->output_count());
    fill(in.data(), plan->input_box(), n_);
    std::vector<double> times, cpu;
    DftTimes sum;
    for (int r = 0; r <= o_.runs; ++r) {
      MPI_Barrier(comm_);
      const double a = MPI_Wtime(), c = cpu_seconds();
      const DftTimes t = plan->execute(in, out);
      const double cc = cpu_seconds() - c;
      const double total = max_over(comm_, MPI_Wtime() - a);
      if (r == 0) continue;
      times.push_back(total);
      cpu.push_back(max_over(comm_, cc));
      sum.fft += max_over(comm_, t.fft);
      sum.pack += max_over(comm_, t.pack);
      sum.alltoall += max_over(comm_, t.alltoall);
      sum.unpack += max_over(comm_, t.unpack);
    }
    const double med = median(times);
    const double best = *std::min_element(times.begin(), times.end());
    const std::vector<DftExchangeInfo> xs = plan->exchanges();
    const Box3 out_box = plan->output_box();
    const std::string grid = plan->grid_string();
    const std::string variant = plan->variant_string();
    plan.reset();  // free its buffers before the comparison

    nlohmann::json j = base("driftscan", to_string(d), transposed, grid);
    j["variant"] = variant;
    j["median_s"] = med;
    j["min_s"] = best;
    j["cpu_s"] = median(cpu);
    j["gflops"] = gflops(med);
    const double k = 1.0 / o_.runs;
    j["breakdown"] = {{"fft_s", sum.fft * k},
                      {"pack_s", sum.pack * k},
                      {"alltoall_s", sum.alltoall * k},
                      {"unpack_s", sum.unpack * k}};
    if (!o_.skip_fftw) {
      // Bring FFTW-MPI's result into this plan's output boxes and compare.
      const AxisOrder fftw_order = transposed ? AxisOrder{1, 0, 2} : row_major_order;
      // Elements travel as opaque doubles: a complex<float> is one, a complex<double> two.
      BoxRedistribution move(comm_, fftw_box, fftw_order, out_box, row_major_order, sizeof(C) / sizeof(double),
                             o_.threads);
      std::vector<C> ref(out.size());
      move.execute(fftw_out.data(), ref.data());
      double e = 0;
      for (std::size_t i = 0; i < out.size(); ++i) e = std::max(e, static_cast<double>(std::abs(out[i] - ref[i])));
      j["max_error_vs_fftw"] = max_over(comm_, e);
      j["ratio_vs_fftw_mpi"] = fftw_time > 0 ? med / fftw_time : 0.0;
      j["ratio_min_vs_fftw_mpi_min"] = fftw_min > 0 ? best / fftw_min : 0.0;
    }
    j["lower_bound_s"] = lower_bounds(xs, net_);
    print(j);
  }

  FftBenchOptions o_;
  MPI_Comm comm_;
  Network net_;
  bool oversubscribed_;
  int rank_ = 0, size_ = 1;
  Extent3 n_{0, 0, 0};
  double N_ = 0;
};

// Ranks of `comm` on this node times threads, against this node's cores.
bool is_oversubscribed(MPI_Comm comm, int threads) {
  MPI_Comm node;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int local = 1;
  MPI_Comm_size(node, &local);
  MPI_Comm_free(&node);
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  int over = static_cast<long>(local) * threads > static_cast<long>(cores) ? 1 : 0, any = 0;
  MPI_Allreduce(&over, &any, 1, MPI_INT, MPI_MAX, comm);
  return any != 0;
}

int run_fft_bench(const FftBenchOptions& o, RunContext& ctx) {
  // Check the options on every rank before any communication.
  std::string err;
  try {
    parse_size(o.size);
    std::stringstream list(o.decompositions);
    std::string name;
    while (std::getline(list, name, ',')) parse_decomposition(name);
    if (o.runs < 5) throw bad_input("--runs must be at least 5 (the median of 5 or more runs is reported)");
    if (o.threads < 1) throw bad_input("--threads must be at least 1");
    if (o.precision != "single" && o.precision != "double") throw bad_input("--precision must be single or double");
    if (o.planner != "estimate" && o.planner != "measure" && o.planner != "patient")
      throw bad_input("--planner must be estimate, measure or patient");
  } catch (const Error& e) {
    err = e.what();
  }
  agree_on_errors(ctx.comm, err);

  init_fftw_threads();
  static std::once_flag mpi_once;
  std::call_once(mpi_once, [] {
    FftwMpiTraits<double>::init();
    FftwMpiTraits<float>::init();
  });

  const Network net = measure_network(ctx.comm);
  if (ctx.rank == 0 && ctx.size > 1)
    std::cout << nlohmann::json{{"bench", "network"},
                                {"alpha_s", net.alpha},
                                {"beta_s_per_byte", net.beta},
                                {"bandwidth_gb_s", net.beta > 0 ? 1e-9 / net.beta : 0.0}}
                     .dump()
              << std::endl;

  if (!o.scaling) {
    FftBench(o, ctx.comm, net, is_oversubscribed(ctx.comm, o.threads)).run();
    return 0;
  }
  for (int p = 1; p <= ctx.size; ++p) {
    MPI_Comm sub;
    MPI_Comm_split(ctx.comm, ctx.rank < p ? 0 : MPI_UNDEFINED, ctx.rank, &sub);
    if (sub != MPI_COMM_NULL) {
      FftBench(o, sub, net, is_oversubscribed(sub, o.threads)).run();
      MPI_Comm_free(&sub);
    }
    sleepy_barrier(ctx.comm);
    ctx.cancel.throw_if_cancelled();
  }
  return 0;
}

const CommandRegistrar registrar(
    {"fft-bench", "Benchmark the distributed 3-D DFT against FFTW-MPI (JSON lines)", [](CLI::App& app) -> Runner {
       auto o = std::make_shared<FftBenchOptions>();
       app.add_option("--size", o->size, "Global size N0xN1xN2")->capture_default_str();
       app.add_option("--runs", o->runs, "Timed runs (median reported, >= 5)")->capture_default_str();
       app.add_option("--threads", o->threads, "OpenMP/FFTW threads per rank")->capture_default_str();
       app.add_option("--decompositions", o->decompositions,
                      "Comma-separated: slab-pencil, pencil-pencil-pencil, volumetric")
           ->capture_default_str();
       app.add_option("--planner", o->planner, "FFTW planner: estimate, measure, patient")->capture_default_str();
       app.add_option("--precision", o->precision, "single or double")->capture_default_str();
       app.add_flag("--scaling", o->scaling, "Repeat for 1..P ranks (strong scaling) in one launch");
       app.add_flag("--no-fftw-mpi", o->skip_fftw, "Skip the FFTW-MPI reference");
       app.add_flag("--no-autotune", o->no_autotune, "Plan the default variant instead of timing the variants");
       app.add_flag("--local-block-direct", o->local_block_direct,
                    "Only this variant: own block written where it is received");
       app.add_flag("--slab-axis2-last", o->slab_axis2_last, "Only this variant: slab FFTs axis 1 then axis 2");
       app.add_flag("--final-through-work", o->final_through_work, "Only this variant: last FFT through a work buffer");
       app.add_flag("--pack-after-fft", o->pack_after_fft, "Only this variant: FFTs in place, then packed");
       return [o](RunContext& ctx) { return run_fft_bench(*o, ctx); };
     }});

}  // namespace
}  // namespace driftscan::mpi
