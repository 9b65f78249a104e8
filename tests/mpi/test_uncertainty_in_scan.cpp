// mpi-ranks: 1
// UncertaintyInScan (distributed register): each frame's uncertainty taken
// from the scan's output hook must equal what the phase after the scan
// computes, to the last bit; a frame the hook did not see, or saw with a
// different registration, is computed again; off, it gives nothing.
#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

#include "driftscan/core/frame_source.hpp"
#include "driftscan/mpi/register/uncertainty_in_scan.hpp"
#include "driftscan/registration/registration_operator.hpp"
#include "driftscan/registration/sequential_scan.hpp"
#include "driftscan/synthetic/synthetic_series.hpp"

using namespace driftscan;

namespace {

FrameVector series() {
  SynthOptions o;
  o.frames = 8;
  o.width = o.height = 96;
  o.dose = 6;
  o.seed = 9;
  SyntheticSeries s(o);
  FrameVector v;
  for (std::size_t k = 0; k < s.frame_count(); ++k) v.push_back(s.frame(k));
  return v;
}

void expect_same(const DriftUncertainty& a, const DriftUncertainty& b, std::size_t k) {
  EXPECT_EQ(a.sigma_dx, b.sigma_dx) << k;
  EXPECT_EQ(a.sigma_dy, b.sigma_dy) << k;
  EXPECT_EQ(a.cov_dxdy, b.cov_dxdy) << k;
  EXPECT_EQ(a.noise_variance, b.noise_variance) << k;
  EXPECT_EQ(a.common_sigma_dx, b.common_sigma_dx) << k;
}

}  // namespace

TEST(UncertaintyInScan, EqualsThePhaseAfterTheScanAndRecomputesWhatItDidNotSee) {
  const FrameVector frames = series();
  RegistrationOperator op(frames, RegistrationSettings{});
  std::vector<Registration> elements;
  for (std::size_t k = 0; k < frames.frame_count(); ++k) elements.push_back(op.element(k));
  const std::vector<Registration> regs =
      sequential_inclusive_scan(elements, [&](const Registration& a, const Registration& b) { return op(a, b); });
  const std::vector<DriftUncertainty> after = estimate_drift_uncertainty(op, regs, 0, regs.size(), 1, nullptr, nullptr);

  // Block [2, 8): frame 4 never reaches the hook, frame 6 with another shift.
  const std::vector<Registration> block(regs.begin() + 2, regs.end());
  mpi::UncertaintyInScan in_scan(op, 2, 8, true);
  for (const Registration& r : regs) {
    if (r.to == 4) continue;
    Registration seen = r;
    if (r.to == 6) seen.transform.tx += 0.5;
    in_scan.add(seen);  // frames 0, 1 are outside the block: ignored
  }
  EXPECT_GT(in_scan.seconds(), 0.0);
  const auto got = in_scan.take(block, nullptr, nullptr);
  ASSERT_TRUE(got.has_value());
  ASSERT_EQ(got->size(), 6u);
  for (std::size_t i = 0; i < got->size(); ++i) expect_same((*got)[i], after[2 + i], 2 + i);
  EXPECT_GT((*got)[3].sigma_dx, 0.0);
  EXPECT_FALSE(in_scan.take(block, nullptr, nullptr).has_value());  // taken once

  mpi::UncertaintyInScan off(op, 0, 8, false);
  for (const Registration& r : regs) off.add(r);
  EXPECT_FALSE(off.take(regs, nullptr, nullptr).has_value());
  EXPECT_EQ(off.seconds(), 0.0);
}
