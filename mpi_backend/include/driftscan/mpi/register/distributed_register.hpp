#pragma once
// `register` over MPI ranks × OpenMP threads: the serial pipeline's phases
// (register_pipeline.hpp) with the scan replaced by the hierarchical
// work-stealing scan (work_stealing_scan.hpp).
//   pairs   — each rank computes e_k for its own block of frames (it reads
//             those frames and the one before its block);
//   scan    — WorkStealingScan over all ranks; a rank reads the few frames
//             beyond its block that the operator asks for (frame 0 and the
//             ends of other blocks in the global phase) on demand;
//   uncertainty — each rank its own block of frames (the block it keeps
//             from here on: distributed_drift.hpp);
//   average — every rank averages its own frames (distributed_average.hpp)
//             with every frame's transform;
//   write   — rank 0 writes drift.csv from every rank's rows, gathered in
//             chunks, then average.tif, coverage.tif and report.json (with
//             the scan trace the app's load-balance view draws).
// Checkpoints: every rank saves its completed pair elements and scan outputs
// (distributed_checkpoint.hpp); --resume with any rank count recomputes only
// the missing pairs and finishes the scan from the known outputs.
#include "driftscan/job/job.hpp"
#include "driftscan/mpi/runtime/command.hpp"
#include "driftscan/pipeline/register_pipeline.hpp"

namespace driftscan::mpi {

// What register_distributed returns on each rank: from the scan on, a rank
// holds only its own block of frames' records (distributed_drift.hpp).
struct DistributedRegisterResult {
  // files, average, warnings: filled on rank 0; registrations and
  // uncertainty are empty (drift.csv has them: a rank keeps only a compact
  // copy of its own frames' until it is written).
  RegisterResult result;
  std::size_t frames = 0;          // of the series
  UncertaintySummary uncertainty;  // of every frame, on every rank
};

// Collective over ctx.comm. Rank 0 stages the outputs in `set` (null on
// the other ranks); the caller commits it. Once the scan is done every
// rank's checkpoint holds its share of it (when checkpoints are on): a
// --resume after an interruption in a later phase skips the pairs and the
// scan and has the same drift. `first_frames` > 0: the series' first frames
// only (a follow's, registered again with the scan-distortion correction).
DistributedRegisterResult register_distributed(const Job& job, RunContext& ctx, OutputSet* set,
                                               std::size_t first_frames = 0);

}  // namespace driftscan::mpi
