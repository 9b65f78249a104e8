#pragma once
// Checks a job against the host it runs on before any frame is read, on
// every rank: what would otherwise crash (OpenMP with 100,000 threads), fail
// only after the scan (an unwritable or full results folder) or pass
// silently (excluded frames that do not exist, --resume with nothing to
// resume). Settings errors name the setting or the path and the reason.
#include "driftscan/job/job.hpp"
#include "driftscan/mpi/runtime/command.hpp"

namespace driftscan::mpi {

// Threads per rank allowed per core of the host: beyond it a run only
// thrashes, and far beyond it the OpenMP runtime itself fails.
constexpr int kThreadsPerCore = 4;

// Collective over ctx.comm: every rank throws the same bad_input Error when
// any rank's check fails (exit 2); warnings go to ctx.progress on rank 0.
void preflight(const Job& job, RunContext& ctx);

}  // namespace driftscan::mpi
