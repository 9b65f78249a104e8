#include "driftscan/registration/periodic_step_check.hpp"

#include <cmath>
#include <optional>

#include "driftscan/registration/registration_operator.hpp"

namespace driftscan {

namespace {

double distance(Point a, Point b) { return std::hypot(a.x - b.x, a.y - b.y); }

// The step from `from` to `to` as an element's pair finds it, when it can be trusted.
std::optional<Point> past_step(const PairRegistrationPlan& plan, const Frame& from, const Frame& to) {
  if (!unusable_frame_reason(from).empty() || !unusable_frame_reason(to).empty()) return std::nullopt;
  const PairShift s = plan.execute(from, to);
  if (!s.significant) return std::nullopt;  // (near the bound is where the check is needed: no at_bound test)
  return Point{s.dx, s.dy};
}

}  // namespace

PairShift checked_against_past_steps(const PairRegistrationPlan& plan, const FrameSource& frames, std::size_t k,
                                     const Frame& previous, const Frame& current, const PairShift& found) {
  const double lattice = found.lattice_vector;
  const Point step{found.dx, found.dy};
  if (!(lattice > 0) || k < 3 || !found.significant || std::hypot(step.x, step.y) <= 0.25 * lattice) return found;
  // Each frame before k read once: k-1 is `previous`, k-2 serves both earlier steps.
  const Frame two_back = frames.frame(k - 2);
  const std::optional<Point> before = past_step(plan, two_back, previous);
  if (!before || distance(step, *before) <= 0.5 * lattice) return found;
  const std::optional<Point> earlier = past_step(plan, frames.frame(k - 3), two_back);
  if (!earlier || distance(*before, *earlier) > 0.25 * lattice) return found;  // no smooth past to predict from
  const PairShift again = plan.execute_about(previous, current, *before);
  if (!again.significant || distance({again.dx, again.dy}, *before) >= distance(step, *before)) return found;
  return again;
}

}  // namespace driftscan
