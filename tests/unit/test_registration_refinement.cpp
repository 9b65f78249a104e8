// Refinement: converges from a guess a pixel off (translation) and from a
// translation-only guess (rigid: a 3.2 degree rotation; affine: a shear),
// widens its basin with the pyramid, reports a data-dependent iteration count,
// honours ROI and mask, ignores a change of dose, stays accurate on noisy
// frames whatever the thread count, and refuses frames that do not overlap.
#include <gtest/gtest.h>

#include <cmath>

#include "driftscan/core/error.hpp"
#include "driftscan/registration/refinement.hpp"
#include "driftscan/synthetic/synthetic_series.hpp"

using namespace driftscan;

namespace {

SynthOptions series(double rotation_deg, double dose) {
  SynthOptions o;
  o.frames = 12;
  o.width = 160;
  o.height = 160;
  o.drift_step = 0.4;
  o.drift_linear_x = 0.6;
  o.drift_linear_y = -0.35;
  o.rotation_step_deg = rotation_deg;
  o.dose = dose;
  o.seed = 9;
  return o;
}

// Largest distance between where two transforms send the frame's corners.
double corner_error(const Transform& a, const Transform& b, int w, int h) {
  double worst = 0;
  for (double x : {0.0, w - 1.0})
    for (double y : {0.0, h - 1.0}) {
      Point p = a.apply(x, y), q = b.apply(x, y);
      worst = std::max(worst, std::hypot(p.x - q.x, p.y - q.y));
    }
  return worst;
}

}  // namespace

TEST(Refinement, TranslationConvergesFromOnePixelOff) {
  SyntheticSeries s(series(0, 0));
  Refinement ref(160, 160, RefineOptions{});
  const std::size_t k = 10;
  Transform truth = s.truth(k);
  Transform init = compose(Transform::translation(1.0, -0.8), truth);
  RefineResult r = ref.execute(s.frame(0), s.frame(k), init);
  EXPECT_TRUE(r.converged);
  EXPECT_GE(r.iterations, 2);
  EXPECT_LT(r.iterations, 30);
  EXPECT_NEAR(r.transform.tx, truth.tx, 0.01);
  EXPECT_NEAR(r.transform.ty, truth.ty, 0.01);
  EXPECT_GT(r.ncc, 0.99);
  EXPECT_LT(r.cost, 0.02);
  EXPECT_GT(r.pixels, 10000u);
  // Starting at the answer takes fewer iterations: the count depends on the data.
  RefineResult again = ref.execute(s.frame(0), s.frame(k), r.transform);
  EXPECT_LT(again.iterations, r.iterations);
}

TEST(Refinement, PyramidWidensTheBasin) {
  SynthOptions o = series(0, 0);
  o.period = 16;  // coarse levels keep a lattice of period 16 well sampled
  SyntheticSeries s(o);
  RefineOptions opt;
  opt.pyramid_levels = 3;
  Refinement ref(160, 160, opt);
  Transform truth = s.truth(8);
  Transform init = compose(Transform::translation(3.5, 2.5), truth);
  RefineResult r = ref.execute(s.frame(0), s.frame(8), init, 5.0);
  EXPECT_EQ(r.start_level, 2);
  EXPECT_NEAR(r.transform.tx, truth.tx, 0.02);
  EXPECT_NEAR(r.transform.ty, truth.ty, 0.02);
}

TEST(Refinement, RigidRecoversRotation) {
  SyntheticSeries s(series(0.4, 0));
  RefineOptions opt;
  opt.model = MotionModel::rigid;
  Refinement ref(160, 160, opt);
  const std::size_t k = 8;  // 3.2 degrees
  Transform truth = s.truth(k);
  Transform init = Transform::translation(truth.displacement(s.centre()).x, truth.displacement(s.centre()).y);
  RefineResult r = ref.execute(s.frame(0), s.frame(k), init, 1.0);
  EXPECT_NEAR(r.transform.angle() * 180 / M_PI, s.angle_deg(k), 0.02);
  EXPECT_LT(corner_error(r.transform, truth, 160, 160), 0.05);
  EXPECT_NEAR(r.transform.determinant(), 1.0, 1e-9);  // stays rigid
}

TEST(Refinement, AffineRecoversShear) {
  SyntheticSeries s(series(0, 0));
  // Frame 1 re-sampled through a known affine map of frame 0's content.
  Transform truth{1.01, 0.008, -0.006, 0.995, 2.3, -1.4};
  Frame f0 = s.frame(0), f1(160, 160);
  // f1(p) = f0(truth(p)) by bilinear sampling of frame 0 (edges clamped):
  // not exact, but the smoothing it adds is matched by the prefilter below.
  for (int y = 0; y < 160; ++y)
    for (int x = 0; x < 160; ++x) {
      Point q = truth.apply(x, y);
      double fx = std::clamp(q.x, 0.0, 159.0), fy = std::clamp(q.y, 0.0, 159.0);
      int ix = std::min(158, static_cast<int>(fx)), iy = std::min(158, static_cast<int>(fy));
      double tx = fx - ix, ty = fy - iy;
      f1.at(x, y) = static_cast<float>((1 - ty) * ((1 - tx) * f0.at(ix, iy) + tx * f0.at(ix + 1, iy)) +
                                       ty * ((1 - tx) * f0.at(ix, iy + 1) + tx * f0.at(ix + 1, iy + 1)));
    }
  RefineOptions opt;
  opt.model = MotionModel::affine;
  opt.prefilter_sigma = 1.5;  // the bilinear resampling above smooths f1; smooth both alike
  Refinement ref(160, 160, opt);
  RefineResult r = ref.execute(f0, f1, Transform::translation(2.0, -1.0));
  EXPECT_LT(corner_error(r.transform, truth, 160, 160), 0.15);
  EXPECT_NEAR(r.transform.a, truth.a, 0.002);
  EXPECT_NEAR(r.transform.b, truth.b, 0.002);
}

TEST(Refinement, DoseChangeDoesNotBias) {
  SyntheticSeries s(series(0, 0));
  Frame f5 = s.frame(5);
  for (float& v : f5.pixels) v = 2.5f * v + 7.0f;  // brighter beam, offset detector
  Refinement ref(160, 160, RefineOptions{});
  RefineResult r = ref.execute(s.frame(0), f5, compose(Transform::translation(0.6, 0.4), s.truth(5)));
  EXPECT_NEAR(r.transform.tx, s.truth(5).tx, 0.01);
  EXPECT_NEAR(r.transform.ty, s.truth(5).ty, 0.01);
  EXPECT_GT(r.ncc, 0.99);
}

TEST(Refinement, RoiAndMaskLimitThePixelsUsed) {
  SyntheticSeries s(series(0, 0));
  RefineOptions opt;
  opt.roi = Roi{30, 40, 90, 70};
  Refinement roi_ref(160, 160, opt);
  RefineResult r = roi_ref.execute(s.frame(0), s.frame(6), compose(Transform::translation(-0.7, 0.5), s.truth(6)));
  EXPECT_LE(r.pixels, 90u * 70u);
  EXPECT_NEAR(r.transform.tx, s.truth(6).tx, 0.02);
  EXPECT_NEAR(r.transform.ty, s.truth(6).ty, 0.02);

  auto mask = std::make_shared<Frame>(160, 160, 0.0f);
  for (int y = 0; y < 80; ++y)
    for (int x = 0; x < 160; ++x) mask->at(x, y) = 1.0f;  // top half only
  RefineOptions mopt;
  mopt.mask = mask;
  RefineResult m = Refinement(160, 160, mopt).execute(s.frame(0), s.frame(6), s.truth(6));
  EXPECT_LT(m.pixels, 160u * 81u);
  EXPECT_NEAR(m.transform.tx, s.truth(6).tx, 0.02);
}

TEST(Refinement, SmallRoiWorksAtEveryLevel) {
  SyntheticSeries s(series(0, 0));
  RefineOptions opt;
  opt.roi = Roi{60, 50, 24, 20};
  Refinement ref(160, 160, opt);
  RefineResult r = ref.execute(s.frame(0), s.frame(3), compose(Transform::translation(0.4, -0.3), s.truth(3)), 4.0);
  EXPECT_EQ(r.start_level, 0);  // a 24x20 ROI has no coarser level worth using
  EXPECT_NEAR(r.transform.tx, s.truth(3).tx, 0.05);
  EXPECT_NEAR(r.transform.ty, s.truth(3).ty, 0.05);
}

TEST(Refinement, BadInputsAreRefused) {
  SyntheticSeries s(series(0, 0));
  RefineOptions outside;
  outside.roi = Roi{100, 100, 100, 100};
  EXPECT_THROW(Refinement(160, 160, outside), Error);
  Refinement ref(160, 160, RefineOptions{});
  // A guess that leaves no overlap.
  try {
    ref.execute(s.frame(0), s.frame(1), Transform::translation(170, 0));
    ADD_FAILURE() << "no error for frames that do not overlap";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::bad_input);
    EXPECT_NE(std::string(e.what()).find("overlap"), std::string::npos) << e.what();
  }
  Frame blank(160, 160, 1.0f), nan = s.frame(1);
  nan.at(3, 4) = INFINITY;
  EXPECT_THROW(ref.execute(s.frame(0), blank, Transform::identity()), Error);
  EXPECT_THROW(ref.execute(nan, s.frame(0), Transform::identity()), Error);
}

TEST(Refinement, NoisyFramesStayAccurate) {
  SynthOptions o = series(0, 6);
  o.width = o.height = 192;
  SyntheticSeries s(o);
  Refinement ref(192, 192, RefineOptions{});
  auto p0 = ref.prepare(s.frame(0));
  double se = 0;
  for (std::size_t k = 1; k < o.frames; ++k) {
    RefineResult r =
        ref.execute(*p0, *ref.prepare(s.frame(k), false), compose(Transform::translation(0.4, -0.3), s.truth(k)));
    double e = std::hypot(r.transform.tx - s.truth(k).tx, r.transform.ty - s.truth(k).ty);
    se += e * e;
  }
  EXPECT_LT(std::sqrt(se / (o.frames - 1)), 0.05);
}

TEST(Refinement, ResultDoesNotDependOnThreads) {
  SyntheticSeries s(series(0.2, 6));
  RefineOptions one, two;
  one.model = two.model = MotionModel::rigid;
  two.threads = 2;
  Transform init = Transform::translation(s.drift(7).x + 0.3, s.drift(7).y - 0.2);
  RefineResult a = Refinement(160, 160, one).execute(s.frame(0), s.frame(7), init);
  RefineResult b = Refinement(160, 160, two).execute(s.frame(0), s.frame(7), init);
  EXPECT_EQ(a.iterations, b.iterations);
  EXPECT_DOUBLE_EQ(a.transform.tx, b.transform.tx);
  EXPECT_DOUBLE_EQ(a.transform.ty, b.transform.ty);
  EXPECT_DOUBLE_EQ(a.transform.a, b.transform.a);
}
