#pragma once
// Runs a Job on every rank of a RunContext: the one place where a job's
// command meets the pipelines (synthetic series, registration, averaging,
// spectrum). A pipeline that has not been built into this program is
// reported as unavailable (driftscan::Error, failure) — never faked.
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "driftscan/core/error.hpp"
#include "driftscan/core/frame_source.hpp"
#include "driftscan/job/job.hpp"
#include "driftscan/job/output_set.hpp"
#include "driftscan/mpi/runtime/command.hpp"

namespace driftscan::mpi {

// Collective over ctx.comm. Emits start/phase/result events on ctx.progress
// (rank 0) and returns 0; throws driftscan::Error on bad input, failure or
// cancellation.
int run_job(const Job& job, RunContext& ctx);

// Whether this build can run `command` ("register", "average", "spectrum", "synth").
bool job_command_available(const std::string& command);

// `average --lines lines.csv`: the series averaged in specimen coordinates
// with a --scan-distortion run's per-line drift and jitter (another detector
// recorded in the same scan), on rank 0. Writes average.tif, coverage.tif,
// report.json as one set.
int run_average_with_lines(const Job& job, RunContext& ctx);

}  // namespace driftscan::mpi
