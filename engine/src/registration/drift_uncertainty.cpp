// Per-frame drift uncertainty; see drift_uncertainty.hpp.
#include "driftscan/registration/drift_uncertainty.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "driftscan/core/error.hpp"
#include "driftscan/registration/frame_weights.hpp"

namespace driftscan {

bool looks_like_counts(const Frame& f) {
  for (float v : f.pixels)
    if (!(v >= 0.0f) || v != std::floor(v)) return false;
  return !f.pixels.empty();
}

double reference_noise_share(const RefineInformation& info, bool counts) {
  if (!counts) return 0.5;
  // Poisson: var f = mean f; the moving frame enters as alpha g + beta with
  // var = alpha^2 mean g = alpha (mean f - beta).
  const double vf = std::max(0.0, info.reference_mean);
  const double vg = std::max(0.0, info.alpha * (info.reference_mean - info.beta));
  return vf + vg > 0 ? vf / (vf + vg) : 0.5;
}

double common_noise_share(const RefineInformation& info, bool counts) {
  if (!counts) return 0.5;
  // The moving frame's mean over the overlap: the fitted line passes through the means.
  const double mf = info.reference_mean, mg = info.alpha != 0 ? (mf - info.beta) / info.alpha : 0.0;
  return mf > 0 && mg > 0 && std::isfinite(mg) ? mg / (mg + mf) : 0.5;
}

double fitted_gain_attenuation(const RefineInformation& info, bool counts) {
  if (!counts) return 1.0;
  // alpha / gain with the gain mean_f / mean_g = alpha mean_f / (mean_f - beta).
  const double mf = info.reference_mean, a = mf > 0 ? (mf - info.beta) / mf : 1.0;
  return a > 0 && std::isfinite(a) ? std::min(1.0, a) : 1.0;
}

// kappa of common_fraction for noise white before the registration's
// Gaussian prefilter (gaussian_smooth's kernel g, central-difference
// gradients D): sum_d K_DD(d) K(d) / K_DD(0), K the filtered noise's
// correlation, K_DD its gradient's; separable, so with a = g*g and
// b = Dg*Dg (1-D autocorrelations) kappa = (sum b a / b(0)) (sum a^2 / a(0)).
// 1 without a prefilter, 1/4 for a wide one.
double gradient_noise_kappa(double sigma) {
  const int r = sigma > 0 ? std::max(1, static_cast<int>(std::ceil(3.0 * sigma))) : 0;
  const std::size_t n = 2 * static_cast<std::size_t>(r) + 1;
  std::vector<double> g(n);
  double sum = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const double i = static_cast<double>(k) - r;
    sum += g[k] = r ? std::exp(-0.5 * i * i / (sigma * sigma)) : 1.0;
  }
  for (double& v : g) v /= sum;
  // (g(i+1) - g(i-1)) / 2 on [-r-1, r+1]: dg[k] at i = k - r - 1, g[k'] at i = k' - r.
  std::vector<double> dg(n + 2, 0.0);
  for (std::size_t k = 0; k < n + 2; ++k) {
    const double before = k >= 2 ? g[k - 2] : 0.0, after = k < n ? g[k] : 0.0;
    dg[k] = 0.5 * (before - after);
  }
  auto autocorrelation = [](const std::vector<double>& f, int lag) {
    double v = 0;
    for (std::size_t i = 0; i < f.size(); ++i) {
      const long j = static_cast<long>(i) + lag;
      if (j >= 0 && j < static_cast<long>(f.size())) v += f[i] * f[static_cast<std::size_t>(j)];
    }
    return v;
  };
  const int span = 2 * r + 2;
  double ba = 0, aa = 0;
  for (int d = -span; d <= span; ++d) {
    const double a = autocorrelation(g, d);
    ba += autocorrelation(dg, d) * a;
    aa += a * a;
  }
  return ba / autocorrelation(dg, 0) * aa / autocorrelation(g, 0);
}

// The share of a frame's drift variance (per axis) that is frame 0's noise
// seen through the signal's gradient, the part common to every frame. The
// variance is S (V0 + Vk) + kappa G Vk per pixel: S the signal gradient's
// power, G frame 0's gradient noise (G/S = (1 - rho)/rho), V0, Vk the frames'
// noise (V0 = share (V0 + Vk)); kappa G Vk is frame 0's gradient noise times
// frame k's noise, new in every frame (gradient_noise_kappa). The common
// share is share S (V0 + Vk) over the whole.
double common_fraction(double share, double rho, double kappa) {
  rho = std::clamp(rho, 1e-6, 1.0);
  return share * rho / (rho + kappa * (1.0 - share) * (1.0 - rho));
}

// rho with the signal gradient's power S scaled by the share `lag` of the
// noise correlation it sees (signal_lag_factor): the S terms of the variance
// are lag S (V0 + Vk), the gradient noise G's term is not (kappa is exact for
// white noise), so the ratio S / G that common_fraction reads becomes lag S / G.
double noise_seen_signal_fraction(double rho, double lag) {
  rho = std::clamp(rho, 0.0, 1.0);
  lag = std::clamp(lag, 0.0, 1.0);
  const double s = lag * rho;
  return s + (1.0 - rho) > 0 ? s / (s + (1.0 - rho)) : 1.0;
}

DriftUncertainty drift_uncertainty(const RefineInformation& info, const Transform& t, Point c, double share,
                                   double common_share, double gain_attenuation) {
  DriftUncertainty u;
  const double inf = std::numeric_limits<double>::infinity();
  if (info.singular) {
    u.singular = true;
    u.sigma_dx = u.sigma_dy = u.sigma_angle_deg = u.common_sigma_dx = u.common_sigma_dy = inf;
    u.sigma_affine.fill(inf);
    return u;
  }
  const auto& C = info.covariance;
  auto quad = [&](const std::array<double, 6>& g, const std::array<double, 6>& h) {
    double v = 0;
    for (std::size_t i = 0; i < 6; ++i)
      for (std::size_t j = 0; j < 6; ++j) v += g[i] * C[i * 6 + j] * h[j];
    return v;
  };
  // dx = (a-1) cx + b cy + tx, dy = c cx + (d-1) cy + ty; angle = atan2(c-b, a+d).
  const std::array<double, 6> gx{c.x, c.y, 0, 0, 1, 0}, gy{0, 0, c.x, c.y, 0, 1};
  const double p = t.c - t.b, q = t.a + t.d, n2 = std::max(1e-300, p * p + q * q), deg = 180.0 / M_PI;
  const std::array<double, 6> ga{-p / n2 * deg, -q / n2 * deg, q / n2 * deg, -p / n2 * deg, 0, 0};
  const double vx = std::max(0.0, quad(gx, gx)), vy = std::max(0.0, quad(gy, gy));
  u.sigma_dx = std::sqrt(vx);
  u.sigma_dy = std::sqrt(vy);
  u.cov_dxdy = quad(gx, gy);
  u.sigma_angle_deg = std::sqrt(std::max(0.0, quad(ga, ga)));
  for (std::size_t i = 0; i < 6; ++i) u.sigma_affine[i] = std::sqrt(std::max(0.0, C[i * 7]));
  share = std::clamp(share, 0.0, 1.0);
  const double r2 = info.residual_rms * info.residual_rms;
  u.noise_variance = (1.0 - share) * r2 / std::max(1e-300, info.alpha * info.alpha);
  u.reference_noise_variance = share * r2;
  const double kappa = gradient_noise_kappa(info.prefilter_sigma);
  const double cs = common_share < 0 ? share : std::clamp(common_share, 0.0, 1.0);
  // A = alpha sum J_f J_g: the signal's power at the attenuated gain; rho at the true one.
  const double att = gain_attenuation > 0 ? std::min(1.0, gain_attenuation) : 1.0;
  const double rho_x = std::min(1.0, info.gradient_signal_fraction[0] / att);
  const double rho_y = std::min(1.0, info.gradient_signal_fraction[1] / att);
  const double fx = common_fraction(cs, noise_seen_signal_fraction(rho_x, info.signal_lag_factor[0]), kappa);
  const double fy = common_fraction(cs, noise_seen_signal_fraction(rho_y, info.signal_lag_factor[1]), kappa);
  u.common_sigma_dx = std::sqrt(fx * vx);
  u.common_sigma_dy = std::sqrt(fy * vy);
  u.common_cov_dxdy = std::sqrt(fx * fy) * u.cov_dxdy;
  return u;
}

void share_series_common(std::vector<DriftUncertainty>& block, const UncertaintySummary& series,
                         std::size_t first_frame) {
  for (std::size_t i = first_frame == 0 ? 1 : 0; i < block.size(); ++i) {  // frame 0 is exact
    DriftUncertainty& u = block[i];
    if (u.singular || !std::isfinite(u.sigma())) continue;
    auto with_common = [](double sigma, double own_common, double common) {
      return std::sqrt(std::max(0.0, sigma * sigma - own_common * own_common) + common * common);
    };
    u.sigma_dx = with_common(u.sigma_dx, u.common_sigma_dx, series.common_sigma_dx);
    u.sigma_dy = with_common(u.sigma_dy, u.common_sigma_dy, series.common_sigma_dy);
    u.cov_dxdy += series.common_cov_dxdy - u.common_cov_dxdy;
    u.common_sigma_dx = series.common_sigma_dx;
    u.common_sigma_dy = series.common_sigma_dy;
    u.common_cov_dxdy = series.common_cov_dxdy;
  }
}

std::vector<DriftUncertainty> with_series_common(std::vector<DriftUncertainty> frames) {
  share_series_common(frames, summarize_uncertainty(frames), 0);
  return frames;
}

DriftUncertainty frame_drift_uncertainty(const RegistrationOperator& op, const Registration& r, bool counts,
                                         Point centre) {
  const RefineInformation info = op.information(r, counts);
  return drift_uncertainty(info, r.transform, centre, reference_noise_share(info, counts),
                           common_noise_share(info, counts), fitted_gain_attenuation(info, counts));
}

std::vector<DriftUncertainty> estimate_drift_uncertainty(const RegistrationOperator& op,
                                                         const std::vector<Registration>& registrations,
                                                         std::size_t begin, std::size_t end, int threads,
                                                         Progress* progress, const CancelToken* cancel) {
  end = std::min(end, registrations.size());
  std::vector<DriftUncertainty> out(end > begin ? end - begin : 0);
  if (out.empty()) return out;
  const FrameSource& frames = op.frames();
  const bool counts = looks_like_counts(frames.frame(0));
  const Point centre{(frames.width() - 1) / 2.0, (frames.height() - 1) / 2.0};
  const long n = static_cast<long>(out.size());
  std::string error;
  ErrorKind kind = ErrorKind::failure;
  std::size_t done = 0;
#pragma omp parallel for schedule(dynamic, 1) num_threads(std::max(1, threads))
  for (long i = 0; i < n; ++i) {
    try {
      if (cancel) cancel->throw_if_cancelled();
      out[static_cast<std::size_t>(i)] =
          frame_drift_uncertainty(op, registrations[begin + static_cast<std::size_t>(i)], counts, centre);
    } catch (const Error& e) {
#pragma omp critical(drift_uncertainty_error)
      if (error.empty() || e.kind() == ErrorKind::cancelled) {
        error = e.what();
        kind = e.kind();
      }
    }
#pragma omp critical(drift_uncertainty_progress)
    if (progress) progress->advance(++done);
  }
  if (!error.empty()) throw Error(kind, error);
  return out;
}

UncertaintySample sample_uncertainty(const std::vector<DriftUncertainty>& block, std::size_t first_frame) {
  UncertaintySample s;
  for (std::size_t i = first_frame == 0 ? 1 : 0; i < block.size(); ++i) {  // frame 0 is exact
    const std::size_t k = first_frame + i;
    const DriftUncertainty& u = block[i];
    if (u.singular || !std::isfinite(u.sigma())) {
      s.singular_frames.push_back(k);
      continue;
    }
    s.sigma.push_back(u.sigma());
    s.common_sigma_dx.push_back(u.common_sigma_dx);
    s.common_sigma_dy.push_back(u.common_sigma_dy);
    s.common_cov_dxdy.push_back(u.common_cov_dxdy);
    if (u.sigma() > s.worst_sigma) {
      s.worst_sigma = u.sigma();
      s.worst_frame = k;
    }
  }
  return s;
}

UncertaintySummary summarize_uncertainty(const std::vector<DriftUncertainty>& frames) {
  UncertaintySample v = sample_uncertainty(frames, 0);
  UncertaintySummary s;
  auto median = [](std::vector<double>& v) {
    if (v.empty()) return 0.0;
    auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
    std::nth_element(v.begin(), mid, v.end());
    return *mid;
  };
  s.median_sigma = median(v.sigma);
  s.common_sigma_dx = median(v.common_sigma_dx);
  s.common_sigma_dy = median(v.common_sigma_dy);
  s.common_cov_dxdy = median(v.common_cov_dxdy);
  s.worst_sigma = v.worst_sigma;
  s.worst_frame = v.worst_frame;
  s.singular_frames = std::move(v.singular_frames);
  return s;
}

nlohmann::json to_json(const UncertaintySummary& s) {
  return {
      {"method",
       "Fisher information of the final refinement of 0 -> k (Gauss-Newton normal matrix, noise from the residual "
       "with its spatial correlation); sigma = max(sigma_dx, sigma_dy) per frame, px"},
      {"common", {{"sigma_dx", s.common_sigma_dx}, {"sigma_dy", s.common_sigma_dy}, {"cov_dxdy", s.common_cov_dxdy}}},
      {"median_sigma", s.median_sigma},
      {"worst_sigma", s.worst_sigma},
      {"worst_frame", s.worst_frame},
      {"singular_frames", s.singular_frames}};
}

std::vector<std::size_t> frames_above_sigma(const std::vector<double>& sigma, double max_sigma,
                                            std::size_t first_frame) {
  std::vector<std::size_t> out;
  if (!(max_sigma > 0)) return out;
  for (std::size_t i = first_frame == 0 ? 1 : 0; i < sigma.size(); ++i)
    if (!(sigma[i] <= max_sigma)) out.push_back(first_frame + i);
  return out;
}

std::string above_sigma_warning(const std::vector<std::size_t>& frames, double max_sigma) {
  if (frames.empty()) return {};
  std::string list;
  for (std::size_t i = 0; i < frames.size() && i < 10; ++i) list += (i ? ", " : "") + std::to_string(frames[i]);
  if (frames.size() > 10) list += ", ...";
  return std::to_string(frames.size()) + " frame(s) with a drift sigma above max_sigma " + message_number(max_sigma) +
         " px excluded from the average (frames " + list + ")";
}

std::vector<double> reference_noise_views(const std::vector<DriftUncertainty>& frames) {
  std::vector<double> ref;
  for (const DriftUncertainty& u : frames)
    if (!u.singular && u.reference_noise_variance > 0) ref.push_back(u.reference_noise_variance);
  return ref;
}

std::vector<double> frame_noise_variances(const std::vector<DriftUncertainty>& frames) {
  std::vector<double> noise, ref = reference_noise_views(frames);
  noise.reserve(frames.size());
  for (const DriftUncertainty& u : frames) noise.push_back(u.noise_variance);
  if (!noise.empty() && !ref.empty()) {
    std::nth_element(ref.begin(), ref.begin() + static_cast<std::ptrdiff_t>(ref.size() / 2), ref.end());
    noise[0] = ref[ref.size() / 2];
  }
  return noise;
}

std::vector<double> uncertainty_weights(const std::vector<DriftUncertainty>& frames) {
  std::vector<double> sigma;
  sigma.reserve(frames.size());
  for (const DriftUncertainty& u : frames)
    sigma.push_back(u.singular ? std::numeric_limits<double>::infinity() : u.sigma());
  return inverse_variance_weights(sigma, frame_noise_variances(frames));
}

std::string singular_warning(const UncertaintySummary& s) {
  if (s.singular_frames.empty()) return {};
  std::string list;
  for (std::size_t i = 0; i < s.singular_frames.size() && i < 10; ++i)
    list += (i ? ", " : "") + std::to_string(s.singular_frames[i]);
  if (s.singular_frames.size() > 10) list += ", ...";
  return std::to_string(s.singular_frames.size()) +
         " frame(s) carry no information on their drift (blank, constant or a single edge direction): sigma = inf "
         "(frames " +
         list + ")";
}

}  // namespace driftscan
