#pragma once
// One exception type for everything the user can cause or must be told about.
// what() is a single line that names the file (and frame, host or rank)
// concerned. The kind maps to the documented exit codes of driftscan-engine.
#include <sstream>
#include <stdexcept>
#include <string>

namespace driftscan {

enum class ErrorKind {
  bad_input = 2,  // missing/corrupt/unsupported input, bad usage or settings
  failure = 3,    // something failed during the run (a rank died, I/O error on output)
  cancelled = 4,  // SIGINT/SIGTERM or a cancel request
  // register: most frames could not be registered (no common structure with
  // frame 0: noise, unrelated images); drift.csv and report.json say which,
  // and no average is written
  registration_failed = 5,
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }
  int exit_code() const { return static_cast<int>(kind_); }

 private:
  ErrorKind kind_;
};

inline Error bad_input(const std::string& message) { return Error(ErrorKind::bad_input, message); }
inline Error failure(const std::string& message) { return Error(ErrorKind::failure, message); }

// A number as a one-line message spells it: shortest form (0.5, 1e-06, inf).
inline std::string message_number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

}  // namespace driftscan
