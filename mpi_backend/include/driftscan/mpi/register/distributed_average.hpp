#pragma once
// The engine's AveragingTeam over MPI ranks: the average of a registered
// series shared by every rank of a communicator (each rank warps and
// accumulates its own block of frames; the median, its own band of output
// rows), the partial sums combined with reductions, the same result on every
// rank. A rank that fails (a frame it cannot read, memory) makes every rank
// throw the same error, naming that rank and its host.
#include <mpi.h>

#include <exception>
#include <string>
#include <vector>

#include "driftscan/averaging/averaging.hpp"
#include "driftscan/averaging/averaging_team.hpp"

namespace driftscan::mpi {

class MpiAveragingTeam : public AveragingTeam {
 public:
  explicit MpiAveragingTeam(MPI_Comm comm);
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  // Allreduce (sum) in chunks below 2^31 elements, waiting without burning a core.
  void sum(std::vector<double>& values) const override;
  // An error on any rank: every rank throws driftscan::Error with the lowest
  // failing rank's kind and message, prefixed "rank R on HOST: " (a
  // cancellation wins and is thrown as it is).
  void agree(const std::exception_ptr& error) const override;

 private:
  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  std::string host_;
};

// average_series over the ranks of `comm` (collective): every rank returns
// the whole result.
AverageResult average_distributed(MPI_Comm comm, const FrameSource& frames, const std::vector<Transform>& transforms,
                                  const AveragingOptions& options, Progress* progress, const CancelToken* cancel);

}  // namespace driftscan::mpi
