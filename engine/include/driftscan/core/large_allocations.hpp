#pragma once
// Large buffers (frames, pyramids, FFT scratch, averaging grids) reused from
// the heap instead of each being a fresh mmap: glibc maps every block above
// its mmap threshold afresh and unmaps it on free, so on 2048^2 frames and
// up every such allocation page-faulted and zeroed its pages again (a fifth
// of a register run's CPU at 2048^2). Freed memory is kept for
// the next block of the same size; the peak stays what the run needs. On
// Linux the heap is also advised for transparent huge pages (where the
// system gives them on request), ~2 GB of it reserved as address space so
// that the advice covers what the run will use.
// Process-wide; called once by a program (driftscan-engine's main), before
// its threads start.
namespace driftscan {

void reuse_large_allocations();

// Returns the heap's free pages to the system (their addresses stay the
// heap's): between phases whose blocks differ in size (the registration's
// pyramids, then the scan-distortion correction's grids), the first phase's
// freed blocks would stay resident beside the next one's, which they do not fit.
// The heap's range is then reserved and advised again (the trim shrank it).
void release_free_memory();

}  // namespace driftscan
