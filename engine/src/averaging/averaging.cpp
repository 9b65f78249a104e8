// Averaging a registered series; see averaging.hpp. The frame selection and
// per-frame quality live here, the methods in average_{mean,clipped,median}.cpp,
// the warping and streaming of frames in average_frame_stream.cpp.
#include "driftscan/averaging/averaging.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <sstream>

#include "averaging/average_frame_stream.hpp"
#include "averaging/average_strategy.hpp"
#include "driftscan/core/derotated_source.hpp"
#include "driftscan/core/error.hpp"
#include "driftscan/core/scan_rotation.hpp"

namespace driftscan {
namespace {

using averaging::AveragingStrategy;
using averaging::FrameState;
using averaging::FrameStream;
using averaging::MeanAccumulator;
using averaging::Warper;

bool is_translation(const Transform& t) {
  return std::fabs(t.a - 1) < 1e-12 && std::fabs(t.b) < 1e-12 && std::fabs(t.c) < 1e-12 && std::fabs(t.d - 1) < 1e-12;
}

bool finite(const Transform& t) {
  return std::isfinite(t.a) && std::isfinite(t.b) && std::isfinite(t.c) && std::isfinite(t.d) && std::isfinite(t.tx) &&
         std::isfinite(t.ty);
}

// Normalised cross-correlation of a warped frame with the first-pass mean
// over the pixels where both exist.
double ncc(const float* warped, const std::vector<double>& reference, std::size_t n) {
  // One pass: the sums around a shift (the first common pair) keep the
  // one-pass covariance free of cancellation for counts far from zero.
  double sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0, a0 = 0, b0 = 0;
  long m = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(warped[i]) || !std::isfinite(reference[i])) continue;
    if (m == 0) a0 = warped[i], b0 = reference[i];
    const double a = warped[i] - a0, b = reference[i] - b0;
    sa += a, sb += b, saa += a * a, sbb += b * b, sab += a * b, ++m;
  }
  if (m < 2) return 0.0;
  const double cab = sab - sa * sb / m, caa = saa - sa * sa / m, cbb = sbb - sb * sb / m;
  if (caa <= 0 || cbb <= 0) return 0.0;
  return cab / std::sqrt(caa * cbb);
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

// Throws bad_input, starting with `where`, for inputs average_series cannot average.
void check_inputs(const FrameSource& frames, const std::vector<Transform>& transforms, const AveragingOptions& options,
                  const std::string& where) {
  const std::size_t n = frames.frame_count();
  if (n == 0 || frames.width() <= 0 || frames.height() <= 0) throw bad_input(where + "no frames to average");
  if (transforms.size() != n)
    throw bad_input(where + std::to_string(transforms.size()) + " transforms given for " + std::to_string(n) +
                    " frames");
  if (!options.frame_weights.empty() && options.method != AverageMethod::mean)
    throw bad_input(where + "frame weights apply to the mean only (averaging.method mean)");
  if (!options.frame_weights.empty() && options.frame_weights.size() != n)
    throw bad_input(where + std::to_string(options.frame_weights.size()) + " frame weights for " + std::to_string(n) +
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
}

std::unique_ptr<AveragingStrategy> make_strategy(const AveragingOptions& options, int width, int height) {
  switch (options.method) {
    case AverageMethod::clipped: return std::make_unique<averaging::ClippedMean>(options.clip_sigma);
    case AverageMethod::median: return std::make_unique<averaging::TiledMedian>(options, width, height);
    case AverageMethod::mean: break;
  }
  if (!options.frame_weights.empty()) return std::make_unique<averaging::WeightedMean>(options.frame_weights);
  return std::make_unique<averaging::PlainMean>();
}

// The members' sums added up (with a team; nothing to do without); the
// standard error's squares (MeanAccumulator::spread) too when `spread`.
void combine_sums(const FrameStream& stream, MeanAccumulator& sums, bool spread) {
  const AveragingTeam* team = stream.summing_team();
  if (!team) return;
  if (spread && !sums.spread.empty()) team->sum(sums.spread);
  std::vector<double> packed;
  packed.reserve(sums.sum.size() + sums.sum2.size() + sums.count.size());
  for (const auto* v : {&sums.sum, &sums.sum2, &sums.count}) packed.insert(packed.end(), v->begin(), v->end());
  team->sum(packed);
  auto it = packed.begin();
  for (auto* v : {&sums.sum, &sums.sum2, &sums.count}) {
    std::copy(it, it + static_cast<long>(v->size()), v->begin());
    it += static_cast<long>(v->size());
  }
}

// What each member learnt about its own frames, on every member (the others'
// entries are zero on each, so a sum is a gather).
void combine_states(const FrameStream& stream, std::vector<FrameState>& state) {
  const AveragingTeam* team = stream.team();
  if (!team) return;
  std::size_t first = 0, last = 0;
  team->own_frames(state.size(), first, last);
  constexpr std::size_t kFields = 5;
  // In chunks of frames: the buffer stays small however long the series.
  constexpr std::size_t kChunk = 4096;
  std::vector<double> packed;
  for (std::size_t c0 = 0; c0 < state.size(); c0 += kChunk) {
    const std::size_t c1 = std::min(state.size(), c0 + kChunk);
    packed.assign(kFields * (c1 - c0), 0.0);
    for (std::size_t k = std::max(first, c0); k < std::min(last, c1); ++k) {
      const FrameState& st = state[k];
      double* p = packed.data() + kFields * (k - c0);
      p[0] = st.blank ? 1 : 0, p[1] = static_cast<double>(st.bad_pixels), p[2] = static_cast<double>(st.overlap);
      p[3] = st.quality, p[4] = st.rejected_quality ? 1 : 0;
    }
    team->sum(packed);
    for (std::size_t k = c0; k < c1; ++k) {
      FrameState& st = state[k];
      const double* p = packed.data() + kFields * (k - c0);
      st.blank = p[0] > 0.5, st.bad_pixels = std::lround(p[1]), st.overlap = std::lround(p[2]);
      st.quality = p[3], st.rejected_quality = p[4] > 0.5, st.inspected = true;
    }
  }
}

// Frame selection, passes 1 and 2 over the frames: the candidates' sums
// (frames not listed in exclude_frames, not blank), then every non-blank
// frame's quality against the candidates' mean; candidates below min_quality
// leave the sums again, which then hold the sums of the used frames. With a
// team each member does this for its own frames; the sums of pass 1 are
// combined for the mean that grades the frames, those of pass 2 for the result.
void sum_and_grade_frames(FrameStream& stream, std::vector<FrameState>& state, double min_quality,
                          MeanAccumulator& sums) {
  const std::size_t npix = sums.count.size();
  const int h = stream.height();
  // This member's frames only (all of them without a team).
  std::size_t first = 0, last = state.size();
  if (stream.team()) stream.team()->own_frames(state.size(), first, last);
  std::vector<std::size_t> candidates, all;
  for (std::size_t k = first; k < last; ++k) {
    all.push_back(k);
    if (!state[k].listed_excluded) candidates.push_back(k);
  }
  auto count_finite = [npix](const float* v) {
    long m = 0;
    for (std::size_t i = 0; i < npix; ++i) m += std::isfinite(v[i]) ? 1 : 0;
    return m;
  };
  stream.run(
      candidates, 0, h, [&](std::size_t k, const float* v) { state[k].overlap = count_finite(v); },
      [&](std::size_t k, const float* v) {
        if (state[k].overlap > 0) sums.add(v, +1.0);
      });
  // Frames never read yet (explicitly excluded) are inspected in pass 2.
  std::vector<double> first_mean;
  if (stream.summing_team()) {
    MeanAccumulator all_sums = sums;
    combine_sums(stream, all_sums, false);
    first_mean = all_sums.mean_or_nan();
  } else {
    first_mean = sums.mean_or_nan();
  }
  stream.run(
      all, 0, h,
      [&](std::size_t k, const float* v) {
        state[k].quality = ncc(v, first_mean, npix);
        state[k].overlap = count_finite(v);
        if (!state[k].listed_excluded && state[k].overlap > 0 && state[k].quality < min_quality)
          state[k].rejected_quality = true;
      },
      [&](std::size_t k, const float* v) {
        if (state[k].rejected_quality) sums.add(v, -1.0);
      });
  combine_sums(stream, sums, true);
  combine_states(stream, state);
}

// The frames that go into the average, in frame order (marked used); the
// others are counted by reason, with warnings. Throws bad_input when none is left.
std::vector<std::size_t> used_frames(std::vector<FrameState>& state, const AveragingOptions& options, std::size_t npix,
                                     const std::string& where, Warnings& warnings) {
  std::vector<std::size_t> used;
  std::size_t n_blank = 0, n_listed = 0, n_quality = 0, n_outside = 0;
  for (std::size_t k = 0; k < state.size(); ++k) {
    FrameState& st = state[k];
    if (st.bad_pixels > 0 && !st.blank)
      warnings.add("NaN/Inf pixels treated as missing", where + "frame " + std::to_string(k) + ": " +
                                                            std::to_string(st.bad_pixels) +
                                                            " NaN/Inf pixels treated as missing");
    if (st.blank) {
      ++n_blank;
      st.quality = 0;
      warnings.add("blank frames excluded",
                   where + "frame " + std::to_string(k) +
                       (st.bad_pixels == static_cast<long>(npix) ? " has no finite pixel" : " is blank (constant)") +
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
  return used;
}

}  // namespace

Frame warp_to_reference(const Frame& f, const Transform& to_reference, Interpolation interpolation, float outside) {
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

namespace {

AverageResult average_impl(const FrameSource& frames, const std::vector<Transform>& transforms,
                           const AveragingOptions& options, const AveragingTeam* team, Progress* progress,
                           const CancelToken* cancel) {
  const std::size_t n = frames.frame_count();
  const int w = frames.width(), h = frames.height();
  const std::size_t npix = static_cast<std::size_t>(w) * static_cast<std::size_t>(h);
  std::string src = frames.describe();
  src = src.substr(0, src.find(':'));
  const std::string where = src.empty() ? "averaging: " : src + ": ";
  check_inputs(frames, transforms, options, where);

  AverageResult result;
  Warnings warnings(result.warnings, progress);
  std::vector<FrameState> state(n);
  for (std::size_t k : options.exclude_frames) {
    if (k < n) state[k].listed_excluded = true;
    else
      warnings.add("excluded frame out of range", "exclude_frames lists frame " + std::to_string(k) +
                                                      " but the series has " + std::to_string(n) + " frames");
  }
  const std::size_t candidates = static_cast<std::size_t>(
      std::count_if(state.begin(), state.end(), [](const FrameState& st) { return !st.listed_excluded; }));

  const std::unique_ptr<AveragingStrategy> strategy = make_strategy(options, w, h);
  Warper warper(w, h, options.interpolation);
  // Progress counts this member's reads (its share of the frames with a team).
  std::size_t own_first = 0, own_last = n;
  if (team) team->own_frames(n, own_first, own_last);
  const std::size_t own_n = own_last - own_first, own_candidates = candidates * own_n / n;
  const std::size_t total = 2 * own_n + strategy->extra_reads(own_n, own_candidates);
  if (progress) progress->phase("average", total);
  FrameStream stream(frames, transforms, warper, state, cancel, progress, total, team);

  // Select the frames; the sums come out as those of the used frames.
  MeanAccumulator sums(npix, strategy->needs_squares(), strategy->needs_spread());
  sum_and_grade_frames(stream, state, options.min_quality, sums);
  const std::vector<std::size_t> used = used_frames(state, options, npix, where, warnings);

  // The method's own average and coverage.
  result.average = Frame(w, h, 0.0f);
  result.coverage = Frame(w, h, 0.0f);
  result.sigma = Frame(w, h, averaging::kMissing);
  strategy->average(stream, used, sums, result.average, result.coverage, result.sigma);

  // Per-frame quality and use.
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

// A series turned off the pixel grid is averaged from its recorded frames,
// each transform composed with the frame's turn: one interpolation, not two
// (turning back, then warping), and coverage ends at the recorded frame's
// own border. Quarter turns keep the exact pixel moves of DerotatedSource.
struct OrientedInput {
  const FrameSource& frames;
  std::vector<Transform> turned;  // empty: the transforms as given
};

OrientedInput oriented_input(const FrameSource& frames, const std::vector<Transform>& transforms,
                             const AveragingOptions& options) {
  const auto* derotated = dynamic_cast<const DerotatedSource*>(&frames);
  if (!derotated || !derotated->leaves_corners() || transforms.size() != frames.frame_count()) return {frames, {}};
  if (options.interpolation == Interpolation::fourier)
    throw bad_input(frames.describe() + ": fourier interpolation cannot turn frames scanned at " +
                    scan_rotation_text(derotated->rotations_deg()) + " deg onto frame 0's grid; use cubic");
  OrientedInput in{derotated->recorded(), {}};
  in.turned.reserve(transforms.size());
  for (std::size_t k = 0; k < transforms.size(); ++k)
    in.turned.push_back(
        compose(transforms[k], scan_rotation_transform(derotated->rotation_deg(k), frames.width(), frames.height())));
  return in;
}

}  // namespace

AverageResult average_series(const FrameSource& frames, const std::vector<Transform>& transforms,
                             const AveragingOptions& options, Progress* progress, const CancelToken* cancel) {
  const OrientedInput in = oriented_input(frames, transforms, options);
  return average_impl(in.frames, in.turned.empty() ? transforms : in.turned, options, nullptr, progress, cancel);
}

AverageResult average_series(const FrameSource& frames, const std::vector<Transform>& transforms,
                             const AveragingOptions& options, const AveragingTeam& team, Progress* progress,
                             const CancelToken* cancel) {
  const OrientedInput in = oriented_input(frames, transforms, options);
  return average_impl(in.frames, in.turned.empty() ? transforms : in.turned, options, &team, progress, cancel);
}

}  // namespace driftscan
