#include "driftscan/averaging.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <exception>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

#include "driftscan/error.hpp"
#include "driftscan/fftw_planner.hpp"
#include "driftscan/interpolation.hpp"

namespace driftscan {
namespace {

constexpr double kPi = 3.14159265358979323846;
const float kMissing = std::numeric_limits<float>::quiet_NaN();

bool is_translation(const Transform& t) {
  return std::fabs(t.a - 1) < 1e-12 && std::fabs(t.b) < 1e-12 && std::fabs(t.c) < 1e-12 &&
         std::fabs(t.d - 1) < 1e-12;
}

bool finite(const Transform& t) {
  return std::isfinite(t.a) && std::isfinite(t.b) && std::isfinite(t.c) && std::isfinite(t.d) &&
         std::isfinite(t.tx) && std::isfinite(t.ty);
}

// Warps frames into the reference grid: out(p) = f(T^{-1}(p)), NaN where
// T^{-1}(p) falls outside f or next to a non-finite pixel of f. A plan
// object: the FFT plans are made once; warp() is thread-safe given each
// thread its own Scratch.
class Warper {
 public:
  struct Scratch {
    std::vector<float> real;
    FftBuffer<std::complex<float>> spectrum;
  };

  Warper(int width, int height, Interpolation interpolation)
      : w_(width), h_(height), interpolation_(interpolation) {
    if (interpolation_ == Interpolation::fourier) fft_ = std::make_unique<RealFft2d<float>>(w_, h_);
  }

  Scratch scratch() const {
    Scratch s;
    if (fft_) {
      s.real.resize(fft_->real_size());
      s.spectrum = FftBuffer<std::complex<float>>(fft_->spectrum_size());
    }
    return s;
  }

  // Rows [y0, y1) of the warped frame into out ((y1 - y0) * width values).
  void warp(const Frame& f, const Transform& to_reference, bool has_bad_pixels, int y0, int y1, float* out,
            Scratch& s) const {
    const Transform inv = to_reference.inverse();
    if (interpolation_ == Interpolation::fourier) {
      fourier_shift(f, -to_reference.tx, -to_reference.ty, s);
    }
    const double eps = 1e-6;  // keeps exact integer shifts inside despite rounding
    for (int y = y0; y < y1; ++y) {
      float* row = out + static_cast<std::size_t>(y - y0) * w_;
      for (int x = 0; x < w_; ++x) {
        Point q = inv.apply(x, y);
        if (q.x < -eps || q.y < -eps || q.x > w_ - 1 + eps || q.y > h_ - 1 + eps) {
          row[x] = kMissing;
          continue;
        }
        q.x = std::clamp(q.x, 0.0, w_ - 1.0);
        q.y = std::clamp(q.y, 0.0, h_ - 1.0);
        if (interpolation_ == Interpolation::cubic) {
          row[x] = sample_cubic(f, q.x, q.y);  // a NaN among the 4x4 taps propagates
        } else {
          row[x] = has_bad_pixels && near_bad(f, q) ? kMissing : s.real[static_cast<std::size_t>(y) * w_ + x];
        }
      }
    }
  }

 private:
  // The cubic kernel's 4x4 support around q holds a non-finite pixel.
  bool near_bad(const Frame& f, Point q) const {
    int ix = static_cast<int>(std::floor(q.x)), iy = static_cast<int>(std::floor(q.y));
    for (int yy = std::max(0, iy - 1); yy <= std::min(h_ - 1, iy + 2); ++yy)
      for (int xx = std::max(0, ix - 1); xx <= std::min(w_ - 1, ix + 2); ++xx)
        if (!std::isfinite(f.at(xx, yy))) return true;
    return false;
  }

  // s.real = g with g(p) = f(p + (sx, sy)), i.e. G(u) = F(u) exp(+2 pi i u.s / N).
  // warp() passes s = -t, so g(p) = f(T^{-1}(p)). The shift is circular: the
  // wrapped border is marked missing by warp()'s inside test. Non-finite
  // pixels are replaced by the frame's mean first so they cannot spread.
  void fourier_shift(const Frame& f, double sx, double sy, Scratch& s) const {
    double mean = 0;
    long n = 0;
    for (float v : f.pixels)
      if (std::isfinite(v)) mean += v, ++n;
    mean = n ? mean / n : 0.0;
    for (std::size_t i = 0; i < f.size(); ++i)
      s.real[i] = std::isfinite(f.pixels[i]) ? f.pixels[i] : static_cast<float>(mean);
    fft_->forward(s.real.data(), s.spectrum.data());
    const int sw = fft_->spectrum_width();
    const double scale = 1.0 / (static_cast<double>(w_) * h_);
    for (int v = 0; v < h_; ++v) {
      int fv = v <= h_ / 2 ? v : v - h_;
      bool nyquist_v = (h_ % 2 == 0) && v == h_ / 2;
      for (int u = 0; u < sw; ++u) {
        bool nyquist_u = (w_ % 2 == 0) && u == w_ / 2;
        // At a Nyquist frequency the shift's phase is ambiguous (+-); its
        // real part (cos) keeps the result real and symmetric.
        std::complex<double> phase(1.0, 0.0);
        if (nyquist_u) phase *= std::cos(kPi * sx);
        else phase *= std::polar(1.0, 2 * kPi * u * sx / w_);
        if (nyquist_v) phase *= std::cos(kPi * sy);
        else phase *= std::polar(1.0, 2 * kPi * fv * sy / h_);
        std::complex<float>& c = s.spectrum[static_cast<std::size_t>(v) * sw + u];
        c = std::complex<float>(std::complex<double>(c) * phase * scale);
      }
    }
    fft_->inverse(s.spectrum.data(), s.real.data());
  }

  int w_, h_;
  Interpolation interpolation_;
  std::unique_ptr<RealFft2d<float>> fft_;
};

struct FrameState {
  bool listed_excluded = false;  // in exclude_frames
  bool blank = false;            // no finite pixel, or constant
  long bad_pixels = 0;           // NaN/Inf
  long overlap = 0;              // finite warped pixels
  bool inspected = false;
  double quality = 0.0;
  bool rejected_quality = false;
  bool used = false;
};

// Streams frames through read + warp, a chunk at a time: the chunk's frames
// are read and warped in parallel, `work(k, warped)` runs in the parallel
// part (it may only touch frame k's own state), then `ordered(k, warped)`
// runs on the calling thread in frame order — so sums come out the same
// whatever the number of threads.
class FrameStream {
 public:
  FrameStream(const FrameSource& source, const std::vector<Transform>& transforms, const Warper& warper,
              std::vector<FrameState>& state, const CancelToken* cancel, Progress* progress,
              std::size_t progress_total)
      : source_(source),
        transforms_(transforms),
        warper_(warper),
        state_(state),
        cancel_(cancel),
        progress_(progress),
        progress_total_(progress_total) {
    threads_ = std::max(1, omp_get_max_threads());
  }

  template <class Work, class Ordered>
  void run(const std::vector<std::size_t>& frames, int y0, int y1, Work work, Ordered ordered) {
    const int w = source_.width(), h = source_.height();
    const std::size_t band = static_cast<std::size_t>(y1 - y0) * w;
    // Chunks of up to 64 frames (at least 2 per thread, at most ~256 MB of
    // warped frames): few parallel regions, so threads seldom wait on each other.
    const std::size_t by_memory = (std::size_t(256) << 20) / std::max<std::size_t>(band * sizeof(float), 1);
    const std::size_t chunk = std::max<std::size_t>(2 * static_cast<std::size_t>(threads_), std::min<std::size_t>(64, by_memory));
    std::vector<std::vector<float>> slots(std::min(chunk, std::max<std::size_t>(frames.size(), 1)),
                                          std::vector<float>(band));
    std::vector<char> warped(slots.size());
    std::vector<Warper::Scratch> scratch;
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
          Frame f = source_.frame(k);
          if (f.width != w || f.height != h || f.size() != static_cast<std::size_t>(w) * h)
            throw bad_input(describe_source() + "frame " + std::to_string(k) + " is " + std::to_string(f.width) +
                            "x" + std::to_string(f.height) + ", frame 0 is " + std::to_string(w) + "x" +
                            std::to_string(h));
          FrameState& st = state_[k];
          if (!st.inspected) inspect(f, st);
          warped[i] = !st.blank;
          if (st.blank) continue;
          float* out = slots[i].data();
          warper_.warp(f, transforms_[k], st.bad_pixels > 0, y0, y1, out,
                       scratch[static_cast<std::size_t>(omp_get_thread_num())]);
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
  }

  std::string describe_source() const {
    std::string d = source_.describe();
    auto colon = d.find(':');
    return colon == std::string::npos ? std::string() : d.substr(0, colon) + ": ";
  }

 private:
  static void inspect(const Frame& f, FrameState& st) {
    long bad = 0;
    float lo = std::numeric_limits<float>::infinity(), hi = -lo;
    for (float v : f.pixels) {
      if (!std::isfinite(v)) {
        ++bad;
        continue;
      }
      lo = std::min(lo, v), hi = std::max(hi, v);
    }
    st.bad_pixels = bad;
    st.blank = !(hi > lo);  // no finite pixel, or all the same value
    st.inspected = true;
  }

  const FrameSource& source_;
  const std::vector<Transform>& transforms_;
  const Warper& warper_;
  std::vector<FrameState>& state_;
  const CancelToken* cancel_;
  Progress* progress_;
  std::size_t progress_total_;
  std::size_t done_ = 0;
  int threads_ = 1;
};

// Normalised cross-correlation of a warped frame with the first-pass mean
// over the pixels where both exist.
double ncc(const float* warped, const std::vector<double>& reference, std::size_t n) {
  double sa = 0, sb = 0;
  long m = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (std::isfinite(warped[i]) && std::isfinite(reference[i])) sa += warped[i], sb += reference[i], ++m;
  if (m < 2) return 0.0;
  double ma = sa / m, mb = sb / m, sab = 0, saa = 0, sbb = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (std::isfinite(warped[i]) && std::isfinite(reference[i])) {
      double a = warped[i] - ma, b = reference[i] - mb;
      sab += a * b, saa += a * a, sbb += b * b;
    }
  if (saa <= 0 || sbb <= 0) return 0.0;
  return sab / std::sqrt(saa * sbb);
}

// Warnings are kept and logged; past a few of one kind only a count is given.
class Warnings {
 public:
  Warnings(std::vector<std::string>& out, Progress* progress) : out_(out), progress_(progress) {}
  void add(const std::string& kind, const std::string& message) {
    if (++counts_[kind] <= 10) emit(message);
  }
  void finish() {
    for (auto& [kind, n] : counts_)
      if (n > 10) emit(std::to_string(n - 10) + " more frames: " + kind);
  }

 private:
  void emit(const std::string& m) {
    out_.push_back(m);
    if (progress_) progress_->log(LogLevel::warning, m);
  }
  std::vector<std::string>& out_;
  Progress* progress_;
  std::map<std::string, int> counts_;
};

}  // namespace

Frame warp_to_reference(const Frame& f, const Transform& to_reference, Interpolation interpolation,
                        float outside) {
  if (f.empty()) return f;
  if (interpolation == Interpolation::fourier && !is_translation(to_reference))
    throw bad_input("fourier interpolation needs a pure translation; use cubic for rotations and affine maps");
  Warper warper(f.width, f.height, interpolation);
  Warper::Scratch s = warper.scratch();
  Frame out(f.width, f.height);
  bool bad = std::any_of(f.pixels.begin(), f.pixels.end(), [](float v) { return !std::isfinite(v); });
  warper.warp(f, to_reference, bad, 0, f.height, out.pixels.data(), s);
  for (float& v : out.pixels)
    if (!std::isfinite(v)) v = outside;
  return out;
}

AverageResult average_series(const FrameSource& frames, const std::vector<Transform>& transforms,
                             const AveragingOptions& options, Progress* progress, const CancelToken* cancel) {
  const std::size_t n = frames.frame_count();
  const int w = frames.width(), h = frames.height();
  const std::size_t npix = static_cast<std::size_t>(w) * static_cast<std::size_t>(h);
  std::string src = frames.describe();
  src = src.substr(0, src.find(':'));
  const std::string where = src.empty() ? "averaging: " : src + ": ";

  if (n == 0 || w <= 0 || h <= 0) throw bad_input(where + "no frames to average");
  if (transforms.size() != n)
    throw bad_input(where + std::to_string(transforms.size()) + " transforms given for " + std::to_string(n) +
                    " frames");
  if (!(options.clip_sigma > 0) && options.method == AverageMethod::clipped)
    throw bad_input(where + "clip_sigma must be positive");
  for (std::size_t k = 0; k < n; ++k) {
    const Transform& t = transforms[k];
    if (!finite(t) || std::fabs(t.determinant()) < 1e-9)
      throw bad_input(where + "frame " + std::to_string(k) + ": the transform is not finite or not invertible");
    if (options.interpolation == Interpolation::fourier && !is_translation(t))
      throw bad_input(where + "frame " + std::to_string(k) +
                      ": fourier interpolation needs pure translations; use cubic for rigid or affine motion");
  }

  AverageResult result;
  Warnings warnings(result.warnings, progress);
  std::vector<FrameState> state(n);
  for (std::size_t k : options.exclude_frames) {
    if (k < n) state[k].listed_excluded = true;
    else warnings.add("excluded frame out of range", "exclude_frames lists frame " + std::to_string(k) +
                                                         " but the series has " + std::to_string(n) + " frames");
  }

  const bool clipped = options.method == AverageMethod::clipped;
  const bool median = options.method == AverageMethod::median;
  Warper warper(w, h, options.interpolation);

  // Median bands: rows per band so that (used frames x band) fits the budget.
  auto band_rows = [&](std::size_t m) {
    const double budget = std::max(1.0, options.median_memory_mb) * 1024.0 * 1024.0;
    long rows = static_cast<long>(budget / (static_cast<double>(std::max<std::size_t>(m, 1)) * w * sizeof(float)));
    rows = std::clamp<long>(rows, 1, std::max(1, options.median_tile));
    return static_cast<int>(std::min<long>(rows, h));
  };
  const std::size_t candidates_count = static_cast<std::size_t>(
      std::count_if(state.begin(), state.end(), [](const FrameState& st) { return !st.listed_excluded; }));
  std::size_t total = (clipped ? 3 : 2) * n;
  if (median) {
    int rows = band_rows(candidates_count);
    total += static_cast<std::size_t>((h + rows - 1) / rows) * candidates_count;
  }
  if (progress) progress->phase("average", total);
  FrameStream stream(frames, transforms, warper, state, cancel, progress, total);

  // Pass 1: sums over the candidate frames.
  std::vector<std::size_t> candidates, all;
  for (std::size_t k = 0; k < n; ++k) {
    all.push_back(k);
    if (!state[k].listed_excluded) candidates.push_back(k);
  }
  std::vector<double> sum(npix, 0.0), sum2(clipped ? npix : 0, 0.0), count(npix, 0.0);
  auto accumulate = [&](const float* v, double sign) {
#pragma omp parallel for schedule(static) if (npix >= 65536)
    for (std::size_t i = 0; i < npix; ++i) {
      if (!std::isfinite(v[i])) continue;
      sum[i] += sign * v[i];
      if (clipped) sum2[i] += sign * double(v[i]) * v[i];
      count[i] += sign;
    }
  };
  auto count_finite = [npix](const float* v) {
    long m = 0;
    for (std::size_t i = 0; i < npix; ++i) m += std::isfinite(v[i]) ? 1 : 0;
    return m;
  };
  stream.run(
      candidates, 0, h, [&](std::size_t k, const float* v) { state[k].overlap = count_finite(v); },
      [&](std::size_t k, const float* v) {
        if (state[k].overlap > 0) accumulate(v, +1.0);
      });
  // Frames never read yet (explicitly excluded) are inspected in pass 2.
  std::vector<double> first_mean(npix, std::numeric_limits<double>::quiet_NaN());
  for (std::size_t i = 0; i < npix; ++i)
    if (count[i] > 0.5) first_mean[i] = sum[i] / count[i];

  // Pass 2: quality of every non-blank frame against the first-pass mean;
  // candidates below min_quality leave the sums.
  stream.run(
      all, 0, h,
      [&](std::size_t k, const float* v) {
        state[k].quality = ncc(v, first_mean, npix);
        state[k].overlap = count_finite(v);
        if (!state[k].listed_excluded && state[k].overlap > 0 && state[k].quality < options.min_quality)
          state[k].rejected_quality = true;
      },
      [&](std::size_t k, const float* v) {
        if (state[k].rejected_quality) accumulate(v, -1.0);
      });
  std::vector<double>().swap(first_mean);  // frames can be large: free what is done with

  std::vector<std::size_t> used;
  std::size_t n_blank = 0, n_listed = 0, n_quality = 0, n_outside = 0;
  for (std::size_t k = 0; k < n; ++k) {
    FrameState& st = state[k];
    if (st.bad_pixels > 0 && !st.blank)
      warnings.add("NaN/Inf pixels treated as missing",
                   where + "frame " + std::to_string(k) + ": " + std::to_string(st.bad_pixels) +
                       " NaN/Inf pixels treated as missing");
    if (st.blank) {
      ++n_blank;
      st.quality = 0;
      warnings.add("blank frames excluded", where + "frame " + std::to_string(k) +
                                                (st.bad_pixels == static_cast<long>(npix) ? " has no finite pixel"
                                                                                          : " is blank (constant)") +
                                                "; excluded from the average");
      continue;
    }
    if (st.listed_excluded) {
      ++n_listed;
      continue;
    }
    if (st.overlap == 0) {
      ++n_outside;
      warnings.add("frames outside frame 0 excluded",
                   where + "frame " + std::to_string(k) + " does not overlap frame 0; excluded from the average");
      continue;
    }
    if (st.rejected_quality) {
      ++n_quality;
      continue;
    }
    st.used = true;
    used.push_back(k);
  }
  if (n_quality > 0) {
    std::ostringstream m;
    m << n_quality << " frame(s) below the quality threshold " << options.min_quality << " excluded";
    warnings.add("quality", m.str());
  }
  if (used.empty()) {
    warnings.finish();
    std::ostringstream m;
    m << where << "no frame left to average (" << n_blank << " blank, " << n_listed << " excluded by list, "
      << n_quality << " below quality " << options.min_quality << ", " << n_outside << " outside frame 0)";
    throw bad_input(m.str());
  }

  result.average = Frame(w, h, 0.0f);
  result.coverage = Frame(w, h, 0.0f);
  if (options.method == AverageMethod::mean) {
    for (std::size_t i = 0; i < npix; ++i) {
      if (count[i] > 0.5) {
        result.average.pixels[i] = static_cast<float>(sum[i] / count[i]);
        result.coverage.pixels[i] = static_cast<float>(std::round(count[i]));
      }
    }
  } else if (clipped) {
    // Pass 3: drop samples beyond clip_sigma standard deviations of pass 1.
    // The sums become the mean and the clip limit in place (memory).
    std::vector<double>& mean = sum;
    std::vector<double>& limit = sum2;
    for (std::size_t i = 0; i < npix; ++i) {
      if (count[i] < 0.5) {
        mean[i] = 0, limit[i] = -1;
        continue;
      }
      mean[i] = sum[i] / count[i];
      double var = std::max(0.0, sum2[i] / count[i] - mean[i] * mean[i]);
      // a little slack so identical samples (var ~ rounding) are all kept
      limit[i] = options.clip_sigma * std::sqrt(var) + 1e-6 * (std::fabs(mean[i]) + 1e-3);
    }
    std::vector<double> csum(npix, 0.0), ccount(npix, 0.0);
    stream.run(
        used, 0, h, [](std::size_t, const float*) {},
        [&](std::size_t, const float* v) {
#pragma omp parallel for schedule(static) if (npix >= 65536)
          for (std::size_t i = 0; i < npix; ++i) {
            if (!std::isfinite(v[i]) || std::fabs(v[i] - mean[i]) > limit[i]) continue;
            csum[i] += v[i];
            ccount[i] += 1;
          }
        });
    for (std::size_t i = 0; i < npix; ++i) {
      if (ccount[i] > 0.5) {
        result.average.pixels[i] = static_cast<float>(csum[i] / ccount[i]);
        result.coverage.pixels[i] = static_cast<float>(ccount[i]);
      } else if (count[i] > 0.5) {  // everything clipped (possible for clip_sigma < 1): the plain mean
        result.average.pixels[i] = static_cast<float>(mean[i]);
        result.coverage.pixels[i] = static_cast<float>(std::round(count[i]));
      }
    }
  } else {
    // Median, band by band: every used frame's warped band is held at once.
    const std::size_t m = used.size();
    const int rows = band_rows(m);
    std::vector<std::size_t> slot_of(n, 0);
    for (std::size_t j = 0; j < m; ++j) slot_of[used[j]] = j;
    std::vector<float> values;
    for (int y0 = 0; y0 < h; y0 += rows) {
      int y1 = std::min(h, y0 + rows);
      const std::size_t bpix = static_cast<std::size_t>(y1 - y0) * w;
      values.assign(bpix * m, kMissing);  // values[pixel * m + frame slot]
      stream.run(
          used, y0, y1,
          [&](std::size_t k, const float* v) {
            const std::size_t j = slot_of[k];
            for (std::size_t i = 0; i < bpix; ++i) values[i * m + j] = v[i];
          },
          [](std::size_t, const float*) {});
#pragma omp parallel for schedule(static) if (bpix * m >= 65536)
      for (std::size_t i = 0; i < bpix; ++i) {
        float* first = values.data() + i * m;
        float* last = std::partition(first, first + m, [](float v) { return std::isfinite(v); });
        const std::size_t c = static_cast<std::size_t>(last - first);
        const std::size_t out = static_cast<std::size_t>(y0) * w + i;
        if (c == 0) continue;
        std::nth_element(first, first + c / 2, last);
        double med = first[c / 2];
        if (c % 2 == 0) med = 0.5 * (med + *std::max_element(first, first + c / 2));
        result.average.pixels[out] = static_cast<float>(med);
        result.coverage.pixels[out] = static_cast<float>(c);
      }
    }
  }

  result.quality.resize(n);
  result.used.resize(n);
  for (std::size_t k = 0; k < n; ++k) {
    result.quality[k] = std::isfinite(state[k].quality) ? state[k].quality : 0.0;
    result.used[k] = state[k].used;
  }
  warnings.finish();
  if (progress) progress->advance(total);
  return result;
}

}  // namespace driftscan
