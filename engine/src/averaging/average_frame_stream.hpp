#pragma once
// What every averaging method shares: warping a frame into frame 0's
// coordinates (Warper), what is learnt about each frame on the way
// (FrameState), and the streaming of frames through read + warp in frame
// order (FrameStream). Private to the engine; see averaging.hpp.
#include <omp.h>

#include <algorithm>
#include <complex>
#include <cstddef>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "driftscan/averaging/averaging.hpp"
#include "driftscan/averaging/averaging_team.hpp"
#include "driftscan/averaging/cubic_warp.hpp"
#include "driftscan/core/cancel_token.hpp"
#include "driftscan/core/error.hpp"
#include "driftscan/core/fftw_planner.hpp"
#include "driftscan/core/frame.hpp"
#include "driftscan/core/frame_source.hpp"
#include "driftscan/core/progress.hpp"
#include "driftscan/core/transform.hpp"

namespace driftscan {
namespace averaging {

inline constexpr float kMissing = std::numeric_limits<float>::quiet_NaN();

// Warps frames into the reference grid: out(p) = f(T^{-1}(p)), NaN where
// T^{-1}(p) falls outside f or next to a non-finite pixel of f. A plan
// object: the FFT plans are made once; warp() is thread-safe given each
// thread its own Scratch.
class Warper {
 public:
  struct Scratch {
    std::vector<float> real;
    FftBuffer<std::complex<float>> spectrum;
    CubicWarp::Scratch cubic;
  };

  Warper(int width, int height, Interpolation interpolation);

  Scratch scratch() const;

  // Rows [y0, y1) of the warped frame into out ((y1 - y0) * width values).
  void warp(const Frame& f, const Transform& to_reference, bool has_bad_pixels, int y0, int y1, float* out,
            Scratch& s) const;

  // Cubic only: the same from the source rows [first, last) that
  // band_source_rows() names, held in `rows`.
  bool reads_bands() const { return interpolation_ == Interpolation::cubic; }
  void band_source_rows(const Transform& to_reference, int y0, int y1, int& first, int& last) const {
    cubic_.source_rows(to_reference, y0, y1, first, last);
  }
  void warp_band(const Frame& rows, int first, const Transform& to_reference, int y0, int y1, float* out,
                 Scratch& s) const {
    cubic_.warp(rows.pixels.data(), first, rows.height, to_reference, y0, y1, out, s.cubic);
  }

 private:
  bool near_bad(const Frame& f, Point q) const;
  void fourier_shift(const Frame& f, double sx, double sy, Scratch& s) const;

  int w_, h_;
  Interpolation interpolation_;
  CubicWarp cubic_;
  std::unique_ptr<RealFft2d<float>> fft_;
};

struct FrameState {     // one per frame of the series: the flags packed after the numbers
  long bad_pixels = 0;  // NaN/Inf
  long overlap = 0;     // finite warped pixels
  double quality = 0.0;
  bool listed_excluded = false;  // in exclude_frames
  bool blank = false;            // no finite pixel, or constant
  bool inspected = false;
  bool rejected_quality = false;
  bool used = false;
};

// Streams frames through read + warp, a chunk at a time: the chunk's frames
// are read and warped in parallel, `work(k, warped)` runs in the parallel
// part (it may only touch frame k's own state), then `ordered(k, warped)`
// runs on the calling thread in frame order — so sums come out the same
// whatever the number of threads. Blank frames are inspected, then skipped.
class FrameStream {
 public:
  FrameStream(const FrameSource& source, const std::vector<Transform>& transforms, const Warper& warper,
              std::vector<FrameState>& state, const CancelToken* cancel, Progress* progress, std::size_t progress_total,
              const AveragingTeam* team = nullptr)
      : source_(source),
        transforms_(transforms),
        warper_(warper),
        state_(state),
        cancel_(cancel),
        progress_(progress),
        progress_total_(progress_total),
        team_(team) {
    threads_ = std::max(1, omp_get_max_threads());
  }

  int height() const { return source_.height(); }
  const AveragingTeam* team() const { return team_; }
  // The team when its members' sums must be added up (null alone: a team of
  // one sums nothing, and copying frame-sized sums for it costs the memory
  // of several grids on big frames).
  const AveragingTeam* summing_team() const { return team_ && team_->size() > 1 ? team_ : nullptr; }

  // The frames of `frames` this member reads (all of them without a team).
  std::vector<std::size_t> own(const std::vector<std::size_t>& frames) const {
    if (!team_) return frames;
    std::size_t first = 0, last = 0;
    team_->own_frames(state_.size(), first, last);
    std::vector<std::size_t> mine;
    for (std::size_t k : frames)
      if (k >= first && k < last) mine.push_back(k);
    return mine;
  }

  // Runs `body`; with a team, every member then learns whether any failed
  // (and throws that error), so none waits in a collective for one that stopped.
  template <class Body>
  void checked(Body&& body) {
    std::exception_ptr error;
    try {
      body();
    } catch (...) {
      error = std::current_exception();
    }
    if (team_) team_->agree(error);
    else if (error) std::rethrow_exception(error);
  }

  // Collective with a team: every member calls it, with its own frames.
  template <class Work, class Ordered>
  void run(const std::vector<std::size_t>& frames, int y0, int y1, Work work, Ordered ordered) {
    checked([&] { run_local(frames, y0, y1, work, ordered); });
  }

 private:
  template <class Work, class Ordered>
  void run_local(const std::vector<std::size_t>& frames, int y0, int y1, Work& work, Ordered& ordered) {
    const int w = source_.width(), h = source_.height();
    const std::size_t band = static_cast<std::size_t>(y1 - y0) * w;
    // Part of the rows: only the source rows they need are read.
    const bool band_only = (y0 > 0 || y1 < h) && warper_.reads_bands();
    // Chunks of up to 64 frames (at least 2 per thread, at most ~256 MB of
    // warped frames): few parallel regions, so threads seldom wait on each other.
    // One thread has no region to share: one slot, kept for the next pass (on
    // big frames a fresh one is pages the kernel must zero).
    const std::size_t by_memory = (std::size_t(256) << 20) / std::max<std::size_t>(band * sizeof(float), 1);
    const std::size_t chunk = threads_ == 1 ? 1
                                            : std::max<std::size_t>(2 * static_cast<std::size_t>(threads_),
                                                                    std::min<std::size_t>(64, by_memory));
    std::vector<std::vector<float>>& slots = slots_;
    slots.resize(std::min(chunk, std::max<std::size_t>(frames.size(), 1)));
    for (std::vector<float>& slot : slots) slot.resize(band);
    std::vector<char> warped(slots.size());
    std::vector<Warper::Scratch> scratch;
    scratch.reserve(static_cast<std::size_t>(threads_));
    for (int t = 0; t < threads_; ++t) scratch.push_back(warper_.scratch());

    for (std::size_t start = 0; start < frames.size(); start += slots.size()) {
      if (cancel_) cancel_->throw_if_cancelled();
      const std::size_t count = std::min(slots.size(), frames.size() - start);
      std::exception_ptr error;
      std::mutex error_mutex;
      // Threads only where there is enough to share (parallel regions are
      // not free, least of all on a busy machine).
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads_) if (count > 1 && count * band >= 16384)
      for (std::size_t i = 0; i < count; ++i) {
        try {
          const std::size_t k = frames[start + i];
          FrameState& st = state_[k];
          float* out = slots[i].data();
          Warper::Scratch& sc = scratch[static_cast<std::size_t>(omp_get_thread_num())];
          if (band_only && st.inspected) {  // a band of rows of a frame known not blank
            warped[i] = !st.blank;
            if (st.blank) continue;
            int first = 0, last = 0;
            warper_.band_source_rows(transforms_[k], y0, y1, first, last);
            const Frame rows = source_.frame_rows(k, first, last);
            if (rows.width != w || rows.height != last - first)
              throw bad_input(describe_source() + "frame " + std::to_string(k) + ": rows " + std::to_string(first) +
                              "-" + std::to_string(last) + " could not be read as a " + std::to_string(w) +
                              "-pixel band");
            warper_.warp_band(rows, first, transforms_[k], y0, y1, out, sc);
            work(k, static_cast<const float*>(out));
            continue;
          }
          const std::shared_ptr<const Frame> kept = source_.shared_frame(k);  // the cache's, not a copy
          const Frame& f = *kept;
          if (f.width != w || f.height != h || f.size() != static_cast<std::size_t>(w) * h)
            throw bad_input(describe_source() + "frame " + std::to_string(k) + " is " + std::to_string(f.width) + "x" +
                            std::to_string(f.height) + ", frame 0 is " + std::to_string(w) + "x" + std::to_string(h));
          if (!st.inspected) inspect(f, st);
          warped[i] = !st.blank;
          if (st.blank) continue;
          warper_.warp(f, transforms_[k], st.bad_pixels > 0, y0, y1, out, sc);
          work(k, static_cast<const float*>(out));
        } catch (...) {
          std::lock_guard<std::mutex> lock(error_mutex);
          if (!error) error = std::current_exception();
        }
      }
      if (error) std::rethrow_exception(error);
      for (std::size_t i = 0; i < count; ++i)
        if (warped[i]) ordered(frames[start + i], static_cast<const float*>(slots[i].data()));
      done_ += count;
      if (progress_) progress_->advance(std::min(done_, progress_total_));
    }
    if (threads_ > 1) std::vector<std::vector<float>>().swap(slots_);  // a chunk's worth: not kept beside what follows
  }

 public:
  // "source: " from the source's description, or nothing.
  std::string describe_source() const;

 private:
  static void inspect(const Frame& f, FrameState& st);

  const FrameSource& source_;
  const std::vector<Transform>& transforms_;
  const Warper& warper_;
  std::vector<FrameState>& state_;
  const CancelToken* cancel_;
  Progress* progress_;
  std::size_t progress_total_;
  std::size_t done_ = 0;
  int threads_ = 1;
  const AveragingTeam* team_;
  std::vector<std::vector<float>> slots_;  // warped frames; one thread's slot reused from pass to pass
};

}  // namespace averaging
}  // namespace driftscan
