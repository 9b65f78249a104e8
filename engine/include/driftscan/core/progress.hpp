#pragma once
// Progress events: the one stream the terminal, the desktop app, the launcher
// and cluster runs all consume. The JSON form (one object per line) is the
// protocol, documented in docs/protocol.md:
//   {"event":"start","command":...,"version":...}
//   {"event":"progress","phase":...,"done":k,"total":n,"elapsed_s":..,"eta_s":..}
//   {"event":"log","level":"info|warning","message":...}
//   {"event":"result","files":{...}}
//   {"event":"error","message":...,"code":N}
//   {"event":"cancelled"}
//   {"event":"frame","frame":k,"dx":..,"dy":..,...}   (register --follow)
// All methods are thread-safe; progress lines are rate-limited.
#include <cstddef>
#include <iosfwd>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

namespace driftscan {

enum class LogLevel { info, warning };

class Progress {
 public:
  virtual ~Progress() = default;
  virtual void start(const std::string& command, const nlohmann::json& details) = 0;
  // Starts a phase of `total` units (frames, operator applications, ...).
  virtual void phase(const std::string& name, std::size_t total) = 0;
  // Reports that `done` units of the current phase are complete (absolute).
  virtual void advance(std::size_t done) = 0;
  virtual void log(LogLevel level, const std::string& message) = 0;
  virtual void result(const nlohmann::json& files) = 0;
  virtual void error(const std::string& message, int code) = 0;
  virtual void cancelled() = 0;
  // One frame registered while a series is followed (`register --follow`):
  // the JSON form writes {"event":"frame", ...fields} for every frame (not
  // rate-limited); the others show the `follow` phase's progress instead.
  virtual void frame(const nlohmann::json& fields) { (void)fields; }
};

// JSON lines on `out` (the machine protocol, `--progress json`).
std::unique_ptr<Progress> make_json_progress(std::ostream& out);
// A bar with phase and ETA, redrawn in place (`--progress bar`, the default on a TTY).
std::unique_ptr<Progress> make_terminal_progress(std::ostream& out);
// Plain log lines, no bar (`--progress plain`, the default when not on a TTY).
std::unique_ptr<Progress> make_plain_progress(std::ostream& out);
// Discards everything (tests, non-root ranks).
std::unique_ptr<Progress> make_silent_progress();

}  // namespace driftscan
