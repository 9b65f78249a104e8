#include "driftscan/mpi/stack_spectrum.hpp"

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

#include "driftscan/apodisation_window.hpp"
#include "driftscan/error.hpp"
#include "driftscan/mpi/job_runner.hpp"

namespace driftscan::mpi {
namespace {

constexpr int kPlaneTag = 5301;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

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
  std::string src = frames.describe();
  src = src.substr(0, src.find(':'));
  const std::string where = (src.empty() ? std::string("spectrum") : src) + ": ";
  const std::size_t count = frames.frame_count();
  const int width = frames.width(), height = frames.height();
  if (count == 0 || width <= 0 || height <= 0) throw bad_input(where + "no frames");
  if (!options.to_frame0.empty() && options.to_frame0.size() != count)
    throw bad_input(where + std::to_string(options.to_frame0.size()) + " transforms given for " +
                    std::to_string(count) + " frames");
  const TimeBinning tb = time_binning(count, options.max_frames);
  const auto n0 = static_cast<std::int64_t>(tb.planes), n1 = std::int64_t(height), n2 = std::int64_t(width);
  const std::int64_t n2h = n2 / 2 + 1;
  const std::size_t npix = static_cast<std::size_t>(n1 * n2);

  StackSpectrumResult result;
  result.size = {tb.planes, std::size_t(height), std::size_t(width)};
  result.bin = tb.bin;
  result.frames_used = tb.planes * tb.bin;

  // Slab-pencil with natural input and output: every rank's input is a slab
  // of whole planes (it reads only its own frames) and so is its half of the
  // spectrum (it sends whole half-planes to rank 0).
  DftOptions o;
  o.size = {n0, n1, n2};
  o.decomposition = Decomposition::slab_pencil;
  o.real_to_complex = true;
  o.threads = std::max(1, options.threads);
  o.planner = FftPlanner::estimate;  // one transform: measuring would cost more than it saves
  DftPlan plan(ctx.comm, o);
  result.decomposition = to_string(plan.decomposition()) + " " + plan.grid_string();
  const Box3 ib = plan.input_box(), ob = plan.output_box();
  auto whole_planes = [](const Box3& b, std::int64_t e1, std::int64_t e2) {
    return b.empty() || (b.lo[1] == 0 && b.hi[1] == e1 && b.lo[2] == 0 && b.hi[2] == e2);
  };
  if (!whole_planes(ib, n1, n2) || !whole_planes(ob, n1, n2h))
    throw failure("spectrum: the DFT plan's boxes are not slabs of planes (" + ib.to_string() + ", " +
                  ob.to_string() + ")");

  // Rank 0 opens the volume first, so an unwritable folder stops every rank
  // before the work.
  std::unique_ptr<TiffStackWriter> writer;
  {
    std::unique_ptr<Error> err;
    if (ctx.rank == 0) {
      try {
        TiffWriteOptions tw = options.tiff;
        tw.format = SampleFormat::float32;
        writer = std::make_unique<TiffStackWriter>(options.volume_path, width, height, tb.planes, tw);
      } catch (const Error& e) {
        err = std::make_unique<Error>(e);
      }
    }
    agree_on_outcome(ctx, err.get());
  }

  // --- read: this rank's planes, each the mean of its bin of (warped) frames.
  double t_start = now_s();
  const StackTaper taper = stack_taper(tb.planes, std::size_t(height), std::size_t(width), options.taper);
  const std::int64_t local_planes = ib.empty() ? 0 : ib.size(0);
  std::vector<double> in(plan.input_count());
  std::vector<double> avg_sum(npix, 0.0), avg_count(npix, 0.0);
  const std::size_t local_frames = static_cast<std::size_t>(local_planes) * tb.bin;
  if (ctx.rank == 0) ctx.progress.phase("read", local_frames);
  std::atomic<std::size_t> frames_done{0};
  std::string read_error;
  ErrorKind read_kind = ErrorKind::bad_input;
#pragma omp parallel for schedule(dynamic, 1) num_threads(o.threads)
  for (std::int64_t p = 0; p < local_planes; ++p) {
    if (ctx.cancel.cancelled()) continue;
    bool stop = false;
#pragma omp critical(stack_spectrum_error)
    stop = !read_error.empty();
    if (stop) continue;
    try {
      const std::int64_t t = ib.lo[0] + p;
      std::vector<double> sum(npix, 0.0), cnt(npix, 0.0);
      for (std::size_t b = 0; b < tb.bin; ++b) {
        const std::size_t k = static_cast<std::size_t>(t) * tb.bin + b;
        Frame f = frames.frame(k);
        if (f.width != width || f.height != height)
          throw bad_input(where + "frame " + std::to_string(k) + " is " + std::to_string(f.width) + "x" +
                          std::to_string(f.height) + ", frame 0 is " + std::to_string(width) + "x" +
                          std::to_string(height));
        if (!options.to_frame0.empty())
          f = warp_to_reference(f, options.to_frame0[k], options.interpolation,
                                std::numeric_limits<float>::quiet_NaN());
        for (std::size_t i = 0; i < npix; ++i)
          if (std::isfinite(f.pixels[i])) sum[i] += f.pixels[i], cnt[i] += 1;
        if (ctx.rank == 0) ctx.progress.advance(++frames_done);
      }
#pragma omp critical(stack_spectrum_average)
      for (std::size_t i = 0; i < npix; ++i) avg_sum[i] += sum[i], avg_count[i] += cnt[i];
      // The plane's values (the bin's mean per pixel), their weighted mean,
      // then the tapered deviations from it (0 where no frame of the bin
      // covers the pixel: missing pixels count as the mean).
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
      double* out = in.data() + std::size_t(p) * npix;
      const double wt = taper.t[std::size_t(t)];
      for (std::int64_t y = 0; y < n1; ++y)
        for (std::int64_t x = 0; x < n2; ++x) {
          const std::size_t i = std::size_t(y * n2 + x);
          out[i] = cnt[i] > 0 ? wt * taper.y[std::size_t(y)] * taper.x[std::size_t(x)] * (sum[i] - mean) : 0.0;
        }
    } catch (const Error& e) {
#pragma omp critical(stack_spectrum_error)
      if (read_error.empty()) read_error = e.what(), read_kind = e.kind();
    } catch (const std::exception& e) {
#pragma omp critical(stack_spectrum_error)
      if (read_error.empty()) read_error = where + e.what(), read_kind = ErrorKind::failure;
    }
  }
  {
    const Error err(read_kind, read_error);
    agree_on_outcome(ctx, read_error.empty() ? nullptr : &err);
  }
  result.read_s = now_s() - t_start;

  // The mean of every frame used (the kt = 0 plane's image), on rank 0.
  std::vector<double> all_sum(ctx.rank == 0 ? npix : 0), all_count(ctx.rank == 0 ? npix : 0);
  MPI_Reduce(avg_sum.data(), all_sum.data(), int(npix), MPI_DOUBLE, MPI_SUM, 0, ctx.comm);
  MPI_Reduce(avg_count.data(), all_count.data(), int(npix), MPI_DOUBLE, MPI_SUM, 0, ctx.comm);
  if (ctx.rank == 0) {
    result.average = Frame(width, height);
    for (std::size_t i = 0; i < npix; ++i)
      result.average.pixels[i] =
          all_count[i] > 0 ? float(all_sum[i] / all_count[i]) : std::numeric_limits<float>::quiet_NaN();
  }
  std::vector<double>().swap(avg_sum);
  std::vector<double>().swap(avg_count);

  // --- transform
  t_start = now_s();
  if (ctx.rank == 0) ctx.progress.phase("transform", 1);
  std::vector<std::complex<double>> spec(plan.output_count());
  plan.execute(in, spec);
  std::vector<double>().swap(in);
  double energy = 0, et = 0, ey = 0, ex = 0;
  for (double v : taper.t) et += v * v;
  for (double v : taper.y) ey += v * v;
  for (double v : taper.x) ex += v * v;
  energy = et * ey * ex;
  if (!(energy > 0)) energy = 1.0;  // 1- or 2-pixel axes: Hann is all zero
  // Log power of this rank's half-planes, as float: what is sent and written.
  auto half = std::make_shared<std::vector<float>>(spec.size());
  for (std::size_t i = 0; i < spec.size(); ++i) (*half)[i] = static_cast<float>(std::log1p(std::norm(spec[i]) / energy));
  std::vector<std::complex<double>>().swap(spec);
  if (ctx.rank == 0) ctx.progress.advance(1);
  result.transform_s = now_s() - t_start;
  ctx.cancel.throw_if_cancelled();

  // --- write: output plane s (centred) holds kt = s - n0/2; its kx >= 0
  // half comes from half-plane kt, its kx < 0 half from half-plane -kt
  // (|F(-k)| = |F(k)|). Owners send their half-planes in the order rank 0
  // writes them; rank 0 holds at most two at a time.
  t_start = now_s();
  Owners owners;
  {
    std::int64_t mine[2] = {ob.empty() ? 0 : ob.lo[0], ob.empty() ? 0 : ob.hi[0]};
    std::vector<std::int64_t> all(2 * std::size_t(ctx.size));
    MPI_Allgather(mine, 2, MPI_INT64_T, all.data(), 2, MPI_INT64_T, ctx.comm);
    for (int r = 0; r < ctx.size; ++r) owners.lo.push_back(all[2 * r]), owners.hi.push_back(all[2 * r + 1]);
  }
  const std::size_t half_plane = static_cast<std::size_t>(n1 * n2h);
  auto local_half = [&](std::int64_t k0) { return half->data() + std::size_t(k0 - ob.lo[0]) * half_plane; };
  auto planes_of = [&](std::int64_t s) {
    const std::int64_t f = s - n0 / 2;
    return std::pair<std::int64_t, std::int64_t>{wrap(f, n0), wrap(-f, n0)};
  };
  if (ctx.rank != 0) {
    std::vector<MPI_Request> sends;
    auto send = [&](std::int64_t k) {
      if (owners.of(k) != ctx.rank) return;
      sends.emplace_back();
      MPI_Isend(local_half(k), int(half_plane), MPI_FLOAT, 0, kPlaneTag, ctx.comm, &sends.back());
    };
    for (std::int64_t s = 0; s < n0; ++s) {
      auto [k0, m0] = planes_of(s);
      send(k0);
      if (m0 != k0) send(m0);  // a self-mirrored plane (kt = 0, n0/2) is sent once
    }
    wait_all(sends, ctx.cancel, {half});
  } else {
    ctx.progress.phase("write", std::size_t(n0));
    auto buf_a = std::make_shared<std::vector<float>>(half_plane), buf_b = std::make_shared<std::vector<float>>(half_plane);
    Frame plane(width, height);
    for (std::int64_t s = 0; s < n0; ++s) {
      auto [k0, m0] = planes_of(s);
      std::vector<MPI_Request> recvs;
      const float* a = nullptr;
      const float* b = nullptr;
      if (owners.of(k0) == 0) {
        a = local_half(k0);
      } else {
        recvs.emplace_back();
        MPI_Irecv(buf_a->data(), int(half_plane), MPI_FLOAT, owners.of(k0), kPlaneTag, ctx.comm, &recvs.back());
        a = buf_a->data();
      }
      if (m0 == k0) {
        b = a;
      } else if (owners.of(m0) == 0) {
        b = local_half(m0);
      } else {
        recvs.emplace_back();
        MPI_Irecv(buf_b->data(), int(half_plane), MPI_FLOAT, owners.of(m0), kPlaneTag, ctx.comm, &recvs.back());
        b = buf_b->data();
      }
      wait_all(recvs, ctx.cancel, {buf_a, buf_b});
      for (std::int64_t y = 0; y < n1; ++y) {
        const std::int64_t v = y - n1 / 2;
        float* row = plane.row(int(y));
        for (std::int64_t x = 0; x < n2; ++x) {
          const std::int64_t u = x - n2 / 2;
          row[x] = u >= 0 ? a[std::size_t(wrap(v, n1) * n2h + u)] : b[std::size_t(wrap(-v, n1) * n2h - u)];
        }
      }
      writer->append(plane);
      ctx.progress.advance(std::size_t(s + 1));
    }
    writer->commit();
  }
  result.write_s = now_s() - t_start;
  return result;
}

}  // namespace driftscan::mpi
