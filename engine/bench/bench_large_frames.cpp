// Cost per pixel of a default `register` as the frame grows (issue #36).
// For each case (frames × size²) a synthetic lattice series is written by
// `driftscan-engine synth` (not timed), then `driftscan-engine register`
// runs as a child process on one rank. Printed per case: the report's
// timings_s per phase (wall; the CPU of the whole child in brackets), the
// wall and CPU per pixel (/ (frames · width · height); the CPU figure is
// the one to compare on a shared machine), and the child's peak
// resident memory — VmHWM polled from /proc/<pid>/status every 10 ms (the
// child's ru_maxrss would include the parent's across exec). With
// --compare ENGINE the same series is registered by that engine too and the
// largest drift difference is printed (how a speed-up is checked against
// the build it replaces).
//
//   bench_large_frames [--cases 256:200,1024:40,2048:20,4096:20] [--engine PATH]
//                      [--compare PATH] [--scan-distortion] [--threads N]
//                      [--budget-mb MB] [--keep DIR]
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

struct Child {
  int status = -1;
  double wall = 0, cpu = 0, peak_mb = 0;
};

double vm_hwm_mb(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::atof(line.c_str() + 6) / 1024.0;  // kB
  return 0;
}

// Runs argv with stdout/stderr to `log`; peak = the last VmHWM seen before exit.
Child run(const std::vector<std::string>& args, const std::string& log) {
  Child c;
  auto t0 = Clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    FILE* f = std::fopen(log.c_str(), "w");
    if (f) dup2(fileno(f), 1), dup2(fileno(f), 2);
    std::vector<char*> argv;
    argv.reserve(args.size() + 1);
    for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  rusage ru{};
  for (;;) {
    c.peak_mb = std::max(c.peak_mb, vm_hwm_mb(pid));
    if (wait4(pid, &c.status, WNOHANG, &ru) == pid) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  c.wall = std::chrono::duration<double>(Clock::now() - t0).count();
  c.cpu = double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + 1e-6 * double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
  return c;
}

std::vector<std::vector<double>> read_drift(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  std::vector<std::vector<double>> rows;
  while (std::getline(in, line)) {
    std::stringstream ss(line);
    std::string cell;
    std::vector<double> row;
    for (int i = 0; i < 3 && std::getline(ss, cell, ','); ++i) row.push_back(std::atof(cell.c_str()));
    rows.push_back(row);
  }
  return rows;
}

double phase(const nlohmann::json& t, const char* name) { return t.contains(name) ? t[name].get<double>() : NAN; }

int run_bench(int argc, char** argv) {
  std::string cases = "256:200,1024:40,2048:20,4096:20", keep, compare, budget;
  std::string engine = (fs::path(argv[0]).parent_path() / "driftscan-engine").string();
  std::string threads = "1";
  bool distortion = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--cases") cases = next();
    else if (a == "--engine") engine = next();
    else if (a == "--compare") compare = next();
    else if (a == "--keep") keep = next();
    else if (a == "--threads") threads = next();
    else if (a == "--budget-mb") budget = next();
    else if (a == "--scan-distortion") distortion = true;
    else {
      std::fprintf(stderr, "bench_large_frames: unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  const fs::path root =
      keep.empty() ? fs::temp_directory_path() / ("bench_large_frames_" + std::to_string(getpid())) : fs::path(keep);
  fs::create_directories(root);
  std::printf(
      "bench_large_frames: %s, 1 rank x %s thread(s)%s; wall per pixel = wall / (frames*w*h); "
      "phases: report timings_s (s); peak: child VmHWM\n",
      engine.c_str(), threads.c_str(), distortion ? ", --scan-distortion" : "");
  std::printf("%-16s %8s %8s %9s %9s %7s %7s %7s %7s %7s %9s%s\n", "frames x size", "wall s", "cpu s", "ns/px",
              "cpu ns/px", "pairs", "scan", "uncert", "distort", "average", "peak MB",
              compare.empty() ? "" : "  max |drift diff| px");
  std::stringstream list(cases);
  std::string item;
  while (std::getline(list, item, ',')) {
    const int size = std::atoi(item.c_str());
    const int frames = std::atoi(item.substr(item.find(':') + 1).c_str());
    const std::string tag = std::to_string(frames) + "x" + std::to_string(size);
    const std::string series = (root / (tag + ".tif")).string(),
                      dim = std::to_string(size) + "x" + std::to_string(size);
    if (!fs::exists(series)) {
      std::vector<std::string> synth = {engine,   "--progress", "none",  "synth", "--frames", std::to_string(frames),
                                        "--size", dim,          "--out", series};
      // A scanned series (dwell, flyback, wobble) when the correction is measured.
      if (distortion)
        for (const char* a : {"--scan-dwell", "2e-6", "--line-flyback", "0.25", "--drift-wobble", "1.5"})
          synth.emplace_back(a);
      if (run(synth, (root / (tag + "_synth.log")).string()).status != 0) {
        std::fprintf(stderr, "bench_large_frames: synth failed for %s (see %s)\n", tag.c_str(), root.c_str());
        return 1;
      }
    }
    auto reg = [&](const std::string& bin, const std::string& out) {
      std::vector<std::string> a = {bin, "--progress", "none", "register", series, "--out", out, "--threads", threads};
      if (distortion)
        for (const char* f : {"--scan-distortion", "--scan-dwell", "2e-6", "--line-flyback", "0.25"}) a.emplace_back(f);
      if (!budget.empty() && bin == engine) a.insert(a.end(), {"--memory-budget-mb", budget});
      return run(a, out + ".log");
    };
    const std::string out = (root / ("out_" + tag)).string();
    Child c = reg(engine, out);
    if (c.status != 0) {
      std::fprintf(stderr, "bench_large_frames: register failed for %s (see %s.log)\n", tag.c_str(), out.c_str());
      return 1;
    }
    auto report = nlohmann::json::parse(std::ifstream(out + "/report.json"));
    const auto& t = report["timings_s"];
    const double pixels = double(frames) * size * size;
    std::printf("%-16s %8.2f %8.2f %9.1f %9.1f %7.2f %7.2f %7.2f %7.2f %7.2f %9.0f",
                (std::to_string(frames) + " x " + dim).c_str(), c.wall, c.cpu, 1e9 * c.wall / pixels,
                1e9 * c.cpu / pixels, phase(t, "pairs"), phase(t, "scan"), phase(t, "uncertainty"),
                phase(t, "distortion"), phase(t, "average"), c.peak_mb);
    if (report.contains("cpu_s")) {  // the phases' CPU: the figures to compare on a loaded machine
      const auto& u = report["cpu_s"];
      std::printf("\n%-16s %8s %8s %9s %9s %7.2f %7.2f %7.2f %7.2f %7.2f %9s", "  (phases' cpu)", "", "", "", "",
                  phase(u, "pairs"), phase(u, "scan"), phase(u, "uncertainty"), phase(u, "distortion"),
                  phase(u, "average"), "");
    }
    if (!compare.empty()) {
      const std::string ref = (root / ("ref_" + tag)).string();
      if (reg(compare, ref).status != 0) {
        std::fprintf(stderr, "\nbench_large_frames: the compared engine failed for %s\n", tag.c_str());
        return 1;
      }
      auto a = read_drift(out + "/drift.csv"), b = read_drift(ref + "/drift.csv");
      double worst = a.size() == b.size() ? 0 : INFINITY;
      for (std::size_t k = 0; k < std::min(a.size(), b.size()); ++k)
        worst = std::max({worst, std::abs(a[k][1] - b[k][1]), std::abs(a[k][2] - b[k][2])});
      std::printf("  %.2e", worst);
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  if (keep.empty()) fs::remove_all(root);
  return 0;
}

}  // namespace

// A bad option or an unreadable report: one line, not an escaped exception.
int main(int argc, char** argv) {
  try {
    return run_bench(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_large_frames: %s\n", e.what());
    return 1;
  }
}
