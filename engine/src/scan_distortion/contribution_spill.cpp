#include "driftscan/scan_distortion/contribution_spill.hpp"

#include <cstdlib>
#include <string>
#include <vector>

#if defined(__unix__) || defined(__APPLE__)
#include <sys/statvfs.h>
#include <unistd.h>
#define DRIFTSCAN_CONTRIBUTION_SPILL 1
#endif

namespace driftscan {

#if defined(DRIFTSCAN_CONTRIBUTION_SPILL)

std::shared_ptr<ContributionSpill> ContributionSpill::open() {
  const char* dir = std::getenv("TMPDIR");
  std::string path = std::string(dir && *dir ? dir : "/tmp") + "/driftscan-contributions-XXXXXX";
  std::vector<char> name(path.begin(), path.end());
  name.push_back('\0');
  const int fd = mkstemp(name.data());
  if (fd < 0) return nullptr;
  unlink(name.data());  // only the descriptor names it from now on
  return std::shared_ptr<ContributionSpill>(new ContributionSpill(fd));
}

ContributionSpill::~ContributionSpill() {
  if (fd_ >= 0) close(fd_);
}

bool ContributionSpill::write(const float* values, std::size_t n, std::uint64_t& offset) {
  const std::size_t bytes = n * sizeof(float);
  struct statvfs fs {};
  constexpr std::uint64_t kSpare = std::uint64_t{1} << 30;  // the run's outputs and everyone else's
  if (fstatvfs(fd_, &fs) != 0 || static_cast<std::uint64_t>(fs.f_bavail) * fs.f_frsize < bytes + kSpare) return false;
  const char* p = reinterpret_cast<const char*>(values);
  std::size_t done = 0;
  while (done < bytes) {
    const ssize_t w = pwrite(fd_, p + done, bytes - done, static_cast<off_t>(end_ + done));
    if (w <= 0) return false;  // the partial record is past end_: overwritten by the next write
    done += static_cast<std::size_t>(w);
  }
  offset = end_;
  end_ += bytes;
  return true;
}

bool ContributionSpill::read(std::uint64_t offset, float* values, std::size_t n) const {
  const std::size_t bytes = n * sizeof(float);
  char* p = reinterpret_cast<char*>(values);
  std::size_t done = 0;
  while (done < bytes) {
    const ssize_t r = pread(fd_, p + done, bytes - done, static_cast<off_t>(offset + done));
    if (r <= 0) return false;
    done += static_cast<std::size_t>(r);
  }
  return true;
}

#else  // no positioned file I/O: nothing is spilled (frames beyond the budget are sampled again)

std::shared_ptr<ContributionSpill> ContributionSpill::open() { return nullptr; }
ContributionSpill::~ContributionSpill() = default;
bool ContributionSpill::write(const float*, std::size_t, std::uint64_t&) { return false; }
bool ContributionSpill::read(std::uint64_t, float*, std::size_t) const { return false; }

#endif

}  // namespace driftscan
