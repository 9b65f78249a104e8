#include "driftscan/mpi/job_flags.hpp"

#include <cmath>
#include <cstdlib>
#include <sstream>

#include "driftscan/error.hpp"

namespace driftscan::mpi {

enum FlagGroup : unsigned {
  common = 1,        // every job command
  registration = 2,  // register
  averaging = 4,     // register, average
  spectrum = 8,
  synth = 16,
  average_only = 32,  // average
};

struct JobFlag {
  const char* name;       // CLI11 name, e.g. "--max-shift"
  const char* field;      // job field, e.g. "registration.max_shift"
  const char* help;
  unsigned groups;
  bool is_switch;         // takes no value (sets true)
  void (*apply)(Job& job, const std::string& value, const std::string& flag);
};

namespace {

[[noreturn]] void bad(const std::string& flag, const std::string& value, const std::string& what) {
  throw bad_input("option " + flag + " '" + value + "': " + what);
}
double to_double(const std::string& v, const std::string& flag) {
  char* end = nullptr;
  double d = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !std::isfinite(d)) bad(flag, v, "not a number");
  return d;
}
long to_long(const std::string& v, const std::string& flag, long lo = 0) {
  char* end = nullptr;
  long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0') bad(flag, v, "not an integer");
  if (n < lo) bad(flag, v, "must be at least " + std::to_string(lo));
  return n;
}
bool to_bool(const std::string& v, const std::string& flag) {
  if (v == "true" || v == "on" || v == "yes" || v == "1") return true;
  if (v == "false" || v == "off" || v == "no" || v == "0") return false;
  bad(flag, v, "expected on or off");
}
std::vector<double> to_list(const std::string& v, const std::string& flag, std::size_t n) {
  std::vector<double> out;
  std::stringstream ss(v);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(to_double(item, flag));
  if (n && out.size() != n) bad(flag, v, "expected " + std::to_string(n) + " comma-separated numbers");
  return out;
}

const std::vector<JobFlag>& table() {
  static const std::vector<JobFlag> flags{
      {"--input,-i", "input", "Input series: multi-page TIFF, folder of TIFFs, or glob", common, false,
       [](Job& j, const std::string& v, const std::string&) { j.input = v; }},
      {"--output,--out,-o", "output", "Results folder (synth: folder, or the series .tif path)", common, false,
       [](Job& j, const std::string& v, const std::string&) { j.output = v; }},
      // registration
      {"--model", "registration.model", "translation, rigid or affine", registration, false,
       [](Job& j, const std::string& v, const std::string& f) {
         try {
           j.registration.model = motion_model_from_string(v);
         } catch (const Error&) {
           bad(f, v, "expected translation, rigid or affine");
         }
       }},
      {"--roi", "registration.roi", "x,y,w,h in pixels of frame 0", registration, false,
       [](Job& j, const std::string& v, const std::string& f) {
         auto r = to_list(v, f, 4);
         for (double x : r)
           if (x < 0 || x != std::floor(x)) bad(f, v, "expected non-negative integers");
         j.registration.roi = Roi{int(r[0]), int(r[1]), int(r[2]), int(r[3])};
       }},
      {"--mask", "registration.mask", "Mask TIFF (non-zero = use)", registration, false,
       [](Job& j, const std::string& v, const std::string&) { j.registration.mask = v; }},
      {"--pyramid-levels", "registration.pyramid_levels", "Coarse-to-fine levels", registration, false,
       [](Job& j, const std::string& v, const std::string& f) { j.registration.pyramid_levels = int(to_long(v, f, 1)); }},
      {"--max-iterations", "registration.max_iterations", "Refinement iterations per level", registration, false,
       [](Job& j, const std::string& v, const std::string& f) { j.registration.max_iterations = int(to_long(v, f, 1)); }},
      {"--tolerance", "registration.tolerance", "Stop when the update is below this (pixels)", registration, false,
       [](Job& j, const std::string& v, const std::string& f) { j.registration.tolerance = to_double(v, f); }},
      {"--bandpass", "registration.bandpass", "low,high spatial periods kept (pixels)", registration, false,
       [](Job& j, const std::string& v, const std::string& f) {
         auto b = to_list(v, f, 2);
         j.registration.bandpass_low = b[0];
         j.registration.bandpass_high = b[1];
       }},
      {"--max-shift", "registration.max_shift", "Bound on consecutive-pair shifts (pixels)", registration, false,
       [](Job& j, const std::string& v, const std::string& f) { j.registration.max_shift = to_double(v, f); }},
      // averaging
      {"--method,--average", "averaging.method", "mean, median or clipped", averaging, false,
       [](Job& j, const std::string& v, const std::string& f) {
         if (v == "mean") j.averaging.method = AverageMethod::mean;
         else if (v == "median") j.averaging.method = AverageMethod::median;
         else if (v == "clipped") j.averaging.method = AverageMethod::clipped;
         else bad(f, v, "expected mean, median or clipped");
       }},
      {"--clip-sigma", "averaging.clip_sigma", "Sigma of the clipped mean", averaging, false,
       [](Job& j, const std::string& v, const std::string& f) { j.averaging.clip_sigma = to_double(v, f); }},
      {"--interpolation", "averaging.interpolation", "cubic or fourier (translation only)", averaging, false,
       [](Job& j, const std::string& v, const std::string& f) {
         if (v == "cubic") j.averaging.interpolation = Interpolation::cubic;
         else if (v == "fourier") j.averaging.interpolation = Interpolation::fourier;
         else bad(f, v, "expected cubic or fourier");
       }},
      {"--min-quality", "averaging.min_quality", "Exclude frames whose NCC is below", averaging, false,
       [](Job& j, const std::string& v, const std::string& f) { j.averaging.min_quality = to_double(v, f); }},
      {"--exclude", "averaging.exclude_frames", "Frames to leave out, e.g. 3,17,40", averaging, false,
       [](Job& j, const std::string& v, const std::string& f) {
         j.averaging.exclude_frames.clear();
         for (double x : to_list(v, f, 0)) {
           if (x < 0 || x != std::floor(x)) bad(f, v, "expected frame numbers");
           j.averaging.exclude_frames.push_back(static_cast<std::size_t>(x));
         }
       }},
      {"--median-tile", "averaging.median_tile", "Tile edge of the bounded-memory median", averaging, false,
       [](Job& j, const std::string& v, const std::string& f) { j.averaging.median_tile = int(to_long(v, f, 1)); }},
      {"--median-memory-mb", "averaging.median_memory_mb", "Bound on the median's buffers (MB)", averaging, false,
       [](Job& j, const std::string& v, const std::string& f) { j.averaging.median_memory_mb = to_double(v, f); }},
      {"--drift", "averaging.drift",
       "Drift table of an earlier run (drift.csv) or a *_truth.csv (spectrum: register the stack first)",
       average_only | spectrum, false, [](Job& j, const std::string& v, const std::string&) { j.averaging.drift = v; }},
      // spectrum
      {"--frame", "spectrum.frame", "Frame whose power spectrum is written", spectrum, false,
       [](Job& j, const std::string& v, const std::string& f) { j.spectrum.frame = int(to_long(v, f, 0)); }},
      {"--spectrum-max-frames", "spectrum.max_frames",
       "Bin the time axis of the 3-D spectrum to at most this many planes (0: every frame)", spectrum, false,
       [](Job& j, const std::string& v, const std::string& f) { j.spectrum.max_frames = std::size_t(to_long(v, f, 0)); }},
      // synth
      {"--frames", "synth.frames", "Number of frames", synth, false,
       [](Job& j, const std::string& v, const std::string& f) { j.synth.frames = std::size_t(to_long(v, f, 1)); }},
      {"--size", "synth.width", "Frame size WxH (pixels), e.g. 512x512 (sets synth.width and synth.height)", synth, false,
       [](Job& j, const std::string& v, const std::string& f) {
         auto x = v.find_first_of("xX");
         if (x == std::string::npos) bad(f, v, "expected WxH, e.g. 512x512");
         j.synth.width = int(to_long(v.substr(0, x), f, 8));
         j.synth.height = int(to_long(v.substr(x + 1), f, 8));
       }},
      {"--width", "synth.width", "Frame width (pixels)", synth, false,
       [](Job& j, const std::string& v, const std::string& f) { j.synth.width = int(to_long(v, f, 8)); }},
      {"--height", "synth.height", "Frame height (pixels)", synth, false,
       [](Job& j, const std::string& v, const std::string& f) { j.synth.height = int(to_long(v, f, 8)); }},
      {"--period", "synth.period", "Lattice period (pixels)", synth, false,
       [](Job& j, const std::string& v, const std::string& f) { j.synth.period = to_double(v, f); }},
      {"--lattice", "synth.lattice", "hex or square", synth, false,
       [](Job& j, const std::string& v, const std::string& f) {
         if (v == "hex") j.synth.lattice = Lattice::hex;
         else if (v == "square") j.synth.lattice = Lattice::square;
         else bad(f, v, "expected hex or square");
       }},
      {"--drift-step", "synth.drift_step", "Random-walk step (pixels, std dev per axis)", synth, false,
       [](Job& j, const std::string& v, const std::string& f) { j.synth.drift_step = to_double(v, f); }},
      {"--drift-linear", "synth.drift_linear", "Linear drift dx,dy per frame (pixels)", synth, false,
       [](Job& j, const std::string& v, const std::string& f) {
         auto d = to_list(v, f, 2);
         j.synth.drift_linear_x = d[0];
         j.synth.drift_linear_y = d[1];
       }},
      {"--rotation-step", "synth.rotation_step_deg", "Rotation drift per frame (degrees)", synth, false,
       [](Job& j, const std::string& v, const std::string& f) { j.synth.rotation_step_deg = to_double(v, f); }},
      {"--jitter", "synth.jitter", "Scan-line jitter (pixels)", synth, false,
       [](Job& j, const std::string& v, const std::string& f) { j.synth.jitter = to_double(v, f); }},
      {"--dose", "synth.dose", "Mean counts at a column (<= 0: no noise)", synth, false,
       [](Job& j, const std::string& v, const std::string& f) { j.synth.dose = to_double(v, f); }},
      {"--read-noise", "synth.read_noise", "Gaussian read noise (counts)", synth, false,
       [](Job& j, const std::string& v, const std::string& f) { j.synth.read_noise = to_double(v, f); }},
      {"--vacancies", "synth.vacancy_fraction", "Fraction of empty sites", synth, false,
       [](Job& j, const std::string& v, const std::string& f) { j.synth.vacancy_fraction = to_double(v, f); }},
      {"--grain-boundary", "synth.grain_boundary", "on or off", synth, false,
       [](Job& j, const std::string& v, const std::string& f) { j.synth.grain_boundary = to_bool(v, f); }},
      {"--seed", "synth.seed", "Random seed", synth, false,
       [](Job& j, const std::string& v, const std::string& f) {
         j.synth.seed = static_cast<std::uint32_t>(to_long(v, f, 0));
       }},
      // execution
      {"--threads,-t", "execution.threads", "OpenMP threads per rank", common, false,
       [](Job& j, const std::string& v, const std::string& f) { j.execution.threads = int(to_long(v, f, 1)); }},
      {"--scan-algorithm", "execution.scan_algorithm", "mpi-scan, dissemination, blelloch or ladner-fischer",
       registration, false, [](Job& j, const std::string& v, const std::string&) { j.execution.scan_algorithm = v; }},
      {"--local-strategy", "execution.local_strategy", "reduce-then-scan or scan-then-map", registration, false,
       [](Job& j, const std::string& v, const std::string&) { j.execution.local_strategy = v; }},
      {"--work-stealing", "execution.work_stealing", "on or off", registration, false,
       [](Job& j, const std::string& v, const std::string& f) { j.execution.work_stealing = to_bool(v, f); }},
      {"--frame-cache-mb", "execution.frame_cache_mb", "Decoded-frame cache per rank (MB)", common, false,
       [](Job& j, const std::string& v, const std::string& f) { j.execution.frame_cache_mb = to_double(v, f); }},
      {"--checkpoint-interval", "execution.checkpoint_interval_s", "Seconds between checkpoints (0: off)",
       registration, false,
       [](Job& j, const std::string& v, const std::string& f) { j.execution.checkpoint_interval_s = to_double(v, f); }},
      {"--resume", "execution.resume", "Continue from the checkpoints in the output folder (any rank count)", registration, true,
       [](Job& j, const std::string&, const std::string&) { j.execution.resume = true; }},
      {"--profile", "execution.profile", "Launch profile recorded in the job (driftscan-launch)", common, false,
       [](Job& j, const std::string& v, const std::string&) { j.execution.profile = v; }},
  };
  return flags;
}

unsigned groups_of(const std::string& command) {
  if (command == "register") return common | registration | averaging;
  if (command == "average") return common | averaging | average_only;
  if (command == "spectrum") return common | spectrum;
  if (command == "synth") return common | synth;
  return ~0u;  // run: everything
}

}  // namespace

void add_job_flags(CLI::App& app, const std::string& command, const std::shared_ptr<JobFlagValues>& values) {
  values->command = command;
  unsigned groups = groups_of(command);
  if (command == "run") {
    app.add_option("job", values->job_file, "Job file (JSON, docs/protocol.md); flags given after it override it")
        ->required();
  } else {
    app.add_option("--job", values->job_file, "Start from this job file; flags override it");
  }
  for (const auto& f : table()) {
    if (!(f.groups & groups)) continue;
    std::string help = std::string(f.help) + "  [" + f.field + "]";
    const JobFlag* flag = &f;
    if (f.is_switch) {
      app.add_flag_callback(f.name, [values, flag] { values->given.emplace_back(flag, "true"); }, help);
    } else {
      // One callback per occurrence keeps the command-line order.
      app.add_option_function<std::string>(
             f.name, [values, flag](const std::string& v) { values->given.emplace_back(flag, v); }, help)
          ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    }
  }
  if (command == "register" || command == "average" || command == "spectrum") {
    // The input may also be given as the first positional argument.
    static const JobFlag* input_flag = &table().front();
    app.add_option_function<std::string>(
        "input", [values](const std::string& v) { values->given.emplace_back(input_flag, v); },
        "Input series (same as --input)");
  }
  app.add_flag("--print-job", values->print_job, "Print the effective job (JSON) and exit");
}

Job effective_job(const JobFlagValues& values) {
  Job job;
  if (!values.job_file.empty()) {
    job = load_job(values.job_file);
    if (values.command != "run" && job.command != values.command)
      throw bad_input(values.job_file + ": is a '" + job.command + "' job, not '" + values.command + "'");
  } else {
    job.command = values.command;
  }
  for (const auto& [flag, value] : values.given) {
    std::string name = flag->name;
    name = name.substr(0, name.find(','));
    flag->apply(job, value, name);
  }
  validate(job);
  return job;
}

std::vector<std::pair<std::string, std::string>> job_flag_table() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& f : table()) {
    std::string name = f.name;
    out.emplace_back(name.substr(0, name.find(',')), f.field);
  }
  return out;
}

}  // namespace driftscan::mpi
