// The distributed 3-D DFT against a serial FFTW transform of the whole array.
// mpi-ranks: 1 2 3 4 6 8
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <map>
#include <vector>

#include <fftw3.h>

#include "driftscan/core/error.hpp"
#include "driftscan/mpi/dft/dft_plan.hpp"
#include "hash_unit.hpp"
#include "mpi_world.hpp"

using namespace driftscan::mpi;
using cplx = std::complex<double>;

namespace {

std::int64_t flat(const Extent3& n, std::int64_t i0, std::int64_t i1, std::int64_t i2) {
  return (i0 * n[1] + i1) * n[2] + i2;
}
cplx value(const Extent3& n, std::int64_t i0, std::int64_t i1, std::int64_t i2) {
  const auto k = static_cast<std::uint64_t>(flat(n, i0, i1, i2));
  return {hash_unit(2 * k), hash_unit(2 * k + 1)};
}

template <class F>
void for_box(const Box3& b, F f) {
  std::size_t k = 0;
  for (auto i0 = b.lo[0]; i0 < b.hi[0]; ++i0)
    for (auto i1 = b.lo[1]; i1 < b.hi[1]; ++i1)
      for (auto i2 = b.lo[2]; i2 < b.hi[2]; ++i2) f(k++, i0, i1, i2);
}

std::vector<cplx> fill_complex(const Extent3& n, const Box3& b) {
  std::vector<cplx> v(static_cast<std::size_t>(b.count()));
  for_box(b, [&](std::size_t k, auto i0, auto i1, auto i2) { v[k] = value(n, i0, i1, i2); });
  return v;
}
std::vector<double> fill_real(const Extent3& n, const Box3& b) {
  std::vector<double> v(static_cast<std::size_t>(b.count()));
  for_box(b, [&](std::size_t k, auto i0, auto i1, auto i2) { v[k] = value(n, i0, i1, i2).real(); });
  return v;
}

// Serial FFTW 3-D transforms of the whole array (cached per size).
const std::vector<cplx>& reference_c2c(const Extent3& n) {
  static std::map<Extent3, std::vector<cplx>> cache;
  auto it = cache.find(n);
  if (it != cache.end()) return it->second;
  const Box3 all{{0, 0, 0}, n};
  std::vector<cplx> in = fill_complex(n, all), out(in.size());
  fftw_plan p = fftw_plan_dft_3d(static_cast<int>(n[0]), static_cast<int>(n[1]), static_cast<int>(n[2]),
                                 reinterpret_cast<fftw_complex*>(in.data()),
                                 reinterpret_cast<fftw_complex*>(out.data()), FFTW_FORWARD, FFTW_ESTIMATE);
  fftw_execute(p);
  fftw_destroy_plan(p);
  return cache.emplace(n, std::move(out)).first->second;
}
const std::vector<cplx>& reference_r2c(const Extent3& n) {
  static std::map<Extent3, std::vector<cplx>> cache;
  auto it = cache.find(n);
  if (it != cache.end()) return it->second;
  const Box3 all{{0, 0, 0}, n};
  std::vector<double> in = fill_real(n, all);
  std::vector<cplx> out(static_cast<std::size_t>(n[0] * n[1] * (n[2] / 2 + 1)));
  fftw_plan p = fftw_plan_dft_r2c_3d(static_cast<int>(n[0]), static_cast<int>(n[1]), static_cast<int>(n[2]), in.data(),
                                     reinterpret_cast<fftw_complex*>(out.data()), FFTW_ESTIMATE);
  fftw_execute(p);
  fftw_destroy_plan(p);
  return cache.emplace(n, std::move(out)).first->second;
}

double global_max(double v) {
  double r = 0;
  MPI_Allreduce(&v, &r, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return r;
}

double tolerance(const Extent3& n) { return 1e-10 * std::log2(static_cast<double>(n[0] * n[1] * n[2])); }

// Max abs difference of this rank's output box (row-major) against `ref`
// laid out over `rn` (the documented index mapping).
double box_error(const std::vector<cplx>& out, const Box3& b, const std::vector<cplx>& ref, const Extent3& rn) {
  double e = 0;
  for_box(b, [&](std::size_t k, auto i0, auto i1, auto i2) {
    e = std::max(e, std::abs(out[k] - ref[static_cast<std::size_t>(flat(rn, i0, i1, i2))]));
  });
  return e;
}

// The output boxes of all ranks tile the global array exactly once.
void expect_partition(const Box3& mine, const Extent3& n) {
  const int p = world_size();
  std::int64_t m[6] = {mine.lo[0], mine.lo[1], mine.lo[2], mine.hi[0], mine.hi[1], mine.hi[2]};
  std::vector<std::int64_t> all(6 * static_cast<std::size_t>(p));
  MPI_Allgather(m, 6, MPI_INT64_T, all.data(), 6, MPI_INT64_T, MPI_COMM_WORLD);
  std::int64_t total = 0;
  std::vector<Box3> boxes(p);
  for (int r = 0; r < p; ++r) {
    for (int d = 0; d < 3; ++d) boxes[r].lo[d] = all[6 * r + d], boxes[r].hi[d] = all[6 * r + 3 + d];
    total += boxes[r].count();
    for (int s = 0; s < r; ++s) EXPECT_TRUE(boxes[r].intersect(boxes[s]).empty()) << "ranks " << r << " and " << s;
  }
  EXPECT_EQ(total, n[0] * n[1] * n[2]);
}

struct Case {
  Extent3 n;
  Decomposition d;
};

const std::vector<Case>& small_cases() {
  static const std::vector<Case> cases = {
      {{7, 5, 3}, Decomposition::slab_pencil},    {{7, 5, 3}, Decomposition::pencil},
      {{7, 5, 3}, Decomposition::volumetric},     {{11, 11, 22}, Decomposition::slab_pencil},
      {{11, 11, 22}, Decomposition::pencil},      {{11, 11, 22}, Decomposition::volumetric},
      {{16, 12, 10}, Decomposition::slab_pencil}, {{16, 12, 10}, Decomposition::pencil},
      {{16, 12, 10}, Decomposition::volumetric},
  };
  return cases;
}

DftOptions options(const Extent3& n, Decomposition d, DftLayout in, DftLayout out, DftDirection dir) {
  DftOptions o;
  o.size = n;
  o.decomposition = d;
  o.input_layout = in;
  o.output_layout = out;
  o.direction = dir;
  o.planner = FftPlanner::estimate;
  return o;
}

std::string name(const Case& c, DftLayout l) {
  return std::to_string(c.n[0]) + "x" + std::to_string(c.n[1]) + "x" + std::to_string(c.n[2]) + " " + to_string(c.d) +
         " " + to_string(l);
}

}  // namespace

TEST(DftPlan, ForwardMatchesSerialFftwInBothLayouts) {
  for (const Case& c : small_cases()) {
    for (DftLayout l : {DftLayout::natural, DftLayout::transposed}) {
      DftOptions o = options(c.n, c.d, DftLayout::natural, l, DftDirection::forward);
      o.chunk_bytes = 1;  // one plane per chunk: exercises the chunked local FFTs
      DftPlan plan(MPI_COMM_WORLD, o);
      std::vector<cplx> in = fill_complex(c.n, plan.input_box()), out(plan.output_count());
      plan.execute(in, out);
      const double err = global_max(box_error(out, plan.output_box(), reference_c2c(c.n), c.n));
      EXPECT_LE(err, tolerance(c.n)) << name(c, l);
      expect_partition(plan.output_box(), c.n);
      // Natural output keeps the input distribution.
      if (l == DftLayout::natural) {
        EXPECT_EQ(plan.output_box(), plan.input_box()) << name(c, l);
      }
    }
  }
}

TEST(DftPlan, TransposedLayoutIsTheDocumentedLastStage) {
  const Extent3 n{11, 11, 22};
  const int p = world_size(), r = world_rank();
  {
    DftPlan plan(MPI_COMM_WORLD, options(n, Decomposition::slab_pencil, DftLayout::natural, DftLayout::transposed,
                                         DftDirection::forward));
    const Range a1 = block_range(n[1], p, r);
    EXPECT_EQ(plan.input_box(), (Box3{{block_range(n[0], p, r).lo, 0, 0}, {block_range(n[0], p, r).hi, n[1], n[2]}}));
    EXPECT_EQ(plan.output_box(), (Box3{{0, a1.lo, 0}, {n[0], a1.hi, n[2]}}));
  }
  {
    DftOptions o = options(n, Decomposition::pencil, DftLayout::natural, DftLayout::transposed, DftDirection::forward);
    o.grid = {1, p};
    DftPlan plan(MPI_COMM_WORLD, o);
    // Axis-0 pencils: axis 1 over grid dim 0 (1 rank), axis 2 over grid dim 1.
    const Range a2 = block_range(n[2], p, r);
    EXPECT_EQ(plan.output_box(), (Box3{{0, 0, a2.lo}, {n[0], n[1], a2.hi}}));
    std::vector<cplx> in = fill_complex(n, plan.input_box()), out(plan.output_count());
    plan.execute(in, out);
    EXPECT_LE(global_max(box_error(out, plan.output_box(), reference_c2c(n), n)), tolerance(n));
  }
}

TEST(DftPlan, GivenGridsIncludingEmptyBlocks) {
  const Extent3 n{7, 5, 3};
  const int p = world_size();
  std::vector<std::pair<Decomposition, std::vector<int>>> grids = {{Decomposition::pencil, {p, 1}},
                                                                   {Decomposition::pencil, {1, p}},
                                                                   {Decomposition::volumetric, {1, 1, p}},
                                                                   {Decomposition::volumetric, {p, 1, 1}},
                                                                   {Decomposition::volumetric, {1, p, 1}}};
  if (p % 2 == 0) {
    grids.push_back({Decomposition::volumetric, {2, 1, p / 2}});
    grids.push_back({Decomposition::pencil, {p / 2, 2}});
    grids.push_back({Decomposition::pencil, {2, p / 2}});
  }
  for (const auto& [d, g] : grids) {
    for (DftLayout l : {DftLayout::natural, DftLayout::transposed}) {
      DftOptions o = options(n, d, DftLayout::natural, l, DftDirection::forward);
      o.grid = g;
      DftPlan plan(MPI_COMM_WORLD, o);
      EXPECT_EQ(plan.grid(), g);
      std::vector<cplx> in = fill_complex(n, plan.input_box()), out(plan.output_count());
      plan.execute(in, out);
      EXPECT_LE(global_max(box_error(out, plan.output_box(), reference_c2c(n), n)), tolerance(n))
          << to_string(d) << " grid " << plan.grid_string() << " " << to_string(l);
    }
  }
}

TEST(DftPlan, ForwardThenInverseReturnsTheInput) {
  std::vector<Case> cases = small_cases();
  cases.push_back({{64, 64, 64}, Decomposition::slab_pencil});
  for (const Case& c : cases) {
    const bool big = c.n[0] == 64;
    for (DftLayout mid : {DftLayout::transposed, DftLayout::natural}) {
      if (big && mid == DftLayout::natural) continue;
      DftPlan fwd(MPI_COMM_WORLD, options(c.n, c.d, DftLayout::natural, mid, DftDirection::forward));
      DftOptions bo = options(c.n, c.d, mid, DftLayout::natural, DftDirection::backward);
      bo.normalize = true;
      bo.chunk_bytes = 1;
      DftPlan bwd(MPI_COMM_WORLD, bo);
      ASSERT_EQ(bwd.input_box(), fwd.output_box());
      std::vector<cplx> in = fill_complex(c.n, fwd.input_box()), spec(fwd.output_count()), back(bwd.output_count());
      fwd.execute(in, spec);
      bwd.execute(spec, back);
      double e = 0, m = 0;
      for (std::size_t k = 0; k < in.size(); ++k)
        e = std::max(e, std::abs(back[k] - in[k])), m = std::max(m, std::abs(in[k]));
      EXPECT_LE(global_max(e) / global_max(m), 1e-12) << name(c, mid);
    }
  }
}

TEST(DftPlan, Size64CubedPencilAndVolumetric) {
  const Extent3 n{64, 64, 64};
  for (Decomposition d : {Decomposition::pencil, Decomposition::volumetric}) {
    const DftLayout l = d == Decomposition::pencil ? DftLayout::natural : DftLayout::transposed;
    DftPlan plan(MPI_COMM_WORLD, options(n, d, DftLayout::natural, l, DftDirection::forward));
    std::vector<cplx> in = fill_complex(n, plan.input_box()), out(plan.output_count());
    const DftTimes t = plan.execute(in, out);
    EXPECT_LE(global_max(box_error(out, plan.output_box(), reference_c2c(n), n)), tolerance(n)) << to_string(d);
    EXPECT_GT(t.total, 0.0);
    EXPECT_GE(t.total + 1e-9, t.fft + t.pack + t.alltoall + t.unpack);
  }
}

TEST(DftPlan, RealToComplexMatchesComplexTransform) {
  for (const Case& c : small_cases()) {
    for (DftLayout l : {DftLayout::natural, DftLayout::transposed}) {
      DftOptions o = options(c.n, c.d, DftLayout::natural, l, DftDirection::forward);
      o.real_to_complex = true;
      o.chunk_bytes = 1;
      DftPlan plan(MPI_COMM_WORLD, o);
      std::vector<double> in = fill_real(c.n, plan.input_box());
      std::vector<cplx> out(plan.output_count());
      plan.execute(in, out);
      const Extent3 half{c.n[0], c.n[1], c.n[2] / 2 + 1};
      EXPECT_LE(global_max(box_error(out, plan.output_box(), reference_r2c(c.n), half)), tolerance(c.n)) << name(c, l);
      expect_partition(plan.output_box(), half);

      // The same real data through the complex plan: the half spectrum agrees.
      DftPlan cp(MPI_COMM_WORLD, options(c.n, c.d, DftLayout::natural, l, DftDirection::forward));
      std::vector<cplx> cin(cp.input_count()), cout(cp.output_count());
      for (std::size_t k = 0; k < cin.size(); ++k) cin[k] = 0;
      for_box(cp.input_box(),
              [&](std::size_t k, auto i0, auto i1, auto i2) { cin[k] = value(c.n, i0, i1, i2).real(); });
      cp.execute(cin, cout);
      // Compare where both boxes overlap in the global index space.
      std::vector<cplx> full_c(static_cast<std::size_t>(half[0] * half[1] * half[2]), cplx(0, 0));
      for_box(cp.output_box(), [&](std::size_t k, auto i0, auto i1, auto i2) {
        if (i2 < half[2]) full_c[static_cast<std::size_t>(flat(half, i0, i1, i2))] = cout[k];
      });
      MPI_Allreduce(MPI_IN_PLACE, full_c.data(), static_cast<int>(2 * full_c.size()), MPI_DOUBLE, MPI_SUM,
                    MPI_COMM_WORLD);
      EXPECT_LE(global_max(box_error(out, plan.output_box(), full_c, half)), tolerance(c.n)) << name(c, l);

      // And back to real.
      DftOptions bo = options(c.n, c.d, l, DftLayout::natural, DftDirection::backward);
      bo.real_to_complex = true;
      bo.normalize = true;
      DftPlan back(MPI_COMM_WORLD, bo);
      ASSERT_EQ(back.input_box(), plan.output_box());
      ASSERT_EQ(back.output_box(), plan.input_box());
      std::vector<double> r(back.output_count());
      back.execute(out, r);
      double e = 0;
      for (std::size_t k = 0; k < r.size(); ++k) e = std::max(e, std::abs(r[k] - in[k]));
      EXPECT_LE(global_max(e), 1e-12) << name(c, l);
    }
  }
}

TEST(DftPlan, InverseFromNaturalSpectrumToReal) {
  // c2r with natural input needs one reshape to the last stage first.
  const Extent3 n{11, 11, 22};
  for (Decomposition d : {Decomposition::slab_pencil, Decomposition::pencil, Decomposition::volumetric}) {
    DftOptions o = options(n, d, DftLayout::natural, DftLayout::natural, DftDirection::forward);
    o.real_to_complex = true;
    DftPlan fwd(MPI_COMM_WORLD, o);
    o.direction = DftDirection::backward;
    o.normalize = true;
    DftPlan bwd(MPI_COMM_WORLD, o);
    std::vector<double> in = fill_real(n, fwd.input_box()), back(bwd.output_count());
    std::vector<cplx> spec(fwd.output_count());
    fwd.execute(in, spec);
    bwd.execute(spec, back);
    double e = 0;
    for (std::size_t k = 0; k < in.size(); ++k) e = std::max(e, std::abs(back[k] - in[k]));
    EXPECT_LE(global_max(e), 1e-12) << to_string(d);
  }
}

// Every plan variant autotuning may pick (own block direct or copied; slab
// FFT order; final FFT through a work buffer; pack after FFT), forward c2c
// and r2c, then
// back: the same results.
TEST(DftPlan, EveryVariantGivesTheSameResult) {
  std::vector<Case> cases = small_cases();
  // Slices of 256 elements and more: the exchanged blocks are padded.
  for (Decomposition d : {Decomposition::slab_pencil, Decomposition::pencil, Decomposition::volumetric})
    cases.push_back({{32, 32, 32}, d});
  for (const Case& c : cases) {
    for (bool direct : {false, true}) {
      for (bool a2last : {false, true}) {
        for (DftLayout l : {DftLayout::natural, DftLayout::transposed}) {
          const std::string what = name(c, l) + (direct ? " direct" : " copied") + (a2last ? " axis2-last" : "");
          DftOptions o = options(c.n, c.d, DftLayout::natural, l, DftDirection::forward);
          o.local_block_direct = direct;
          o.slab_axis2_last = a2last;
          o.final_through_work = direct != a2last;
          o.pack_after_fft = direct == a2last;
          o.chunk_bytes = a2last ? 1 : o.chunk_bytes;
          DftPlan plan(MPI_COMM_WORLD, o);
          std::vector<cplx> in = fill_complex(c.n, plan.input_box()), out(plan.output_count());
          plan.execute(in, out);
          EXPECT_LE(global_max(box_error(out, plan.output_box(), reference_c2c(c.n), c.n)), tolerance(c.n)) << what;
          DftOptions bo = options(c.n, c.d, l, DftLayout::natural, DftDirection::backward);
          bo.local_block_direct = direct;
          bo.slab_axis2_last = a2last;
          bo.final_through_work = direct != a2last;
          bo.pack_after_fft = direct == a2last;
          bo.normalize = true;
          DftPlan back(MPI_COMM_WORLD, bo);
          std::vector<cplx> r(back.output_count());
          back.execute(out, r);
          double e = 0;
          for (std::size_t k = 0; k < r.size(); ++k) e = std::max(e, std::abs(r[k] - in[k]));
          EXPECT_LE(global_max(e), 1e-12) << what;

          o.real_to_complex = true;
          DftPlan r2c(MPI_COMM_WORLD, o);
          std::vector<double> rin = fill_real(c.n, r2c.input_box());
          std::vector<cplx> spec(r2c.output_count());
          r2c.execute(rin, spec);
          const Extent3 half{c.n[0], c.n[1], c.n[2] / 2 + 1};
          EXPECT_LE(global_max(box_error(spec, r2c.output_box(), reference_r2c(c.n), half)), tolerance(c.n))
              << what << " r2c";
        }
      }
    }
  }
}

// With the measure planner the plan times its variants and keeps one: the
// result is right whichever won, and the choice is one all ranks share.
TEST(DftPlan, AutotunedPlanIsCorrect) {
  const Extent3 n{16, 12, 10};
  for (Decomposition d : {Decomposition::slab_pencil, Decomposition::pencil, Decomposition::volumetric}) {
    for (DftLayout l : {DftLayout::natural, DftLayout::transposed}) {
      DftOptions o = options(n, d, DftLayout::natural, l, DftDirection::forward);
      o.planner = FftPlanner::measure;
      DftPlan plan(MPI_COMM_WORLD, o);
      std::vector<cplx> in = fill_complex(n, plan.input_box()), out(plan.output_count());
      plan.execute(in, out);
      EXPECT_LE(global_max(box_error(out, plan.output_box(), reference_c2c(n), n)), tolerance(n)) << to_string(d);
      const std::string v = plan.variant_string();
      std::vector<char> buf(64, 0), root(64, 0);
      std::copy(v.begin(), v.end(), buf.begin());
      std::copy(v.begin(), v.end(), root.begin());
      MPI_Bcast(root.data(), 64, MPI_CHAR, 0, MPI_COMM_WORLD);
      EXPECT_EQ(buf, root) << "rank " << world_rank() << " chose " << v;
    }
  }
}

TEST(DftPlan, ReusedPlanGivesTheSameResult) {
  const Extent3 n{16, 12, 10};
  DftPlan plan(MPI_COMM_WORLD,
               options(n, Decomposition::automatic, DftLayout::natural, DftLayout::natural, DftDirection::forward));
  std::vector<cplx> in = fill_complex(n, plan.input_box()), a(plan.output_count()), b(plan.output_count());
  plan.execute(in, a);
  plan.execute(in, b);
  EXPECT_EQ(a, b);
  EXPECT_LE(global_max(box_error(b, plan.output_box(), reference_c2c(n), n)), tolerance(n));
}

TEST(DftPlan, BadParametersThrowOnEveryRankWithoutDeadlock) {
  const int p = world_size();
  const Extent3 n{7, 5, 3};
  auto expect_error = [&](const DftOptions& o, const char* what) {
    bool thrown = false;
    try {
      DftPlan plan(MPI_COMM_WORLD, o);
    } catch (const driftscan::Error& e) {
      thrown = true;
      EXPECT_EQ(e.exit_code(), 2) << what;
      EXPECT_FALSE(std::string(e.what()).empty());
    }
    EXPECT_TRUE(thrown) << what;
  };
  DftOptions o = options(n, Decomposition::pencil, DftLayout::natural, DftLayout::natural, DftDirection::forward);
  o.grid = {p + 1, 1};
  expect_error(o, "grid product differs from the rank count");
  o.grid = {p};
  expect_error(o, "1-D grid for pencils");
  o.grid = {p, 0};
  expect_error(o, "zero grid entry");
  o = options({0, 5, 3}, Decomposition::slab_pencil, DftLayout::natural, DftLayout::natural, DftDirection::forward);
  expect_error(o, "empty size");
  o = options(n, Decomposition::slab_pencil, DftLayout::transposed, DftLayout::natural, DftDirection::forward);
  o.real_to_complex = true;
  expect_error(o, "r2c from transposed input");

  // A wrong buffer size on one rank only: every rank gets the error.
  DftPlan plan(MPI_COMM_WORLD,
               options(n, Decomposition::automatic, DftLayout::natural, DftLayout::natural, DftDirection::forward));
  std::vector<cplx> in(plan.input_count() + (world_rank() == p - 1 ? 1 : 0)), out(plan.output_count());
  bool thrown = false;
  try {
    plan.execute(in, out);
  } catch (const driftscan::Error& e) {
    thrown = true;
    EXPECT_NE(std::string(e.what()).find("rank " + std::to_string(p - 1)), std::string::npos) << e.what();
  }
  EXPECT_TRUE(thrown);
  // A real buffer given to a complex plan.
  std::vector<double> rin(plan.input_count());
  thrown = false;
  try {
    plan.execute(rin, out);
  } catch (const driftscan::Error&) {
    thrown = true;
  }
  EXPECT_TRUE(thrown);
  // The plan still works afterwards.
  std::vector<cplx> good = fill_complex(n, plan.input_box());
  plan.execute(good, out);
  EXPECT_LE(global_max(box_error(out, plan.output_box(), reference_c2c(n), n)), tolerance(n));
}

TEST(DftGeometry, BlockSplitsAndMinimumSurfaceGrid) {
  EXPECT_EQ(block_range(7, 3, 0).lo, 0);
  EXPECT_EQ(block_range(7, 3, 0).hi, 3);
  EXPECT_EQ(block_range(7, 3, 2).lo, 5);
  EXPECT_EQ(block_range(7, 3, 2).hi, 7);
  EXPECT_EQ(block_range(2, 4, 3).hi - block_range(2, 4, 3).lo, 0);  // empty block
  // A flat array is best cut across its long axes.
  EXPECT_EQ(min_surface_grid(Decomposition::pencil, {256, 256, 4}, 4), (std::vector<int>{2, 2}));
  EXPECT_EQ(min_surface_grid(Decomposition::pencil, {1024, 16, 64}, 4), (std::vector<int>{4, 1}));
  EXPECT_EQ(min_surface_grid(Decomposition::volumetric, {64, 64, 64}, 8), (std::vector<int>{2, 2, 2}));
  EXPECT_EQ(choose_decomposition({7, 5, 3}, 8), Decomposition::pencil);
  EXPECT_EQ(choose_decomposition({64, 64, 64}, 8), Decomposition::slab_pencil);
  EXPECT_THROW(parse_decomposition("cubes"), driftscan::Error);
}

// Single precision: the same plans on float data, against the double
// reference. FFT round-off grows like eps * log2 N relative to the spectrum's
// magnitude (eps = 6e-8 for float).
TEST(DftPlan, SinglePrecisionMatchesDoubleReference) {
  using cplxf = std::complex<float>;
  for (const Case& c : small_cases()) {
    const Extent3 half{c.n[0], c.n[1], c.n[2] / 2 + 1};
    double scale = 0;
    for (const cplx& v : reference_c2c(c.n)) scale = std::max(scale, std::abs(v));
    const double tol = 1e-6 * std::log2(static_cast<double>(c.n[0] * c.n[1] * c.n[2])) * scale;
    for (DftLayout l : {DftLayout::natural, DftLayout::transposed}) {
      DftOptions o = options(c.n, c.d, DftLayout::natural, l, DftDirection::forward);
      o.precision = DftPrecision::single;
      o.chunk_bytes = 1;
      DftPlan plan(MPI_COMM_WORLD, o);
      std::vector<cplxf> in(plan.input_count()), out(plan.output_count());
      for_box(plan.input_box(),
              [&](std::size_t k, auto i0, auto i1, auto i2) { in[k] = cplxf(value(c.n, i0, i1, i2)); });
      plan.execute(in, out);
      std::vector<cplx> outd(out.begin(), out.end());
      EXPECT_LE(global_max(box_error(outd, plan.output_box(), reference_c2c(c.n), c.n)), tol) << name(c, l);
      // A double array given to a single-precision plan is refused on every rank.
      std::vector<cplx> din(plan.input_count()), dout(plan.output_count());
      EXPECT_THROW(plan.execute(din, dout), driftscan::Error) << name(c, l);

      // Real-to-complex and back in single precision.
      o.real_to_complex = true;
      DftPlan r2c(MPI_COMM_WORLD, o);
      std::vector<float> rin(r2c.input_count());
      for_box(r2c.input_box(), [&](std::size_t k, auto i0, auto i1, auto i2) {
        rin[k] = static_cast<float>(value(c.n, i0, i1, i2).real());
      });
      std::vector<cplxf> spec(r2c.output_count());
      r2c.execute(rin, spec);
      std::vector<cplx> specd(spec.begin(), spec.end());
      EXPECT_LE(global_max(box_error(specd, r2c.output_box(), reference_r2c(c.n), half)), tol) << name(c, l) << " r2c";
      DftOptions bo = options(c.n, c.d, l, DftLayout::natural, DftDirection::backward);
      bo.real_to_complex = true;
      bo.normalize = true;
      bo.precision = DftPrecision::single;
      DftPlan c2r(MPI_COMM_WORLD, bo);
      std::vector<float> back(c2r.output_count());
      c2r.execute(spec, back);
      double e = 0;
      for (std::size_t k = 0; k < back.size(); ++k) e = std::max(e, static_cast<double>(std::abs(back[k] - rin[k])));
      EXPECT_LE(global_max(e), 1e-5) << name(c, l) << " c2r";
    }
  }
}
