#pragma once
// A job: every setting of one engine run, as stored in a job file (JSON; the
// desktop app's project file is exactly this). Schema in docs/protocol.md.
// Every command-line flag of driftscan-engine maps to one field here.
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "driftscan/averaging/averaging.hpp"
#include "driftscan/core/scan_timing.hpp"
#include "driftscan/registration/registration_settings.hpp"
#include "driftscan/scan_distortion/scan_distortion.hpp"
#include "driftscan/synthetic/synthetic_series.hpp"

namespace driftscan {

struct SpectrumSettings {
  int frame = 0;  // the frame whose 2-D power spectrum is written
  // Bound on the time axis of the 3-D spectrum: a longer series is binned
  // (consecutive frames averaged) to at most this many planes. 0: no bound.
  std::size_t max_frames = 0;
};

struct ExecutionSettings {
  std::string profile = "local";  // launcher profile name
  int ranks = 1;
  int threads = 1;
  std::string scan_algorithm = "dissemination";     // mpi-scan | dissemination | blelloch | ladner-fischer
  std::string local_strategy = "reduce-then-scan";  // or scan-then-map
  bool work_stealing = true;
  double frame_cache_mb = 256;
  // Memory a rank may use (MB): bounds the caches of prepared frames
  // (register_plan.hpp); the report states the peak reached.
  double memory_budget_mb = 2048;
  double checkpoint_interval_s = 60;
  bool resume = false;
};

// How the frames were scanned (STEM raster timing) and whether the drift
// during each frame is corrected (docs/scan-distortion.md). synth
// scans its frames with this timing when dwell > 0.
struct ScanSettings {
  double dwell = 0.0;          // s per pixel; 0: unknown (1 us assumed, with a warning, where it is needed)
  double line_flyback = 0.0;   // fraction of a line's active time (samples x dwell)
  double frame_flyback = 0.0;  // fraction of a frame's active time (lines x line time)
  ScanDirection direction = ScanDirection::normal;
  // Each frame's scan rotation in degrees (core/scan_rotation.hpp): frame k is
  // scanned at rotation[k mod n]; empty: every frame at 0.
  std::vector<double> rotation;
  bool correct_distortion = false;  // register: per-line drift and jitter, average in specimen coordinates
  // register: correct without being asked when the file records its scan
  // clock (DM DigiScan tags, Velox Scan metadata) and there are 2+ frames
  bool auto_distortion = true;
  int band_lines = 16;
  int rounds = 0;          // 0: chosen (ScanDistortionSettings::rounds_for: 2 in one direction, 4 in several)
  double smoothing = 0.0;  // 0: chosen per axis from the data (cross-validation)
  bool line_jitter = true;
  double max_band_offset = 2.0;              // px
  int line_field_knots = 0;                  // each frame's line field (LineFieldBasis coefficients); 0: none
  double line_field_extent = 0.25;           // over this fraction of each line's first samples
  double line_field_prior = 0.25;            // px: a frame's field about the shared one (prior std dev)
  double template_filter_noise_scale = 1.0;  // the template's Wiener filter's noise power times this

  // The timing for the engine (dwell 0 -> 1 us: only ratios of times matter
  // to the correction, so a missing dwell changes nothing but the t column).
  ScanTimingSettings timing() const;
  // The same, completed from what the file records where the job leaves a
  // value unset (dwell 0, fly-backs 0): a set value wins; a recorded frame
  // time shorter than the frames' lines is left out. `note` (if given)
  // receives one line saying what was taken from the file, or "".
  ScanTimingSettings timing(const RecordedScan& recorded, int width, int height, std::string* note) const;
  ScanDistortionSettings distortion() const;
  // Whether register corrects a series of `frames` frames whose file records
  // `recorded`: when asked, or (auto_distortion) when the file records its
  // scan clock and there are 2+ frames to average.
  bool corrects_distortion(const RecordedScan& recorded, std::size_t frames) const {
    return correct_distortion || (auto_distortion && recorded.known() && frames >= 2);
  }
};

// register --follow: registering a series while it is written (live
// acquisition; growing_series.hpp). Ends after until_frames frames, when no
// frame has completed for idle_timeout_s, or on a cancel; then the outputs
// are those of a batch run over the frames taken.
struct FollowSettings {
  bool enabled = false;
  std::size_t until_frames = 0;           // 0: no bound
  double idle_timeout_s = 60.0;           // > 0
  double poll_interval_s = 0.02;          // between looks at the file or folder
  double settle_s = 0.2;                  // a folder's file unchanged this long counts as complete
  double incomplete_timeout_s = 10.0;     // a folder's file still incomplete after this long is skipped
  std::size_t average_every_frames = 25;  // average.tif rewritten after this many new frames...
  double average_every_s = 2.0;           // ...or this many seconds (whichever comes first)
};

struct Job {
  int version = 1;
  std::string command = "register";  // register | average | spectrum | synth
  std::string input;
  std::string output;
  RegistrationSettings registration;
  AveragingOptions averaging;
  SpectrumSettings spectrum;
  SynthOptions synth;
  ScanSettings scan;
  FollowSettings follow;
  ExecutionSettings execution;
  std::string signal;    // the input's signal to read (multi-signal files); "": the first
  std::string apply_to;  // register: other signals averaged with the drift found ("a,b" or "all")
};

nlohmann::json to_json(const Job& job);
// Throws driftscan::Error (bad_input) naming `source` and the offending field.
Job job_from_json(const nlohmann::json& j, const std::string& source);
Job load_job(const std::string& path);
void save_job(const Job& job, const std::string& path);  // atomic
// The generator's options of a synth job: job.synth, scanned with job.scan's
// timing when a dwell is given (drift during each frame bends it, as in STEM).
SynthOptions synth_options(const Job& job);
// Throws bad_input on inconsistent settings (ROI outside frame is checked later, with the input).
void validate(const Job& job);

}  // namespace driftscan
