#pragma once
// The scan's trace (registration/scan_trace.hpp) over ranks: begun on every
// rank right after a barrier, so that all ranks' clocks share a zero, and
// gathered to rank 0, which then holds every rank's records.
#include <mpi.h>

#include "driftscan/registration/scan_trace.hpp"

namespace driftscan::mpi {

using driftscan::CriticalStep;
using driftscan::ScanClock;
using driftscan::ScanPhase;
using driftscan::ScanRecord;
using driftscan::ScanSummary;
using driftscan::ScanTrace;
using driftscan::WorkerLoad;

// Collective: starts `trace` on every rank of `comm` with `threads` workers each.
void begin_trace(ScanTrace& trace, MPI_Comm comm, int threads);

// Collective: brings every rank's records to rank 0 (other ranks keep only
// their own). Call after trace.end() on every rank.
void gather_trace(ScanTrace& trace, MPI_Comm comm);

}  // namespace driftscan::mpi
