#pragma once
// Averaging shared by a team of processes (the ranks of an MPI run): member r
// of `size` warps and accumulates only its own block of frames (own_frames),
// and for the median only its own band of output rows (own_rows), reading
// only the rows of each frame that map into it. What the members must share
// — the per-pixel sums, the per-frame facts that decide which frames are
// used, the median's bands — goes through these collectives, so every
// member ends with the same AverageResult. The engine knows no MPI: the
// MPI backend implements the team (mpi/distributed_average.hpp); a null team
// is the serial average.
#include <cstddef>
#include <exception>
#include <string>
#include <vector>

namespace driftscan {

class AveragingTeam {
 public:
  virtual ~AveragingTeam() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Element-wise sum over the members, the result on every member, in the
  // same order whatever the rank that calls (deterministic).
  virtual void sum(std::vector<double>& values) const = 0;
  // Collective, after every step that may fail on some members only: when
  // any member's `error` is set, every member throws the same error (the
  // lowest failing member's, naming it and its host); otherwise returns.
  virtual void agree(const std::exception_ptr& error) const = 0;

  // Frames [first, last) of n are this member's (contiguous blocks: each
  // member reads its own stretch of the file).
  void own_frames(std::size_t n, std::size_t& first, std::size_t& last) const {
    first = n * static_cast<std::size_t>(rank()) / static_cast<std::size_t>(size());
    last = n * (static_cast<std::size_t>(rank()) + 1) / static_cast<std::size_t>(size());
  }
  // Output rows [first, last) of `height` are this member's (the median).
  void own_rows(int height, int& first, int& last) const {
    first = static_cast<int>(static_cast<long>(height) * rank() / size());
    last = static_cast<int>(static_cast<long>(height) * (rank() + 1) / size());
  }
};

}  // namespace driftscan
