// Failed frames of a registration; see registration_failure.hpp.
#include "driftscan/registration/registration_failure.hpp"

#include <algorithm>

#include "driftscan/core/error.hpp"

namespace driftscan {

RegistrationFailures classify_failures(const std::vector<Registration>& registrations) {
  return classify_failures(registrations, 0, registrations.size());
}

RegistrationFailures classify_failures(const std::vector<Registration>& block, std::size_t first_frame,
                                       std::size_t frames) {
  RegistrationFailures f;
  f.frames = frames;
  for (std::size_t i = first_frame == 0 ? 1 : 0; i < block.size(); ++i) {  // frame 0 is the reference
    const std::size_t k = first_frame + i;
    const std::uint32_t flags = block[i].flags;
    if (flags & kBadFrame) f.unusable.push_back(k);
    else if (flags & kRefineFailed) f.no_overlap.push_back(k);
    else if (flags & kNoPeak) f.no_peak.push_back(k);
    else if (flags & kNoMatch) f.no_match.push_back(k);
    else if (flags & kNotConverged) f.not_converged.push_back(k);
  }
  return f;
}

std::vector<std::size_t> RegistrationFailures::failed() const {
  std::vector<std::size_t> all;
  for (const auto* v : {&unusable, &no_overlap, &no_peak, &no_match}) all.insert(all.end(), v->begin(), v->end());
  std::sort(all.begin(), all.end());
  return all;
}

bool RegistrationFailures::most_failed() const {
  // Frames that drifted out of frame 0's field registered (their drift is
  // the chain's) and are no sign of noise: the others decide.
  if (frames < 2 || no_overlap.size() >= frames - 1) return false;
  const std::size_t failed = unusable.size() + no_peak.size() + no_match.size();
  return 2 * failed > frames - 1 - no_overlap.size();
}

std::string compact_frame_list(const std::vector<std::size_t>& frames, std::size_t max_items) {
  std::string s;
  std::size_t items = 0, i = 0;
  while (i < frames.size()) {
    std::size_t j = i;
    while (j + 1 < frames.size() && frames[j + 1] == frames[j] + 1) ++j;
    if (items == max_items) {
      s += ", ... (" + std::to_string(frames.size()) + " in all)";
      break;
    }
    s += (items ? ", " : "") + std::to_string(frames[i]);
    if (j > i) s += (j == i + 1 ? ", " : "-") + std::to_string(frames[j]);
    ++items;
    i = j + 1;
  }
  return s;
}

std::vector<std::string> RegistrationFailures::warnings() const {
  std::vector<std::string> w;
  auto add = [&](const std::vector<std::size_t>& frames, const std::string& what, const char* consequence) {
    if (frames.empty()) return;
    w.push_back(std::to_string(frames.size()) + " frame(s) " + what + ": " + consequence + " (frames " +
                compact_frame_list(frames) + ")");
  };
  const char* excluded = "excluded from the average";
  add(unusable, "unusable (blank or non-finite pixels)", excluded);
  add(no_overlap, "could not be refined against frame 0 (no overlap or no contrast there)",
      "excluded from the average, drift is the chained pair estimate");
  add(no_peak,
      "without a significant correlation peak against the previous frame (no more than frames sharing no content "
      "give)",
      excluded);
  add(no_match, "whose NCC with frame 0 after refinement is indistinguishable from that of unrelated frames",
      "excluded from the average, drift is the chained guess");
  add(not_converged, "where the refinement stopped at max_iterations without converging", "still averaged");
  return w;
}

std::string RegistrationFailures::failure_message(const std::string& input) const {
  const std::size_t n = failed().size();
  return input + ": registration failed: " + std::to_string(n) + " of " + std::to_string(frames > 0 ? frames - 1 : 0) +
         " frames could not be registered against frame 0 (" + std::to_string(no_peak.size()) +
         " without a significant correlation peak, " + std::to_string(no_match.size()) +
         " matching no better than noise, " + std::to_string(unusable.size()) + " unusable, " +
         std::to_string(no_overlap.size()) +
         " without overlap): most frames share no structure with frame 0 (noise, or unrelated images); no average "
         "written (drift.csv flags each frame)";
}

nlohmann::json RegistrationFailures::to_json() const {
  return {{"frames_failed", failed().size()},
          {"most_frames_failed", most_failed()},
          {"unusable", unusable},
          {"no_overlap", no_overlap},
          {"no_peak", no_peak},
          {"no_match", no_match},
          {"not_converged", not_converged}};
}

}  // namespace driftscan
