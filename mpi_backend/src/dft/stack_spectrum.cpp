#include "driftscan/mpi/dft/stack_spectrum.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <complex>
#include <limits>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include "driftscan/core/apodisation_window.hpp"
#include "driftscan/core/error.hpp"
#include "driftscan/mpi/runtime/collectives.hpp"
#include "driftscan/mpi/runtime/command_report.hpp"
#include "driftscan/mpi/runtime/job_input.hpp"

namespace driftscan::mpi {
namespace {

constexpr int kPlaneTag = 5301;

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

std::int64_t wrap(std::int64_t i, std::int64_t n) { return ((i % n) + n) % n; }

using FloatBuffer = std::shared_ptr<std::vector<float>>;

// Buffers of requests a cancellation leaves pending: a peer may still be
// copying from or into them (shared-memory single copy), so they are kept
// until the process ends instead of being freed under MPI's feet.
void keep_until_exit(const std::vector<FloatBuffer>& buffers) {
  static std::mutex mutex;
  static std::vector<FloatBuffer> kept;
  std::lock_guard<std::mutex> lock(mutex);
  kept.insert(kept.end(), buffers.begin(), buffers.end());
}

// Waits for `reqs` while polling the cancel token (a rank that stopped
// would otherwise leave its peers blocked here for good). On cancellation
// the requests stay pending and `buffers` are kept alive.
void wait_all(std::vector<MPI_Request>& reqs, const CancelToken& cancel, const std::vector<FloatBuffer>& buffers) {
  if (reqs.empty()) return;
  for (int spins = 0;; ++spins) {
    int done = 0;
    MPI_Testall(static_cast<int>(reqs.size()), reqs.data(), &done, MPI_STATUSES_IGNORE);
    if (done) return;
    if (cancel.cancelled()) {
      keep_until_exit(buffers);
      cancel.throw_if_cancelled();
    }
    if (spins > 100) std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

struct Owners {
  std::vector<std::int64_t> lo, hi;  // output planes [lo, hi) of every rank
  int of(std::int64_t plane) const {
    for (std::size_t r = 0; r < lo.size(); ++r)
      if (plane >= lo[r] && plane < hi[r]) return static_cast<int>(r);
    return -1;
  }
};

// The volume's shape, from the source and the options.
struct StackShape {
  std::string where;  // error message prefix: the source's file name
  int width = 0, height = 0;
  TimeBinning tb;
  std::int64_t n0 = 0, n1 = 0, n2 = 0;  // planes, height, width
  std::int64_t n2h = 0;                 // kx >= 0 of the real-to-complex half spectrum
  std::size_t npix = 0;                 // pixels per plane
};

StackShape stack_shape(const FrameSource& frames, const StackSpectrumOptions& options) {
  StackShape s;
  std::string src = frames.describe();
  src = src.substr(0, src.find(':'));
  s.where = (src.empty() ? std::string("spectrum") : src) + ": ";
  const std::size_t count = frames.frame_count();
  s.width = frames.width(), s.height = frames.height();
  if (count == 0 || s.width <= 0 || s.height <= 0) throw bad_input(s.where + "no frames");
  if (!options.to_frame0.empty() && options.to_frame0.size() != count)
    throw bad_input(s.where + std::to_string(options.to_frame0.size()) + " transforms given for " +
                    std::to_string(count) + " frames");
  s.tb = time_binning(count, options.max_frames);
  s.n0 = static_cast<std::int64_t>(s.tb.planes), s.n1 = std::int64_t(s.height), s.n2 = std::int64_t(s.width);
  s.n2h = s.n2 / 2 + 1;
  s.npix = static_cast<std::size_t>(s.n1 * s.n2);
  return s;
}

// Slab-pencil with natural input and output: every rank's input is a slab
// of whole planes (it reads only its own frames) and so is its half of the
// spectrum (it sends whole half-planes to rank 0).
DftOptions dft_options(const StackShape& s, int threads) {
  DftOptions o;
  o.size = {s.n0, s.n1, s.n2};
  o.decomposition = Decomposition::slab_pencil;
  o.real_to_complex = true;
  o.threads = threads;
  o.planner = FftPlanner::estimate;  // one transform: measuring would cost more than it saves
  return o;
}

// What the phases of one stack spectrum share, on every rank.
struct SpectrumRun {
  // Checks the source and the options, then plans the DFT (collective).
  SpectrumRun(const FrameSource& frames_, const StackSpectrumOptions& options_, RunContext& ctx_)
      : frames(frames_),
        options(options_),
        ctx(ctx_),
        shape(stack_shape(frames, options)),
        threads(std::max(1, options.threads)),
        plan(ctx.comm, dft_options(shape, threads)),
        ib(plan.input_box()),
        ob(plan.output_box()) {
    result.size = {shape.tb.planes, std::size_t(shape.height), std::size_t(shape.width)};
    result.bin = shape.tb.bin;
    result.frames_used = shape.tb.planes * shape.tb.bin;
    result.decomposition = to_string(plan.decomposition()) + " " + plan.grid_string();
    auto whole_planes = [](const Box3& b, std::int64_t e1, std::int64_t e2) {
      return b.empty() || (b.lo[1] == 0 && b.hi[1] == e1 && b.lo[2] == 0 && b.hi[2] == e2);
    };
    if (!whole_planes(ib, shape.n1, shape.n2) || !whole_planes(ob, shape.n1, shape.n2h))
      throw failure("spectrum: the DFT plan's boxes are not slabs of planes (" + ib.to_string() + ", " +
                    ob.to_string() + ")");
  }

  const FrameSource& frames;
  const StackSpectrumOptions& options;
  RunContext& ctx;
  const StackShape shape;
  const int threads;  // OpenMP threads per rank
  DftPlan plan;
  const Box3 ib, ob;  // this rank's input planes t and output half-planes kt

  std::unique_ptr<TiffStackWriter> writer;  // rank 0
  StackTaper taper;
  std::vector<double> in;                  // this rank's tapered planes: the DFT's input
  std::vector<double> avg_sum, avg_count;  // per pixel, over this rank's frames
  FloatBuffer half;                        // log power of this rank's half-planes: what is sent and written
  StackSpectrumResult result;
};

// Rank 0 opens the volume first, so an unwritable folder stops every rank
// before the work.
void open_volume(SpectrumRun& run) {
  std::unique_ptr<Error> err;
  if (run.ctx.rank == 0) {
    try {
      TiffWriteOptions tw = run.options.tiff;
      tw.format = SampleFormat::float32;
      run.writer = std::make_unique<TiffStackWriter>(run.options.volume_path, run.shape.width, run.shape.height,
                                                     run.shape.tb.planes, tw);
    } catch (const Error& e) {
      err = std::make_unique<Error>(e);
    }
  }
  agree_on_outcome(run.ctx, err.get());
}

// Plane t's bin of (warped) frames summed into `sum`, with the number of
// frames covering each pixel in `cnt`.
void read_plane(const SpectrumRun& run, std::int64_t t, std::vector<double>& sum, std::vector<double>& cnt,
                std::atomic<std::size_t>& frames_done) {
  const StackShape& s = run.shape;
  const StackSpectrumOptions& options = run.options;
  for (std::size_t b = 0; b < s.tb.bin; ++b) {
    const std::size_t k = static_cast<std::size_t>(t) * s.tb.bin + b;
    Frame f = run.frames.frame(k);
    if (f.width != s.width || f.height != s.height)
      throw bad_input(s.where + "frame " + std::to_string(k) + " is " + std::to_string(f.width) + "x" +
                      std::to_string(f.height) + ", frame 0 is " + std::to_string(s.width) + "x" +
                      std::to_string(s.height));
    if (!options.to_frame0.empty())
      f = warp_to_reference(f, options.to_frame0[k], options.interpolation, std::numeric_limits<float>::quiet_NaN());
    for (std::size_t i = 0; i < s.npix; ++i)
      if (std::isfinite(f.pixels[i])) sum[i] += f.pixels[i], cnt[i] += 1;
    if (run.ctx.rank == 0) run.ctx.progress.advance(++frames_done);
  }
}

// The plane's values (the bin's mean per pixel, into `sum`), their weighted
// mean, then the tapered deviations from it into `out` (0 where no frame of
// the bin covers the pixel: missing pixels count as the mean).
void taper_plane(const SpectrumRun& run, std::int64_t t, std::vector<double>& sum, const std::vector<double>& cnt,
                 double* out) {
  const std::int64_t n1 = run.shape.n1, n2 = run.shape.n2;
  const StackTaper& taper = run.taper;
  double sw = 0, swf = 0;
  for (std::int64_t y = 0; y < n1; ++y)
    for (std::int64_t x = 0; x < n2; ++x) {
      const std::size_t i = std::size_t(y * n2 + x);
      if (cnt[i] > 0) {
        sum[i] /= cnt[i];
        const double w = taper.y[std::size_t(y)] * taper.x[std::size_t(x)];
        sw += w, swf += w * sum[i];
      }
    }
  const double mean = sw > 0 ? swf / sw : 0.0;
  const double wt = taper.t[std::size_t(t)];
  for (std::int64_t y = 0; y < n1; ++y)
    for (std::int64_t x = 0; x < n2; ++x) {
      const std::size_t i = std::size_t(y * n2 + x);
      out[i] = cnt[i] > 0 ? wt * taper.y[std::size_t(y)] * taper.x[std::size_t(x)] * (sum[i] - mean) : 0.0;
    }
}

// --- read: this rank's planes, each the mean of its bin of (warped) frames,
// tapered; and the per-pixel sums of the frames for the average.
void read_slab(SpectrumRun& run) {
  const double t_start = now_s();
  RunContext& ctx = run.ctx;
  const StackShape& s = run.shape;
  const std::size_t npix = s.npix;
  run.taper = stack_taper(s.tb.planes, std::size_t(s.height), std::size_t(s.width), run.options.taper);
  const std::int64_t local_planes = run.ib.empty() ? 0 : run.ib.size(0);
  run.in.assign(run.plan.input_count(), 0.0);
  run.avg_sum.assign(npix, 0.0);
  run.avg_count.assign(npix, 0.0);
  const std::size_t local_frames = static_cast<std::size_t>(local_planes) * s.tb.bin;
  if (ctx.rank == 0) ctx.progress.phase("read", local_frames);
  std::atomic<std::size_t> frames_done{0};
  std::string read_error;
  ErrorKind read_kind = ErrorKind::bad_input;
#pragma omp parallel for schedule(dynamic, 1) num_threads(run.threads)
  for (std::int64_t p = 0; p < local_planes; ++p) {
    if (ctx.cancel.cancelled()) continue;
    bool stop = false;
#pragma omp critical(stack_spectrum_error)
    stop = !read_error.empty();
    if (stop) continue;
    try {
      const std::int64_t t = run.ib.lo[0] + p;
      std::vector<double> sum(npix, 0.0), cnt(npix, 0.0);
      read_plane(run, t, sum, cnt, frames_done);
#pragma omp critical(stack_spectrum_average)
      for (std::size_t i = 0; i < npix; ++i) run.avg_sum[i] += sum[i], run.avg_count[i] += cnt[i];
      taper_plane(run, t, sum, cnt, run.in.data() + std::size_t(p) * npix);
    } catch (const Error& e) {
#pragma omp critical(stack_spectrum_error)
      if (read_error.empty()) read_error = e.what(), read_kind = e.kind();
    } catch (const std::exception& e) {
#pragma omp critical(stack_spectrum_error)
      if (read_error.empty()) read_error = s.where + e.what(), read_kind = ErrorKind::failure;
    }
  }
  {
    const Error err(read_kind, read_error);
    agree_on_outcome(ctx, read_error.empty() ? nullptr : &err);
  }
  run.result.read_s = now_s() - t_start;
}

// The mean of every frame used (the kt = 0 plane's image), on rank 0.
void average_frames(SpectrumRun& run) {
  RunContext& ctx = run.ctx;
  const std::size_t npix = run.shape.npix;
  std::vector<double> all_sum(ctx.rank == 0 ? npix : 0), all_count(ctx.rank == 0 ? npix : 0);
  MPI_Reduce(run.avg_sum.data(), all_sum.data(), int(npix), MPI_DOUBLE, MPI_SUM, 0, ctx.comm);
  MPI_Reduce(run.avg_count.data(), all_count.data(), int(npix), MPI_DOUBLE, MPI_SUM, 0, ctx.comm);
  if (ctx.rank == 0) {
    run.result.average = Frame(run.shape.width, run.shape.height);
    for (std::size_t i = 0; i < npix; ++i)
      run.result.average.pixels[i] =
          all_count[i] > 0 ? float(all_sum[i] / all_count[i]) : std::numeric_limits<float>::quiet_NaN();
  }
  std::vector<double>().swap(run.avg_sum);
  std::vector<double>().swap(run.avg_count);
}

// --- transform: the distributed DFT of the slabs, then the log power of
// this rank's half-planes, as float.
void transform_slab(SpectrumRun& run) {
  const double t_start = now_s();
  RunContext& ctx = run.ctx;
  if (ctx.rank == 0) ctx.progress.phase("transform", 1);
  std::vector<std::complex<double>> spec(run.plan.output_count());
  run.plan.execute(run.in, spec);
  std::vector<double>().swap(run.in);
  double energy = 0, et = 0, ey = 0, ex = 0;
  for (double v : run.taper.t) et += v * v;
  for (double v : run.taper.y) ey += v * v;
  for (double v : run.taper.x) ex += v * v;
  energy = et * ey * ex;
  if (!(energy > 0)) energy = 1.0;  // 1- or 2-pixel axes: Hann is all zero
  auto half = std::make_shared<std::vector<float>>(spec.size());
  for (std::size_t i = 0; i < spec.size(); ++i)
    (*half)[i] = static_cast<float>(std::log1p(std::norm(spec[i]) / energy));
  run.half = half;
  std::vector<std::complex<double>>().swap(spec);
  if (ctx.rank == 0) ctx.progress.advance(1);
  run.result.transform_s = now_s() - t_start;
  ctx.cancel.throw_if_cancelled();
}

// Output plane s (centred) holds kt = s - n0/2: its kx >= 0 half comes from
// half-plane kt, its kx < 0 half from half-plane -kt (|F(-k)| = |F(k)|).
std::pair<std::int64_t, std::int64_t> half_planes_of(std::int64_t s, std::int64_t n0) {
  const std::int64_t f = s - n0 / 2;
  return {wrap(f, n0), wrap(-f, n0)};
}

std::size_t half_plane_size(const StackShape& s) { return static_cast<std::size_t>(s.n1 * s.n2h); }

// Half-plane k0 of this rank's output slab.
float* local_half(const SpectrumRun& run, std::int64_t k0) {
  return run.half->data() + std::size_t(k0 - run.ob.lo[0]) * half_plane_size(run.shape);
}

// Which rank holds each half-plane.
Owners gather_owners(const SpectrumRun& run) {
  Owners owners;
  const Box3& ob = run.ob;
  std::int64_t mine[2] = {ob.empty() ? 0 : ob.lo[0], ob.empty() ? 0 : ob.hi[0]};
  std::vector<std::int64_t> all(2 * std::size_t(run.ctx.size));
  MPI_Allgather(mine, 2, MPI_INT64_T, all.data(), 2, MPI_INT64_T, run.ctx.comm);
  for (std::size_t r = 0; r < std::size_t(run.ctx.size); ++r)
    owners.lo.push_back(all[2 * r]), owners.hi.push_back(all[2 * r + 1]);
  return owners;
}

// Ranks other than 0: send this rank's half-planes in the order rank 0
// writes them.
void send_half_planes(const SpectrumRun& run, const Owners& owners) {
  const std::size_t half_plane = half_plane_size(run.shape);
  std::vector<MPI_Request> sends;
  auto send = [&](std::int64_t k) {
    if (owners.of(k) != run.ctx.rank) return;
    sends.emplace_back();
    MPI_Isend(local_half(run, k), int(half_plane), MPI_FLOAT, 0, kPlaneTag, run.ctx.comm, &sends.back());
  };
  for (std::int64_t s = 0; s < run.shape.n0; ++s) {
    auto [k0, m0] = half_planes_of(s, run.shape.n0);
    send(k0);
    if (m0 != k0) send(m0);  // a self-mirrored plane (kt = 0, n0/2) is sent once
  }
  wait_all(sends, run.ctx.cancel, {run.half});
}

// Output plane s, centred on (ky, kx), from half-plane kt (`a`) and its
// mirror -kt (`b`).
void assemble_plane(const StackShape& s, const float* a, const float* b, Frame& plane) {
  const std::int64_t n1 = s.n1, n2 = s.n2, n2h = s.n2h;
  for (std::int64_t y = 0; y < n1; ++y) {
    const std::int64_t v = y - n1 / 2;
    float* row = plane.row(int(y));
    for (std::int64_t x = 0; x < n2; ++x) {
      const std::int64_t u = x - n2 / 2;
      row[x] = u >= 0 ? a[std::size_t(wrap(v, n1) * n2h + u)] : b[std::size_t(wrap(-v, n1) * n2h - u)];
    }
  }
}

// Rank 0: every output plane from its two half-planes (its own or received;
// it holds at most two received at a time), appended to the volume.
void write_planes(SpectrumRun& run, const Owners& owners) {
  RunContext& ctx = run.ctx;
  const std::int64_t n0 = run.shape.n0;
  const std::size_t half_plane = half_plane_size(run.shape);
  ctx.progress.phase("write", std::size_t(n0));
  auto buf_a = std::make_shared<std::vector<float>>(half_plane),
       buf_b = std::make_shared<std::vector<float>>(half_plane);
  Frame plane(run.shape.width, run.shape.height);
  for (std::int64_t s = 0; s < n0; ++s) {
    auto [k0, m0] = half_planes_of(s, n0);
    std::vector<MPI_Request> recvs;
    const float* a = nullptr;
    const float* b = nullptr;
    if (owners.of(k0) == 0) {
      a = local_half(run, k0);
    } else {
      recvs.emplace_back();
      MPI_Irecv(buf_a->data(), int(half_plane), MPI_FLOAT, owners.of(k0), kPlaneTag, ctx.comm, &recvs.back());
      a = buf_a->data();
    }
    if (m0 == k0) {
      b = a;
    } else if (owners.of(m0) == 0) {
      b = local_half(run, m0);
    } else {
      recvs.emplace_back();
      MPI_Irecv(buf_b->data(), int(half_plane), MPI_FLOAT, owners.of(m0), kPlaneTag, ctx.comm, &recvs.back());
      b = buf_b->data();
    }
    wait_all(recvs, ctx.cancel, {buf_a, buf_b});
    assemble_plane(run.shape, a, b, plane);
    run.writer->append(plane);
    ctx.progress.advance(std::size_t(s + 1));
  }
  run.writer->commit();
}

// --- write: rank 0 assembles the centred output planes from the ranks'
// half-planes, which their owners send in the order rank 0 writes them
// (rank 0 never holds the volume).
void write_volume(SpectrumRun& run) {
  const double t_start = now_s();
  const Owners owners = gather_owners(run);
  if (run.ctx.rank != 0) send_half_planes(run, owners);
  else write_planes(run, owners);
  run.result.write_s = now_s() - t_start;
}

}  // namespace

TimeBinning time_binning(std::size_t frames, std::size_t max_frames) {
  if (max_frames == 0 || frames <= max_frames) return {frames, 1};
  const std::size_t bin = (frames + max_frames - 1) / max_frames;
  return {frames / bin, bin};
}

StackTaper stack_taper(std::size_t n0, std::size_t n1, std::size_t n2, bool taper) {
  if (!taper) return {std::vector<double>(n0, 1.0), std::vector<double>(n1, 1.0), std::vector<double>(n2, 1.0)};
  return {tukey_window(n0, 0.25), hann_window(n1), hann_window(n2)};
}

StackSpectrumResult compute_stack_spectrum(const FrameSource& frames, const StackSpectrumOptions& options,
                                           RunContext& ctx) {
  SpectrumRun run(frames, options, ctx);
  open_volume(run);
  read_slab(run);
  average_frames(run);
  transform_slab(run);
  write_volume(run);
  return std::move(run.result);
}

}  // namespace driftscan::mpi
