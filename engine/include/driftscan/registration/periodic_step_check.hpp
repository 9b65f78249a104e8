#pragma once
// A periodic frame's pair is searched within half its shortest lattice
// vector of no shift: beyond that a lattice period away matches as well, so
// a step that drift takes past half a period — for one frame is enough, at
// the crest of a wobble — comes out a lattice vector off, and every later
// frame's drift with it. Drift is smooth, so the steps before k predict step
// k to much better than half a period. When the step found is long enough to
// be such an alias (over a quarter of the lattice vector), lies more than
// half a lattice vector from the previous step, and the two steps before it
// agree (so the prediction is not an alias itself), the pair is searched
// again about the previous step and the nearer of the two is kept. (An alias
// of a true step t is at least L - |t| long, L the lattice vector: the
// quarter-period gate catches true steps up to three quarters of L, and the
// search about the prediction finds them when the drift's step changed by
// less than L/2 from one frame to the next.)
//
// Only frames before k are read, so a live follow, which registers frame k
// when it arrives, finds what a batch run finds. The two earlier steps are
// registered again here (pairs k-2 -> k-1, k-3 -> k-2: an element does not
// see the others), and only for steps over the quarter period.
#include <cstddef>

#include "driftscan/core/frame_source.hpp"
#include "driftscan/registration/pair_registration.hpp"

namespace driftscan {

// `found`: the pair (k-1 -> k) of `previous` (frame k-1) and `current`
// (frame k) by `plan`. Returns `found` or the shift searched about the
// prediction (see above). Frames before k that are unusable, or a pair among
// them that is not significant, leave `found` as it is.
PairShift checked_against_past_steps(const PairRegistrationPlan& plan, const FrameSource& frames, std::size_t k,
                                     const Frame& previous, const Frame& current, const PairShift& found);

}  // namespace driftscan
