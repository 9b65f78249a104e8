#pragma once
// Checkpoints of a long registration: the completed pair elements and the
// completed prefix of the scan, saved every checkpoint_interval_s seconds
// (when cancelled, and once the scan is complete) to
// <output>/checkpoint.dsck, atomically (temporary name, then rename).
// `--resume` loads it and continues (a complete scan: straight to the
// uncertainty); because pairs and the sequential scan are deterministic, the
// result equals an uninterrupted run. The file is removed once the outputs
// are committed.
//
// Format: one JSON line (magic, fingerprint of input and settings, counts),
// then the elements and the scan prefix as Registration::to_bytes() records,
// then (count "uncertainty", absent in older files) per-frame uncertainties.
#include <chrono>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "driftscan/job/job.hpp"
#include "driftscan/pipeline/register_pipeline.hpp"

namespace driftscan {

// bugprone-exception-escape: the implicit move operations move vectors and
// nlohmann::json, all noexcept; the check cannot see through json's assertions.
// NOLINTNEXTLINE(bugprone-exception-escape)
struct RegisterCheckpoint {
  nlohmann::json fingerprint;          // input, frames, size, registration settings
  std::vector<Registration> elements;  // e_0 .. e_{m-1} (a rank's file: any e_k, frame in `to`)
  std::vector<Registration> prefix;    // (0 -> k) for k < prefix.size() (a rank's file: any (0 -> k))
  // The drift uncertainty of frames once the scan is complete (its phase
  // follows the scan): (frame, uncertainty), any frames.
  std::vector<std::pair<std::uint64_t, DriftUncertainty>> uncertainty;
};

std::string checkpoint_path(const std::string& out_dir);
nlohmann::json checkpoint_fingerprint(const Job& job, const FrameSource& frames);
// A checkpoint fits a run when input, frame size and registration settings
// agree and it covers no more frames than the series has now: a series that
// grew since (frames appended, as `register --follow` sees them) is extended.
bool fingerprint_fits(const nlohmann::json& stored, const nlohmann::json& expected);
// Records saved after a checkpoint's own, read where their owner holds
// them (a rank's scan tables) instead of copied into it.
struct CheckpointAdditions {
  std::vector<const Registration*> elements, prefix;
  std::size_t uncertainty_first = 0;                           // the frame of (*uncertainty)[0]
  const std::vector<DriftUncertainty>* uncertainty = nullptr;  // frames uncertainty_first..
};
// Atomic. `more`: saved after c's elements, prefix and uncertainty.
void save_checkpoint(const RegisterCheckpoint& c, const std::string& path, const CheckpointAdditions* more = nullptr);
// Any checkpoint file, serial or a rank's, as stored. Throws bad_input when
// the file is corrupt or made for another input/settings.
RegisterCheckpoint read_checkpoint_file(const std::string& path, const nlohmann::json& expected_fingerprint);
// The serial checkpoint: read_checkpoint_file, and its records in frame order.
RegisterCheckpoint load_checkpoint(const std::string& path, const nlohmann::json& expected_fingerprint);

}  // namespace driftscan
