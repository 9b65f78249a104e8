#pragma once
// Checkpoints of a registration on several ranks, and what a `--resume` with
// any number of ranks has left to do.
//
// Every rank saves what it holds to <output>/checkpoint.rank-<r>.dsck, in the
// serial checkpoint's format (register_checkpoint.hpp) but sparse: pair
// elements e_k and final scan outputs (0 -> k), each record naming its frame
// in `to`. Written atomically (temporary name, then rename) every
// checkpoint_interval_s, when cancelled, and once the scan has finished (so
// a resume after a later interruption does not scan again). On --resume every rank reads and
// merges every checkpoint file of the folder, the serial checkpoint.dsck
// included (they are small: ~100 bytes per frame), so the rank count may
// change between runs; files of another input or other settings are refused.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "driftscan/registration/drift_uncertainty.hpp"
#include "driftscan/registration/registration_operator.hpp"

namespace driftscan {

// What the checkpoints of a folder say, frame by frame.
struct CheckpointState {
  std::vector<std::optional<Registration>> elements;         // e_k, when known
  std::vector<std::optional<Registration>> outputs;          // (0 -> k), when known
  std::vector<std::optional<DriftUncertainty>> uncertainty;  // frame k's, when known
  std::size_t files = 0;                                     // checkpoint files read

  explicit CheckpointState(std::size_t frames = 0) : elements(frames), outputs(frames), uncertainty(frames) {}
  std::size_t element_count() const;
  std::size_t output_count() const;
};

std::string rank_checkpoint_path(const std::string& out_dir, int rank);
// checkpoint.dsck and checkpoint.rank-<r>.dsck of `out_dir`, sorted by name
// (temporaries of an interrupted write are not checkpoints).
std::vector<std::string> checkpoint_files(const std::string& out_dir);
// Reads and merges every checkpoint file of `out_dir`; a frame known from
// several files takes the first file's record. Throws bad_input naming the
// file when one is corrupt, holds a record that does not fit the series, or
// was made for another input or other registration settings.
CheckpointState load_checkpoints(const std::string& out_dir, const nlohmann::json& fingerprint, std::size_t frames);
// Removes every checkpoint file of `out_dir`, and temporaries left by a kill.
void remove_checkpoints(const std::string& out_dir);
// The same, but the serial checkpoint.dsck (and its temporaries) stay: the
// follow's, which a batch run over the followed frames must not take away.
void remove_rank_checkpoints(const std::string& out_dir);

// A maximal run of frames whose scan output is unknown: outputs first..last.
// (0 -> first-1) is known when first > 0, so the run can be finished as a
// chain (0 -> k) = (0 -> k-1) (+) e_k, or scanned from that prefix.
struct OutputGap {
  std::size_t first = 0, last = 0;  // inclusive
  std::size_t size() const { return last - first + 1; }
};
std::vector<OutputGap> missing_outputs(const std::vector<std::optional<Registration>>& outputs);

// Which of `workers` workers finishes each gap: longest first onto the least
// loaded (ties to the lowest worker), so every rank computes the same plan.
std::vector<int> assign_gaps(const std::vector<OutputGap>& gaps, int workers);

}  // namespace driftscan
