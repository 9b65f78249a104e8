#pragma once
// Which frames a registration could not register (RegistrationFlag bits in
// kFrameFailed), one warning line per reason naming them compactly, and
// whether the series as a whole failed: more than half of the frames
// registered against frame 0 (frames 1..N-1) failed — not counting those
// whose drift left frame 0's field (their drift is the chain's, they only
// cannot be averaged there: a long series drifting away is no noise). Such a run ends with
// ErrorKind::registration_failed (exit 5) and writes no average: what is
// left is noise, or frames sharing no structure with frame 0.
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "driftscan/registration/registration_operator.hpp"

namespace driftscan {

struct RegistrationFailures {
  std::size_t frames = 0;                  // of the series, frame 0 included
  std::vector<std::size_t> unusable;       // kBadFrame: blank or non-finite pixels
  std::vector<std::size_t> no_overlap;     // kRefineFailed: no overlap with frame 0 at the drift
  std::vector<std::size_t> no_peak;        // kNoPeak: no significant peak against the previous frame
  std::vector<std::size_t> no_match;       // kNoMatch: NCC with frame 0 no better than unrelated frames'
  std::vector<std::size_t> not_converged;  // kNotConverged (a warning; the frame is used)

  // Every failed frame, in order (each counted once).
  std::vector<std::size_t> failed() const;
  // More than half of frames 1..N-1 that still overlap frame 0 are
  // unusable, without a significant peak or without a significant match.
  bool most_failed() const;
  // One line per reason that has frames ("3 frame(s) ...: excluded from the
  // average (frames 4, 9-11)").
  std::vector<std::string> warnings() const;
  // The run's one-line error when most_failed().
  std::string failure_message(const std::string& input) const;
  // report.json's "registration" block: counts and frames per reason.
  nlohmann::json to_json() const;
};

// Each failed frame under its first reason in the order above.
RegistrationFailures classify_failures(const std::vector<Registration>& registrations);
// The same for a block of a series of `frames` frames whose first record is
// frame `first_frame` (a rank's share; the blocks' lists, concatenated in
// frame order, are the whole series').
RegistrationFailures classify_failures(const std::vector<Registration>& block, std::size_t first_frame,
                                       std::size_t frames);

// "3, 7-9, 12" (runs as ranges), at most `max_items` items then ", ... (N in all)".
std::string compact_frame_list(const std::vector<std::size_t>& frames, std::size_t max_items = 20);

}  // namespace driftscan
