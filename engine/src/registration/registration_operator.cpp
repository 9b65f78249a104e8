// The scan element and operator; see registration_operator.hpp.
#include "driftscan/registration/registration_operator.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "driftscan/core/derotated_source.hpp"
#include "driftscan/core/error.hpp"
#include "driftscan/core/scan_rotation.hpp"
#include "driftscan/formats/tiff/tiff_series.hpp"
#include "driftscan/registration/periodic_step_check.hpp"
#include "driftscan/spectra/power_spectrum.hpp"

namespace driftscan {

static_assert(sizeof(Registration) == Registration::byte_size, "Registration must have no padding");

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0);

}  // namespace

std::string unusable_frame_reason(const Frame& f) {
  if (f.empty()) return "empty";
  double sum = 0, sum2 = 0;
  for (float v : f.pixels) {
    if (!std::isfinite(v)) return "has non-finite (NaN/Inf) pixels";
    sum += v;
    sum2 += static_cast<double>(v) * v;
  }
  double n = static_cast<double>(f.size()), mean = sum / n, var = sum2 / n - mean * mean;
  if (!(var > 1e-12 * std::max(1.0, mean * mean))) return "is blank (constant)";
  return {};
}

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::size_t prepared_bytes(const Frame& level0, int levels, bool reference) {
  // a pyramid is at most 4/3 of its base; a moving frame keeps spline
  // coefficients, a reference also samples and two gradients
  double base = static_cast<double>(level0.size()) * sizeof(float) * (levels > 1 ? 4.0 / 3.0 : 1.0);
  return static_cast<std::size_t>(base * (reference ? 4 : 1));
}

}  // namespace

std::array<unsigned char, Registration::byte_size> Registration::to_bytes() const {
  std::array<unsigned char, byte_size> out;
  std::memcpy(out.data(), this, byte_size);
  return out;
}

Registration Registration::from_bytes(const unsigned char* data, std::size_t size) {
  if (size != byte_size)
    throw failure("registration element of " + std::to_string(size) + " bytes received, expected " +
                  std::to_string(byte_size));
  Registration r;
  std::memcpy(static_cast<void*>(&r), data, byte_size);
  return r;
}

std::shared_ptr<const Frame> load_registration_mask(const std::string& path, int width, int height) {
  auto series = TiffSeries::open(path);
  if (series->frame_count() < 1) throw bad_input(path + ": the mask file has no image");
  if (series->width() != width || series->height() != height)
    throw bad_input(path + ": the mask is " + std::to_string(series->width()) + "x" + std::to_string(series->height()) +
                    ", the frames are " + std::to_string(width) + "x" + std::to_string(height));
  auto mask = std::make_shared<Frame>(series->frame(0));
  std::size_t used = 0;
  for (float v : mask->pixels) used += v != 0.0f;
  if (used < 64) throw bad_input(path + ": the mask selects fewer than 64 pixels");
  return mask;
}

namespace {

// A series turned off the pixel grid (DerotatedSource::leaves_corners), or null.
const DerotatedSource* off_grid(const FrameSource& frames) {
  const auto* turned = dynamic_cast<const DerotatedSource*>(&frames);
  return turned && turned->leaves_corners() ? turned : nullptr;
}

// What registration keeps from the border of what each frame turned off the
// grid covers: the smoothing and the coarse pyramid levels reach that far,
// and the fill beyond it must not be sampled.
double covered_margin(int width, int height) { return 4.0 + 0.04 * std::min(width, height); }

// The smallest rectangle holding every non-zero pixel of `mask`.
Roi bounding_box(const Frame& mask) {
  int x0 = mask.width, y0 = mask.height, x1 = -1, y1 = -1;
  for (int y = 0; y < mask.height; ++y)
    for (int x = 0; x < mask.width; ++x)
      if (mask.at(x, y) != 0.0f) x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
  return x1 < 0 ? Roi{0, 0, 0, 0} : Roi{x0, y0, x1 - x0 + 1, y1 - y0 + 1};
}

Roi intersection(const Roi& a, const Roi& b) {
  if (a.whole_frame()) return b;
  if (b.whole_frame()) return a;
  const int x0 = std::max(a.x, b.x), y0 = std::max(a.y, b.y);
  const int x1 = std::min(a.x + a.w, b.x + b.w), y1 = std::min(a.y + a.h, b.y + b.h);
  return Roi{x0, y0, std::max(0, x1 - x0), std::max(0, y1 - y0)};
}

// `settings` as the user gave them: a series turned off the grid is refined
// over the pixels every frame covers (an octagon at 45°, 0.83 of the frame
// against the covered square's 0.5), as a mask with the user's.
RefineOptions refine_options(const FrameSource& frames, const RegistrationSettings& settings, int threads,
                             double sigma) {
  RefineOptions o = RefineOptions::from(settings);
  o.threads = std::max(1, threads);
  o.prefilter_sigma = sigma;
  if (!settings.mask.empty()) o.mask = load_registration_mask(settings.mask, frames.width(), frames.height());
  if (const DerotatedSource* turned = off_grid(frames)) {
    auto covered = std::make_shared<Frame>(covered_by_every_turn(
        turned->rotations_deg(), frames.width(), frames.height(), covered_margin(frames.width(), frames.height())));
    if (o.mask)
      for (std::size_t i = 0; i < covered->size(); ++i)
        if (o.mask->pixels[i] == 0.0f) covered->pixels[i] = 0.0f;
    o.roi = intersection(settings.roi, bounding_box(*covered));
    if (o.roi.w < 8 || o.roi.h < 8)
      throw bad_input("registration: the pixels every frame covers at scan rotations " +
                      scan_rotation_text(turned->rotations_deg()) + " deg" +
                      (settings.roi.whole_frame() && settings.mask.empty() ? std::string() : " and the ROI or mask") +
                      " leave less than 8x8 pixels to register");
    o.mask = std::move(covered);
  }
  return o;
}

PairRegistrationOptions pair_options(const RegistrationSettings& settings, double sigma) {
  PairRegistrationOptions o = PairRegistrationOptions::from(settings);
  o.smooth_sigma = sigma;
  return o;
}

std::unique_ptr<FrameSource> with_filled_corners(const FrameSource& frames) {
  const DerotatedSource* turned = off_grid(frames);
  return turned ? turned->with_filled_corners() : nullptr;
}

// The settings with the ROI cut to the centred square every frame of a
// series turned off the pixel grid covers, less the margin: what the pair
// registration (an FFT over a rectangle) can take.
RegistrationSettings within_covered_square(const FrameSource& frames, const RegistrationSettings& settings) {
  const DerotatedSource* turned = off_grid(frames);
  if (!turned) return settings;
  const int w = frames.width(), h = frames.height();
  const double margin = covered_margin(w, h);
  const double half = covered_half_side(turned->rotations_deg(), w, h) - margin;
  const int x0 = static_cast<int>(std::ceil((w - 1) / 2.0 - half)),
            y0 = static_cast<int>(std::ceil((h - 1) / 2.0 - half));
  const int x1 = static_cast<int>(std::floor((w - 1) / 2.0 + half)),
            y1 = static_cast<int>(std::floor((h - 1) / 2.0 + half));
  const Roi covered = intersection(settings.roi, Roi{x0, y0, x1 - x0 + 1, y1 - y0 + 1});
  RegistrationSettings out = settings;
  if (covered.w < 8 || covered.h < 8)
    throw bad_input("registration: the square every frame covers at scan rotations " +
                    scan_rotation_text(turned->rotations_deg()) + " deg" +
                    (settings.roi.whole_frame() ? std::string() : " and the ROI") + " leave" +
                    (settings.roi.whole_frame() ? "s" : "") + " less than 8x8 pixels to register");
  out.roi = covered;
  return out;
}

double reference_sigma(const FrameSource& frames) {
  if (frames.frame_count() == 0) return 1.0;
  Frame f0 = frames.frame(0);
  if (!unusable_frame_reason(f0).empty()) return 1.0;  // reported by whoever registers it
  return choose_smoothing_sigma(f0);
}

// Frame 0's autocorrelation, once: its lattice bounds every pair search (a
// lattice does not change along a series) and its central lobe is the area
// of one independent sample, the null of every significance test.
PairRegistrationOptions with_reference(const FrameSource& frames, PairRegistrationOptions o) {
  if (frames.frame_count() < 1) return o;
  Frame f0 = frames.frame(0);
  if (!unusable_frame_reason(f0).empty()) return o;
  try {
    const PairShift self = PairRegistrationPlan(frames.width(), frames.height(), o).execute(f0, f0);
    if (o.lattice_bound && !(o.lattice_vector > 0)) o.lattice_vector = self.lattice_vector;
    if (!(o.sample_area > 0)) o.sample_area = self.lobe_area;
  } catch (const Error&) {
    // left to the pair registrations themselves
  }
  return o;
}

}  // namespace

double choose_smoothing_sigma(const Frame& reference) {
  if (reference.width < 16 || reference.height < 16) return 1.0;
  SpectrumPeak peak = PowerSpectrum(reference.width, reference.height).strongest_peak(reference);
  if (!(peak.sharpness > 100.0) || !(peak.period > 0)) return 1.0;  // not a lattice: white noise gives ~15
  return std::clamp(0.15 * peak.period, 1.0, 8.0);
}

RegistrationOperator::RegistrationOperator(const FrameSource& frames, const RegistrationSettings& settings,
                                           int refine_threads, std::size_t prepared_cache_bytes, bool prepare_reference)
    : filled_(with_filled_corners(frames)),
      frames_(filled_ ? *filled_ : frames),
      settings_(within_covered_square(frames, settings)),
      sigma_(reference_sigma(frames_)),
      refine_(frames_.width(), frames_.height(), refine_options(frames_, settings, refine_threads, sigma_)),
      frame0_(prepare_reference && frames.frame_count() > 0
                  ? std::async(std::launch::async, [this] { return prepare_frame0(); })
                  : std::future<PreparedFrame0>()),
      pair_(frames_.width(), frames_.height(), with_reference(frames_, pair_options(settings_, sigma_))),
      cache_capacity_(prepared_cache_bytes) {
  if (!frame0_.valid()) return;
  PreparedFrame0 f0 = frame0_.get();  // ready about when the autocorrelation is
  if (f0.prepared) keep(0, true, f0.levels, std::move(f0.prepared), f0.bytes);
}

RegistrationOperator::PreparedFrame0 RegistrationOperator::prepare_frame0() const {
  PreparedFrame0 out;
  // A shaky guess starts deeper than a trusted one: the deeper pyramid
  // serves both (an application starts at the level its guess asks for).
  out.levels = std::max(refine_.levels_for(1.0), refine_.levels_for(2.0));
  try {
    const Frame f = frames_.frame(0);
    out.prepared = refine_.prepare(f, true, out.levels);
    out.bytes = prepared_bytes(f, out.levels, true);
  } catch (const Error&) {
    out.prepared = nullptr;  // bad frame data: the application meets it again and says why
  }
  return out;
}

void RegistrationOperator::keep(std::size_t k, bool reference, int levels,
                                std::shared_ptr<const Refinement::Prepared> p, std::size_t bytes) const {
  std::lock_guard<std::mutex> lock(cache_mutex_);
  if (bytes > cache_capacity_) return;
  cache_.push_front({k, reference, levels, std::move(p), bytes});
  cache_bytes_ += bytes;
  while (cache_bytes_ > cache_capacity_ && !cache_.empty()) {
    cache_bytes_ -= cache_.back().bytes;
    cache_.pop_back();
  }
}

std::shared_ptr<const Refinement::Prepared> RegistrationOperator::prepared(std::size_t k, bool reference,
                                                                           int levels) const {
  {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    for (auto it = cache_.begin(); it != cache_.end(); ++it)
      if (it->frame == k && it->levels >= levels && (it->reference || !reference)) {
        cache_.splice(cache_.begin(), cache_, it);
        return cache_.front().prepared;
      }
  }
  const std::shared_ptr<const Frame> kept = frames_.shared_frame(k);  // read errors propagate as they are
  const Frame& f = *kept;
  auto p = refine_.prepare(f, reference, levels);
  keep(k, reference, levels, p, prepared_bytes(f, levels, reference));
  return p;
}

Registration RegistrationOperator::operator()(const Registration& a, const Registration& b) const {
  if (a.to != b.from)
    throw failure("scan operator applied to non-adjacent elements (" + std::to_string(a.from) + "->" +
                  std::to_string(a.to) + ") and (" + std::to_string(b.from) + "->" + std::to_string(b.to) + ")");
  const auto t0 = std::chrono::steady_clock::now();
  Registration r;
  r.from = a.from;
  r.to = b.to;
  r.transform = compose(a.transform, b.transform);
  r.flags = b.flags & (kBadFrame | kNoPeak);
  if ((r.flags & kBadFrame) || r.from == r.to) {
    r.seconds = seconds_since(t0);
    return r;
  }
  // A guess built on a failed or stand-in registration may be further off.
  const bool shaky = ((a.flags | b.flags) & (kBadFrame | kPairFailed | kRefineFailed | kNoPeak | kNoMatch)) != 0;
  const double uncertainty = shaky ? 2.0 : 1.0;
  const int levels = refine_.levels_for(uncertainty);
  std::shared_ptr<const Refinement::Prepared> pi, pk;
  try {
    pi = prepared(r.from, true, levels);
    pk = prepared(r.to, false, levels);
    RefineResult res = refine_.execute(*pi, *pk, r.transform, uncertainty);
    r.iterations = res.iterations;
    r.cost = res.cost;
    r.quality = res.ncc;
    if (!res.converged) r.flags |= kNotConverged;
    // A match no better than unrelated frames give is noise settling
    // anywhere: the chained guess is the better start for what follows.
    if (registration_significance(res.ncc, res.pixels) < registration_threshold()) r.flags |= kNoMatch;
    else r.transform = res.transform;
  } catch (const Error& e) {
    // Bad frame data or no overlap: keep the chained guess, say so. Anything
    // else (cancellation, a file that cannot be read) is not ours to hide.
    if (e.kind() != ErrorKind::bad_input) throw;
    if (std::string(e.what()).rfind("refinement:", 0) != 0) throw;
    r.flags |= kRefineFailed;
  }
  r.seconds = seconds_since(t0);
  return r;
}

double RegistrationOperator::registration_significance(double ncc, std::size_t pixels) const {
  const double area = std::max(1.0, pair_.options().sample_area);
  return PairRegistrationPlan::correlation_significance(ncc, static_cast<double>(pixels) / area);
}

double RegistrationOperator::registration_threshold() const {
  const Roi& roi = refine_.options().roi;
  const double pixels =
      roi.whole_frame() ? static_cast<double>(frames_.width()) * frames_.height() : static_cast<double>(roi.w) * roi.h;
  return PairRegistrationPlan::significance_threshold(pixels / std::max(1.0, pair_.options().sample_area));
}

void RegistrationOperator::prepare_moving(std::size_t k) const {
  try {
    prepared(k, false, refine_.levels_for(1.0));
  } catch (const Error&) {
    // Bad frame data: the application meets it again and handles it.
  }
}

void RegistrationOperator::release_prepared() const {
  std::lock_guard<std::mutex> lock(cache_mutex_);
  cache_.clear();
  cache_bytes_ = 0;
}

RefineInformation RegistrationOperator::information(const Registration& r, bool counts) const {
  RefineInformation info;
  if (r.from == r.to) return info;  // a frame against itself: exact
  if (!(r.flags & (kBadFrame | kRefineFailed))) {
    try {
      return refine_.information(*prepared(r.from, true, 1), *prepared(r.to, false, 1), r.transform, counts);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::bad_input) throw;  // bad frame data: singular below
    }
  }
  info.singular = true;
  for (std::size_t i = 0; i < 6; ++i) info.covariance[i * 7] = std::numeric_limits<double>::infinity();
  return info;
}

Registration RegistrationOperator::element(std::size_t k) const {
  const auto t0 = std::chrono::steady_clock::now();
  if (k == 0) return Registration::identity(0);
  Registration e;
  e.from = k - 1;
  e.to = k;
  // Shared, not copied: the frame cache's own (two 64 MB copies per element at 4096^2).
  const std::shared_ptr<const Frame> kept_k = frames_.shared_frame(k);
  const Frame& fk = *kept_k;
  if (!unusable_frame_reason(fk).empty()) {
    e.flags = kBadFrame;
    e.seconds = seconds_since(t0);
    return e;
  }
  // The closest usable frame before k (frame k-1 unless that one is bad).
  constexpr std::size_t max_look_back = 16;
  for (std::size_t back = 1; back <= std::min(k, max_look_back); ++back) {
    const std::shared_ptr<const Frame> kept_g = frames_.shared_frame(k - back);
    const Frame& fg = *kept_g;
    if (!unusable_frame_reason(fg).empty()) continue;
    PairShift s = pair_.execute(fg, fk, PairFrameKey{&frames_, k - back}, PairFrameKey{&frames_, k});
    if (back == 1) s = checked_against_past_steps(pair_, frames_, k, fg, fk, s);
    e.transform = s.transform();
    e.quality = s.psr;
    if (s.at_bound) e.flags |= kPairFailed;
    if (!s.significant) {
      e.flags |= kNoPeak;
      e.transform = Transform::identity();  // the peak is noise: no better than no shift
    }
    e.seconds = seconds_since(t0);
    return e;
  }
  e.flags = kPairFailed;  // nothing usable nearby: identity guess
  e.seconds = seconds_since(t0);
  return e;
}

}  // namespace driftscan
