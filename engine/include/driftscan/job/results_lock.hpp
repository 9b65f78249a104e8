#pragma once
// One run at a time in a results folder. A run holds an exclusive lock on
// `DIR/.driftscan.lock` for its whole life (OutputSet takes it when it opens
// the folder; `register --follow` when it starts); a second run into the
// same folder is refused at once (bad_input, one line naming the folder and
// the run that holds it: host, pid, start time, read from the file).
//
// The lock is an open-file-description lock (fcntl F_OFD_SETLK, a classic
// F_SETLK on kernels without it) on the whole file: the kernel drops it
// when the run's process ends in any way, kill -9 included, so a killed run
// leaves at most the file itself, which blocks nobody. It is a byte-range
// lock like fcntl's, which NFSv4 (and NFSv3 with lockd) carry to the server,
// where flock(2) is local to a host on some systems; unlike a classic
// fcntl lock it belongs to the open file, not the process, so it conflicts
// within one process too and is not dropped when another descriptor of the
// file is closed. A released lock removes its file (a run that ends, fails
// or is cancelled leaves no trace); a file left by a killed run is taken
// over by the next run.
//
// When the folder cannot be locked at all (a filesystem without locks: NFS
// without lockd, ENOLCK), the run goes on unlocked and warning() says so;
// a folder where the file cannot be created is left to fail on its first
// output, as before.
#include <memory>
#include <string>

namespace driftscan {

// The lock file's name in a results folder: hidden, neither an output name
// nor a temporary of one.
inline constexpr const char* kResultsLockName = ".driftscan.lock";

class ResultsLock {
 public:
  // Locks `folder` (an existing folder) for a run of `command`. Throws
  // bad_input when another run holds it: "results folder DIR is in use by a
  // register run started 05:40:12 on host h (pid 1234); wait for it or
  // choose another --out".
  static std::shared_ptr<ResultsLock> acquire(const std::string& folder, const std::string& command);
  ~ResultsLock();  // removes the file (when it is still this lock's) and releases the lock
  ResultsLock(const ResultsLock&) = delete;
  ResultsLock& operator=(const ResultsLock&) = delete;

  const std::string& folder() const { return folder_; }
  bool held() const { return fd_ >= 0; }
  // Empty when held; else why the folder is not locked (to be logged as a warning).
  const std::string& warning() const { return warning_; }

 private:
  ResultsLock(std::string folder, int fd, std::string warning);
  std::string folder_;
  int fd_ = -1;
  std::string warning_;
};

// Who holds `folder`'s lock ("a register run started 05:40:12 on host h
// (pid 1234)"), or "" when nobody does. For a reader that wants to say a
// folder is being written (reading it meanwhile is fine).
std::string results_folder_holder(const std::string& folder);

}  // namespace driftscan
