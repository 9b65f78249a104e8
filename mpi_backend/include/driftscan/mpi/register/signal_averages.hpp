#pragma once
// register --apply-to: the drift found on one signal (detector) of a
// multi-signal file applied to the others recorded in the same acquisition —
// each averaged with the same transforms and the same averaging settings as
// `average --drift` would, one average_<name>.tif (and coverage_<name>.tif)
// per signal. Runs after the registration, from the drift.csv it wrote.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "driftscan/core/cancel_token.hpp"
#include "driftscan/core/progress.hpp"
#include "driftscan/job/job.hpp"
#include "driftscan/job/output_set.hpp"

namespace driftscan::mpi {

// The signals job.apply_to names ("a,b" or "all": every signal but the one
// registered), checked against the input before any work: an unknown name,
// or a signal whose frame count or size differs from the registered one, is
// bad input naming the file. Empty when apply_to is empty.
std::vector<std::string> apply_to_signals(const Job& job);

// Averages each signal with the drift.csv staged in `set` (this run's);
// stages average_<name>.tif and coverage_<name>.tif in it; returns
// {"average_<name>": final path, ...}.
nlohmann::json average_signals(const Job& job, const std::vector<std::string>& names, Progress& progress,
                               const CancelToken& cancel, OutputSet& set);

// The file-name form of a signal name: letters, digits, '-', '.' kept, the rest '_'.
std::string signal_file_name(const std::string& signal);

}  // namespace driftscan::mpi
