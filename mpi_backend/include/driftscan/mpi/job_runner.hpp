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

#include "driftscan/error.hpp"
#include "driftscan/frame_source.hpp"
#include "driftscan/job.hpp"
#include "driftscan/mpi/command.hpp"
#include "driftscan/output_set.hpp"

namespace driftscan::mpi {

// Collective over ctx.comm. Emits start/phase/result events on ctx.progress
// (rank 0) and returns 0; throws driftscan::Error on bad input, failure or
// cancellation.
int run_job(const Job& job, RunContext& ctx);

// The job's input series, decoded on demand through a cache of
// execution.frame_cache_mb (each rank opens it and reads only what it needs).
// Any supported format (series_opener.hpp), the signal job.signal.
std::unique_ptr<FrameSource> open_job_input(const Job& job);

// The registration operator's cache of prepared frames (pyramids): a quarter
// of execution.frame_cache_mb, at most 256 MB. The scan reuses only a few
// prepared frames at a time (frame 0, each worker's segment start), so this
// holds plenty; a fixed 256 MB let it grow with the series up to that size.
std::size_t prepared_cache_bytes(const Job& job);

// Whether this build can run `command` ("register", "average", "spectrum", "synth").
bool job_command_available(const std::string& command);

// This host's name, for the lines that say where something happened.
std::string host_name();

// Where `synth` writes the series for a job's output: the path itself when it
// ends in .tif/.tiff, else <output>/series.tif.
std::string synth_series_path(const std::string& output);

// Waits until every rank has arrived, polling ctx.cancel meanwhile: the
// ranks that have nothing to do while rank 0 writes wait here, and still stop
// within the cancel deadline. Throws Error(cancelled) when cancelled.
void cancellable_barrier(RunContext& ctx);

// Collective: when any rank's `local_error` is set (or its token cancelled),
// every rank throws the same driftscan::Error (kind and message of the lowest
// such rank; cancellation wins). For checks that only some ranks make (rank 0
// creating the results folder, a rank reading its own frames), so no rank is
// left waiting in a collective for one that has stopped.
void agree_on_outcome(RunContext& ctx, const Error* local_error);

// The results folder's OutputSet (output_set.hpp) on rank 0, the rank that
// writes; null on the others. Collective: a refused folder (another
// command's results there, an input among the outputs) stops every rank with
// the same error, before any work.
void open_output_set(const Job& job, RunContext& ctx, const std::vector<std::string>& inputs,
                     std::optional<OutputSet>& set);
// Collective: commits rank 0's set once every rank has got here (no rank
// failed or was cancelled); a failed commit fails every rank.
void commit_outputs(RunContext& ctx, std::optional<OutputSet>& set);

// report.json of a command other than register (average, spectrum): the
// command, the input, the job and the files of the set it completes.
void write_command_report(const std::string& path, const Job& job, const FrameSource& frames,
                          const nlohmann::json& files, const std::vector<std::string>& warnings);

// `average --lines lines.csv`: the series averaged in specimen coordinates
// with a --scan-distortion run's per-line drift and jitter (another detector
// recorded in the same scan), on rank 0. Writes average.tif, coverage.tif,
// report.json as one set.
int run_average_with_lines(const Job& job, RunContext& ctx);

}  // namespace driftscan::mpi
