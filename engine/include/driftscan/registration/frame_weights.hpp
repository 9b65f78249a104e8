#pragma once
// Per-frame weights of the mean. `inverse-variance`: each frame weighted by
// the inverse of what it adds to the average's error, its pixel noise and
// its registration error, each relative to the series' median:
//   w_k = 1 / (v_k / median(v) + s_k^2 / median(s^2)),
// normalised to mean 1; a frame with sigma = inf gets 0. Frame 0 (s = 0,
// it defines the coordinates) carries its noise term only.
#include <cstddef>
#include <vector>
#include "driftscan/core/enum_names.hpp"

namespace driftscan {

enum class FrameWeighting { equal, inverse_variance };

// sigma[k]: the drift's standard error (px); noise_variance[k]: the frame's
// pixel noise variance in its own units. Sizes must match (else empty).
std::vector<double> inverse_variance_weights(const std::vector<double>& sigma,
                                             const std::vector<double>& noise_variance);

// How the enum is spelled (enum_names.hpp).
template <>
struct EnumNames<FrameWeighting> {
  static constexpr EnumEntry<FrameWeighting> table[] = {{FrameWeighting::equal, "equal"},
                                                        {FrameWeighting::inverse_variance, "inverse-variance"}};
};

}  // namespace driftscan
