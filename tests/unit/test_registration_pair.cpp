// Pair registration: known subpixel shifts come back, noisy lattice pairs are
// registered without period jumps, the max-shift bound and bad inputs behave.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "driftscan/core/error.hpp"
#include "driftscan/registration/pair_registration.hpp"
#include "driftscan/synthetic/synthetic_series.hpp"

using namespace driftscan;

namespace {

// A noise-free series whose frame k is frame 0 moved by k * (sx, sy).
SynthOptions linear_series(double sx, double sy, int size, double dose) {
  SynthOptions o;
  o.frames = 6;
  o.width = size;
  o.height = size;
  o.drift_step = 0;
  o.drift_linear_x = sx;
  o.drift_linear_y = sy;
  o.dose = dose;
  o.seed = 5;
  return o;
}

}  // namespace

TEST(PairRegistration, RecoversKnownSubpixelShifts) {
  for (auto [sx, sy] : {std::pair{0.37, -0.21}, std::pair{-1.73, 2.46}, std::pair{0.5, 0.5}, std::pair{3.11, 0.0}}) {
    SyntheticSeries s(linear_series(sx, sy, 128, 0));
    PairRegistrationOptions po;
    po.lattice_bound = false;  // 3 x 3.11 px is beyond half a lattice period
    PairRegistrationPlan plan(128, 128, po);
    for (std::size_t k : {1u, 3u}) {
      PairShift r = plan.execute(s.frame(0), s.frame(k));
      EXPECT_NEAR(r.dx, s.drift(k).x, 0.02) << "shift " << sx << "," << sy << " frame " << k;
      EXPECT_NEAR(r.dy, s.drift(k).y, 0.02) << "shift " << sx << "," << sy << " frame " << k;
      EXPECT_GT(r.psr, 8.0);
      EXPECT_FALSE(r.at_bound);
    }
  }
}

TEST(PairRegistration, SignFollowsTheTransformConvention) {
  // f_k(p) = f_i(p + d): a bright pixel at (40, 30) in f_i shows at (40, 30) - d in f_k.
  Frame a(64, 64, 0.0f), b(64, 64, 0.0f);
  for (int y = -2; y <= 2; ++y)
    for (int x = -2; x <= 2; ++x) {
      float v = static_cast<float>(std::exp(-0.3 * (x * x + y * y)));
      a.at(40 + x, 30 + y) = v;
      b.at(40 - 5 + x, 30 + 3 + y) = v;
    }
  PairShift r = PairRegistrationPlan(64, 64).execute(a, b);
  EXPECT_NEAR(r.dx, 5.0, 1e-3);
  EXPECT_NEAR(r.dy, -3.0, 1e-3);
  EXPECT_NEAR(r.transform().apply(35, 33).x, 40.0, 1e-3);
}

TEST(PairRegistration, NoisyLatticePairsHaveNoPeriodJumps) {
  SynthOptions o;
  o.frames = 25;
  o.width = 192;
  o.height = 192;
  o.dose = 6;
  o.seed = 3;
  SyntheticSeries s(o);
  PairRegistrationPlan plan(o.width, o.height);
  double se = 0, worst = 0;
  Frame prev = s.frame(0);
  for (std::size_t k = 1; k < o.frames; ++k) {
    Frame cur = s.frame(k);
    PairShift r = plan.execute(prev, cur);
    Point a = s.drift(k - 1), b = s.drift(k);
    double e = std::hypot(r.dx - (b.x - a.x), r.dy - (b.y - a.y));
    se += e * e;
    worst = std::max(worst, e);
    prev = std::move(cur);
  }
  EXPECT_LT(worst, 0.3);  // a period jump would be ~ 8 px
  EXPECT_LT(std::sqrt(se / (o.frames - 1)), 0.08);
}

TEST(PairRegistration, RoiAndBandPassStillRegister) {
  SyntheticSeries s(linear_series(0.8, -0.6, 128, 0));
  PairRegistrationOptions po;
  po.roi = Roi{20, 30, 80, 64};
  po.bandpass_low = 2.0;
  po.bandpass_high = 40.0;
  PairShift r = PairRegistrationPlan(128, 128, po).execute(s.frame(0), s.frame(2));
  EXPECT_NEAR(r.dx, s.drift(2).x, 0.05);
  EXPECT_NEAR(r.dy, s.drift(2).y, 0.05);
}

TEST(PairRegistration, LatticeBoundKeepsConsecutiveShiftsInsideHalfAPeriod) {
  SyntheticSeries s(linear_series(1.1, 0.4, 128, 0));
  PairRegistrationPlan plan(128, 128);
  PairShift small = plan.execute(s.frame(0), s.frame(2));  // 2.3 px: inside half a period
  EXPECT_NEAR(small.lattice_vector, 9.0, 1.0);             // the generator's period
  EXPECT_FALSE(small.at_bound);
  EXPECT_NEAR(small.dx, s.drift(2).x, 0.02);
  PairShift far = plan.execute(s.frame(0), s.frame(5));  // 5.9 px: beyond it
  EXPECT_LT(std::hypot(far.dx, far.dy), 4.6);
  PairRegistrationOptions off;
  off.lattice_bound = false;
  PairShift free = PairRegistrationPlan(128, 128, off).execute(s.frame(0), s.frame(5));
  EXPECT_EQ(free.lattice_vector, 0.0);
  EXPECT_NEAR(free.dx, s.drift(5).x, 0.05);  // defects and the grain boundary disambiguate here
}

TEST(PairRegistration, MaxShiftBoundIsRespectedAndReported) {
  SyntheticSeries s(linear_series(2.0, 0.0, 128, 0));
  PairRegistrationOptions po;
  po.lattice_bound = false;
  po.max_shift = 3;
  PairShift r = PairRegistrationPlan(128, 128, po).execute(s.frame(0), s.frame(3));  // true shift 6 px
  EXPECT_LE(std::abs(r.dx), 3.6);
  EXPECT_TRUE(r.at_bound);
}

TEST(PairRegistration, BadInputsGiveClearErrors) {
  SyntheticSeries s(linear_series(0.5, 0.5, 64, 0));
  PairRegistrationPlan plan(64, 64);
  Frame good = s.frame(0), blank(64, 64, 3.0f), nan = s.frame(1), small(32, 32, 1.0f);
  nan.at(10, 12) = std::numeric_limits<float>::quiet_NaN();
  auto message = [&](const Frame& a, const Frame& b) {
    try {
      plan.execute(a, b);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::bad_input);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(good, blank).find("blank"), std::string::npos);
  EXPECT_NE(message(nan, good).find("non-finite"), std::string::npos);
  EXPECT_NE(message(nan, good).find("(10, 12)"), std::string::npos);
  EXPECT_NE(message(good, small).find("32x32"), std::string::npos);
  PairRegistrationOptions outside;
  outside.roi = Roi{40, 40, 40, 40};
  EXPECT_THROW(PairRegistrationPlan(64, 64, outside), Error);
  EXPECT_THROW(PairRegistrationPlan(4, 4), Error);
}

TEST(PairRegistration, OddAndNonSquareFrames) {
  SynthOptions o = linear_series(0.63, -0.41, 97, 0);
  o.height = 75;
  SyntheticSeries s(o);
  PairRegistrationPlan plan(97, 75);
  PairShift r = plan.execute(s.frame(0), s.frame(2));
  EXPECT_NEAR(r.dx, s.drift(2).x, 0.03);
  EXPECT_NEAR(r.dy, s.drift(2).y, 0.03);
}

namespace {

std::uint64_t bits(double v) {
  std::uint64_t b = 0;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

void expect_same_bits(const PairShift& a, const PairShift& b, const std::string& what) {
  for (auto [x, y] :
       {std::pair{a.dx, b.dx}, std::pair{a.dy, b.dy}, std::pair{a.psr, b.psr}, std::pair{a.second_peak, b.second_peak},
        std::pair{a.lattice_vector, b.lattice_vector}, std::pair{a.ncc, b.ncc},
        std::pair{a.significance, b.significance}, std::pair{a.lobe_area, b.lobe_area}})
    EXPECT_EQ(bits(x), bits(y)) << what << ": " << x << " vs " << y;
  EXPECT_EQ(a.at_bound, b.at_bound) << what;
  EXPECT_EQ(a.significant, b.significant) << what;
}

}  // namespace

// Keyed calls take the reference's spectrum from the last call's moving
// frame: only when that frame, that series and that plan are the ones asked
// for, and with results equal to the last bit to a call that transforms both.
TEST(PairRegistration, KeyedCallsReuseOnlyTheirOwnMovingSpectrum) {
  SynthOptions o = linear_series(0.61, -0.37, 96, 40);  // noisy lattice; its vector found per pair
  SyntheticSeries s(o);
  PairRegistrationPlan plan(96, 96), other(96, 96, [] {
    PairRegistrationOptions po;
    po.window = Apodisation::hann;
    return po;
  }());
  const int series = 0, elsewhere = 0;
  auto key = [](const int& where, std::size_t k) { return PairFrameKey{&where, k}; };
  // A chain k-1 -> k, as the scan's elements run on one thread.
  for (std::size_t k = 1; k < 4; ++k)
    expect_same_bits(plan.execute(s.frame(k - 1), s.frame(k), key(series, k - 1), key(series, k)),
                     plan.execute(s.frame(k - 1), s.frame(k)), "chained " + std::to_string(k));
  // Between two keyed calls: an unkeyed one, another plan, another series.
  plan.execute(s.frame(0), s.frame(1), key(series, 0), key(series, 1));
  plan.execute(s.frame(4), s.frame(5));
  expect_same_bits(plan.execute(s.frame(1), s.frame(2), key(series, 1), key(series, 2)),
                   plan.execute(s.frame(1), s.frame(2)), "after an unkeyed call");
  other.execute(s.frame(4), s.frame(5), key(series, 1), key(series, 2));
  expect_same_bits(plan.execute(s.frame(2), s.frame(3), key(series, 2), key(series, 3)),
                   plan.execute(s.frame(2), s.frame(3)), "after another plan");
  plan.execute(s.frame(4), s.frame(5), key(elsewhere, 2), key(elsewhere, 3));
  expect_same_bits(plan.execute(s.frame(3), s.frame(4), key(series, 3), key(series, 4)),
                   plan.execute(s.frame(3), s.frame(4)), "after another series");
}
