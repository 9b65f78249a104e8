#pragma once
// Each frame's drift uncertainty computed as the distributed scan finishes
// the frame's output (WorkStealingScan's on_output), while the operator's
// cache still holds the frame's prepared pyramid: on big frames the cache
// holds frame 0's and one moving frame's only, and the phase after the scan
// prepared every frame a second time. The same call on the same
// registration: the same sigma as that phase (serial_register does the same).
#include <cstddef>
#include <mutex>
#include <optional>
#include <vector>

#include "driftscan/core/cancel_token.hpp"
#include "driftscan/core/progress.hpp"
#include "driftscan/core/transform.hpp"
#include "driftscan/registration/drift_uncertainty.hpp"
#include "driftscan/registration/registration_operator.hpp"

namespace driftscan::mpi {

class UncertaintyInScan {
 public:
  // Frames [first, last) (the rank's block). `on` false: add() does nothing.
  // With one thread per rank only: the hook then runs on the rank's one
  // worker right after the combine that made the output; with more, the
  // phase after the scan runs the frames in parallel instead (and the hook
  // must stay cheap for the other workers).
  UncertaintyInScan(const RegistrationOperator& op, std::size_t first, std::size_t last, bool on);
  // From the scan's on_output hook: thread-safe, never throws (a failure
  // turns it off; the phase after the scan then says what is wrong).
  void add(const Registration& r) noexcept;
  // Every frame of the block, in order: the one computed in the scan where it
  // was computed from exactly the registration given here (bit for bit),
  // else computed now (a frame the hook did not see). None when off (then
  // estimate_drift_uncertainty as before). Throws what that would throw.
  std::optional<std::vector<DriftUncertainty>> take(const std::vector<Registration>& registrations, Progress* progress,
                                                    const CancelToken* cancel);
  // Wall seconds spent in add() (the scan's time that is the uncertainty's).
  double seconds() const { return seconds_; }

 private:
  const RegistrationOperator* op_ = nullptr;
  std::size_t first_ = 0, last_ = 0;
  bool on_ = false, counts_ = false;
  Point centre_;
  std::mutex mu_;
  struct Entry {
    Registration from;
    DriftUncertainty u;
  };
  std::vector<std::optional<Entry>> frames_;
  double seconds_ = 0.0;
};

}  // namespace driftscan::mpi
