// `register --follow` under a live writer (#15 §1's target): a writer thread
// appends synthetic frames to a multi-page TIFF at a fixed rate
// (TiffPageAppender: pixels, IFD, then the link — the moment the frame is
// complete is when the link is written), while `driftscan-engine register
// --follow --until-frames N` follows the file in a child process. A watcher
// thread reads drift.csv as it grows and timestamps every row. Prints the
// latency from frame complete to its drift row (median, p95, max, rows over
// 200 ms), the engine's resident memory along the run (flat?) and its peak.
// The file is a BigTIFF when it will pass 4 GiB.
// Frames are drawn a few ahead of the writer (a generator thread, cheaply:
// windows of one synthetic field), so no frame is held beyond a short queue.
//
// Usage: bench_follow [--size 256] [--rate 20] [--frames 2000] [--threads 1]
//                     [--engine <dir of this program>/driftscan-engine] [--tmp $TMPDIR]
// It works in a temporary folder of its own (bench_follow.XXXXXX under --tmp)
// and removes it when it ends: normally, on an error, or on SIGINT / SIGTERM
// / SIGHUP (the engine is killed first).
// Target: 256x256 at 20/s and 1024x1024 at 4/s, every row within 200 ms,
// memory flat over 2,000 frames (run on the 2-core machine).
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "driftscan/formats/tiff/tiff_page_appender.hpp"
#include "driftscan/synthetic/synthetic_series.hpp"

extern char** environ;

using namespace driftscan;
using Clock = std::chrono::steady_clock;

namespace {

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// kB of a /proc/PID/status field ("VmRSS:", "VmHWM:"), 0 when unreadable.
long status_kb(pid_t pid, const char* field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field, 0) == 0) return std::atol(line.c_str() + std::strlen(field));
  return 0;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(std::lround(p * static_cast<double>(v.size() - 1)));
  return v[std::min(i, v.size() - 1)];
}

// Frames drawn a few ahead of the writer by a generator thread. The writer
// must not take the engine's cores: frames are windows of one synthetic
// field (drawn once, noise included) at a sub-pixel drift, bilinear, plus
// fresh uniform noise — a few ms a frame even at 1024x1024.
class LiveFrames {
 public:
  LiveFrames(int size, std::size_t frames) : size_(size), field_(make_field(size)) {
    generator_ = std::thread([this, frames] {
      for (std::size_t k = 0; k < frames && !stop_; ++k) {
        Frame f = draw(k);
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return ready_.size() < 4 || stop_; });
        ready_.push_back(std::move(f));
        cv_.notify_all();
      }
    });
  }
  ~LiveFrames() {
    stop_ = true;
    cv_.notify_all();
    generator_.join();
  }
  LiveFrames(const LiveFrames&) = delete;
  LiveFrames& operator=(const LiveFrames&) = delete;

  Frame next() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !ready_.empty(); });
    Frame f = std::move(ready_.front());
    ready_.pop_front();
    cv_.notify_all();
    return f;
  }

 private:
  static constexpr int kMargin = 48;
  static Frame make_field(int size) {
    SynthOptions o;
    o.frames = 1;
    o.width = o.height = size + 2 * kMargin;
    o.period = 9.0;
    o.dose = 6.0;
    return SyntheticSeries(o).frame(0);
  }
  Frame draw(std::size_t k) const {
    const double t = static_cast<double>(k);
    const double dx = 40.0 * std::sin(t / 300.0) + 0.37 * std::sin(t / 7.0);
    const double dy = 40.0 * std::sin(t / 410.0 + 1.0) + 0.29 * std::cos(t / 5.0);
    const double x0 = kMargin + dx, y0 = kMargin + dy;
    const int ix = static_cast<int>(std::floor(x0)), iy = static_cast<int>(std::floor(y0));
    const float fx = static_cast<float>(x0 - ix), fy = static_cast<float>(y0 - iy);
    Frame f(size_, size_);
    std::uint32_t rng = 2463534242u + static_cast<std::uint32_t>(k) * 2654435761u;
    for (int y = 0; y < size_; ++y) {
      const float* a = field_.row(iy + y) + ix;
      const float* b = field_.row(iy + y + 1) + ix;
      float* out = f.row(y);
      for (int x = 0; x < size_; ++x) {
        rng ^= rng << 13;
        rng ^= rng >> 17;
        rng ^= rng << 5;
        const float noise = static_cast<float>(rng >> 8) * (1.0f / 16777216.0f) - 0.5f;
        out[x] = (1 - fy) * ((1 - fx) * a[x] + fx * a[x + 1]) + fy * ((1 - fx) * b[x] + fx * b[x + 1]) + noise;
      }
    }
    return f;
  }

  int size_;
  Frame field_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Frame> ready_;
  std::atomic<bool> stop_{false};
  std::thread generator_;
};

// drift.csv's rows as they appear (the header first), each timestamped, and
// the engine's resident memory every 0.5 s, by a watcher thread.
class DriftRowWatcher {
 public:
  DriftRowWatcher(std::string drift, std::size_t frames, pid_t engine)
      : drift_(std::move(drift)), row_(frames), have_row_(frames, 0), engine_(engine) {
    thread_ = std::thread([this] { watch(); });
  }
  ~DriftRowWatcher() { stop(); }
  DriftRowWatcher(const DriftRowWatcher&) = delete;
  DriftRowWatcher& operator=(const DriftRowWatcher&) = delete;

  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  std::size_t rows_seen() const { return rows_seen_.load(); }
  // After stop():
  bool has_row(std::size_t k) const { return have_row_[k] != 0; }
  Clock::time_point row_time(std::size_t k) const { return row_[k]; }
  const std::vector<std::pair<std::size_t, long>>& rss() const { return rss_; }  // (rows seen, VmRSS kB)

 private:
  void watch() {
    std::uint64_t offset = 0;
    std::string partial;
    bool header = false;
    auto last_rss = Clock::now();
    std::ifstream in;
    while (!stop_) {
      struct stat st {};
      if (::stat(drift_.c_str(), &st) == 0 && static_cast<std::uint64_t>(st.st_size) > offset) {
        if (!in.is_open()) in.open(drift_, std::ios::binary);
        in.clear();
        in.seekg(static_cast<std::streamoff>(offset));
        std::string chunk(static_cast<std::size_t>(st.st_size) - offset, '\0');
        in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
        chunk.resize(static_cast<std::size_t>(in.gcount()));
        offset += chunk.size();
        const auto now = Clock::now();
        partial += chunk;
        std::size_t nl;
        while ((nl = partial.find('\n')) != std::string::npos) {
          const std::string line = partial.substr(0, nl);
          partial.erase(0, nl + 1);
          if (!header) {
            header = true;
            continue;
          }
          const std::size_t k = std::strtoul(line.c_str(), nullptr, 10);
          if (k < row_.size() && !have_row_[k]) {
            row_[k] = now;
            have_row_[k] = 1;
            ++rows_seen_;
          }
        }
      }
      if (ms_between(last_rss, Clock::now()) >= 500) {
        rss_.emplace_back(rows_seen_.load(), status_kb(engine_, "VmRSS:"));
        last_rss = Clock::now();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  std::string drift_;
  std::vector<Clock::time_point> row_;
  std::vector<char> have_row_;
  pid_t engine_;
  std::vector<std::pair<std::size_t, long>> rss_;
  std::atomic<std::size_t> rows_seen_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// `engine register SERIES --follow --until-frames N` in a child process (0 if it cannot start).
pid_t start_engine(const std::string& engine, const std::string& series, const std::string& out, std::size_t frames,
                   const std::string& threads) {
  std::vector<std::string> args{
      engine,           "register", series,  "--follow", "--until-frames", std::to_string(frames),
      "--idle-timeout", "30",       "--out", out,        "--progress",     "none",
      "--threads",      threads};
  std::vector<char*> argp;
  argp.reserve(args.size() + 1);
  for (auto& a : args) argp.push_back(a.data());
  argp.push_back(nullptr);
  // The engine gets the default signal mask (this program blocks its signals for its signal thread).
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  pid_t child = 0;
  const int rc = posix_spawn(&child, engine.c_str(), nullptr, &attr, argp.data(), environ);
  posix_spawnattr_destroy(&attr);
  return rc == 0 ? child : 0;
}

struct WriteTimes {
  std::vector<Clock::time_point> complete;  // when each frame was complete in the file
  double worst_behind_ms = 0.0;             // the writer's worst lag behind the schedule
};

// The schedule starts once the engine follows the (still empty) file — its
// results folder exists: the process and MPI have started, as they would
// have long before an acquisition — and then keeps the microscope's pace
// from frame 0 on: frame k complete at k / rate. Frame 1 comes 1 / rate
// after frame 0 whatever the engine still does for frame 0, so the rows of
// the first frames show what frame 0's preparation leaves on their path.
WriteTimes write_on_schedule(LiveFrames& frames, TiffPageAppender& appender, const std::string& out, std::size_t count,
                             double rate) {
  WriteTimes w;
  w.complete.resize(count);
  auto start = Clock::now();
  while (!std::filesystem::is_directory(out) && ms_between(start, Clock::now()) < 60000)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // past its first look at the file
  start = Clock::now();
  for (std::size_t k = 0; k < count; ++k) {
    const auto due = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(k / rate));
    std::this_thread::sleep_until(due);
    Frame f = frames.next();
    w.worst_behind_ms = std::max(w.worst_behind_ms, ms_between(due, Clock::now()));
    appender.append(f);
    w.complete[k] = Clock::now();
  }
  return w;
}

struct EngineEnd {
  long follow_hwm_kb = 0;  // VmHWM while following (until the last row)
  long peak_kb = 0;        // ru_maxrss, the final average included
  int exit_code = -1;
};

// Until the last row is there the engine is still following (VmHWM then is
// the follow's peak); then it finishes the outputs and exits.
EngineEnd wait_for_engine(pid_t child, const DriftRowWatcher& watcher, std::size_t frames) {
  EngineEnd e;
  while (watcher.rows_seen() < frames) {
    int status = 0;
    if (::waitpid(child, &status, WNOHANG) == child) {
      e.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      return e;
    }
    e.follow_hwm_kb = std::max(e.follow_hwm_kb, status_kb(child, "VmHWM:"));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  e.follow_hwm_kb = std::max(e.follow_hwm_kb, status_kb(child, "VmHWM:"));
  int status = 0;
  struct rusage ru {};
  ::wait4(child, &status, 0, &ru);
  e.peak_kb = ru.ru_maxrss;
  e.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return e;
}

void print_report(int size, double rate, const std::string& threads, bool bigtiff, std::size_t frames,
                  const WriteTimes& w, const DriftRowWatcher& watcher, const EngineEnd& end) {
  std::vector<double> latency;
  std::size_t late = 0, first_late = 0, last_late = 0;
  for (std::size_t k = 1; k < frames; ++k)
    if (watcher.has_row(k)) {
      latency.push_back(ms_between(w.complete[k], watcher.row_time(k)));
      if (latency.back() > 200.0) {
        if (!late++) first_late = k;
        last_late = k;
      }
    }
  const double written_s = std::chrono::duration<double>(w.complete.back() - w.complete.front()).count();
  std::printf(
      "follow %dx%d at %.1f frames/s%s, engine --threads %s (written in %.1f s, writer at most %.1f ms behind "
      "schedule): %zu frames, %zu rows seen\n",
      size, size, rate, bigtiff ? " (BigTIFF)" : "", threads.c_str(), written_s, w.worst_behind_ms, frames,
      watcher.rows_seen());
  std::printf(
      "start-up: frame 0's row %.1f ms after frame 0 was complete (frame 0's plans; the engine was following)\n",
      watcher.has_row(0) ? ms_between(w.complete[0], watcher.row_time(0)) : -1.0);
  std::printf(
      "latency frame complete -> drift row, frames 1..%zu: median %.1f ms, p95 %.1f ms, max %.1f ms; rows over "
      "200 ms: %zu",
      frames - 1, percentile(latency, 0.5), percentile(latency, 0.95), percentile(latency, 1.0), late);
  if (late) std::printf(" (frames %zu..%zu)", first_late, last_late);
  std::printf("\n");
  // The start-up's cost shows in the first rows (frame 0's preparation).
  std::printf("first rows, frame complete -> drift row:");
  for (std::size_t k = 1; k < std::min<std::size_t>(frames, 7); ++k)
    if (watcher.has_row(k))
      std::printf(" %zu: %.1f ms%s", k, ms_between(w.complete[k], watcher.row_time(k)),
                  k + 1 < std::min<std::size_t>(frames, 7) ? "," : "");
  std::printf("\n");
  std::string missing;
  for (std::size_t k = 0; k < frames; ++k)
    if (!watcher.has_row(k)) missing += " " + std::to_string(k);
  if (!missing.empty()) std::printf("rows never seen while following:%s\n", missing.c_str());
  const auto& rss = watcher.rss();
  std::string along;
  auto add = [&](const std::pair<std::size_t, long>& r) {
    char buf[64];
    std::snprintf(buf, sizeof buf, " %zu:%.1f", r.first, r.second / 1024.0);
    along += buf;
  };
  for (std::size_t i = 0; i < rss.size(); i += std::max<std::size_t>(1, rss.size() / 8)) add(rss[i]);
  if (!rss.empty()) add(rss.back());
  std::printf("engine resident memory (rows done:MB):%s\n", along.c_str());
  std::printf("engine peak resident memory: %.1f MB while following, %.1f MB including the final average (exit %d)\n",
              end.follow_hwm_kb / 1024.0, end.peak_kb / 1024.0, end.exit_code);
}

// The temporary folder and the engine working in it: the engine is killed
// and the folder removed when the run ends, however it ends. A signal
// (SIGINT, SIGTERM, SIGHUP) is taken by a thread of its own (the others
// block it), which does the same and exits with 128 + the signal. That
// thread shares the state (it may outlive the Workspace until the exit).
class Workspace {
 public:
  explicit Workspace(const std::string& parent) : state_(std::make_shared<State>()) {
    std::string pattern = (std::filesystem::path(parent) / "bench_follow.XXXXXX").string();
    if (!::mkdtemp(pattern.data()))
      throw std::runtime_error("cannot create a temporary folder in " + parent + ": " + std::strerror(errno));
    state_->path = pattern;
    path_ = pattern;
    std::thread([state = state_] { on_signal(*state); }).detach();
  }
  ~Workspace() { state_->clean_up(); }
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  // SIGINT, SIGTERM and SIGHUP blocked in the calling thread and every thread it starts later.
  static sigset_t block_signals() {
    sigset_t set;
    sigemptyset(&set);
    for (const int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&set, sig);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    return set;
  }
  const std::string& path() const { return path_; }
  void set_engine(pid_t child) { state_->engine = child; }
  void engine_exited() { state_->engine = 0; }

 private:
  struct State {
    std::mutex mu;
    std::string path;  // empty once removed
    std::atomic<pid_t> engine{0};

    void clean_up() {
      std::lock_guard<std::mutex> lock(mu);
      if (const pid_t child = engine.exchange(0); child > 0) {
        ::kill(child, SIGKILL);
        ::waitpid(child, nullptr, 0);
      }
      if (!path.empty()) {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
        if (ec) std::fprintf(stderr, "bench_follow: could not remove %s: %s\n", path.c_str(), ec.message().c_str());
        path.clear();
      }
    }
  };

  static void on_signal(State& state) {
    const sigset_t set = block_signals();
    int sig = 0;
    if (sigwait(&set, &sig) != 0) return;
    std::fprintf(stderr, "bench_follow: signal %d: stopping the engine, removing the temporary folder\n", sig);
    state.clean_up();
    std::_Exit(128 + sig);
  }

  std::shared_ptr<State> state_;
  std::string path_;
};

int run(int size, double rate, std::size_t frames, const std::string& engine, const std::string& tmp,
        const std::string& threads) {
  Workspace work(tmp);
  const std::string series = work.path() + "/live.tif", out = work.path() + "/out";

  // Past 4 GiB (2,000 float32 frames of 1024²: 8 GB) only a BigTIFF addresses the pages.
  const bool bigtiff = static_cast<double>(size) * size * 4.0 * static_cast<double>(frames) > 3.9e9;
  LiveFrames live(size, frames);
  TiffPageAppender appender(series, SampleFormat::float32, bigtiff);
  const pid_t child = start_engine(engine, series, out, frames, threads);  // following the (still empty) file
  if (!child) {
    std::fprintf(stderr, "bench_follow: cannot start %s\n", engine.c_str());
    return 1;
  }
  work.set_engine(child);
  DriftRowWatcher watcher(out + "/drift.csv", frames, child);
  const WriteTimes written = write_on_schedule(live, appender, out, frames, rate);
  const EngineEnd end = wait_for_engine(child, watcher, frames);
  work.engine_exited();
  watcher.stop();
  print_report(size, rate, threads, bigtiff, frames, written, watcher, end);
  return end.exit_code == 0 ? 0 : 1;
}

}  // namespace

static int bench_main(int argc, char** argv) {
  int size = 256;
  double rate = 20.0;
  std::size_t frames = 2000;
  int threads = 1;
  std::string engine = (std::filesystem::path(argv[0]).parent_path() / "driftscan-engine").string();
  const char* tmpdir = std::getenv("TMPDIR");
  std::string tmp = tmpdir && *tmpdir ? tmpdir : "/tmp";

  CLI::App app{
      "A writer appends SIZE x SIZE float32 frames to a TIFF at RATE frames/s while `driftscan-engine register\n"
      "--follow --until-frames FRAMES --threads THREADS` follows it; prints the latency from each frame complete\n"
      "to its drift.csv row (median, p95, max, rows over 200 ms, the first rows) and the engine's memory.\n"
      "Works in a temporary folder under --tmp, removed at the end (also on an error or a signal).",
      "bench_follow"};
  app.add_option("--size", size, "Frame width and height (px)")->check(CLI::Range(32, 1 << 15))->capture_default_str();
  app.add_option("--rate", rate, "Frames written per second")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--frames", frames, "Frames written and followed")
      ->check(CLI::Range(2, 100000000))
      ->capture_default_str();
  app.add_option("--threads", threads, "The engine's --threads")->check(CLI::Range(1, 1024))->capture_default_str();
  app.add_option("--engine", engine, "The driftscan-engine to run")->check(CLI::ExistingFile)->capture_default_str();
  app.add_option("--tmp", tmp, "Folder in which the temporary folder is made ($TMPDIR, else /tmp)")
      ->check(CLI::ExistingDirectory)
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  Workspace::block_signals();  // before any thread starts: the Workspace's thread takes them
  try {
    return run(size, rate, frames, engine, tmp, std::to_string(threads));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_follow: %s\n", e.what());
    return 1;
  }
}

// Any exception (the option parser's set-up included) ends in one line, not an abort.
int main(int argc, char** argv) {
  try {
    return bench_main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", "bench_follow", e.what());
  } catch (...) {
    std::fprintf(stderr, "%s: unknown error\n", "bench_follow");
  }
  return 1;
}
