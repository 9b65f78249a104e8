#pragma once
// Frame contributions (scan_distortion.hpp, FrameContribution) that do not fit
// the kept-contribution memory budget, written to an unlinked temporary file
// and read back, bit for bit, when a frame's leave-one-out template needs
// them. On 4096^2 frames a contribution is ~70 MB, so the default 128 MB
// budget kept one frame and every other frame was sampled into specimen
// coordinates twice a round (five samplings a frame in a default run instead
// of three); reading 70 MB back costs a few hundredths of a second, sampling
// it again ~0.5 s. The file lives in TMPDIR (else /tmp): on disk it is no
// memory of the process; on a tmpfs it is memory outside the budget.
#include <cstddef>
#include <cstdint>
#include <memory>

namespace driftscan {

class ContributionSpill {
 public:
  // A new spill file, already unlinked (it goes when the last holder closes
  // it, a crashed run included); null when none can be made.
  static std::shared_ptr<ContributionSpill> open();
  ~ContributionSpill();
  ContributionSpill(const ContributionSpill&) = delete;
  ContributionSpill& operator=(const ContributionSpill&) = delete;

  // Appends n floats; false (nothing usable written) when they do not fit
  // the file system with 1 GiB to spare, or the write fails.
  bool write(const float* values, std::size_t n, std::uint64_t& offset);
  // The n floats written at offset; false on a short or failed read. Safe
  // from several threads at once (positioned reads).
  bool read(std::uint64_t offset, float* values, std::size_t n) const;

 private:
  explicit ContributionSpill(int fd) : fd_(fd) {}
  int fd_ = -1;
  std::uint64_t end_ = 0;
};

}  // namespace driftscan
