#include "driftscan/line_drift_table.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "driftscan/atomic_file.hpp"

namespace driftscan {

void write_line_drift_csv(const std::string& path, const ScanTiming& timing, std::size_t frames, const ScanModel& model,
                          const std::vector<DriftSample>& band_samples, int band_lines) {
  // Each band sample's weight goes to the band its time falls in.
  const int lines = timing.lines();
  const int bands_per_frame = std::max(1, lines / std::max(1, band_lines));
  std::vector<double> weight(frames * static_cast<std::size_t>(bands_per_frame), 0.0);
  double total = 0.0;
  for (const DriftSample& s : band_samples) {
    const auto k = static_cast<std::size_t>(std::floor(s.t / timing.frame_time()));
    if (k >= frames) continue;
    const int line = static_cast<int>((s.t - timing.frame_start(k)) / timing.line_time());
    const int band = std::clamp(line / std::max(1, band_lines), 0, bands_per_frame - 1);
    weight[k * static_cast<std::size_t>(bands_per_frame) + static_cast<std::size_t>(band)] = s.weight;
    total += s.weight;
  }
  const double mean = band_samples.empty() ? 1.0 : total / static_cast<double>(band_samples.size());
  AtomicFile file(path, "line drift table");
  std::ostream& out = file.stream();
  out << "frame,line,t,dx,dy,jitter,weight\n";
  char row[200];
  for (std::size_t k = 0; k < frames; ++k) {
    const bool has_jitter = k < model.jitter.size() && !model.jitter[k].empty();
    for (int l = 0; l < lines; ++l) {
      const double t = timing.line_mid_time(k, l);
      const Point d = model.path.at(t);
      const double j = has_jitter ? model.jitter[k][static_cast<std::size_t>(l)] : 0.0;
      const int band = std::min(l / std::max(1, band_lines), bands_per_frame - 1);
      const double w = weight[k * static_cast<std::size_t>(bands_per_frame) + static_cast<std::size_t>(band)] /
                       (mean > 0 ? mean : 1.0);
      std::snprintf(row, sizeof row, "%zu,%d,%.9g,%.5f,%.5f,%.5f,%.4g\n", k, l, t, d.x, d.y, j, w);
      out << row;
    }
  }
  file.commit();
}

}  // namespace driftscan
