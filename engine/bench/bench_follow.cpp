// `register --follow` under a live writer (#15 §1's target): a writer thread
// appends synthetic frames to a multi-page TIFF at a fixed rate
// (TiffPageAppender: pixels, IFD, then the link — the moment the frame is
// complete is when the link is written), while `driftscan-engine register
// --follow --until-frames N` follows the file in a child process. A watcher
// thread reads drift.csv as it grows and timestamps every row. Prints the
// latency from frame complete to its drift row (median, p95, max, rows over
// 200 ms), the engine's resident memory along the run (flat?) and its peak.
// Frames are drawn a few ahead of the writer (a generator thread, cheaply:
// windows of one synthetic field), so no frame is held beyond a short queue.
//
// Usage: bench_follow [size=256] [rate=20] [frames=2000] [engine=<dir of this program>/driftscan-engine]
//                     [folder=$TMPDIR] [threads=1]
// Target: 256x256 at 20/s and 1024x1024 at 4/s, every row within 200 ms,
// memory flat over 2,000 frames (run on the 2-core machine).
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "driftscan/synthetic_series.hpp"
#include "driftscan/tiff_page_appender.hpp"

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

}  // namespace

int main(int argc, char** argv) {
  const int size = argc > 1 ? std::atoi(argv[1]) : 256;
  const double rate = argc > 2 ? std::atof(argv[2]) : 20.0;
  const std::size_t frames = argc > 3 ? std::strtoul(argv[3], nullptr, 10) : 2000;
  const std::string engine =
      argc > 4 ? argv[4] : (std::filesystem::path(argv[0]).parent_path() / "driftscan-engine").string();
  const char* tmp = std::getenv("TMPDIR");
  const std::string folder = argc > 5 ? argv[5] : (tmp ? tmp : "/tmp");
  const std::string threads = argc > 6 ? argv[6] : "1";
  const std::string work = folder + "/bench_follow_" + std::to_string(::getpid());
  std::filesystem::create_directories(work);
  const std::string series = work + "/live.tif", out = work + "/out", drift = out + "/drift.csv";

  // The writer must not take the engine's cores: frames are windows of one
  // synthetic field (drawn once, noise included) at a sub-pixel drift, bilinear,
  // plus fresh uniform noise — a few ms a frame even at 1024x1024.
  constexpr int margin = 48;
  SynthOptions o;
  o.frames = 1;
  o.width = o.height = size + 2 * margin;
  o.period = 9.0;
  o.dose = 6.0;
  const Frame field = SyntheticSeries(o).frame(0);
  auto draw = [&](std::size_t k) {
    const double t = static_cast<double>(k);
    const double dx = 40.0 * std::sin(t / 300.0) + 0.37 * std::sin(t / 7.0);
    const double dy = 40.0 * std::sin(t / 410.0 + 1.0) + 0.29 * std::cos(t / 5.0);
    const double x0 = margin + dx, y0 = margin + dy;
    const int ix = static_cast<int>(std::floor(x0)), iy = static_cast<int>(std::floor(y0));
    const float fx = static_cast<float>(x0 - ix), fy = static_cast<float>(y0 - iy);
    Frame f(size, size);
    std::uint32_t rng = 2463534242u + static_cast<std::uint32_t>(k) * 2654435761u;
    for (int y = 0; y < size; ++y) {
      const float* a = field.row(iy + y) + ix;
      const float* b = field.row(iy + y + 1) + ix;
      float* out = f.row(y);
      for (int x = 0; x < size; ++x) {
        rng ^= rng << 13;
        rng ^= rng >> 17;
        rng ^= rng << 5;
        const float noise = static_cast<float>(rng >> 8) * (1.0f / 16777216.0f) - 0.5f;
        out[x] = (1 - fy) * ((1 - fx) * a[x] + fx * a[x + 1]) + fy * ((1 - fx) * b[x] + fx * b[x + 1]) + noise;
      }
    }
    return f;
  };

  // The generator keeps a few frames ready; the writer writes them on time.
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Frame> ready;
  std::atomic<bool> stop{false};
  std::thread generator([&] {
    for (std::size_t k = 0; k < frames && !stop; ++k) {
      Frame f = draw(k);
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return ready.size() < 4 || stop; });
      ready.push_back(std::move(f));
      cv.notify_all();
    }
  });
  std::vector<Clock::time_point> complete(frames), row(frames);
  std::vector<char> have_row(frames, 0);
  TiffPageAppender appender(series, SampleFormat::float32);

  // The engine, following the (still empty) file.
  std::vector<std::string> args{
      engine,           "register", series,  "--follow", "--until-frames", std::to_string(frames),
      "--idle-timeout", "30",       "--out", out,        "--progress",     "none",
      "--threads",      threads};
  std::vector<char*> argp;
  argp.reserve(args.size() + 1);
  for (auto& a : args) argp.push_back(a.data());
  argp.push_back(nullptr);
  pid_t child = 0;
  if (posix_spawn(&child, engine.c_str(), nullptr, nullptr, argp.data(), environ) != 0) {
    std::fprintf(stderr, "bench_follow: cannot start %s\n", engine.c_str());
    stop = true;
    cv.notify_all();
    generator.join();
    return 1;
  }

  // The watcher: drift.csv rows as they appear (the header first).
  std::vector<std::pair<std::size_t, long>> rss;  // (rows seen, VmRSS kB)
  std::atomic<std::size_t> rows_seen{0};
  std::thread watcher([&] {
    std::uint64_t offset = 0;
    std::string partial;
    bool header = false;
    auto last_rss = Clock::now();
    std::ifstream in;
    while (!stop) {
      struct stat st {};
      if (::stat(drift.c_str(), &st) == 0 && static_cast<std::uint64_t>(st.st_size) > offset) {
        if (!in.is_open()) in.open(drift, std::ios::binary);
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
          if (k < frames && !have_row[k]) {
            row[k] = now;
            have_row[k] = 1;
            ++rows_seen;
          }
        }
      }
      if (ms_between(last_rss, Clock::now()) >= 500) {
        rss.emplace_back(rows_seen.load(), status_kb(child, "VmRSS:"));
        last_rss = Clock::now();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });

  // Frame 0 first; the schedule starts once its row is there (the engine has
  // started and set up frame 0's plans): the start-up is reported apart.
  auto start = Clock::now();
  double worst_behind_ms = 0.0;
  for (std::size_t k = 0; k < frames; ++k) {
    if (k == 1) {
      while (!rows_seen.load() && ms_between(start, Clock::now()) < 60000)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      start = Clock::now() - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(1 / rate));
    }
    const auto due = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(k / rate));
    std::this_thread::sleep_until(due);
    Frame f;
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return !ready.empty(); });
      f = std::move(ready.front());
      ready.pop_front();
      cv.notify_all();
    }
    worst_behind_ms = std::max(worst_behind_ms, ms_between(due, Clock::now()));
    appender.append(f);
    complete[k] = Clock::now();
  }
  const double written_s = std::chrono::duration<double>(complete.back() - complete.front()).count();
  long follow_hwm = 0;
  // Until the last row is there, the engine is still following (VmHWM then: the follow's peak).
  while (rows_seen.load() < frames) {
    int status = 0;
    if (::waitpid(child, &status, WNOHANG) == child) {
      child = 0;
      break;
    }
    follow_hwm = std::max(follow_hwm, status_kb(child, "VmHWM:"));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (child) follow_hwm = std::max(follow_hwm, status_kb(child, "VmHWM:"));
  int status = 0;
  struct rusage ru {};
  if (child) ::wait4(child, &status, 0, &ru);
  stop = true;
  cv.notify_all();
  watcher.join();
  generator.join();

  std::vector<double> latency;
  std::size_t late = 0, first_late = 0, last_late = 0;
  for (std::size_t k = 1; k < frames; ++k)
    if (have_row[k]) {
      latency.push_back(ms_between(complete[k], row[k]));
      if (latency.back() > 200.0) {
        if (!late++) first_late = k;
        last_late = k;
      }
    }
  std::printf(
      "follow %dx%d at %.1f frames/s, engine --threads %s (written in %.1f s, writer at most %.1f ms behind schedule): "
      "%zu frames, %zu rows seen\n",
      size, size, rate, threads.c_str(), written_s, worst_behind_ms, frames, rows_seen.load());
  std::printf("start-up: frame 0's row %.1f ms after frame 0 was complete (engine start, frame 0's plans)\n",
              have_row[0] ? ms_between(complete[0], row[0]) : -1.0);
  std::printf(
      "latency frame complete -> drift row, frames 1..%zu: median %.1f ms, p95 %.1f ms, max %.1f ms; rows over "
      "200 ms: %zu",
      frames - 1, percentile(latency, 0.5), percentile(latency, 0.95), percentile(latency, 1.0), late);
  if (late) std::printf(" (frames %zu..%zu)", first_late, last_late);
  std::printf("\n");
  std::string missing;
  for (std::size_t k = 0; k < frames; ++k)
    if (!have_row[k]) missing += " " + std::to_string(k);
  if (!missing.empty()) std::printf("rows never seen while following:%s\n", missing.c_str());
  std::string along;
  for (std::size_t i = 0; i < rss.size(); i += std::max<std::size_t>(1, rss.size() / 8)) {
    char buf[64];
    std::snprintf(buf, sizeof buf, " %zu:%.1f", rss[i].first, rss[i].second / 1024.0);
    along += buf;
  }
  if (!rss.empty()) {
    char buf[64];
    std::snprintf(buf, sizeof buf, " %zu:%.1f", rss.back().first, rss.back().second / 1024.0);
    along += buf;
  }
  std::printf("engine resident memory (rows done:MB):%s\n", along.c_str());
  std::printf("engine peak resident memory: %.1f MB while following, %.1f MB including the final average (exit %d)\n",
              follow_hwm / 1024.0, ru.ru_maxrss / 1024.0, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  std::error_code ec;
  std::filesystem::remove_all(work, ec);
  return 0;
}
