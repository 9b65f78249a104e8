// Writing a synthetic series to disk with its ground truth (the files
// `driftscan-engine synth` produces).
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "driftscan/core/atomic_file.hpp"
#include "driftscan/core/error.hpp"
#include "driftscan/core/scan_rotation.hpp"
#include "driftscan/formats/tiff/tiff_writer.hpp"
#include "driftscan/synthetic/synthetic_series.hpp"

namespace driftscan {
namespace {

std::string stem_of(const std::string& out_path) {
  std::filesystem::path p(out_path);
  std::string ext = p.extension().string();
  if (ext == ".tif" || ext == ".tiff" || ext == ".TIF" || ext == ".TIFF") return (p.parent_path() / p.stem()).string();
  return out_path;
}

// Writes a text file under a temporary name, then renames it into place, so
// that it appears only when complete. `fill` writes the contents.
template <class Fill>
void write_text_file(const std::string& path, Fill&& fill) {
  AtomicFile file(path, "the truth file");
  fill(file.stream());
  file.commit();
}

void write_truth_csv(const SyntheticSeries& s, const std::string& path) {
  bool rotating = s.options().rotation_step_deg != 0.0;
  const bool turned = has_scan_rotation(s.options().scan_rotation_deg);
  write_text_file(path, [&](std::ostream& out) {
    out << (rotating ? "frame,dx,dy,angle_deg" : "frame,dx,dy") << (turned ? ",scan_rotation_deg\n" : "\n");
    char line[160];
    for (std::size_t k = 0; k < s.frame_count(); ++k) {
      Point d = s.drift(k);
      if (rotating) std::snprintf(line, sizeof line, "%zu,%.6f,%.6f,%.8f", k, d.x, d.y, s.angle_deg(k));
      else std::snprintf(line, sizeof line, "%zu,%.6f,%.6f", k, d.x, d.y);
      out << line;
      if (turned) {
        std::snprintf(line, sizeof line, ",%.10g", s.scan_rotation_deg(k));
        out << line;
      }
      out << '\n';
    }
  });
}

// One row per scan line of every frame: the drift path at the line's mid time
// and the line's jitter (the per-line model a scan-distortion correction fits).
void write_lines_truth_csv(const SyntheticSeries& s, const std::string& path) {
  const ScanTiming& timing = s.scan_timing();
  const bool turned = has_scan_rotation(s.options().scan_rotation_deg);
  write_text_file(path, [&](std::ostream& out) {
    out << (turned ? "frame,line,t,dx,dy,jitter,angle_deg\n" : "frame,line,t,dx,dy,jitter\n");
    char line[200];
    for (std::size_t k = 0; k < s.frame_count(); ++k)
      for (int l = 0; l < timing.lines(); ++l) {
        const double t = timing.line_mid_time(k, l);
        const Point d = s.drift_at(t);
        std::snprintf(line, sizeof line, "%zu,%d,%.12g,%.6f,%.6f,%.6f", k, l, t, d.x, d.y, s.line_jitter(k, l));
        out << line;
        if (turned) {
          std::snprintf(line, sizeof line, ",%.10g", s.scan_rotation_deg(k));
          out << line;
        }
        out << '\n';
      }
  });
}

// One row per frame: its fly-back hysteresis (SyntheticSeries::line_field).
void write_hysteresis_truth_csv(const SyntheticSeries& s, const std::string& path) {
  write_text_file(path, [&](std::ostream& out) {
    out << "frame,amplitude,decay\n";
    char line[120];
    for (std::size_t k = 0; k < s.frame_count(); ++k) {
      std::snprintf(line, sizeof line, "%zu,%.6f,%.6f\n", k, s.line_field(k, 0.0), s.options().scan_hysteresis_length);
      out << line;
    }
  });
}

}  // namespace

SynthOutputs write_synthetic_series(const SynthOptions& options, const std::string& out_path, Progress* progress,
                                    const CancelToken* cancel) {
  SyntheticSeries series(options);
  SynthOutputs outs;
  outs.series = out_path;
  std::string stem = stem_of(out_path);
  outs.truth = stem + "_truth.csv";
  outs.reference = stem + "_reference.tif";
  if (series.scanned()) outs.lines_truth = stem + "_lines_truth.csv";
  if (options.scan_hysteresis != 0.0) outs.hysteresis_truth = stem + "_hysteresis_truth.csv";

  // The stack goes to a temporary name first; the truth and the reference
  // are written next, and the stack is renamed into place last, so a run
  // that stops early leaves nothing that looks complete.
  TiffStackWriter writer(out_path, series.width(), series.height(), series.frame_count());
  if (progress) progress->phase("synthesize", series.frame_count());
  // Frames are drawn a batch at a time in parallel (each independently, from
  // (seed, k)) and appended in order: one parallel region per batch rather
  // than one per frame. A batch holds at most ~64 MB.
  const std::size_t n = series.frame_count();
  const std::size_t frame_bytes = static_cast<std::size_t>(series.width()) * series.height() * sizeof(float);
  const int threads = std::max(1, omp_get_max_threads());
  const std::size_t batch =
      std::clamp<std::size_t>((std::size_t(64) << 20) / frame_bytes, 1, static_cast<std::size_t>(4 * threads));
  std::vector<Frame> frames(batch);
  for (std::size_t start = 0; start < n; start += batch) {
    if (cancel) cancel->throw_if_cancelled();
    const long count = static_cast<long>(std::min(batch, n - start));
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (count > 1)
    for (long i = 0; i < count; ++i)
      frames[static_cast<std::size_t>(i)] = series.frame(start + static_cast<std::size_t>(i));
    for (long i = 0; i < count; ++i) writer.append(frames[static_cast<std::size_t>(i)]);
    if (progress) progress->advance(start + static_cast<std::size_t>(count));
  }
  if (cancel) cancel->throw_if_cancelled();
  write_tiff(outs.reference, series.ideal_frame(0));
  write_truth_csv(series, outs.truth);
  if (series.scanned()) write_lines_truth_csv(series, outs.lines_truth);
  if (!outs.hysteresis_truth.empty()) write_hysteresis_truth_csv(series, outs.hysteresis_truth);
  writer.commit();
  return outs;
}

}  // namespace driftscan
