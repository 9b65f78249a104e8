#pragma once
// A 2-D affine map between the pixel coordinates of two frames.
//
// Convention (see docs/method.md and README): a registration of
// frame k against reference frame i yields T_{i,k}, which maps a point p of
// frame k to the point of frame i showing the same thing:
//     f_k(p) ≈ f_i(T_{i,k}(p)),   T(p) = A p + t,  p = (x, y) in pixels,
// pixel centres at integer coordinates, origin at pixel (0, 0).
// For a pure translation T_{0,k}(p) = p + (dx, dy): exactly the `dx,dy` of
// drift.csv. Composition follows the frames: T_{i,k} = T_{i,j} ∘ T_{j,k}.
#include <cmath>
#include "driftscan/core/enum_names.hpp"

namespace driftscan {

enum class MotionModel { translation, rigid, affine };

struct Point {
  double x = 0.0;
  double y = 0.0;
};

struct Transform {
  double a = 1.0, b = 0.0;  // A = | a b |
  double c = 0.0, d = 1.0;  //     | c d |
  double tx = 0.0, ty = 0.0;

  static Transform identity() { return {}; }
  static Transform translation(double dx, double dy) { return {1.0, 0.0, 0.0, 1.0, dx, dy}; }
  // Rotation by `angle` (radians, counter-clockwise in x-right/y-down pixel
  // coordinates as displayed) about `centre`, followed by a shift (dx, dy).
  static Transform rigid(double angle, double dx, double dy, Point centre) {
    double cs = std::cos(angle), sn = std::sin(angle);
    Transform t{cs, -sn, sn, cs, 0.0, 0.0};
    t.tx = centre.x - (cs * centre.x - sn * centre.y) + dx;
    t.ty = centre.y - (sn * centre.x + cs * centre.y) + dy;
    return t;
  }

  Point apply(Point p) const { return {a * p.x + b * p.y + tx, c * p.x + d * p.y + ty}; }
  Point apply(double x, double y) const { return apply(Point{x, y}); }

  // The displacement T(p) - p at a point (the drift at that pixel).
  Point displacement(Point p) const {
    Point q = apply(p);
    return {q.x - p.x, q.y - p.y};
  }
  double angle() const { return std::atan2(c - b, a + d); }
  double determinant() const { return a * d - b * c; }

  Transform inverse() const {
    double det = determinant();
    Transform r{d / det, -b / det, -c / det, a / det, 0.0, 0.0};
    r.tx = -(r.a * tx + r.b * ty);
    r.ty = -(r.c * tx + r.d * ty);
    return r;
  }
};

// (outer ∘ inner)(p) = outer(inner(p)); T_{i,k} = compose(T_{i,j}, T_{j,k}).
inline Transform compose(const Transform& outer, const Transform& inner) {
  Transform r;
  r.a = outer.a * inner.a + outer.b * inner.c;
  r.b = outer.a * inner.b + outer.b * inner.d;
  r.c = outer.c * inner.a + outer.d * inner.c;
  r.d = outer.c * inner.b + outer.d * inner.d;
  r.tx = outer.a * inner.tx + outer.b * inner.ty + outer.tx;
  r.ty = outer.c * inner.tx + outer.d * inner.ty + outer.ty;
  return r;
}

// How the enum is spelled (enum_names.hpp).
template <>
struct EnumNames<MotionModel> {
  static constexpr EnumEntry<MotionModel> table[] = {
      {MotionModel::translation, "translation"}, {MotionModel::rigid, "rigid"}, {MotionModel::affine, "affine"}};
};

}  // namespace driftscan
