#pragma once
// Steps every rank takes together so that no rank is left waiting in a
// collective for one that has stopped: a barrier that still sees a cancel, one
// outcome agreed by all, and the results folder opened and committed as one.
#include <mpi.h>

#include <optional>
#include <string>
#include <vector>

#include "driftscan/core/error.hpp"
#include "driftscan/job/job.hpp"
#include "driftscan/job/output_set.hpp"
#include "driftscan/mpi/runtime/command.hpp"

namespace driftscan::mpi {

// Collective: if any rank reports a failure, every rank throws the same
// driftscan::Error — the one of the lowest failing rank, prefixed by its rank.
void agree_on_failure(MPI_Comm comm, bool failed, ErrorKind kind, const std::string& message);

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
// writes; null on the others. Collective: a refused folder (another run
// writing it now, another command's results there, an input among the
// outputs) stops every rank with the same error, before any work. Only rank
// 0 locks the folder, for as long as `set` lives.
void open_output_set(const Job& job, RunContext& ctx, const std::vector<std::string>& inputs,
                     std::optional<OutputSet>& set);
// Collective: commits rank 0's set once every rank has got here (no rank
// failed or was cancelled); a failed commit fails every rank.
void commit_outputs(RunContext& ctx, std::optional<OutputSet>& set);

}  // namespace driftscan::mpi
