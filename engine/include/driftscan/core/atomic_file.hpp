#pragma once
// Writing a file so that nobody ever sees it half written: the data go to a
// temporary beside the target and commit() renames it over the target. Every
// writer of the project goes through this class, so there is one rule for
// temporaries: `DIR/.NAME.tmp-PID-N` —
//   - in the target's folder, so the rename never crosses file systems;
//   - hidden, so folder listings, folder-of-TIFFs series and `*.tif` globs
//     never pick up a file being written;
//   - PID and a process-wide counter, so concurrent writers never share one.
// A writer destroyed before commit() (an exception, a cancelled run) removes
// its temporary. Errors are driftscan::Error (failure) naming the target and
// the reason: "PATH: cannot write WHAT (reason)".
//
//   AtomicFile out(path, "job file");
//   out.stream() << text;       // or pwrite(out.fd(), ...), or write out.temporary_path() by name
//   out.commit();               // flush, fsync, close, rename
#include <memory>
#include <ostream>
#include <string>

namespace driftscan {

// The temporary name for `path` (the rule above, a new one at each call);
// OutputSet stages a run's outputs under such names too.
std::string temporary_path_for(const std::string& path);

class AtomicFile {
 public:
  // Creates the temporary (exclusively). `what` names the file in errors.
  explicit AtomicFile(std::string path, std::string what = "file");
  ~AtomicFile();  // removes the temporary unless commit() succeeded
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // A buffered stream writing to the temporary (binary: no newline translation).
  std::ostream& stream();
  // The temporary's descriptor, for pwrite(); do not close it.
  int fd() const;

  // Flushes the stream, syncs the data to disk, closes and renames the
  // temporary into place. Throws on any failure (the temporary is removed
  // by the destructor then). Calling it again after success does nothing.
  void commit();
  bool committed() const;

  const std::string& path() const;
  const std::string& temporary_path() const;
  // Throws failure "PATH: cannot write WHAT (reason)".
  [[noreturn]] void fail(const std::string& reason) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace driftscan
