#pragma once
// A child process with its stdout and stderr read line by line, never
// blocking the caller for longer than asked: the launcher's thread follows
// a job, watches the cancel flag and enforces timeouts with one poll() loop.
// The child leads its own process group, so a signal reaches mpirun and the
// ranks it forked.
#include <sys/types.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace driftscan::launch {

class Subprocess {
 public:
  using LineHandler = std::function<void(const std::string& line)>;

  // Starts argv[0] (searched on PATH) with `env` added to this process's
  // environment. Throws driftscan::Error (failure) when it cannot start.
  Subprocess(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {},
             const std::string& stdin_text = "");
  ~Subprocess();  // kills the group if still running
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  // Reads what is available (waiting at most timeout_ms) and hands complete
  // lines to the handlers. Returns false once the child has exited and both
  // pipes are drained.
  bool pump(int timeout_ms, const LineHandler& out, const LineHandler& err);
  bool running();
  void signal_group(int sig);
  void send_signal(int sig);  // the child only
  // Exit code: the child's, or 128 + signal when it was killed.
  int wait();
  pid_t pid() const { return pid_; }

 private:
  void read_fd(int& fd, std::string& buffer, const LineHandler& handler);
  pid_t pid_ = -1;
  int out_fd_ = -1, err_fd_ = -1;
  std::string out_buf_, err_buf_;
  bool reaped_ = false;
  int status_ = 0;
};

struct CommandOutput {
  int exit_code = -1;
  bool timed_out = false;
  std::string out, err;
};

// Runs a short command to completion, killing it after timeout_s.
CommandOutput run_command(const std::vector<std::string>& argv, double timeout_s, const std::string& stdin_text = "");

// Quotes one word for a POSIX shell.
std::string shell_quote(const std::string& s);
std::string shell_join(const std::vector<std::string>& argv);

}  // namespace driftscan::launch
