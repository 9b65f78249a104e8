#include "driftscan/scan_distortion/line_drift_table.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>

#include "driftscan/core/atomic_file.hpp"
#include "driftscan/core/error.hpp"
#include "driftscan/registration/drift_table.hpp"

namespace driftscan {

namespace {
// ",sigma_dx,sigma_dy,sigma_jitter" of frame k's line l.
std::string line_sigma_columns(const LineSigmas& sigmas, std::size_t k, int l, double t) {
  const Point p = sigmas.path ? sigmas.path->sigma(t) : Point{};
  const auto* rows = sigmas.jitter;
  const bool has = rows && k < rows->size() && static_cast<std::size_t>(l) < (*rows)[k].size();
  char cols[96];
  std::snprintf(cols, sizeof cols, ",%.5f,%.5f,%.5f", p.x, p.y,
                has ? (*rows)[k][static_cast<std::size_t>(l)] : std::numeric_limits<double>::quiet_NaN());
  return cols;
}
}  // namespace

void write_line_drift_csv(const std::string& path, const ScanTiming& timing, std::size_t frames, const ScanModel& model,
                          const std::vector<DriftSample>& band_samples, int band_lines, const LineSigmas* sigmas) {
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
  out << "frame,line,t,dx,dy,jitter,weight" << (sigmas ? ",sigma_dx,sigma_dy,sigma_jitter" : "")
      << (timing.turned() ? ",angle_deg" : "") << "\n";  // each frame's scan rotation, last
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
      std::snprintf(row, sizeof row, "%zu,%d,%.9g,%.5f,%.5f,%.5f,%.4g", k, l, t, d.x, d.y, j, w);
      out << row;
      if (sigmas) out << line_sigma_columns(*sigmas, k, l, t);
      if (timing.turned()) {
        std::snprintf(row, sizeof row, ",%.10g", timing.scan_rotation(k));
        out << row;
      }
      out << '\n';
    }
  }
  file.commit();
}

struct LineDriftReader::Impl {
  std::string path;
  const ScanTiming* timing = nullptr;
  std::ifstream in;
  std::size_t lineno = 1, next = 0;
  std::size_t col[7] = {};
  std::vector<std::string> pending;  // the first row of the next frame, already read
};

LineDriftReader::LineDriftReader(const std::string& path, const ScanTiming& timing) : impl_(std::make_unique<Impl>()) {
  impl_->path = path;
  impl_->timing = &timing;
  impl_->in.open(path);
  if (!impl_->in) throw bad_input(path + ": cannot open the line drift table");
  std::string header;
  if (!std::getline(impl_->in, header)) throw bad_input(path + ": empty line drift table");
  const std::vector<std::string> names = split_csv_fields(header);
  const char* need[7] = {"frame", "line", "t", "dx", "dy", "jitter", "weight"};
  for (int i = 0; i < 7; ++i) {
    const auto it = std::find(names.begin(), names.end(), need[i]);
    if (it == names.end()) throw bad_input(path + ": no '" + need[i] + "' column in the header (not a lines.csv?)");
    impl_->col[i] = static_cast<std::size_t>(it - names.begin());
  }
}

LineDriftReader::~LineDriftReader() = default;

bool LineDriftReader::next_frame(std::size_t& frame, std::vector<Point>& drift, std::vector<double>& jitter,
                                 bool* registered) {
  Impl& m = *impl_;
  const int lines = m.timing->lines();
  if (registered) *registered = false;
  drift.assign(static_cast<std::size_t>(lines), Point{});
  jitter.assign(static_cast<std::size_t>(lines), 0.0);
  std::string text;
  for (int l = 0; l < lines; ++l) {
    do {
      if (!std::getline(m.in, text)) {
        if (l == 0) return false;
        throw bad_input(m.path + ": ends inside frame " + std::to_string(m.next) + " (line " + std::to_string(l) +
                        " of " + std::to_string(lines) + ")");
      }
      ++m.lineno;
    } while (text.empty() || text == "\r");
    const std::vector<std::string> f = split_csv_fields(text);
    auto number = [&](int c) {
      const std::size_t i = m.col[c];
      const std::string& s = i < f.size() ? f[i] : std::string();
      char* end = nullptr;
      const double v = std::strtod(s.c_str(), &end);
      if (s.empty() || (*end != '\0' && *end != '\r') || !std::isfinite(v))
        throw bad_input(m.path + ":" + std::to_string(m.lineno) + ": a value is not a finite number");
      return v;
    };
    if (number(0) != static_cast<double>(m.next) || number(1) != static_cast<double>(l))
      throw bad_input(m.path + ":" + std::to_string(m.lineno) + ": expected frame " + std::to_string(m.next) +
                      ", line " + std::to_string(l) + " (the frames must have " + std::to_string(lines) + " lines)");
    const double t = m.timing->line_mid_time(m.next, l);
    if (std::fabs(number(2) - t) > 1e-6 * std::max(1e-3, std::fabs(t)))
      throw bad_input(m.path + ":" + std::to_string(m.lineno) + ": t = " + message_number(number(2)) +
                      " s, but the scan settings put this line at " + message_number(t) +
                      " s: give the scan timing of the run that wrote it (--scan-dwell, --line-flyback, "
                      "--frame-flyback, --scan-direction)");
    drift[static_cast<std::size_t>(l)] = {number(3), number(4)};
    jitter[static_cast<std::size_t>(l)] = number(5);
    if (registered && number(6) > 0) *registered = true;
  }
  frame = m.next++;
  return true;
}

}  // namespace driftscan
