#include "driftscan/mpi/register/signal_averages.hpp"
#include "driftscan/core/omp_threads.hpp"

#include <omp.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <sstream>

#include "driftscan/averaging/averaging.hpp"
#include "driftscan/core/error.hpp"
#include "driftscan/formats/series_opener.hpp"
#include "driftscan/formats/tiff/tiff_writer.hpp"
#include "driftscan/registration/drift_table.hpp"

namespace driftscan::mpi {
namespace fs = std::filesystem;

std::string signal_file_name(const std::string& signal) {
  std::string out;
  for (char c : signal) {
    const auto u = static_cast<unsigned char>(c);
    out += std::isalnum(u) || c == '-' || c == '.' ? c : '_';
  }
  return out.empty() ? "signal" : out;
}

std::vector<std::string> apply_to_signals(const Job& job) {
  if (job.apply_to.empty()) return {};
  const auto signals = list_signals(job.input);
  const std::size_t main = find_signal(job.input, signals, job.signal);
  std::vector<std::string> names;
  if (job.apply_to == "all") {
    for (std::size_t i = 0; i < signals.size(); ++i)  // "all" images: a spectrum has no drift to apply
      if (i != main && signals[i].is_image()) names.push_back(signals[i].name);
    if (names.empty())
      throw bad_input(job.input + ": --apply-to all, but the file holds only the signal '" + signals[main].name + "'");
  } else {
    std::stringstream list(job.apply_to);
    std::string name;
    while (std::getline(list, name, ',')) {
      if (name.empty()) continue;
      const std::size_t i = find_signal(job.input, signals, name);
      if (i == main)
        throw bad_input(job.input + ": --apply-to names '" + signals[i].name + "', the signal being registered");
      if (std::find(names.begin(), names.end(), signals[i].name) == names.end()) names.push_back(signals[i].name);
    }
  }
  std::vector<std::string> files;
  for (const auto& n : names) {
    const SignalInfo& s = signals[find_signal(job.input, signals, n)];
    const SignalInfo& m = signals[main];
    require_image_series(job.input, s);
    if (s.frames != m.frames || s.width != m.width || s.height != m.height)
      throw bad_input(job.input + ": signal '" + s.name + "' (" + std::to_string(s.frames) + " x " +
                      std::to_string(s.width) + "x" + std::to_string(s.height) + ") does not match the registered '" +
                      m.name + "' (" + std::to_string(m.frames) + " x " + std::to_string(m.width) + "x" +
                      std::to_string(m.height) + "): the drift cannot be applied to it");
    const std::string f = signal_file_name(s.name);
    if (std::find(files.begin(), files.end(), f) != files.end())
      throw bad_input(job.input + ": signals named alike ('" + s.name + "') would write the same average_" + f +
                      ".tif");
    files.push_back(f);
  }
  return names;
}

nlohmann::json average_signals(const Job& job, const std::vector<std::string>& signals, Progress& progress,
                               const CancelToken& cancel, OutputSet& set) {
  nlohmann::json files = nlohmann::json::object();
  // This run's drift.csv, staged with the other outputs (named as it will be in errors).
  const std::string drift_path = set.staged_path("drift.csv");
  const auto cache = static_cast<std::size_t>(job.execution.frame_cache_mb * 1024.0 * 1024.0);
  const OmpThreadCount guard(job.execution.threads);
  for (const auto& name : signals) {
    auto frames = open_series(job.input, name, cache);
    const Point centre{(frames->width() - 1) / 2.0, (frames->height() - 1) / 2.0};
    DriftTable drift = read_drift_table(drift_path, centre);
    if (drift.to_frame0.size() != frames->frame_count())
      throw bad_input(drift_path + ": " + std::to_string(drift.to_frame0.size()) + " frames, but signal '" + name +
                      "' of " + job.input + " has " + std::to_string(frames->frame_count()));
    AveragingOptions options = job.averaging;
    for (std::size_t k : drift.flagged) options.exclude_frames.push_back(k);
    progress.log(LogLevel::info, "applying the drift to signal '" + name + "'");
    AverageResult avg = average_series(*frames, drift.to_frame0, options, &progress, &cancel);
    for (const auto& w : avg.warnings) progress.log(LogLevel::warning, "signal '" + name + "': " + w);
    cancel.throw_if_cancelled();
    TiffWriteOptions tw;
    tw.pixel_size = frames->pixel_size();
    tw.unit = frames->pixel_unit();
    const std::string f = signal_file_name(name);
    set.write("average_" + f + ".tif", [&](const std::string& path) { write_tiff(path, avg.average, tw); });
    set.write("coverage_" + f + ".tif", [&](const std::string& path) { write_tiff(path, avg.coverage, tw); });
    set.write("sigma_" + f + ".tif", [&](const std::string& path) { write_tiff(path, avg.sigma, tw); });
    files["average_" + f] = fs::absolute(set.final_path("average_" + f + ".tif")).lexically_normal().string();
    files["sigma_" + f] = fs::absolute(set.final_path("sigma_" + f + ".tif")).lexically_normal().string();
  }
  return files;
}

}  // namespace driftscan::mpi
