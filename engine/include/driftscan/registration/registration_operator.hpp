#pragma once
// The scan element and operator of DriftScan (docs/method.md):
//   element   e_k = (k-1 -> k, T_{k-1,k})        from a pair registration;
//   operator  (i -> j, A) (+) (j -> k, B) = (i -> k, refine(f_i, f_k, init = A o B))
// with T_{i,k} = T_{i,j} o T_{j,k} (transform.hpp). The inclusive scan of
// e_0 = (0 -> 0, identity), e_1, ..., e_{N-1} yields (0 -> k, T_{0,k}).
//
// The operator is a pure function of its two arguments and the frames (it is
// associative up to the refinement's accuracy), thread-safe, and reads
// frames through a FrameSource: any worker may need any frame.
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <future>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>

#include "driftscan/core/frame_source.hpp"
#include "driftscan/core/transform.hpp"
#include "driftscan/registration/pair_registration.hpp"
#include "driftscan/registration/refinement.hpp"
#include "driftscan/registration/registration_settings.hpp"

namespace driftscan {

// Bits of Registration::flags.
enum RegistrationFlag : std::uint32_t {
  kBadFrame = 1u << 0,      // frame `to` is unusable (non-finite pixels, blank): exclude it
  kPairFailed = 1u << 1,    // the pair registration could not be trusted (peak on the bound)
  kRefineFailed = 1u << 2,  // refinement impossible (no overlap...): transform is the chained guess
  kNotConverged = 1u << 3,  // refinement stopped at max_iterations
  // The pair's correlation peak is not significant (PairShift::significant):
  // frames sharing no content would give as high a one. The element is the
  // identity (a guess no worse than a random shift) and frame `to` is
  // excluded: where a frame's neighbour match failed, a periodic sample
  // leaves its refinement free to settle a lattice period away.
  kNoPeak = 1u << 4,
  // The refinement's NCC is indistinguishable from that of frames sharing no
  // content (registration_significance below its threshold): the transform
  // is the chained guess and frame `to` is excluded.
  kNoMatch = 1u << 5,
};
// The flags that take a frame out of the average: it could not be registered.
constexpr std::uint32_t kFrameFailed = kBadFrame | kRefineFailed | kNoPeak | kNoMatch;

// A scan element: frame `from` -> frame `to` and T_{from,to}, plus the
// diagnostics of the operation that produced it. Trivially copyable: the
// distributed scan sends it as bytes.
struct Registration {
  std::uint64_t from = 0, to = 0;
  Transform transform;          // T_{from,to}: f_to(p) ~ f_from(T(p))
  std::int32_t iterations = 0;  // refinement iterations of the application that made it
  std::uint32_t flags = 0;      // RegistrationFlag bits
  double cost = 0.0;            // refinement cost (1 - NCC^2); for pair elements 0
  double quality = 0.0;         // NCC over the overlap (pair elements: peak-to-sidelobe ratio)
  double seconds = 0.0;         // wall time of the application

  static Registration identity(std::uint64_t frame) {
    Registration r;
    r.from = r.to = frame;
    return r;
  }

  static constexpr std::size_t byte_size = sizeof(Transform) + 2 * sizeof(std::uint64_t) + 8 + 3 * sizeof(double);
  std::array<unsigned char, byte_size> to_bytes() const;
  // Throws driftscan::Error (failure) on a wrong size.
  static Registration from_bytes(const unsigned char* data, std::size_t size);
};
static_assert(std::is_trivially_copyable_v<Registration>, "the scan sends Registration bitwise");

class RegistrationOperator {
 public:
  // `frames` must outlive the operator. Reads the mask file named in the
  // settings, if any. Throws bad_input on bad settings (ROI outside the
  // frame, mask of the wrong size...).
  // `refine_threads`: OpenMP threads inside each refinement (1 when the
  // operator is applied from several threads at once).
  // `prepare_reference`: also prepare frame 0, the reference of every
  // application of the sequential scan (its pyramid with samples, gradients
  // and spline coefficients, to the depth any application may start at),
  // into the cache — built on a second thread while frame 0's
  // autocorrelation runs here, both needing only frame 0's smoothing. What
  // the first application would build itself, the same way: results
  // unchanged. `register --follow` asks for it when frame 0 is complete, so
  // frame 1's row pays only its own pair registration and refinement.
  RegistrationOperator(const FrameSource& frames, const RegistrationSettings& settings, int refine_threads = 1,
                       std::size_t prepared_cache_bytes = std::size_t(256) << 20, bool prepare_reference = false);

  // (i -> j, a) (+) (j -> k, b) = (i -> k, refined). Thread-safe. Throws
  // failure when a.to != b.from. A refinement that is impossible (frames
  // without overlap, blank or non-finite frame i) yields the chained guess
  // flagged kRefineFailed; an element whose frame `to` is flagged bad is
  // chained without refinement; a refinement whose NCC is not significant
  // keeps the chained guess, flagged kNoMatch. kBadFrame and kNoPeak of `b`
  // carry over to the result (they are frame `to`'s, whatever the tree).
  Registration operator()(const Registration& a, const Registration& b) const;

  // The element e_k = (k-1 -> k) by pair registration; e_0 = identity(0).
  // Frame k unusable -> (identity, kBadFrame). Frame k-1 unusable -> frame k
  // is registered with the closest usable frame before it, and the element
  // still spans k-1 -> k (the bad frame stands in for that one). No
  // significant peak -> (identity, kNoPeak).
  Registration element(std::size_t k) const;

  // Prepares frame k as the moving frame of an application from a trusted
  // guess (its pyramid, kept in the operator's cache) ahead of that
  // application, which then finds it ready. What is prepared does not depend
  // on when or on which thread: results are unchanged. A frame that cannot be
  // prepared (bad data) is left to the application, which says why.
  // `register --follow` does this while the pair registration of frame k runs.
  void prepare_moving(std::size_t k) const;

  // Drops every prepared frame (pyramid) the cache holds: a phase after the
  // scan (the scan-distortion correction) has the memory; an application
  // after this prepares again what it needs, with the same results.
  void release_prepared() const;

  // The precision of a result (from -> to) at its transform
  // (Refinement::information; `counts`: Poisson frames); singular for a bad
  // or unrefined frame.
  RefineInformation information(const Registration& r, bool counts = false) const;

  const FrameSource& frames() const { return frames_; }
  const RegistrationSettings& settings() const { return settings_; }
  const PairRegistrationPlan& pair_plan() const { return pair_; }
  const Refinement& refinement() const { return refine_; }
  // The Gaussian smoothing both registrations apply (chosen from frame 0).
  double smoothing_sigma() const { return sigma_; }
  // A refinement's NCC against that of frames sharing no content (Fisher's
  // z over overlap pixels / sample area independent samples), sample area from frame 0's
  // autocorrelation (PairRegistrationOptions::sample_area); and the
  // threshold below which it is flagged kNoMatch (PairRegistrationPlan::
  // significance_threshold over the frame's independent samples: the chain's
  // guesses come from a search over the whole frame).
  double registration_significance(double ncc, std::size_t pixels) const;
  double registration_threshold() const;

 private:
  std::shared_ptr<const Refinement::Prepared> prepared(std::size_t k, bool reference, int levels) const;
  // Into the cache (evicting the least recently used beyond its capacity).
  void keep(std::size_t k, bool reference, int levels, std::shared_ptr<const Refinement::Prepared> p,
            std::size_t bytes) const;
  // Frame 0 as the reference at the deepest start any application may ask
  // for; prepared null when it cannot be (bad data: the application says why).
  struct PreparedFrame0 {
    std::shared_ptr<const Refinement::Prepared> prepared;
    int levels = 0;
    std::size_t bytes = 0;
  };
  PreparedFrame0 prepare_frame0() const;

  // In this order: the refinement and frame 0's preparation (on a second
  // thread) are under way while the pair plan computes frame 0's autocorrelation.
  // A series turned off the pixel grid is read with its uncovered corners
  // filled (DerotatedSource::with_filled_corners); its pairs are registered
  // inside the square every frame covers (settings_' ROI, cut to it), its
  // refinements over every pixel all frames cover (a mask).
  std::unique_ptr<FrameSource> filled_;
  const FrameSource& frames_;
  RegistrationSettings settings_;
  double sigma_;
  Refinement refine_;
  std::future<PreparedFrame0> frame0_;
  PairRegistrationPlan pair_;
  // Prepared frames (pyramids): frame 0 is the reference of every
  // application in the sequential scan. Small LRU guarded by a mutex.
  struct CacheEntry {
    std::size_t frame;
    bool reference;
    int levels;
    std::shared_ptr<const Refinement::Prepared> prepared;
    std::size_t bytes;
  };
  mutable std::mutex cache_mutex_;
  mutable std::list<CacheEntry> cache_;
  mutable std::size_t cache_bytes_ = 0;
  std::size_t cache_capacity_;
};

// Why a frame cannot be registered ("is blank (constant)", "has non-finite
// (NaN/Inf) pixels", ...), or empty when it can.
std::string unusable_frame_reason(const Frame& f);

// The noise-suppressing smoothing (Gaussian sigma, px) suited to a frame:
// 0.15 x the period of its strongest lattice fringe when the frame is
// periodic (its power spectrum has a sharp peak), within [1, 8] px; 1 px
// otherwise. Tuned on the synthetic lattices (period 7.8 px fringes ->
// 1.2 px) and the real ABF series (28.8 px fringes -> 4.3 px, where 1 px
// left noise minima 1.4 px apart).
double choose_smoothing_sigma(const Frame& reference);

// Reads a mask TIFF (non-zero = use) for the given frame size; throws
// bad_input naming the file when it cannot be read or has the wrong size.
std::shared_ptr<const Frame> load_registration_mask(const std::string& path, int width, int height);

}  // namespace driftscan
