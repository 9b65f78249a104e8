// Intensity-based refinement (inverse-compositional Gauss-Newton with
// gain/offset and LM damping); see refinement.hpp.
#include "driftscan/registration/refinement.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "driftscan/core/cubic_bspline.hpp"
#include "driftscan/core/error.hpp"
#include "driftscan/registration/signal_lag_factor.hpp"
#include "registration/box_sum.hpp"
#include "registration/information_row.hpp"
#include "registration/row_bands.hpp"

namespace driftscan {

namespace {

// Clamped separable convolution with a symmetric kernel k[0..r].
Frame convolve_separable(const Frame& f, const std::vector<float>& k, int threads = 1) {
  const int r = static_cast<int>(k.size()) - 1, w = f.width, h = f.height;
  Frame tmp(w, h), out(w, h);
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1 && h > 32)
  for (int y = 0; y < h; ++y) {
    const float* in = f.row(y);
    float* o = tmp.row(y);
    for (int x = 0; x < w; ++x) {
      float s = k[0] * in[x];
      if (x >= r && x + r < w) {
        for (int i = 1; i <= r; ++i) s += k[static_cast<std::size_t>(i)] * (in[x - i] + in[x + i]);
      } else {
        for (int i = 1; i <= r; ++i)
          s += k[static_cast<std::size_t>(i)] * (in[std::max(0, x - i)] + in[std::min(w - 1, x + i)]);
      }
      o[x] = s;
    }
  }
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1 && h > 32)
  for (int y = 0; y < h; ++y) {
    float* o = out.row(y);
    const float* c = tmp.row(y);
    for (int x = 0; x < w; ++x) o[x] = k[0] * c[x];
    for (int i = 1; i <= r; ++i) {
      const float* up = tmp.row(std::max(0, y - i));
      const float* dn = tmp.row(std::min(h - 1, y + i));
      const float ki = k[static_cast<std::size_t>(i)];
      for (int x = 0; x < w; ++x) o[x] += ki * (up[x] + dn[x]);
    }
  }
  return out;
}

// Burt's 5-tap kernel then every other pixel: level L pixel i sits at 2^L i.
Frame downsample(const Frame& f, int threads = 1) {
  Frame blurred = convolve_separable(f, {6.0f / 16, 4.0f / 16, 1.0f / 16}, threads);
  Frame out((f.width + 1) / 2, (f.height + 1) / 2);
  for (int y = 0; y < out.height; ++y)
    for (int x = 0; x < out.width; ++x) out.at(x, y) = blurred.at(2 * x, 2 * y);
  return out;
}

void gradients(const Frame& f, Frame& gx, Frame& gy, int threads = 1) {
  gx = Frame(f.width, f.height);
  gy = Frame(f.width, f.height);
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1 && f.height > 32)
  for (int y = 0; y < f.height; ++y)
    for (int x = 0; x < f.width; ++x) {
      int xl = std::max(0, x - 1), xr = std::min(f.width - 1, x + 1);
      int yu = std::max(0, y - 1), yd = std::min(f.height - 1, y + 1);
      gx.at(x, y) = (f.at(xr, y) - f.at(xl, y)) / static_cast<float>(std::max(1, xr - xl));
      gy.at(x, y) = (f.at(x, yd) - f.at(x, yu)) / static_cast<float>(std::max(1, yd - yu));
    }
}

// Cholesky succeeds: the symmetric n x n matrix is positive definite.
bool positive_definite(int n, const std::array<double, 36>& a) {
  double l[6][6] = {};
  for (int i = 0; i < n; ++i)
    for (int j = 0; j <= i; ++j) {
      double v = a[static_cast<std::size_t>(i) * 6 + static_cast<std::size_t>(j)];
      for (int k = 0; k < j; ++k) v -= l[i][k] * l[j][k];
      if (i == j) {
        if (!(v > 0)) return false;
        l[i][i] = std::sqrt(v);
      } else {
        l[i][j] = v / l[j][j];
      }
    }
  return true;
}

int param_count(MotionModel m) { return m == MotionModel::translation ? 2 : m == MotionModel::rigid ? 3 : 6; }

// Solves (H + lambda diag H) x = b for n <= 6 by Gaussian elimination with
// partial pivoting; false when singular.
bool solve(int n, const std::array<double, 36>& H, const std::array<double, 6>& b, double lambda,
           std::array<double, 6>& x) {
  double m[6][7];
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) m[i][j] = H[static_cast<std::size_t>(i) * 6 + static_cast<std::size_t>(j)];
    m[i][i] *= 1.0 + lambda;
    m[i][n] = b[static_cast<std::size_t>(i)];
  }
  for (int c = 0; c < n; ++c) {
    int p = c;
    for (int r = c + 1; r < n; ++r)
      if (std::abs(m[r][c]) > std::abs(m[p][c])) p = r;
    if (!(std::abs(m[p][c]) > 1e-300)) return false;
    if (p != c)
      for (int j = 0; j <= n; ++j) std::swap(m[p][j], m[c][j]);
    for (int r = c + 1; r < n; ++r) {
      double f = m[r][c] / m[c][c];
      for (int j = c; j <= n; ++j) m[r][j] -= f * m[c][j];
    }
  }
  for (int i = n - 1; i >= 0; --i) {
    double s = m[i][n];
    for (int j = i + 1; j < n; ++j) s -= m[i][j] * x[static_cast<std::size_t>(j)];
    x[static_cast<std::size_t>(i)] = s / m[i][i];
    if (!std::isfinite(x[static_cast<std::size_t>(i)])) return false;
  }
  return true;
}

struct Span {
  int y, x0, x1;    // inclusive
  int c0, c1;       // its core (weight 1 unless masked), inside it; none: c0 = x1 + 1, c1 = x1
  std::size_t off;  // of its band's weights (x0..c0-1, then c1+1..x1) in the set's weights
};

// Half the width (px) of the band over which the overlap's weights fade to 0.
constexpr double kFade = 1.0;
// How far (px) an estimate may move before the overlap's core is summed
// again (LevelSolver::build_set): the band summed at every estimate is
// 2 kFade + kCoreSlack px wide.
constexpr double kCoreSlack = 1.0;

// Weight of a moving-frame position u (one axis of a frame `size` px wide)
// whose safe sampling zone is [1, size - 3]: 0 up to margin - kFade px inside
// it, 1 from margin + kFade px in, smoothstep between (continuous slope).
double edge_weight(double u, int size, double margin) {
  const double inside = std::min(u - 1, size - 3 - u);
  const double t = std::clamp((inside - margin + kFade) / (2 * kFade), 0.0, 1.0);
  return t * t * (3 - 2 * t);
}

}  // namespace

struct Refinement::Prepared {
  std::vector<Frame> level, gx, gy;  // samples (+ gradients for a reference)
  std::vector<Frame> coeff;          // cubic B-spline coefficients (for a moving frame)
  std::uint64_t serial = 0;          // unique per prepare() call: names the frame in per-thread memos
};

RefineOptions RefineOptions::from(const RegistrationSettings& s) {
  RefineOptions o;
  o.model = s.model;
  o.roi = s.roi;
  o.pyramid_levels = s.pyramid_levels;
  o.max_iterations = s.max_iterations;
  o.tolerance = s.tolerance;
  o.information_rows = s.uncertainty_rows;
  return o;
}

Frame gaussian_smooth(const Frame& f, double sigma, int threads) {
  if (!(sigma > 0) || f.empty()) return f;
  int r = std::max(1, static_cast<int>(std::ceil(3.0 * sigma)));
  std::vector<float> k(static_cast<std::size_t>(r) + 1);
  double sum = 0;
  for (int i = 0; i <= r; ++i) {
    k[static_cast<std::size_t>(i)] = static_cast<float>(std::exp(-0.5 * i * i / (sigma * sigma)));
    sum += (i == 0 ? 1 : 2) * k[static_cast<std::size_t>(i)];
  }
  for (auto& v : k) v = static_cast<float>(v / sum);
  return convolve_separable(f, k, threads);
}

Refinement::Refinement(int width, int height, const RefineOptions& options)
    : width_(width), height_(height), options_(options) {
  roi_ = options.roi.whole_frame() ? Roi{0, 0, width, height} : options.roi;
  if (roi_.x < 0 || roi_.y < 0 || roi_.x + roi_.w > width || roi_.y + roi_.h > height)
    throw bad_input("ROI " + std::to_string(roi_.x) + "," + std::to_string(roi_.y) + "," + std::to_string(roi_.w) +
                    "," + std::to_string(roi_.h) + " lies outside the " + std::to_string(width) + "x" +
                    std::to_string(height) + " frame");
  if (roi_.w < 8 || roi_.h < 8) throw bad_input("ROI smaller than 8x8 pixels cannot be registered");
  if (options.mask && (options.mask->width != width || options.mask->height != height))
    throw bad_input("mask is " + std::to_string(options.mask->width) + "x" + std::to_string(options.mask->height) +
                    ", frames are " + std::to_string(width) + "x" + std::to_string(height));
  if (options.max_iterations < 1) throw bad_input("max_iterations must be at least 1");
  if (!(options.tolerance > 0)) throw bad_input("tolerance must be positive");
  levels_ = 1;
  int w = roi_.w, h = roi_.h;  // the ROI, not the frame, must stay big enough
  while (levels_ < std::max(1, options.pyramid_levels) && (w + 1) / 2 >= options.min_level_size &&
         (h + 1) / 2 >= options.min_level_size) {
    w = (w + 1) / 2;
    h = (h + 1) / 2;
    ++levels_;
  }
  if (options.mask) {
    auto masks = std::make_shared<std::vector<Frame>>();
    Frame m(width, height);
    for (std::size_t i = 0; i < m.size(); ++i) m.pixels[i] = options.mask->pixels[i] != 0.0f ? 1.0f : 0.0f;
    masks->push_back(m);
    for (int l = 1; l < levels_; ++l) masks->push_back(downsample(masks->back()));
    level_masks_ = std::move(masks);
  }
}

int Refinement::levels_for(double init_uncertainty) const {
  int start = init_uncertainty >= 2.0 ? static_cast<int>(std::floor(std::log2(init_uncertainty))) : 0;
  return std::clamp(start, 0, levels_ - 1) + 1;
}

std::shared_ptr<const Refinement::Prepared> Refinement::prepare(const Frame& f, bool as_reference, int levels) const {
  if (f.width != width_ || f.height != height_ || f.size() != static_cast<std::size_t>(width_) * height_)
    throw bad_input("refinement: frame is " + std::to_string(f.width) + "x" + std::to_string(f.height) + ", expected " +
                    std::to_string(width_) + "x" + std::to_string(height_));
  for (std::size_t i = 0; i < f.size(); ++i)
    if (!std::isfinite(f.pixels[i]))
      throw bad_input("refinement: non-finite pixel at (" + std::to_string(i % width_) + ", " +
                      std::to_string(i / width_) + ")");
  auto p = std::make_shared<Prepared>();
  static std::atomic<std::uint64_t> next_serial{1};
  p->serial = next_serial.fetch_add(1, std::memory_order_relaxed);
  const int n = levels <= 0 ? levels_ : std::min(levels, levels_);
  const int t = std::max(1, options_.threads);
  p->level.push_back(gaussian_smooth(f, options_.prefilter_sigma, t));
  for (int l = 1; l < n; ++l) p->level.push_back(downsample(p->level.back(), t));
  for (const Frame& l : p->level) {
    p->coeff.push_back(l);
    bspline_prefilter(p->coeff.back());
  }
  if (!as_reference) {
    p->level.clear();  // a moving frame is only ever sampled through its coefficients
    p->level.shrink_to_fit();
  } else {
    p->gx.resize(p->level.size());
    p->gy.resize(p->level.size());
    for (std::size_t l = 0; l < p->level.size(); ++l) gradients(p->level[l], p->gx[l], p->gy[l], t);
  }
  return p;
}

RefineResult Refinement::execute(const Frame& reference, const Frame& moving, const Transform& init,
                                 double init_uncertainty) const {
  return execute(*prepare(reference, true, levels_for(init_uncertainty)),
                 *prepare(moving, false, levels_for(init_uncertainty)), init, init_uncertainty);
}

namespace {

// One level of the inverse-compositional Gauss-Newton.
class LevelSolver {
 public:
  LevelSolver(const Frame& ref, const Frame& gx, const Frame& gy, const Frame& mov, const Frame* mask,
              MotionModel model, double rx0, double ry0, double rx1, double ry1, int threads)
      : ref_(ref),
        gx_(gx),
        gy_(gy),
        mov_(mov),
        mask_(mask),
        model_(model),
        np_(param_count(model)),
        threads_(std::max(1, threads)) {
    qx0_ = std::max(1, static_cast<int>(std::ceil(rx0)));
    qy0_ = std::max(1, static_cast<int>(std::ceil(ry0)));
    qx1_ = std::min(ref.width - 2, static_cast<int>(std::floor(rx1)));
    qy1_ = std::min(ref.height - 2, static_cast<int>(std::floor(ry1)));
    cx_ = 0.5 * (qx0_ + qx1_);
    cy_ = 0.5 * (qy0_ + qy1_);
    radius_ = std::max(1.0, 0.5 * std::max(qx1_ - qx0_, qy1_ - qy0_));
  }

  // Overlap at S: the reference pixels whose position in the moving frame
  // lies inside its safe sampling zone, weighted by edge_weight (0 within
  // margin - kFade px of the zone's edge, 1 from margin + kFade px in). A hard
  // edge would make the cost jump as the estimate moves a pixel across it,
  // and the result depend on where the set was built (the guess, i.e. the
  // scan's bracketing); faded weights make it a smooth function of S. Built
  // at every estimate measured (evaluate uses these weights); only the band
  // along the edges is summed anew, the core is kept while S stays near it.
  void build_set(const Transform& S, double margin) {
    if (!(core_margin_ == margin) || corner_motion(S, core_S_) > 0.9 * kCoreSlack) build_core(S, margin);
    spans_.clear();
    weights_.clear();
    auto band_weights = [&](int y, int x0, int x1, float* w) {  // w[x] for x0 <= x <= x1
      for (int x = x0; x <= x1; ++x) {
        const Point p = S.apply(x, y);
        const double v = edge_weight(p.x, mov_.width, margin) * edge_weight(p.y, mov_.height, margin);
        w[x] = mask_ && mask_->at(x, y) < 0.5f ? 0.0f : static_cast<float>(v);
      }
    };
    for (int y = qy0_; y <= qy1_; ++y) {
      int x0 = 0, x1 = -1;
      row_inside(S, y, margin - kFade, x0, x1);
      if (x0 > x1) continue;
      const Range& c = core_[static_cast<std::size_t>(y - qy0_)];
      Span sp{y, x0, x1, x1 + 1, x1, weights_.size()};
      if (c.x0 <= c.x1) sp.c0 = c.x0, sp.c1 = c.x1;  // the core lies inside the span
      // Only the band's weights are kept: on big frames a weight per pixel
      // of the overlap would be as large as the frame.
      weights_.resize(sp.off + static_cast<std::size_t>(sp.c0 - x0) + static_cast<std::size_t>(x1 - sp.c1));
      band_weights(y, x0, sp.c0 - 1, weights_.data() + sp.off - x0);
      band_weights(y, sp.c1 + 1, x1, high_band(sp));
      spans_.push_back(sp);
    }
    std::vector<Sums> parts(spans_.size());
    const long ns = static_cast<long>(spans_.size());
#pragma omp parallel for schedule(static) num_threads(threads_) if (threads_ > 1 && ns > 16)
    for (long si = 0; si < ns; ++si) {
      const Span& sp = spans_[static_cast<std::size_t>(si)];
      Sums& pt = parts[static_cast<std::size_t>(si)];
      accumulate(sp.y, sp.x0, sp.c0 - 1, weights_.data() + sp.off - sp.x0, pt);
      accumulate(sp.y, sp.c1 + 1, sp.x1, high_band(sp), pt);
    }
    Sums total = core_sums_;
    for (const Sums& pt : parts) total.add(pt);
    n_ = total.n, sf_ = total.sf, sff_ = total.sff;
    H_.fill(0);
    for (int i = 0, t = 0; i < np_; ++i) {
      ssd_[static_cast<std::size_t>(i)] = total.ssd[static_cast<std::size_t>(i)];
      ssdf_[static_cast<std::size_t>(i)] = total.ssdf[static_cast<std::size_t>(i)];
      for (int j = 0; j <= i; ++j, ++t)
        H_[static_cast<std::size_t>(i) * 6 + static_cast<std::size_t>(j)] =
            H_[static_cast<std::size_t>(j) * 6 + static_cast<std::size_t>(i)] = total.h[static_cast<std::size_t>(t)];
    }
  }

  double pixels() const { return n_; }
  double reference_mean() const { return n_ > 0 ? sf_ / n_ : 0.0; }
  double reference_variance() const { return n_ > 0 ? sff_ / n_ - (sf_ / n_) * (sf_ / n_) : 0.0; }

  struct Pass {
    double cost = 1, ncc = 0;
    double alpha = 1, beta = 0;  // the gain and offset fitted at S
    std::array<double, 6> b{};
    std::array<double, 36> H{};  // the normal matrix of the set's weights at S
  };

  // The gain and offset of f ~ alpha g + beta from the weighted sums over n
  // (weight) of f, f^2, g, g^2, f g; throws when either frame is blank there.
  struct GainFit {
    double alpha, beta, vf, vg, cov;
  };
  static GainFit gain_fit(double n, double sf, double sff, double sg, double sgg, double sfg) {
    const double mf = sf / n, mg = sg / n;
    const double vf = sff / n - mf * mf, vg = sgg / n - mg * mg, cov = sfg / n - mf * mg;
    if (!(vf > 1e-20) || !(vg > 1e-20)) throw bad_input("refinement: a frame is blank over the overlap");
    const double alpha = cov / vg;
    return {alpha, mf - alpha * mg, vf, vg, cov};
  }

  // Samples the moving frame at S over the set (built at S); returns cost and
  // the GN right-hand side and matrix.
  Pass evaluate(const Transform& S) {
    struct Part {
      double sg = 0, sgg = 0, sfg = 0;
      std::array<double, 6> ssdg{};
    };
    std::vector<Part> parts(spans_.size());
    const long ns = static_cast<long>(spans_.size());
#pragma omp parallel num_threads(threads_) if (threads_ > 1 && ns > 16)
    {
      std::vector<float> g, col, wrow;
#pragma omp for schedule(static)
      for (long si = 0; si < ns; ++si) {
        const Span& s = spans_[static_cast<std::size_t>(si)];
        Part& pt = parts[static_cast<std::size_t>(si)];
        const int len = s.x1 - s.x0 + 1;
        g.resize(static_cast<std::size_t>(len));
        wrow.resize(static_cast<std::size_t>(len));
        row_weights(s, wrow.data());
        sample_span(S, s, g.data(), col);
        const float* fr = ref_.row(s.y);
        const float* gxr = gx_.row(s.y);
        const float* gyr = gy_.row(s.y);
        const float* wr = wrow.data();
        if (model_ == MotionModel::translation) {
          double a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0;
          for (int i = 0; i < len; ++i) {
            const int x = s.x0 + i;
            const double gv = g[static_cast<std::size_t>(i)], wg = wr[i] * gv;
            a0 += wg;
            a1 += wg * gv;
            a2 += wg * fr[x];
            a3 += wg * gxr[x];
            a4 += wg * gyr[x];
          }
          pt.sg = a0, pt.sgg = a1, pt.sfg = a2, pt.ssdg[0] = a3, pt.ssdg[1] = a4;
        } else {
          for (int i = 0; i < len; ++i) {
            const int x = s.x0 + i;
            if (wr[i] == 0) continue;
            const double gv = g[static_cast<std::size_t>(i)], wg = wr[i] * gv;
            pt.sg += wg;
            pt.sgg += wg * gv;
            pt.sfg += wg * fr[x];
            std::array<double, 6> sd;
            steepest(x, s.y, sd);
            for (int k = 0; k < np_; ++k) pt.ssdg[static_cast<std::size_t>(k)] += sd[static_cast<std::size_t>(k)] * wg;
          }
        }
      }
    }
    double sg = 0, sgg = 0, sfg = 0;
    std::array<double, 6> ssdg{};
    for (const Part& pt : parts) {
      sg += pt.sg, sgg += pt.sgg, sfg += pt.sfg;
      for (int k = 0; k < np_; ++k) ssdg[static_cast<std::size_t>(k)] += pt.ssdg[static_cast<std::size_t>(k)];
    }
    Pass p;
    const GainFit fit = gain_fit(n_, sf_, sff_, sg, sgg, sfg);
    const double alpha = fit.alpha, beta = fit.beta;
    p.ncc = fit.cov / std::sqrt(fit.vf * fit.vg);
    p.alpha = alpha;
    p.beta = beta;
    p.cost = std::max(0.0, 1.0 - p.ncc * p.ncc);
    p.H = H_;
    for (int k = 0; k < np_; ++k) {
      auto kk = static_cast<std::size_t>(k);
      p.b[kk] = alpha * ssdg[kk] + beta * ssd_[kk] - ssdf_[kk];
    }
    return p;
  }

  // The gain and offset fitted at S over the set (built at S): evaluate's
  // alpha and beta (its sums by the vector row kernel, in another order), the
  // rest of the pass left as it is; what the information pass needs of it.
  // On sets of up to kKeptSamples pixels the samples are kept for the
  // information pass's rows at the same S (load_row), which would sample them again.
  Pass fit_at(const Transform& S) {
    double sg = 0, sgg = 0, sfg = 0;
    std::vector<float> g, col, wrow;
    std::size_t total = 0;
    for (const Span& s : spans_) {
      const int count = s.x1 - s.x0 + 1;
      total += static_cast<std::size_t>(count);
    }
    const bool keep = total <= kKeptSamples;
    kept_samples_.clear();
    kept_at_.clear();
    if (keep) kept_samples_.reserve(total), kept_at_.reserve(spans_.size());
    for (const Span& s : spans_) {
      const int count = s.x1 - s.x0 + 1;
      const auto len = static_cast<std::size_t>(count);
      g.resize(len);
      wrow.resize(len);
      row_weights(s, wrow.data());
      sample_span_fast(S, s, g.data(), col);
      if (keep) {
        kept_at_.push_back(kept_samples_.size());
        kept_samples_.insert(kept_samples_.end(), g.begin(), g.end());
      }
      GainFitRowSums row;
      gain_fit_row(static_cast<int>(len), wrow.data(), g.data(), ref_.row(s.y) + s.x0, row);
      sg += row.sg, sgg += row.sgg, sfg += row.sfg;
    }
    if (keep) kept_S_ = S;
    const GainFit fit = gain_fit(n_, sf_, sff_, sg, sgg, sfg);
    Pass p;
    p.alpha = fit.alpha, p.beta = fit.beta;
    return p;
  }
  static constexpr std::size_t kKeptSamples = std::size_t{1} << 20;

  // The two matrices of the estimate's covariance A^-1 M A^-T at S. The
  // estimating equation is b = sum w J_f r = 0 (w: the overlap's weights, J_f:
  // the reference's steepest-descent images, r = alpha g(S(q)) + beta - f the
  // residual); its derivative along the increment is A = alpha sum w J_f J_g^T, J_g from the
  // gradient of the warped moving frame: at low dose the noise of the two
  // frames' gradients is independent and drops out of A, where it would
  // inflate the normal matrix H (and a blurred moving frame gives a small A,
  // a large sigma). M = sum_q sum_|d|<=R u(q) u(q+d)^T, u = w J_f r: the lag sum
  // carries the correlation the prefilter and the spline interpolation give
  // the noise, the local r(q) r(q+d) the Poisson (signal-dependent) variance
  // and any misfit. Outer sum of M on every `stride`-th pixel (u is smooth at
  // the prefilter's scale). Call after build_set(S) and evaluate(S).
  // Row by row (noise_rows, StreamedLagSum): no frame-sized buffer.
  // M's residual is taken at `gain`, `offset` (Refinement::information: the
  // true gain for counts), A and residual_ss at the pass's fit.
  // row_step 2: A and the lag factor from every second row (sums whose terms
  // are smooth at the prefilter's scale), doubled; u, M and residual_ss from
  // every row as before. M's lag sums over even row lags alone were biased:
  // the product of the reference's noise and its y gradient's is too narrow
  // down the columns for a 2 px step (sigma_y +1.5-3.5% in the benchmark).
  // On `bands`' measured rows only (each band computed with its margins),
  // scaled to the whole overlap: A and M per parameter by the reference's
  // gradient power (H over the bands'), residual_ss by `scale`, the overlap's
  // weight over the measured rows' (the lag factor is a ratio: not scaled).
  // A_exact: A with J_g the moving frame's exact spline gradient
  // (spline_gradient_span), the covariance's; A (J_g by central differences, as
  // H's J_f) for the signal share and the lag factor's window.
  void noise_information(const Transform& S, const Pass& pass, double gain, double offset, int R, int stride,
                         int row_step, const RowBands& bands, double scale, std::array<double, 36>& A,
                         std::array<double, 36>& A_exact, std::array<double, 36>& M, double& residual_ss,
                         double prefilter_sigma, std::array<double, 2>& lag_factor) const {
    const int w = ref_.width, h = ref_.height;
    const double area = static_cast<double>(stride) * stride;
    std::array<double, 6> lag0{};  // sum u_i^2 over the set
    auto entry = [](int i, int j) { return static_cast<std::size_t>(i) * 6 + static_cast<std::size_t>(j); };
    LagWindow window(*this, prefilter_sigma, row_step);
    std::array<double, 6> power{};  // sum w J_f,i^2 over the rows A is taken on
    // The rows kept: those of the lag factor's window's subgrid parity.
    const RowPick pick{row_step, window.ly0};
    {
      StreamedLagSum lags(w, h, np_, R, qx0_, qx1_, qy0_, qy1_, stride);
      lags.measure_rows(bands);
      noise_rows(
          S, pass, gain, offset, [&](int, int c) { return lags.next_row(c); }, [&](int y) { lags.add_row(y); }, A,
          residual_ss, pick, bands, &window, &power, &A_exact);
      lags.finish();
      lag_factor = window.sums.factor();
      lag0 = window.lag0;
      M.fill(0);
      for (int j = 0; j < np_; ++j)
        for (int i = 0; i < np_; ++i) {
          M[entry(i, j)] += 0.5 * area * lags.sum(i, j);  // symmetrised: the subgrid breaks the exact symmetry
          M[entry(j, i)] += 0.5 * area * lags.sum(i, j);
        }
    }
    for (double& a : A) a *= row_step;
    for (double& a : A_exact) a *= row_step;
    if (!bands.every_row()) {
      // A ratio estimate: each parameter's terms scaled by the reference's
      // gradient power over the whole set (H, known) over the bands', so a
      // band that holds more or less of the specimen's contrast than the
      // frame does is corrected; residual_ss by the weights.
      std::array<double, 6> d{};
      for (int i = 0; i < np_; ++i) {
        const double hb = row_step * power[static_cast<std::size_t>(i)];
        d[static_cast<std::size_t>(i)] = hb > 0 ? std::sqrt(H_[entry(i, i)] / hb) : std::sqrt(scale);
      }
      for (int i = 0; i < np_; ++i)
        for (int j = 0; j < np_; ++j) {
          A[entry(i, j)] *= d[static_cast<std::size_t>(i)] * d[static_cast<std::size_t>(j)];
          A_exact[entry(i, j)] *= d[static_cast<std::size_t>(i)] * d[static_cast<std::size_t>(j)];
          M[entry(i, j)] *= d[static_cast<std::size_t>(i)] * d[static_cast<std::size_t>(j)];
        }
      for (int i = 0; i < np_; ++i)
        lag0[static_cast<std::size_t>(i)] *= d[static_cast<std::size_t>(i)] * d[static_cast<std::size_t>(i)];
      residual_ss *= scale;
    }
    // A structured misfit (a blurred frame's lost lattice) can make the
    // plain lag sum indefinite. The triangular weights (1 - |dx|/(R+1))
    // (1 - |dy|/(R+1)) cannot: that lag sum is the Gram matrix
    // sum_p b_i(p) b_j(p) / (R+1)^2 of u boxed over the offsets [0, R]^2,
    // p over the frame padded by R above and left (where b still sees u).
    // So can one that is positive definite but cancelled: the prefiltered
    // noise is positively correlated at every lag, so its lag sum is well
    // above the lag-0 sum; half of that means the misfit's structure cancelled.
    // The Gram matrix is taken over every row (rare: no bands, no scale).
    bool cancelled = false;
    for (int i = 0; i < np_; ++i) cancelled = cancelled || M[entry(i, i)] < 0.5 * lag0[static_cast<std::size_t>(i)];
    if (positive_definite(np_, M) && !cancelled) return;
    const int pw = w + R, ph = h + R;
    std::vector<std::vector<float>> u(static_cast<std::size_t>(np_),
                                      std::vector<float>(static_cast<std::size_t>(pw) * ph, 0.0f));
    std::array<double, 36> unused_a{};
    double unused_ss = 0;
    noise_rows(
        S, pass, gain, offset,
        [&](int y, int c) { return u[static_cast<std::size_t>(c)].data() + static_cast<std::size_t>(y + R) * pw + R; },
        [](int) {}, unused_a, unused_ss, pick, RowBands{});
    for (auto& uj : u) box_sum(uj, pw, ph, 0, R);
    const double norm = 1.0 / ((R + 1.0) * (R + 1.0));
    for (int i = 0; i < np_; ++i)
      for (int j = 0; j <= i; ++j) {
        double acc = 0;
        const std::vector<float>& bi = u[static_cast<std::size_t>(i)];
        const std::vector<float>& bj = u[static_cast<std::size_t>(j)];
        for (std::size_t at = 0; at < bi.size(); ++at) acc += static_cast<double>(bi[at]) * bj[at];
        M[entry(i, j)] = M[entry(j, i)] = norm * acc;
      }
  }

  // The gain and offset fitted at S over `bands`' measured rows, with those
  // rows' weight and the reference's mean and variance there: evaluate's fit
  // (its sums in another order) when the information pass measures bands.
  struct BandFit {
    double alpha = 1, beta = 0, weight = 0, mean = 0, variance = 0;
  };
  BandFit fit_on_bands(const Transform& S, const RowBands& bands) const {
    double n = 0, sf = 0, sff = 0, sg = 0, sgg = 0, sfg = 0;
    std::vector<float> g, col, wrow;
    for (const Span& s : spans_) {
      if (!bands.measured(s.y)) continue;
      const int count = s.x1 - s.x0 + 1;
      const auto len = static_cast<std::size_t>(count);
      g.resize(len);
      wrow.resize(len);
      row_weights(s, wrow.data());
      sample_span(S, s, g.data(), col);
      const float* fr = ref_.row(s.y) + s.x0;
      for (std::size_t i = 0; i < len; ++i) {
        const double w = wrow[i], f = fr[i], gv = g[i];
        n += w, sf += w * f, sff += w * f * f;
        sg += w * gv, sgg += w * gv * gv, sfg += w * f * gv;
      }
    }
    if (!(n > 0)) throw bad_input("refinement: a frame is blank over the overlap");
    const GainFit fit = gain_fit(n, sf, sff, sg, sgg, sfg);
    return BandFit{fit.alpha, fit.beta, n, sf / n, fit.vf};
  }

  // The translation channels of w J_f and w J_g, for signal_lag_factor, in
  // a window of at most 512^2 about the ROI's centre (the factor is the
  // specimen's and the prefilter's), a row at a time into SignalLagSums on
  // its subgrid: nothing frame-sized is kept or zeroed per frame.
  struct LagWindow {
    LagWindow(const LevelSolver& l, double prefilter_sigma, int row_step)
        : tx(l.np_ == 2   ? 0
             : l.np_ == 3 ? 1
                          : 4),
          lw(std::min(l.ref_.width, 512)),
          lh(std::min(l.ref_.height, 512)),
          lx0(std::clamp((l.qx0_ + l.qx1_) / 2 - lw / 2, 0, l.ref_.width - lw)),
          ly0(std::clamp((l.qy0_ + l.qy1_) / 2 - lh / 2, 0, l.ref_.height - lh)),
          sums(reused_sums(lw, lh, prefilter_sigma, row_step)) {
      const auto n = static_cast<std::size_t>(l.ref_.width);
      jf = {std::vector<float>(n, 0.0f), std::vector<float>(n, 0.0f)};
      jg = jf;
    }
    // A margin row (not measured) gives its jg to the measured rows' column
    // windows and no products of its own (jf 0).
    void add(int x, int y, float w, const std::array<double, 6>& sf, const std::array<double, 6>& sg, bool measured) {
      if (x < lx0 || x >= lx0 + lw || y < ly0 || y >= ly0 + lh) return;
      const auto li = static_cast<std::size_t>(x);
      for (std::size_t a = 0; a < 2; ++a) {
        jf[a][li] = measured ? static_cast<float>(w * sf[tx + a]) : 0.0f;
        jg[a][li] = static_cast<float>(w * sg[tx + a]);
      }
    }
    // Row y is complete: to the sums, and the row buffers cleared for the next.
    // The rows are the frame's width (the translation's row kernel writes
    // them whole); the window's columns start at lx0.
    void end_row(int y) {
      if (y >= ly0 && y < ly0 + lh)
        sums.add_row(y - ly0, {jf[0].data() + lx0, jf[1].data() + lx0}, {jg[0].data() + lx0, jg[1].data() + lx0});
      for (std::size_t a = 0; a < 2; ++a) {
        std::fill(jf[a].begin(), jf[a].end(), 0.0f);
        std::fill(jg[a].begin(), jg[a].end(), 0.0f);
      }
    }
    // One SignalLagSums per thread, reset for each frame: its buffers are
    // frame-sized, and allocating them per frame cost more than using them.
    static SignalLagSums& reused_sums(int w, int h, double prefilter_sigma, int row_step) {
      thread_local SignalLagSums kept(0, 0, 0.0);
      kept.reset(w, h, prefilter_sigma, signal_lag_stride(prefilter_sigma), row_step);
      return kept;
    }
    std::size_t tx;
    int lw, lh, lx0, ly0;
    std::array<std::vector<float>, 2> jf, jg;  // the current row, the frame's width
    SignalLagSums& sums;
    std::array<double, 6> lag0{};  // sum u_i^2 over the set (noise_information's check of M)
  };

  // The moving frame sampled at S (G), the set's weights (W) and whether a
  // pixel was sampled (in: 0 no, 1 used, 2 sampled with weight 0) on three
  // rows: all the noise terms of a row read (its gradient's differences).
  struct SampledRows {
    explicit SampledRows(int w) : w(w) {
      for (int s = 0; s < 3; ++s) {
        G[s].resize(static_cast<std::size_t>(w));
        W[s].resize(static_cast<std::size_t>(w));
        in[s].resize(static_cast<std::size_t>(w));
        sampled[s].resize(static_cast<std::size_t>(w));
      }
    }
    int w;
    std::array<std::vector<float>, 3> G, W;
    std::array<std::vector<float>, 3> sampled;  // in != 0 as 1.0f (the translation's row kernel)
    std::array<std::vector<unsigned char>, 3> in;
    std::array<int, 3> row{-1, -1, -1};
  };

  // Which rows the information pass takes A and the lag factor from: every
  // `step`-th, those of `phase`'s parity (step 1: all).
  struct RowPick {
    int step = 1, phase = 0;
    bool kept(int y) const { return step <= 1 || ((y - phase) % step + step) % step == 0; }
  };

  // Row y of `rows` (slot y mod 3), sampled unless it is there already; zero outside the set.
  void load_row(const Transform& S, int y, SampledRows& rows, const std::vector<int>& span_of_row,
                std::vector<float>& col) const {
    if (y < 0 || y >= ref_.height) return;
    const std::size_t slot = static_cast<std::size_t>(y % 3);
    if (rows.row[slot] == y) return;
    rows.row[slot] = y;
    const int si = span_of_row[static_cast<std::size_t>(y)];
    // Zero outside the span only: the span's own samples are all written below.
    const int x0 = si < 0 ? rows.w : spans_[static_cast<std::size_t>(si)].x0;
    const int x1 = si < 0 ? rows.w - 1 : spans_[static_cast<std::size_t>(si)].x1;
    for (auto zero : {std::pair<int, int>{0, x0}, std::pair<int, int>{x1 + 1, rows.w}}) {
      std::fill(rows.G[slot].begin() + zero.first, rows.G[slot].begin() + zero.second, 0.0f);
      std::fill(rows.W[slot].begin() + zero.first, rows.W[slot].begin() + zero.second, 0.0f);
      std::fill(rows.in[slot].begin() + zero.first, rows.in[slot].begin() + zero.second, 0);
      std::fill(rows.sampled[slot].begin() + zero.first, rows.sampled[slot].begin() + zero.second, 0.0f);
    }
    if (si < 0) return;
    const Span& s = spans_[static_cast<std::size_t>(si)];
    const int len = s.x1 - s.x0 + 1;
    if (!kept_at_.empty() && same_transform(kept_S_, S)) {
      const float* kept = kept_samples_.data() + kept_at_[static_cast<std::size_t>(si)];
      std::copy(kept, kept + len, rows.G[slot].data() + s.x0);
    } else {
      sample_span_fast(S, s, rows.G[slot].data() + s.x0, col);
    }
    row_weights(s, rows.W[slot].data() + s.x0);
    std::fill(rows.sampled[slot].begin() + s.x0, rows.sampled[slot].begin() + s.x1 + 1, 1.0f);
    if (model_ == MotionModel::translation) return;  // its row kernels read W and `sampled`, not `in`
    const float* w = rows.W[slot].data() + s.x0;
    unsigned char* in = rows.in[slot].data() + s.x0;
    for (int i = 0; i < len; ++i) in[i] = w[i] > 0 ? 1 : 2;  // 2: sampled, not used
  }

  // For each row y of the set that `bands` computes, in order: u_c = w J_f,c
  // (gain g + offset - f) into out(y, c) (a zeroed row of the frame's width),
  // then done(y); A and the window's products over the measured rows `pick`
  // keeps (the window's rows over every computed row it keeps),
  // residual_ss (of the pass's fit) over every measured row, each in the
  // order of its spans and pixels.
  template <class Out, class Done>
  void noise_rows(const Transform& S, const Pass& pass, double gain, double offset, Out out, Done done,
                  std::array<double, 36>& A, double& residual_ss, RowPick pick, const RowBands& bands,
                  LagWindow* window = nullptr, std::array<double, 6>* power = nullptr,
                  std::array<double, 36>* A_exact = nullptr) const {
    const int w = ref_.width, h = ref_.height;
    std::vector<int> span_of_row(static_cast<std::size_t>(h), -1);
    for (std::size_t i = 0; i < spans_.size(); ++i)
      span_of_row[static_cast<std::size_t>(spans_[i].y)] = static_cast<int>(i);
    SampledRows rows(w);
    std::vector<float> col;
    std::vector<float> exact_gx(A_exact ? static_cast<std::size_t>(w) : 0), exact_gy(exact_gx.size());
    std::array<float*, 6> u{};
    residual_ss = 0;
    A.fill(0);
    if (A_exact) A_exact->fill(0);
    if (model_ == MotionModel::translation) {
      translation_noise_rows(S, pass, gain, offset, out, done, A, residual_ss, pick, bands, window, power, A_exact,
                             rows, span_of_row);
      return;
    }
    for (const Span& s : spans_) {
      if (!bands.computed(s.y)) continue;
      const bool kept = pick.kept(s.y), measured = bands.measured(s.y);
      for (int y = kept ? s.y - 1 : s.y; y <= (kept ? s.y + 1 : s.y); ++y) load_row(S, y, rows, span_of_row, col);
      for (int c = 0; c < np_; ++c) u[static_cast<std::size_t>(c)] = out(s.y, c);
      if (!kept) residual_ss = noise_u_row(s, rows, pass, gain, offset, u, residual_ss, measured, window);
      else if (!measured) noise_row<6, false>(s, rows, pass, gain, offset, u, A, residual_ss, window, power);
      else {
        if (A_exact) spline_gradient_span(S, s, exact_gx.data() + s.x0, exact_gy.data() + s.x0, col);
        const float *egx = exact_gx.data(), *egy = exact_gy.data();
        if (np_ == 2)
          noise_row<2, true>(s, rows, pass, gain, offset, u, A, residual_ss, window, power, A_exact, egx, egy);
        else if (np_ == 3)
          noise_row<3, true>(s, rows, pass, gain, offset, u, A, residual_ss, window, power, A_exact, egx, egy);
        else noise_row<6, true>(s, rows, pass, gain, offset, u, A, residual_ss, window, power, A_exact, egx, egy);
      }
      if (kept && window) window->end_row(s.y);
      done(s.y);
    }
  }

  // noise_rows for a translation: each row's terms by the vector row kernels
  // (information_row.hpp; float within a row, double over rows), the same
  // rows and sums as noise_row and noise_u_row take.
  template <class Out, class Done>
  void translation_noise_rows(const Transform& S, const Pass& pass, double gain, double offset, Out out, Done done,
                              std::array<double, 36>& A, double& residual_ss, RowPick pick, const RowBands& bands,
                              LagWindow* window, std::array<double, 6>* power, std::array<double, 36>* A_exact,
                              SampledRows& rows, const std::vector<int>& span_of_row) const {
    const auto w = static_cast<std::size_t>(ref_.width);
    std::vector<float> col, exact_gx(A_exact ? w : 0), exact_gy(exact_gx.size());
    // Where jf and jg go without a window (the Gram matrix's pass): written, not read.
    std::array<std::vector<float>, 2> spare_jf, spare_jg;
    if (!window) spare_jf = spare_jg = {std::vector<float>(w), std::vector<float>(w)};
    std::array<double, 4> a{}, ae{};
    std::array<double, 2> lag0{}, pw{};
    for (const Span& s : spans_) {
      if (!bands.computed(s.y)) continue;
      const bool kept = pick.kept(s.y), measured = bands.measured(s.y);
      for (int y = kept ? s.y - 1 : s.y; y <= (kept ? s.y + 1 : s.y); ++y) load_row(S, y, rows, span_of_row, col);
      const auto x0 = static_cast<std::size_t>(s.x0);
      const std::size_t mid = static_cast<std::size_t>(s.y % 3), up = static_cast<std::size_t>((s.y + 2) % 3),
                        down = static_cast<std::size_t>((s.y + 1) % 3);
      InformationRow r;
      r.n = s.x1 - s.x0 + 1;
      r.w = rows.W[mid].data() + x0;
      r.g = rows.G[mid].data() + x0;
      r.in = rows.sampled[mid].data() + x0;
      if (kept) {
        r.g_up = rows.G[up].data() + x0, r.g_down = rows.G[down].data() + x0;
        r.in_up = rows.sampled[up].data() + x0, r.in_down = rows.sampled[down].data() + x0;
      }
      r.f = ref_.row(s.y) + x0, r.fx = gx_.row(s.y) + x0, r.fy = gy_.row(s.y) + x0;
      r.alpha = static_cast<float>(pass.alpha), r.beta = static_cast<float>(pass.beta);
      r.gain = static_cast<float>(gain), r.offset = static_cast<float>(offset);
      InformationRowOut o;
      for (std::size_t c = 0; c < 2; ++c) {
        o.u[c] = out(s.y, static_cast<int>(c)) + x0;
        o.jf[c] = (window ? window->jf[c] : spare_jf[c]).data() + x0;
        o.jg[c] = (window ? window->jg[c] : spare_jg[c]).data() + x0;
      }
      InformationRowSums sums;
      if (!kept) {
        information_row_u(r, o, measured, sums);
      } else if (!measured) {
        information_row_margin(r, o);
      } else {
        if (A_exact) {
          const SplineRow taps = translation_taps(S, s, true);
          col.resize(2 * (static_cast<std::size_t>(s.x1 - s.x0) + 4));
          spline_gradient_row(taps, s.x1 - s.x0 + 1, col.data(), exact_gx.data() + x0, exact_gy.data() + x0);
          r.exact_gx = exact_gx.data() + x0, r.exact_gy = exact_gy.data() + x0;
        }
        information_row_full(r, o, sums);
        for (std::size_t k = 0; k < 4; ++k) a[k] += sums.A[k], ae[k] += sums.A_exact[k];
        pw[0] += sums.power[0], pw[1] += sums.power[1];
      }
      if (measured) {
        residual_ss += sums.residual_ss;
        lag0[0] += sums.lag0[0], lag0[1] += sums.lag0[1];
      }
      if (kept && window) window->end_row(s.y);
      done(s.y);
    }
    // A = alpha sum w J_f J_g^T (alpha taken out of the rows' sums).
    for (std::size_t i = 0; i < 2; ++i)
      for (std::size_t j = 0; j < 2; ++j) {
        A[i * 6 + j] = pass.alpha * a[i * 2 + j];
        if (A_exact) (*A_exact)[i * 6 + j] = pass.alpha * ae[i * 2 + j];
      }
    if (power) (*power)[0] += pw[0], (*power)[1] += pw[1];
    if (window) window->lag0[0] += lag0[0], window->lag0[1] += lag0[1];
  }

  // A row A skips: noise_row's u, lag0 and residual_ss terms alone (the
  // same values, summed in the same order), none that need the moving
  // frame's gradient; a margin row (not measured): u alone. Returns
  // residual_ss with the row's terms added.
  double noise_u_row(const Span& s, const SampledRows& rows, const Pass& pass, double gain, double offset,
                     const std::array<float*, 6>& u, double residual_ss, bool measured, LagWindow* window) const {
    if (!measured) window = nullptr;
    const std::size_t mid = static_cast<std::size_t>(s.y % 3);
    const float *G = rows.G[mid].data(), *W = rows.W[mid].data();
    const unsigned char* in = rows.in[mid].data();
    std::array<double, 6> lag0{};
    if (window) lag0 = window->lag0;
    for (int x = s.x0; x <= s.x1; ++x) {
      const auto at = static_cast<std::size_t>(x);
      if (in[at] != 1) continue;
      if (measured) {
        const double r = pass.alpha * G[at] + pass.beta - ref_.at(x, s.y);
        residual_ss += W[at] * r * r;
      }
      const double rn = gain * G[at] + offset - ref_.at(x, s.y);
      std::array<double, 6> sf{};
      steepest(x, s.y, sf);
      for (std::size_t i = 0; i < static_cast<std::size_t>(np_); ++i) {
        const float ui = static_cast<float>(W[at] * sf[i] * rn);
        u[i][at] = ui;
        if (window) lag0[i] += static_cast<double>(ui) * ui;
      }
    }
    if (window) window->lag0 = lag0;
    return residual_ss;
  }

  // Span s's pixels for noise_rows, NP parameters known at compile time (the
  // per-pixel sums held in registers; each sum takes the same terms in the
  // same order). A margin row (not Measured): u and the window's jg alone.
  template <int NP, bool Measured>
  void noise_row(const Span& s, const SampledRows& rows, const Pass& pass, double gain, double offset,
                 const std::array<float*, 6>& u, std::array<double, 36>& A_out, double& residual_ss_out,
                 LagWindow* window, std::array<double, 6>* power_out, std::array<double, 36>* A_exact_out = nullptr,
                 const float* exact_gx = nullptr, const float* exact_gy = nullptr) const {
    const int w = ref_.width, h = ref_.height;
    // d(g o S)/dq by the differences the reference's gradients use.
    auto diff = [](float at, float lo, float hi, bool has_lo, bool has_hi) {
      if (has_lo && has_hi) return 0.5 * (hi - lo);
      if (has_hi) return static_cast<double>(hi - at);
      if (has_lo) return static_cast<double>(at - lo);
      return 0.0;
    };
    const std::size_t mid = static_cast<std::size_t>(s.y % 3);
    const std::size_t up = static_cast<std::size_t>((s.y + 2) % 3), down = static_cast<std::size_t>((s.y + 1) % 3);
    const float *G = rows.G[mid].data(), *W = rows.W[mid].data();
    const unsigned char* in = rows.in[mid].data();
    double A[NP * 6];
    for (int k = 0; k < NP * 6; ++k) A[k] = A_out[static_cast<std::size_t>(k)];
    double Ae[NP * 6] = {};
    if (A_exact_out)
      for (int k = 0; k < NP * 6; ++k) Ae[k] = (*A_exact_out)[static_cast<std::size_t>(k)];
    double power[NP] = {};  // sum w J_f,i^2 (the reference's gradient power, for the bands' scale)
    double residual_ss = residual_ss_out;
    std::array<double, 6> lag0{};
    if (window) lag0 = window->lag0;
    for (int x = s.x0; x <= s.x1; ++x) {
      const auto at = static_cast<std::size_t>(x);
      if (in[at] != 1) continue;
      if (Measured) {
        const double r = pass.alpha * G[at] + pass.beta - ref_.at(x, s.y);
        residual_ss += W[at] * r * r;
      }
      const double rn = gain * G[at] + offset - ref_.at(x, s.y);
      std::array<double, 6> sf{}, sg{};
      steepest(x, s.y, sf);
      const double ggx = diff(G[at], x > 0 ? G[at - 1] : 0.0f, x + 1 < w ? G[at + 1] : 0.0f, x > 0 && in[at - 1],
                              x + 1 < w && in[at + 1]);
      const bool has_up = s.y > 0 && rows.in[up][at], has_down = s.y + 1 < h && rows.in[down][at];
      const double ggy =
          diff(G[at], has_up ? rows.G[up][at] : 0.0f, has_down ? rows.G[down][at] : 0.0f, has_up, has_down);
      steepest_from(x, s.y, ggx, ggy, sg);
      if (window) window->add(x, s.y, W[at], sf, sg, Measured);
      std::array<double, 6> se{};
      if (Measured && A_exact_out) steepest_from(x, s.y, exact_gx[at], exact_gy[at], se);
      for (int i = 0; i < (Measured ? NP : np_); ++i) {
        const float ui = static_cast<float>(W[at] * sf[static_cast<std::size_t>(i)] * rn);
        u[static_cast<std::size_t>(i)][at] = ui;
        if (!Measured) continue;
        power[i] += W[at] * sf[static_cast<std::size_t>(i)] * sf[static_cast<std::size_t>(i)];
        if (window) lag0[static_cast<std::size_t>(i)] += static_cast<double>(ui) * ui;
        for (int j = 0; j < NP; ++j)
          A[i * 6 + j] += W[at] * pass.alpha * sf[static_cast<std::size_t>(i)] * sg[static_cast<std::size_t>(j)];
        if (A_exact_out)
          for (int j = 0; j < NP; ++j)
            Ae[i * 6 + j] += W[at] * pass.alpha * sf[static_cast<std::size_t>(i)] * se[static_cast<std::size_t>(j)];
      }
    }
    for (int k = 0; k < NP * 6; ++k) A_out[static_cast<std::size_t>(k)] = A[k];
    if (A_exact_out)
      for (int k = 0; k < NP * 6; ++k) (*A_exact_out)[static_cast<std::size_t>(k)] = Ae[k];
    if (Measured && power_out)
      for (int i = 0; i < NP; ++i) (*power_out)[static_cast<std::size_t>(i)] += power[i];
    residual_ss_out = residual_ss;
    if (window) window->lag0 = lag0;
  }

  // The warp increment W(delta) as an affine map of level coordinates.
  Transform increment(const std::array<double, 6>& d) const {
    if (model_ == MotionModel::translation) return Transform::translation(d[0], d[1]);
    if (model_ == MotionModel::rigid) return Transform::rigid(d[0], d[1], d[2], Point{cx_, cy_});
    Transform m{1 + d[0] / radius_, d[1] / radius_, d[2] / radius_, 1 + d[3] / radius_, 0, 0};
    m.tx = cx_ - (m.a * cx_ + m.b * cy_) + d[4];
    m.ty = cy_ - (m.c * cx_ + m.d * cy_) + d[5];
    return m;
  }

  // Largest displacement of the ROI corners under m (level px).
  double corner_motion(const Transform& m, const Transform& base) const {
    double worst = 0;
    for (double x : {double(qx0_), double(qx1_)})
      for (double y : {double(qy0_), double(qy1_)}) {
        Point p = m.apply(x, y), q = base.apply(x, y);
        worst = std::max(worst, std::hypot(p.x - q.x, p.y - q.y));
      }
    return worst;
  }

  const std::array<double, 36>& hessian() const { return H_; }
  int params() const { return np_; }
  Point centre() const { return {cx_, cy_}; }

 private:
  // w[x] for the band after the core of span sp (x from c1 + 1).
  float* high_band(const Span& sp) { return weights_.data() + sp.off + (sp.c0 - sp.x0) - (sp.c1 + 1); }
  // The weights of span sp's pixels, x0 first.
  void row_weights(const Span& sp, float* out) const {
    const float* band = weights_.data() + sp.off;
    const std::size_t low = static_cast<std::size_t>(sp.c0 - sp.x0);
    std::copy(band, band + low, out);
    const float* mr = mask_ ? mask_->row(sp.y) : nullptr;
    for (int x = sp.c0; x <= sp.c1; ++x) out[x - sp.x0] = mr && mr[x] < 0.5f ? 0.0f : 1.0f;
    std::copy(band + low, band + low + static_cast<std::size_t>(sp.x1 - sp.c1), out + (sp.c1 + 1 - sp.x0));
  }

  // Sums over a set that do not involve the moving frame (weighted).
  struct Sums {
    double n = 0, sf = 0, sff = 0;
    std::array<double, 6> ssd{}, ssdf{};
    std::array<double, 21> h{};  // lower triangle of the normal matrix
    void add(const Sums& o) {
      n += o.n, sf += o.sf, sff += o.sff;
      for (std::size_t i = 0; i < 6; ++i) ssd[i] += o.ssd[i], ssdf[i] += o.ssdf[i];
      for (std::size_t i = 0; i < h.size(); ++i) h[i] += o.h[i];
    }
  };
  struct Range {
    int x0 = 0, x1 = -1;  // inclusive; empty when x0 > x1
  };

 public:
  // The core rows' sums of one reference, kept by a thread across the
  // information pass's frames: every frame of a series is measured against
  // frame 0, and its core's rows repeat their ranges from frame to frame
  // (they move with the drift's whole pixels; the core has weight 1). A
  // row's sums are a pure function of the reference, the row and the range,
  // so a kept one is bit for bit what summing again gives.
  class CoreMemo {
   public:
    // Keeps what it holds only for the same reference and solver geometry.
    void bind(std::uint64_t reference, const LevelSolver& s) {
      const Key k{reference, s.np_, s.cx_, s.cy_, s.radius_, s.mask_, s.ref_.height};
      if (k == key_) return;
      key_ = k;
      rows_.assign(static_cast<std::size_t>(std::max(0, s.ref_.height)), Row{});
    }
    const Sums* find(int y, int x0, int x1) const {
      const Row& r = rows_[static_cast<std::size_t>(y)];
      for (int i = 0; i < r.n; ++i)
        if (r.e[static_cast<std::size_t>(i)].x0 == x0 && r.e[static_cast<std::size_t>(i)].x1 == x1)
          return &r.e[static_cast<std::size_t>(i)].sums;
      return nullptr;
    }
    void keep(int y, int x0, int x1, const Sums& sums) {
      Row& r = rows_[static_cast<std::size_t>(y)];
      Entry& e = r.e[static_cast<std::size_t>(r.next)];
      e = Entry{x0, x1, sums};
      r.next = (r.next + 1) % kPerRow;
      r.n = std::min(r.n + 1, kPerRow);
    }

   private:
    struct Key {
      std::uint64_t reference = 0;
      int np = 0;
      double cx = 0, cy = 0, radius = 0;
      const Frame* mask = nullptr;
      int height = 0;
      bool operator==(const Key& o) const {
        return reference == o.reference && np == o.np && cx == o.cx && cy == o.cy && radius == o.radius &&
               mask == o.mask && height == o.height;
      }
    };
    // A few ranges per row: the drift's spread in whole pixels, replaced oldest first.
    static constexpr int kPerRow = 4;
    struct Entry {
      int x0 = 0, x1 = -1;
      Sums sums;
    };
    struct Row {
      std::array<Entry, kPerRow> e{};
      int n = 0, next = 0;
    };
    Key key_;
    std::vector<Row> rows_;
  };
  // Sums core rows through memo (null: none); single-threaded solvers only.
  void use_core_memo(CoreMemo* memo, std::uint64_t reference) {
    memo_ = threads_ == 1 ? memo : nullptr;
    if (memo_) memo_->bind(reference, *this);
  }

 private:
  // Pixels x0..x1 of row y whose position under S lies at least `inset` px
  // inside the moving frame's safe sampling zone [1, size - 3] on both axes
  // (x0 > x1: none).
  void row_inside(const Transform& S, int y, double inset, int& x0, int& x1) const {
    double a = qx0_, b = qx1_;
    auto clip = [&](double slope, double offset, double lo, double hi) {
      // lo <= slope * x + offset <= hi
      if (std::abs(slope) < 1e-12) {
        if (offset < lo || offset > hi) a = 1, b = 0;
        return;
      }
      double u = (lo - offset) / slope, v = (hi - offset) / slope;
      if (u > v) std::swap(u, v);
      a = std::max(a, u);
      b = std::min(b, v);
    };
    clip(S.a, S.b * y + S.tx, 1 + inset, mov_.width - 3 - inset);
    clip(S.c, S.d * y + S.ty, 1 + inset, mov_.height - 3 - inset);
    x0 = static_cast<int>(std::ceil(a)), x1 = static_cast<int>(std::floor(b));
  }

  // The core at S: per row, the pixels of weight 1 at every transform whose
  // corner motion from S is below kCoreSlack, and their sums.
  void build_core(const Transform& S, double margin) {
    core_S_ = S;
    core_margin_ = margin;
    core_.assign(static_cast<std::size_t>(qy1_) - static_cast<std::size_t>(qy0_) + 1, Range{});
    std::vector<Sums> parts(core_.size());
    const long nr = static_cast<long>(core_.size());
#pragma omp parallel for schedule(static) num_threads(threads_) if (threads_ > 1 && nr > 16)
    for (long r = 0; r < nr; ++r) {
      Range& c = core_[static_cast<std::size_t>(r)];
      const int y = qy0_ + static_cast<int>(r);
      row_inside(S, y, margin + kFade + kCoreSlack, c.x0, c.x1);
      Sums& part = parts[static_cast<std::size_t>(r)];
      if (memo_ && c.x0 <= c.x1) {
        if (const Sums* kept = memo_->find(y, c.x0, c.x1)) {
          part = *kept;
          continue;
        }
        accumulate(y, c.x0, c.x1, nullptr, part);
        memo_->keep(y, c.x0, c.x1, part);
        continue;
      }
      accumulate(y, c.x0, c.x1, nullptr, part);
    }
    core_sums_ = Sums{};
    for (const Sums& pt : parts) core_sums_.add(pt);
  }

  // Adds pixels x0..x1 of row y to pt, weighted by w[x] (null: 1 where the mask allows).
  void accumulate(int y, int x0, int x1, const float* w, Sums& pt) const {
    if (model_ == MotionModel::translation) return accumulate_translation(y, x0, x1, w, pt);
    for (int x = x0; x <= x1; ++x) {
      const double wx = w ? w[x] : (mask_ && mask_->at(x, y) < 0.5f ? 0.0 : 1.0);
      if (wx == 0) continue;
      const double f = ref_.at(x, y);
      std::array<double, 6> sd;
      steepest(x, y, sd);
      pt.n += wx;
      pt.sf += wx * f;
      pt.sff += wx * f * f;
      for (int i = 0, t = 0; i < np_; ++i) {
        const double wsd = wx * sd[static_cast<std::size_t>(i)];
        pt.ssd[static_cast<std::size_t>(i)] += wsd;
        pt.ssdf[static_cast<std::size_t>(i)] += wsd * f;
        for (int j = 0; j <= i; ++j, ++t) pt.h[static_cast<std::size_t>(t)] += wsd * sd[static_cast<std::size_t>(j)];
      }
    }
  }

  // accumulate for a translation: the same sums of the same terms in the same
  // order, held in registers (every set's core and band goes through here).
  void accumulate_translation(int y, int x0, int x1, const float* w, Sums& pt) const {
    double n = pt.n, sf = pt.sf, sff = pt.sff, s0 = pt.ssd[0], s1 = pt.ssd[1], f0 = pt.ssdf[0], f1 = pt.ssdf[1];
    double h0 = pt.h[0], h1 = pt.h[1], h2 = pt.h[2];
    const float *fr = ref_.row(y), *gxr = gx_.row(y), *gyr = gy_.row(y);
    const float* mr = !w && mask_ ? mask_->row(y) : nullptr;
    for (int x = x0; x <= x1; ++x) {
      const double wx = w ? w[x] : (mr && mr[x] < 0.5f ? 0.0 : 1.0);
      if (wx == 0) continue;
      const double f = fr[x], g0 = gxr[x], g1 = gyr[x];
      n += wx;
      sf += wx * f;
      sff += wx * f * f;
      const double w0 = wx * g0;
      s0 += w0;
      f0 += w0 * f;
      h0 += w0 * g0;
      const double w1 = wx * g1;
      s1 += w1;
      f1 += w1 * f;
      h1 += w1 * g0;
      h2 += w1 * g1;
    }
    pt.n = n, pt.sf = sf, pt.sff = sff, pt.ssd[0] = s0, pt.ssd[1] = s1, pt.ssdf[0] = f0, pt.ssdf[1] = f1;
    pt.h[0] = h0, pt.h[1] = h1, pt.h[2] = h2;
  }

  void steepest(int x, int y, std::array<double, 6>& sd) const { steepest_from(x, y, gx_.at(x, y), gy_.at(x, y), sd); }
  void steepest_from(int x, int y, double gx, double gy, std::array<double, 6>& sd) const {
    if (model_ == MotionModel::translation) {
      sd[0] = gx, sd[1] = gy;
    } else if (model_ == MotionModel::rigid) {
      sd[0] = -(y - cy_) * gx + (x - cx_) * gy;
      sd[1] = gx, sd[2] = gy;
    } else {
      const double u = (x - cx_) / radius_, v = (y - cy_) / radius_;
      sd[0] = u * gx, sd[1] = v * gx, sd[2] = u * gy, sd[3] = v * gy, sd[4] = gx, sd[5] = gy;
    }
  }

  void sample_span(const Transform& S, const Span& s, float* out, std::vector<float>& col_) const {
    const int len = s.x1 - s.x0 + 1;
    if (model_ == MotionModel::translation) {
      // Same fractional offset for every pixel: separable 4+4 taps.
      const double sy = s.y + S.ty;
      const int iy = static_cast<int>(std::floor(sy));
      const int ftx = static_cast<int>(std::floor(S.tx));
      double wy[4], wx[4];
      bspline_weights(sy - iy, wy);
      bspline_weights(S.tx - ftx, wx);
      const int base = s.x0 + ftx - 1;
      col_.resize(static_cast<std::size_t>(len) + 3);
      const float* r0 = mov_.row(iy - 1) + base;
      const float* r1 = mov_.row(iy) + base;
      const float* r2 = mov_.row(iy + 1) + base;
      const float* r3 = mov_.row(iy + 2) + base;
      const float w0 = static_cast<float>(wy[0]), w1 = static_cast<float>(wy[1]), w2 = static_cast<float>(wy[2]),
                  w3 = static_cast<float>(wy[3]);
      for (int i = 0; i < len + 3; ++i)
        col_[static_cast<std::size_t>(i)] = w0 * r0[i] + w1 * r1[i] + w2 * r2[i] + w3 * r3[i];
      const float v0 = static_cast<float>(wx[0]), v1 = static_cast<float>(wx[1]), v2 = static_cast<float>(wx[2]),
                  v3 = static_cast<float>(wx[3]);
      const float* c = col_.data();
      for (int i = 0; i < len; ++i) out[i] = v0 * c[i] + v1 * c[i + 1] + v2 * c[i + 2] + v3 * c[i + 3];
      return;
    }
    // General map: positions advance by (a, c) along the row; the set keeps
    // every position inside [1, size-3], so all 4x4 taps are in the frame.
    const Point p0 = S.apply(s.x0, s.y);
    const int stride = mov_.width;
    for (int i = 0; i < len; ++i) {
      const double x = p0.x + S.a * i, y = p0.y + S.c * i;
      const int ix = static_cast<int>(x), iy = static_cast<int>(y);  // positive: truncation is floor
      double wx[4], wy[4];
      bspline_weights(x - ix, wx);
      bspline_weights(y - iy, wy);
      const float* r = mov_.pixels.data() + static_cast<std::size_t>(iy - 1) * stride + (ix - 1);
      double v = 0;
      for (int j = 0; j < 4; ++j, r += stride) v += wy[j] * (wx[0] * r[0] + wx[1] * r[1] + wx[2] * r[2] + wx[3] * r[3]);
      out[i] = static_cast<float>(v);
    }
  }

  // A translation's spline taps along span s (sample_span's, and with
  // `derivatives` spline_gradient_span's), for the vector row kernels.
  SplineRow translation_taps(const Transform& S, const Span& s, bool derivatives) const {
    const double sy = s.y + S.ty;
    const int iy = static_cast<int>(std::floor(sy));
    const int ftx = static_cast<int>(std::floor(S.tx));
    double wy[4], wx[4], dy[4] = {}, dx[4] = {};
    bspline_weights(sy - iy, wy);
    bspline_weights(S.tx - ftx, wx);
    if (derivatives) bspline_weight_derivatives(sy - iy, dy), bspline_weight_derivatives(S.tx - ftx, dx);
    const int base = s.x0 + ftx - 1;
    SplineRow t;
    for (int k = 0; k < 4; ++k) {
      t.rows[k] = mov_.row(iy - 1 + k) + base;
      t.wy[k] = static_cast<float>(wy[k]), t.wx[k] = static_cast<float>(wx[k]);
      t.dy[k] = static_cast<float>(dy[k]), t.dx[k] = static_cast<float>(dx[k]);
    }
    return t;
  }
  // sample_span's values (to their last bits: the AVX2 kernel uses FMA), a translation's by the vector kernel.
  void sample_span_fast(const Transform& S, const Span& s, float* out, std::vector<float>& col) const {
    if (model_ != MotionModel::translation) return sample_span(S, s, out, col);
    col.resize(static_cast<std::size_t>(s.x1 - s.x0) + 4);
    sample_spline_row(translation_taps(S, s, false), s.x1 - s.x0 + 1, col.data(), out);
  }

  // d(g o S)/dq along span s, g the moving frame's cubic spline, exactly:
  // the derivative of the estimating equation b = sum w J_f r along the
  // increment is the spline's, and the central differences of its samples
  // (the iteration's and the signal share's) see sin(k)/k of it at
  // frequency k: ~0.9 for a lattice of a 6-8 px period, an A ~10% short
  // and every sigma 5-10% long (bench_drift_uncertainty's pooled z 0.93).
  // As sample_span: a translation's taps separable, the same column sums.
  void spline_gradient_span(const Transform& S, const Span& s, float* gx, float* gy, std::vector<float>& col_) const {
    const int len = s.x1 - s.x0 + 1;
    if (model_ == MotionModel::translation) {
      const double sy = s.y + S.ty;
      const int iy = static_cast<int>(std::floor(sy));
      const int ftx = static_cast<int>(std::floor(S.tx));
      double wy[4], dy[4], wx[4], dx[4];
      bspline_weights(sy - iy, wy);
      bspline_weight_derivatives(sy - iy, dy);
      bspline_weights(S.tx - ftx, wx);
      bspline_weight_derivatives(S.tx - ftx, dx);
      const int base = s.x0 + ftx - 1;
      const auto n = static_cast<std::size_t>(len) + 3;
      col_.resize(2 * n);
      float* c = col_.data();
      float* cd = c + n;
      const float* r[4] = {mov_.row(iy - 1) + base, mov_.row(iy) + base, mov_.row(iy + 1) + base,
                           mov_.row(iy + 2) + base};
      const float vy[4] = {static_cast<float>(wy[0]), static_cast<float>(wy[1]), static_cast<float>(wy[2]),
                           static_cast<float>(wy[3])};
      const float ey[4] = {static_cast<float>(dy[0]), static_cast<float>(dy[1]), static_cast<float>(dy[2]),
                           static_cast<float>(dy[3])};
      for (std::size_t i = 0; i < n; ++i) {
        c[i] = vy[0] * r[0][i] + vy[1] * r[1][i] + vy[2] * r[2][i] + vy[3] * r[3][i];
        cd[i] = ey[0] * r[0][i] + ey[1] * r[1][i] + ey[2] * r[2][i] + ey[3] * r[3][i];
      }
      const float vx[4] = {static_cast<float>(wx[0]), static_cast<float>(wx[1]), static_cast<float>(wx[2]),
                           static_cast<float>(wx[3])};
      const float ex[4] = {static_cast<float>(dx[0]), static_cast<float>(dx[1]), static_cast<float>(dx[2]),
                           static_cast<float>(dx[3])};
      for (std::size_t i = 0; i < static_cast<std::size_t>(len); ++i) {
        gx[i] = ex[0] * c[i] + ex[1] * c[i + 1] + ex[2] * c[i + 2] + ex[3] * c[i + 3];
        gy[i] = vx[0] * cd[i] + vx[1] * cd[i + 1] + vx[2] * cd[i + 2] + vx[3] * cd[i + 3];
      }
      return;
    }
    // General map: every position inside [1, size-3] (the set), all taps in the frame.
    const Point p0 = S.apply(s.x0, s.y);
    const auto stride = static_cast<std::size_t>(mov_.width);
    for (int i = 0; i < len; ++i) {
      const double x = p0.x + S.a * i, y = p0.y + S.c * i;
      const int ix = static_cast<int>(x), iy = static_cast<int>(y);  // positive: truncation is floor
      double wx[4], wy[4], dx[4], dy[4];
      bspline_weights(x - ix, wx);
      bspline_weights(y - iy, wy);
      bspline_weight_derivatives(x - ix, dx);
      bspline_weight_derivatives(y - iy, dy);
      const float* r = mov_.pixels.data() + static_cast<std::size_t>(iy - 1) * stride + (ix - 1);
      double ax = 0, ay = 0;
      for (int j = 0; j < 4; ++j, r += stride) {
        ax += wy[j] * (dx[0] * r[0] + dx[1] * r[1] + dx[2] * r[2] + dx[3] * r[3]);
        ay += dy[j] * (wx[0] * r[0] + wx[1] * r[1] + wx[2] * r[2] + wx[3] * r[3]);
      }
      gx[i] = static_cast<float>(ax * S.a + ay * S.c);
      gy[i] = static_cast<float>(ax * S.b + ay * S.d);
    }
  }

  const Frame &ref_, &gx_, &gy_, &mov_;
  const Frame* mask_;
  MotionModel model_;
  int np_;
  int qx0_, qy0_, qx1_, qy1_;
  double cx_, cy_, radius_;
  std::vector<Span> spans_;
  std::vector<float> weights_;  // of the spans' bands, in span order
  std::vector<Range> core_;     // per ROI row: the core's pixels (build_core)
  Sums core_sums_;
  Transform core_S_;
  double core_margin_ = -1;  // < 0: no core built yet
  double n_ = 0, sf_ = 0, sff_ = 0;
  std::array<double, 36> H_{};
  std::array<double, 6> ssd_{}, ssdf_{};
  int threads_ = 1;
  CoreMemo* memo_ = nullptr;
  // fit_at's samples per span (kept_at_: each span's first; empty: none) and their S.
  std::vector<float> kept_samples_;
  std::vector<std::size_t> kept_at_;
  Transform kept_S_;
  static bool same_transform(const Transform& a, const Transform& b) {
    return a.a == b.a && a.b == b.b && a.c == b.c && a.d == b.d && a.tx == b.tx && a.ty == b.ty;
  }
};

Transform scale_translation(Transform t, double s) {
  t.tx *= s;
  t.ty *= s;
  return t;
}

// Keeps a rigid estimate rigid: rotation part re-orthonormalised about `c`.
Transform make_rigid(const Transform& t, Point c) {
  Point pc = t.apply(c);
  double th = t.angle(), cs = std::cos(th), sn = std::sin(th);
  Transform r{cs, -sn, sn, cs, 0, 0};
  r.tx = pc.x - (cs * c.x - sn * c.y);
  r.ty = pc.y - (sn * c.x + cs * c.y);
  return r;
}

}  // namespace

// Within this (px) of where the undamped steps lead, the finest level
// settles on their fixed point (execute()).
constexpr double kSettle = 0.05;
// The finest level's stopping step, as a fraction of the tolerance.
constexpr double kFinestTolerance = 0.25;

RefineResult Refinement::execute(const Prepared& reference, const Prepared& moving, const Transform& init,
                                 double init_uncertainty) const {
  const int avail = static_cast<int>(std::min({reference.level.size(), moving.coeff.size(), reference.gx.size()}));
  if (avail < 1) throw bad_input("refinement: frame not prepared (a reference needs gradients)");
  const int start = std::min(levels_for(init_uncertainty), avail) - 1;
  const MotionModel model = options_.model;

  RefineResult res;
  res.start_level = start;
  // S maps reference coordinates to moving coordinates: S = T_{i,k}^{-1}.
  if (!std::isfinite(init.a + init.b + init.c + init.d + init.tx + init.ty) || !(std::abs(init.determinant()) > 1e-9))
    throw bad_input("refinement: the initial transform is not invertible");
  Transform S = init.inverse();
  if (model == MotionModel::translation) S = Transform::translation(S.tx, S.ty);

  for (int L = start; L >= 0; --L) {
    const double scale = std::ldexp(1.0, L);
    const Frame* mask = level_masks_ ? &(*level_masks_)[static_cast<std::size_t>(L)] : nullptr;
    LevelSolver solver(reference.level[static_cast<std::size_t>(L)], reference.gx[static_cast<std::size_t>(L)],
                       reference.gy[static_cast<std::size_t>(L)], moving.coeff[static_cast<std::size_t>(L)], mask,
                       model, roi_.x / scale, roi_.y / scale, (roi_.x + roi_.w - 1) / scale,
                       (roi_.y + roi_.h - 1) / scale, options_.threads);
    Transform SL = scale_translation(S, 1.0 / scale);
    const double margin = 2.0;
    // At least 2% of the ROI (and 16 px) must overlap to estimate anything.
    const double min_pixels = std::max(16.0, 0.02 * (roi_.w / scale) * (roi_.h / scale));
    // Every estimate is measured on its own overlap (build_set).
    auto measure = [&](const Transform& at) {
      solver.build_set(at, margin);
      if (solver.pixels() < min_pixels)
        throw bad_input("refinement: the frames overlap by only " + std::to_string(static_cast<long>(solver.pixels())) +
                        " pixels at the guessed transform (level " + std::to_string(L) + ")");
      ++res.iterations;
      return solver.evaluate(at);
    };
    // The finest level stops at a quarter of the tolerance: while settling
    // the steps shrink about tenfold per iteration, so the estimate ends
    // within ~tolerance/40 of the fixed point whatever the guess was.
    const double tol = L == 0 ? kFinestTolerance * options_.tolerance : std::max(options_.tolerance, 0.05 * scale);
    double lambda = 0;
    bool have_prev = false;
    Transform S_prev = SL;
    LevelSolver::Pass prev;
    bool converged = false;
    double last_step = std::numeric_limits<double>::infinity();  // of the last undamped step (px)
    for (int it = 0; it < options_.max_iterations; ++it) {
      LevelSolver::Pass pass = measure(SL);
      // Settling at the finest level: the inverse-compositional step and the
      // cost measured at the estimate have optima a few 1e-3 px apart, and a
      // step into that gap raises the cost. Rejecting it (and damping) would
      // stop wherever the path met the gap, another place for each guess;
      // taking it settles on the fixed point of the step, the same for all.
      const bool settling = L == 0 && last_step < kSettle;
      if (have_prev && !settling && pass.cost > prev.cost * (1 + 1e-9) + 1e-15) {
        // The step raised the cost: back to the previous estimate, damp harder.
        SL = S_prev;
        pass = prev;
        lambda = lambda > 0 ? lambda * 10 : 1e-3;
        if (lambda > 1e8) {
          converged = true;  // no descent direction left: a minimum to our resolution
          break;
        }
      } else {
        lambda = lambda > 1e-6 ? lambda / 10 : 0;
        S_prev = SL;
        prev = pass;
        have_prev = true;
      }
      res.cost = pass.cost;
      res.ncc = pass.ncc;
      std::array<double, 6> delta{};
      if (!solve(solver.params(), pass.H, pass.b, lambda, delta))
        throw bad_input("refinement: no gradient information in the overlap (flat or blank frames)");
      Transform W = solver.increment(delta);
      SL = compose(SL, W.inverse());
      if (model == MotionModel::rigid) SL = make_rigid(SL, solver.centre());
      const double step = solver.corner_motion(W, Transform::identity()) * scale;
      if (lambda == 0) last_step = step;
      if (step < tol) {
        converged = true;
        break;
      }
    }
    if (L == 0) {
      res.converged = converged;
      res.pixels = static_cast<std::size_t>(solver.pixels());
    }
    S = scale_translation(SL, scale);
  }
  res.transform = S.inverse();
  if (model == MotionModel::translation) res.transform = Transform::translation(res.transform.tx, res.transform.ty);
  return res;
}

namespace {

// Inverse of a general n x n matrix B, scaled by the diagonal of the
// symmetric positive `scale` (the normal matrix); false when a pivot is below
// 1e-9 (B carries no information along some direction).
bool invert_general(int n, const std::array<double, 36>& B, const std::array<double, 36>& scale,
                    std::array<double, 36>& out) {
  std::array<double, 6> s{};
  for (int i = 0; i < n; ++i) {
    const double d = scale[static_cast<std::size_t>(i) * 7];
    if (!(d > 0) || !std::isfinite(d)) return false;
    s[static_cast<std::size_t>(i)] = 1.0 / std::sqrt(d);
  }
  double m[6][12] = {};
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j)
      m[i][j] = B[static_cast<std::size_t>(i) * 6 + static_cast<std::size_t>(j)] * s[static_cast<std::size_t>(i)] *
                s[static_cast<std::size_t>(j)];
    m[i][n + i] = 1.0;
  }
  for (int c = 0; c < n; ++c) {
    int p = c;
    for (int r = c + 1; r < n; ++r)
      if (std::abs(m[r][c]) > std::abs(m[p][c])) p = r;
    if (!(std::abs(m[p][c]) > 1e-9)) return false;
    if (p != c)
      for (int j = 0; j < 2 * n; ++j) std::swap(m[p][j], m[c][j]);
    const double piv = m[c][c];
    for (int j = 0; j < 2 * n; ++j) m[c][j] /= piv;
    for (int r = 0; r < n; ++r) {
      if (r == c) continue;
      const double f = m[r][c];
      for (int j = 0; j < 2 * n; ++j) m[r][j] -= f * m[c][j];
    }
  }
  out.fill(0);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      out[static_cast<std::size_t>(i) * 6 + static_cast<std::size_t>(j)] =
          m[i][n + j] * s[static_cast<std::size_t>(i)] * s[static_cast<std::size_t>(j)];
  return std::isfinite(out[0]);
}

std::array<double, 6> entries(const Transform& t) { return {t.a, t.b, t.c, t.d, t.tx, t.ty}; }

// Per axis, the share of the reference gradient's power that is signal:
// A's translation entry (the reference's gradient times the moving frame's,
// whose noise is independent) over H's (the reference's gradient squared,
// its noise's power included); in [0, 1].
std::array<double, 2> gradient_signal_fraction(int np, const std::array<double, 36>& A,
                                               const std::array<double, 36>& H) {
  const std::size_t tx = np == 2 ? 0 : np == 3 ? 1 : 4;  // the translation parameters' index (steepest)
  std::array<double, 2> f{};
  for (std::size_t a = 0; a < 2; ++a) {
    const std::size_t i = (tx + a) * 7;
    f[a] = H[i] > 0 ? std::clamp(A[i] / H[i], 0.0, 1.0) : 1.0;
  }
  return f;
}

// The covariance A^-1 M A^-T of the increment's parameters carried to T's
// entries through J = d entries(T(delta)) / d delta (the increment composes on
// S = T^-1 from the right).
std::array<double, 36> entries_covariance(int np, const std::array<double, 36>& Ainv, const std::array<double, 36>& M,
                                          const double (&J)[6][6]) {
  auto at = [](int i, int j) { return static_cast<std::size_t>(i) * 6 + static_cast<std::size_t>(j); };
  std::array<double, 36> CS{}, tmp{}, out{};
  for (int i = 0; i < np; ++i)
    for (int j = 0; j < np; ++j)
      for (int k = 0; k < np; ++k) tmp[at(i, j)] += Ainv[at(i, k)] * M[at(k, j)];
  for (int i = 0; i < np; ++i)
    for (int j = 0; j < np; ++j)
      for (int k = 0; k < np; ++k) CS[at(i, j)] += tmp[at(i, k)] * Ainv[at(j, k)];
  for (int a = 0; a < 6; ++a)
    for (int b = 0; b < 6; ++b)
      for (int p = 0; p < np; ++p)
        for (int q = 0; q < np; ++q) out[at(a, b)] += J[a][p] * CS[at(p, q)] * J[b][q];
  return out;
}

// Counts: the gain and offset M's residual is taken at: the true gain (the
// means' ratio; Poisson has no offset) as far as noise explains the fitted
// gain's attenuation. Noise alone would attenuate it to S / (S + N), S the
// reference's signal variance (its variance less its noise, mean_f sum g^2,
// g the prefilter's kernel), N the moving frame's noise in the reference's
// units; a frame whose fit is attenuated more (a blurred frame: its signal
// lost, not noise) keeps the rest as misfit. At the fitted, attenuated alpha
// the residual holds (alpha - 1)(s - mean s), whose product with the
// reference's gradient noise cancels over the frame but not within M's lag
// window: on low-contrast frames it doubled the variance.
// The information pass's rows (row_bands.hpp) for an ROI of `rows` rows from
// `y0`: thin bands of `share` of the rows, each with the margin the lag sums
// (R) and the lag factor's column window (4.25 prefilter sigmas,
// signal_lag_factor.cpp) read; `share` 1: every row. Thin (as many rows as
// the margin) so the sample is spread over the frame: a scanned frame's
// misfit has structure along y that every frame shares (frame 0's own
// distortion), and bands of an eighth of the rows sampled it unevenly, σ
// 7% high at 1024² and 17% low at 4096² on every frame of a scanned series.
// Only on ROIs of kBandedRows rows or more: a sample of rows misses the σ of
// frames whose residual is structured (a blurred frame's lost specimen, real
// content) by more than the sample's noise on small frames (512² real ABF
// series, thin bands of 15%: σ 5-17% high; 128²-256² lattices: a blurred
// frame's σ over the median 13-45% lower).
constexpr int kBandedRows = 1024;
RowBands information_bands(int y0, int rows, int R, double prefilter_sigma, double share) {
  if (rows < kBandedRows || !(share < 1.0)) return {};
  const int margin = std::max(R, static_cast<int>(std::ceil(4.25 * std::max(0.0, prefilter_sigma))));
  const int inner = margin;
  const int period = std::max(inner + 2 * margin, static_cast<int>(std::lround(inner / std::max(share, 0.01))));
  // A band centred on the ROI's centre: the pattern is symmetric about it,
  // so the bands' rows have the ROI's mean row (a rotation's information and
  // its coupling to x are sums weighted by the row's distance from the centre).
  return RowBands{period, inner, margin, y0 + rows / 2 - margin - inner / 2};
}

std::pair<double, double> noise_gain(const LevelSolver::Pass& pass, double mf, double vf, double prefilter_sigma,
                                     bool counts) {
  const double seen = mf - pass.beta;  // alpha x the moving frame's mean
  if (!counts || !(mf > 0) || !(seen > 0) || !(seen < mf) || !(pass.alpha > 0)) return {pass.alpha, pass.beta};
  const std::vector<double> a = prefilter_autocorrelation(prefilter_sigma);
  const double g2 = a[a.size() / 2] * a[a.size() / 2];  // sum g^2 of the 2-D kernel
  const double signal = std::max(0.0, vf - mf * g2);
  const double noise = (mf / seen) * pass.alpha * mf * g2;  // mean_g g2 (mf / mean_g)^2, mean_g = seen / alpha
  const double by_noise = signal + noise > 0 ? signal / (signal + noise) : 1.0;
  const double att = std::max(seen / mf, by_noise);
  if (!(att < 1.0)) return {pass.alpha, pass.beta};
  const double gain = pass.alpha / att;
  return {gain, mf - gain * seen / pass.alpha};
}

}  // namespace

RefineInformation Refinement::information(const Prepared& reference, const Prepared& moving, const Transform& T,
                                          bool counts) const {
  RefineInformation out;
  const MotionModel model = options_.model;
  const int np = param_count(model);
  auto singular = [&] {
    out.singular = true;
    out.covariance.fill(0.0);
    for (std::size_t i = 0; i < 6; ++i) out.covariance[i * 7] = std::numeric_limits<double>::infinity();
    return out;
  };
  if (reference.level.empty() || reference.gx.empty() || moving.coeff.empty())
    throw bad_input("refinement: frame not prepared (a reference needs gradients)");
  if (!std::isfinite(T.a + T.b + T.c + T.d + T.tx + T.ty) || !(std::abs(T.determinant()) > 1e-9)) return singular();
  const Frame* mask = level_masks_ ? &(*level_masks_)[0] : nullptr;
  LevelSolver solver(reference.level[0], reference.gx[0], reference.gy[0], moving.coeff[0], mask, model, roi_.x, roi_.y,
                     roi_.x + roi_.w - 1, roi_.y + roi_.h - 1, 1);
  Transform S = T.inverse();
  if (model == MotionModel::translation) S = Transform::translation(S.tx, S.ty);
  thread_local LevelSolver::CoreMemo memo;
  solver.use_core_memo(&memo, reference.serial);
  solver.build_set(S, 2.0);
  out.pixels = static_cast<std::size_t>(solver.pixels());
  if (solver.pixels() < std::max(16.0, 0.02 * roi_.w * roi_.h)) return singular();
  // Lags out to where the prefiltered noise's correlation has died (< 1%).
  const double sigma = std::max(0.5, options_.prefilter_sigma);
  const int R = std::clamp(static_cast<int>(std::ceil(3.5 * sigma)), 2, 12);
  const RowBands bands = information_bands(roi_.y, roi_.h, R, options_.prefilter_sigma, options_.information_rows);
  LevelSolver::Pass pass;
  double mean = solver.reference_mean(), variance = solver.reference_variance(), scale = 1.0;
  try {
    if (bands.every_row()) {
      pass = solver.fit_at(S);
    } else {
      const LevelSolver::BandFit fit = solver.fit_on_bands(S, bands);
      pass.alpha = fit.alpha, pass.beta = fit.beta;
      mean = fit.mean, variance = fit.variance;
      scale = solver.pixels() / fit.weight;
    }
  } catch (const Error&) {
    return singular();  // a frame blank over the overlap
  }
  out.alpha = pass.alpha;
  out.beta = pass.beta;
  out.reference_mean = solver.reference_mean();
  std::array<double, 36> Hinv{}, Ainv{}, A{}, A_exact{}, M{};
  const bool invertible = invert_general(np, solver.hessian(), solver.hessian(), Hinv);
  // Every second row for A and the lag factor when the prefilter makes their
  // terms smooth down the columns (a's sd sigma sqrt 2 >= 1 px).
  const int row_step = options_.prefilter_sigma >= 0.75 ? 2 : 1;
  // The lag sums' outer sum on a subgrid of at most ~256^2 points, every
  // row_step-th px at least: enough for their noise (a subgrid of a
  // stationary sum adds noise, no bias), and it keeps this pass cheap next
  // to the refinement. On bands, every pixel of the measured rows: a subgrid
  // of rows aliases with the bands' period (each band seen at the same row
  // offsets: σ_x 4% high on a scanned 2048² series), and those rows' outer
  // sum costs little next to computing u.
  const int stride = bands.every_row() ? std::max({row_step, static_cast<int>(std::floor(sigma)),
                                                   static_cast<int>(std::ceil(std::sqrt(solver.pixels() / 65536.0)))})
                                       : 1;
  const auto [gain, offset] = noise_gain(pass, mean, variance, options_.prefilter_sigma, counts);
  out.noise_gain = gain;
  double rss = 0;
  solver.noise_information(S, pass, gain, offset, R, stride, row_step, bands, scale, A, A_exact, M, rss,
                           options_.prefilter_sigma, out.signal_lag_factor);
  if (gain != pass.alpha)
    for (double& m : M) m *= (pass.alpha / gain) * (pass.alpha / gain);
  out.gradient_signal_fraction = gradient_signal_fraction(np, A, solver.hessian());
  out.prefilter_sigma = options_.prefilter_sigma;
  out.residual_rms = std::sqrt(rss / std::max(1.0, solver.pixels()));
  // The covariance with A at the spline's exact gradient (b's sensitivity);
  // the signal share above with the central differences H is taken with.
  if (!invertible || !invert_general(np, A_exact, solver.hessian(), Ainv)) return singular();
  double J[6][6] = {};  // d entries(T(delta)) / d delta
  const double step = 1e-4;
  for (int p = 0; p < np; ++p) {
    std::array<double, 6> d{};
    d[static_cast<std::size_t>(p)] = step;
    const auto plus = entries(compose(solver.increment(d), T));
    d[static_cast<std::size_t>(p)] = -step;
    const auto minus = entries(compose(solver.increment(d), T));
    for (int e = 0; e < 6; ++e)
      J[e][p] = (plus[static_cast<std::size_t>(e)] - minus[static_cast<std::size_t>(e)]) / (2 * step);
  }
  out.covariance = entries_covariance(np, Ainv, M, J);
  for (std::size_t i = 0; i < 6; ++i)
    if (!(out.covariance[i * 7] >= 0) || !std::isfinite(out.covariance[i * 7])) return singular();
  return out;
}

}  // namespace driftscan
