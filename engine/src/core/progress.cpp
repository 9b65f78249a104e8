#include "driftscan/core/progress.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <mutex>
#include <ostream>
#include <set>
#include <sstream>

namespace driftscan {
namespace {

using Clock = std::chrono::steady_clock;

// Shared bookkeeping: current phase, counts, timing, ETA, rate limiting.
class ProgressBase : public Progress {
 public:
  void start(const std::string& command, const nlohmann::json& details) override {
    std::lock_guard<std::mutex> lock(mu_);
    on_start(command, details);
  }
  void phase(const std::string& name, std::size_t total) override {
    std::lock_guard<std::mutex> lock(mu_);
    finish_phase_locked();
    phase_ = name;
    total_ = total;
    done_ = 0;
    phase_start_ = Clock::now();
    last_emit_ = Clock::time_point{};
    completed_ = false;
    emit_progress_locked(true);
  }
  void advance(std::size_t done) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (done > done_) done_ = done;
    // Work that outgrew its estimate raises the total with it: done never
    // exceeds total and the ETA stays finite (it was total - done unsigned).
    if (done_ > total_) total_ = done_;
    // Reaching the total passes the rate limit once, not on every later event.
    const bool reached = !completed_ && done_ >= total_;
    completed_ = completed_ || reached;
    emit_progress_locked(reached);
  }
  void log(LogLevel level, const std::string& message) override {
    std::lock_guard<std::mutex> lock(mu_);
    // A warning is said once per run: the pipelines say each as it happens
    // and also keep it for report.json, and the end-of-run summary repeats
    // the kept ones (it used to print every warning twice).
    if (level == LogLevel::warning && !warned_.insert(message).second) return;
    on_log(level, message);
  }
  void result(const nlohmann::json& files) override {
    std::lock_guard<std::mutex> lock(mu_);
    finish_phase_locked();
    on_result(files);
  }
  void error(const std::string& message, int code) override {
    std::lock_guard<std::mutex> lock(mu_);
    finish_phase_locked();
    on_error(message, code);
  }
  void cancelled() override {
    std::lock_guard<std::mutex> lock(mu_);
    finish_phase_locked();
    on_cancelled();
  }
  void frame(const nlohmann::json& fields) override {
    std::lock_guard<std::mutex> lock(mu_);
    on_frame(fields);
  }

 protected:
  virtual void on_start(const std::string& command, const nlohmann::json& details) = 0;
  virtual void on_progress(bool final_update) = 0;
  virtual void on_phase_end() {}
  virtual void on_log(LogLevel level, const std::string& message) = 0;
  virtual void on_result(const nlohmann::json& files) = 0;
  virtual void on_error(const std::string& message, int code) = 0;
  virtual void on_cancelled() = 0;
  virtual void on_frame(const nlohmann::json&) {}

  double elapsed_s() const { return std::chrono::duration<double>(Clock::now() - phase_start_).count(); }
  // Linear extrapolation of the phase's rate; negative when unknown.
  double eta_s() const {
    if (done_ == 0 || total_ == 0) return -1.0;
    return elapsed_s() * static_cast<double>(total_ - done_) / static_cast<double>(done_);
  }

  std::string phase_;
  std::size_t total_ = 0;
  std::size_t done_ = 0;

 private:
  void emit_progress_locked(bool force) {
    auto now = Clock::now();
    if (!force && now - last_emit_ < std::chrono::milliseconds(200)) return;
    last_emit_ = now;
    on_progress(force);
  }
  void finish_phase_locked() {
    if (!phase_.empty()) on_phase_end();
    phase_.clear();
  }

  std::mutex mu_;
  std::set<std::string> warned_;  // warnings said so far
  Clock::time_point phase_start_ = Clock::now();
  Clock::time_point last_emit_{};
  bool completed_ = false;  // this phase's done has reached its total
};

class JsonProgress : public ProgressBase {
 public:
  explicit JsonProgress(std::ostream& out) : out_(out) {}

 private:
  void write(const nlohmann::json& j) { out_ << j.dump() << '\n' << std::flush; }
  void on_frame(const nlohmann::json& fields) override {
    nlohmann::json j = fields.is_object() ? fields : nlohmann::json::object();
    j["event"] = "frame";
    write(j);
  }
  void on_start(const std::string& command, const nlohmann::json& details) override {
    nlohmann::json j = details.is_object() ? details : nlohmann::json::object();
    j["event"] = "start";
    j["command"] = command;
    j["version"] = DRIFTSCAN_VERSION;
    write(j);
  }
  void on_progress(bool) override {
    nlohmann::json j{
        {"event", "progress"}, {"phase", phase_}, {"done", done_}, {"total", total_}, {"elapsed_s", elapsed_s()}};
    double eta = eta_s();
    j["eta_s"] = eta < 0 ? nlohmann::json(nullptr) : nlohmann::json(eta);
    write(j);
  }
  void on_log(LogLevel level, const std::string& message) override {
    write({{"event", "log"}, {"level", level == LogLevel::warning ? "warning" : "info"}, {"message", message}});
  }
  void on_result(const nlohmann::json& files) override { write({{"event", "result"}, {"files", files}}); }
  void on_error(const std::string& message, int code) override {
    write({{"event", "error"}, {"message", message}, {"code", code}});
  }
  void on_cancelled() override { write({{"event", "cancelled"}}); }

  std::ostream& out_;
};

std::string format_seconds(double s) {
  if (s < 0) return "--:--";
  long t = std::lround(s);
  char buf[32];
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
  else std::snprintf(buf, sizeof buf, "%02ld:%02ld", t / 60, t % 60);
  return buf;
}

class TextProgress : public ProgressBase {
 public:
  TextProgress(std::ostream& out, bool bar) : out_(out), bar_(bar) {}

 private:
  void on_start(const std::string& command, const nlohmann::json&) override {
    out_ << "driftscan-engine " << DRIFTSCAN_VERSION << ": " << command << '\n' << std::flush;
  }
  void on_progress(bool final_update) override {
    if (!bar_) {
      // Plain output (logs, batch jobs): a line now and then, not a redraw.
      auto now = Clock::now();
      if (!final_update && now - last_plain_ >= std::chrono::seconds(10) && done_ > 0) {
        out_ << phase_ << ": " << done_ << '/' << total_ << ", ETA " << format_seconds(eta_s()) << '\n' << std::flush;
        last_plain_ = now;
      } else if (last_plain_ == Clock::time_point{}) {
        last_plain_ = now;
      }
      return;
    }
    const int width = 30;
    double frac = total_ ? static_cast<double>(done_) / static_cast<double>(total_) : 0.0;
    int fill = static_cast<int>(frac * width);
    std::ostringstream line;
    line << '\r' << std::left << std::setw(10) << phase_ << " [" << std::string(fill, '#')
         << std::string(width - fill, '.') << "] " << done_ << '/' << total_ << "  ETA " << format_seconds(eta_s());
    out_ << line.str() << "   " << std::flush;
    (void)final_update;
    open_line_ = true;
  }
  void on_phase_end() override {
    if (bar_ && open_line_) out_ << '\n';
    else if (!bar_) out_ << phase_ << ": " << done_ << '/' << total_ << " in " << format_seconds(elapsed_s()) << '\n';
    open_line_ = false;
    out_ << std::flush;
  }
  void close_line() {
    if (open_line_) out_ << '\n';
    open_line_ = false;
  }
  void on_log(LogLevel level, const std::string& message) override {
    close_line();
    out_ << (level == LogLevel::warning ? "warning: " : "") << message << '\n' << std::flush;
  }
  void on_result(const nlohmann::json& files) override {
    close_line();
    out_ << "results:\n";
    for (auto it = files.begin(); it != files.end(); ++it)
      out_ << "  " << it.key() << ": " << (it->is_string() ? it->get<std::string>() : it->dump()) << '\n';
    out_ << std::flush;
  }
  void on_error(const std::string& message, int) override {
    close_line();
    out_ << "error: " << message << '\n' << std::flush;
  }
  void on_cancelled() override {
    close_line();
    out_ << "cancelled\n" << std::flush;
  }

  std::ostream& out_;
  bool bar_;
  bool open_line_ = false;
  Clock::time_point last_plain_{};
};

class SilentProgress : public Progress {
 public:
  void start(const std::string&, const nlohmann::json&) override {}
  void phase(const std::string&, std::size_t) override {}
  void advance(std::size_t) override {}
  void log(LogLevel, const std::string&) override {}
  void result(const nlohmann::json&) override {}
  void error(const std::string&, int) override {}
  void cancelled() override {}
};

}  // namespace

std::unique_ptr<Progress> make_json_progress(std::ostream& out) { return std::make_unique<JsonProgress>(out); }
std::unique_ptr<Progress> make_terminal_progress(std::ostream& out) {
  return std::make_unique<TextProgress>(out, true);
}
std::unique_ptr<Progress> make_plain_progress(std::ostream& out) { return std::make_unique<TextProgress>(out, false); }
std::unique_ptr<Progress> make_silent_progress() { return std::make_unique<SilentProgress>(); }

}  // namespace driftscan
