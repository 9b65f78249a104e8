#include "driftscan/registration/periodic_step_check.hpp"

#include <cmath>
#include <optional>

#include "driftscan/registration/registration_operator.hpp"

namespace driftscan {

namespace {

double distance(Point a, Point b) { return std::hypot(a.x - b.x, a.y - b.y); }

// Step j (frame j-1 -> j) as its element's pair finds it, when it can be trusted.
std::optional<Point> past_step(const PairRegistrationPlan& plan, const FrameSource& frames, std::size_t j) {
  const Frame from = frames.frame(j - 1), to = frames.frame(j);
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
  const std::optional<Point> before = past_step(plan, frames, k - 1);
  if (!before || distance(step, *before) <= 0.5 * lattice) return found;
  const std::optional<Point> earlier = past_step(plan, frames, k - 2);
  if (!earlier || distance(*before, *earlier) > 0.25 * lattice) return found;  // no smooth past to predict from
  const PairShift again = plan.execute_about(previous, current, *before);
  if (!again.significant || distance({again.dx, again.dy}, *before) >= distance(step, *before)) return found;
  return again;
}

}  // namespace driftscan
