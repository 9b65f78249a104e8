#pragma once
// `register --follow`: registering a series while it is written (live
// acquisition). Frames are taken as they complete (growing_series.hpp); each
// new frame k is paired with k-1 and the scan's prefix is extended by one
// application of the scan operator,
//     (0 -> k) = refine((0 -> k-1) o (k-1 -> k))   against frame 0,
// exactly the step of the sequential scan a one-rank batch run makes. Its
// drift row is appended to drift.csv (the batch file's columns; quality 0
// until the end) and a `frame` event emitted; a running mean in frame 0's
// coordinates is kept and average.tif rewritten (atomically) at most every
// follow.average_every_frames frames or follow.average_every_s seconds.
// Memory stays flat: frame 0 (with its prepared pyramid), the previous frame
// and the running sums, plus ~200 bytes of results per frame.
//
// The follow ends after follow.until_frames frames, when no frame has
// completed for follow.idle_timeout_s, or on a first cancel request (SIGINT /
// SIGTERM); then the batch pipeline's last phases run over the frames taken
// (the average re-reads them, streamed) and write the same files as a batch
// `register` over those frames — drift identical to a one-rank run, the
// average too. A second cancel request during that finish cancels (exit 4).
// The checkpoint (checkpoint.dsck) is kept at the end, so `--resume` of a
// series that has grown since extends the result.
//
// When the followed file is deleted, replaced or truncated (or the folder
// removed), the run stops with a failure naming it; drift.csv, the running
// average.tif and the checkpoint of the frames so far are kept (no
// report.json: the folder does not look complete).
#include "driftscan/job/job.hpp"
#include "driftscan/mpi/runtime/command.hpp"
#include "driftscan/pipeline/register_pipeline.hpp"

namespace driftscan::mpi {

struct FollowResult {
  RegisterResult result;
  std::size_t frames = 0;           // frames registered
  std::size_t resumed = 0;          // of which taken from a checkpoint
  std::string stopped_by;           // "until_frames", "idle_timeout" or "cancel"
  std::size_t logged_warnings = 0;  // result.warnings[0, this) were logged as they happened
};

// On the calling rank only. Throws Error: bad_input (input not a TIFF, fewer
// than 2 frames when the follow ends, frame 0 unusable), failure (the
// followed file deleted...), cancelled (a second cancel request).
FollowResult follow_register(const Job& job, Progress& progress, const CancelToken& cancel);

}  // namespace driftscan::mpi
