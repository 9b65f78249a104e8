// The table of job settings (job_fields.hpp) and the names of enumerated
// settings (enum_names.hpp).
#include "driftscan/job/job_fields.hpp"

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <type_traits>

#include "driftscan/core/enum_names.hpp"

namespace driftscan {

const std::vector<std::string>& job_command_names() {
  static const std::vector<std::string> names{"register", "average", "spectrum", "synth"};
  return names;
}
const std::vector<std::string>& scan_algorithm_names() {
  static const std::vector<std::string> names{"mpi-scan", "dissemination", "blelloch", "ladner-fischer"};
  return names;
}
const std::vector<std::string>& local_strategy_names() {
  static const std::vector<std::string> names{"reduce-then-scan", "scan-then-map"};
  return names;
}

unsigned job_command_bit(const std::string& command) {
  const auto& names = job_command_names();
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == command) return 1u << i;
  return 0;
}

namespace {

using nlohmann::json;

// Members in their job-file form: enums by name, null meaning the type's "off" value.
template <class T>
json file_form(const T& v) {
  if constexpr (std::is_enum_v<T>) return enum_name(v);
  else return json(v);
}
template <class T>
void from_file_form(const json& v, T& out) {
  if (v.is_null()) out = T{};
  else if constexpr (std::is_enum_v<T>) enum_from_name(v.get<std::string>(), out);
  else out = v.get<T>();
}

template <auto Block, auto Member>
json get_member(const Job& j) {
  return file_form((j.*Block).*Member);
}
template <auto Block, auto Member>
void set_member(Job& j, const json& v) {
  from_file_form(v, (j.*Block).*Member);
}
template <auto Member>
json get_top(const Job& j) {
  return file_form(j.*Member);
}
template <auto Member>
void set_top(Job& j, const json& v) {
  from_file_form(v, j.*Member);
}

// Builds one row; each call sets one aspect, so a row reads as a sentence.
struct Row {
  JobField f;
  Row(const char* block, const char* key, FieldType type, const char* help) {
    f.block = block;
    f.key = key;
    f.type = type;
    f.help = help;
  }
  Row& flag(const char* names, unsigned commands) {
    f.flags = names;
    f.flag_commands = commands;
    return *this;
  }
  Row& value_name(const char* name) {
    f.flag_value = name;
    return *this;
  }
  Row& is_switch() {
    f.flag_is_switch = true;
    return *this;
  }
  Row& choices(std::vector<std::string> names) {
    f.choices = std::move(names);
    return *this;
  }
  Row& shape(const char* s, bool nullable = false) {
    f.shape = s;
    f.nullable = nullable;
    return *this;
  }
  Row& at_least(double lo) {
    f.min = lo;
    return *this;
  }
  Row& above(double lo) {
    f.min = lo;
    f.min_open = true;
    return *this;
  }
  Row& at_most(double hi) {
    f.max = hi;
    return *this;
  }
  Row& below(double hi) {
    f.max = hi;
    f.max_open = true;
    return *this;
  }
  Row& said(const char* rule) {
    f.rule = rule;
    return *this;
  }
  Row& checked_for(unsigned commands) {
    f.checked_for = commands;
    return *this;
  }
  Row& editor(const char* label, const char* unit = nullptr) {
    f.editor.label = label;
    f.editor.unit = unit;
    return *this;
  }
  // The editor shows the value times `scale` in `unit` (the job keeps its own unit).
  Row& shown_in(const char* unit, double scale) {
    f.editor.unit = unit;
    f.editor.display_scale = scale;
    return *this;
  }
  Row& spin(double lo, double hi, int decimals = 0, double step = 1) {
    f.editor.lo = lo;
    f.editor.hi = hi;
    f.editor.decimals = decimals;
    f.editor.step = step;
    return *this;
  }
  Row& placeholder(const char* text) {
    f.editor.placeholder = text;
    return *this;
  }
  Row& listed() {
    f.editor.listed = true;
    return *this;
  }
  Row& enabled_when(const char* field, const char* value) {
    f.editor.enabled_by = field;
    f.editor.enabled_value = value;
    return *this;
  }
  template <auto Block, auto Member>
  Row& member() {
    f.get = &get_member<Block, Member>;
    f.set = &set_member<Block, Member>;
    return *this;
  }
  template <auto Member>
  Row& top() {
    f.get = &get_top<Member>;
    f.set = &set_top<Member>;
    return *this;
  }
  Row& access(json (*get)(const Job&), void (*set)(Job&, const json&)) {
    f.get = get;
    f.set = set;
    return *this;
  }
  operator JobField() const { return f; }
};

using T = FieldType;
constexpr unsigned reg = for_register, avg = for_register | for_average, spec = for_spectrum, syn = for_synth;
constexpr unsigned all = for_all;
constexpr auto R = &Job::registration;
constexpr auto A = &Job::averaging;
constexpr auto S = &Job::synth;
constexpr auto E = &Job::execution;
constexpr auto P = &Job::spectrum;
constexpr auto C = &Job::scan;
constexpr auto F = &Job::follow;
constexpr unsigned scanned = avg | syn;

using Reg = RegistrationSettings;
using Avg = AveragingOptions;
using Syn = SynthOptions;
using Exe = ExecutionSettings;
using Scan = ScanSettings;
using Fol = FollowSettings;

// One row per field, its aspects read as a sentence: kept as written. A
// function per block of the job file, in the order of --help and the editor.
// clang-format off
// The command and its input and output.
std::vector<JobField> command_rows() {
  return {
      Row("", "command", T::text, "register, average, spectrum or synth").choices(job_command_names())
          .top<&Job::command>(),
      Row("", "input", T::text, "Input series: multi-page TIFF, folder of TIFFs, glob, DM3/DM4, EMD, SER/EMI or MRC")
          .flag("--input,-i", all).editor("Input").placeholder("series.tif, a folder or a glob").top<&Job::input>(),
      Row("", "output", T::text, "Results folder (synth: folder, or the series .tif path)")
          .flag("--output,--out,-o", all).editor("Output").placeholder("results folder").top<&Job::output>(),
  };
}

// registration
std::vector<JobField> registration_rows() {
  return {
      Row("registration", "model", T::choice, "Motion model between frames").choices(enum_names<MotionModel>())
          .flag("--model", reg).editor("Model").member<R, &Reg::model>(),
      Row("registration", "roi", T::rectangle, "x,y,w,h in pixels of frame 0").shape("[x, y, w, h] or null")
          .flag("--roi", reg).value_name("X,Y,W,H").editor("ROI")
          .access([](const Job& j) -> json {
                    const Roi& r = j.registration.roi;
                    return r.whole_frame() ? json(nullptr) : json::array({r.x, r.y, r.w, r.h});
                  },
                  [](Job& j, const json& v) {
                    j.registration.roi = v.is_null() ? Roi{}
                                                     : Roi{v[0].get<int>(), v[1].get<int>(), v[2].get<int>(), v[3].get<int>()};
                  }),
      Row("registration", "mask", T::optional_text, "Mask TIFF (non-zero = use)").flag("--mask", reg)
          .member<R, &Reg::mask>(),
      Row("registration", "pyramid_levels", T::integer, "Coarse-to-fine levels").flag("--pyramid-levels", reg)
          .at_least(1).at_most(12).editor("Pyramid levels").spin(1, 12).member<R, &Reg::pyramid_levels>(),
      Row("registration", "max_iterations", T::integer, "Refinement iterations per level")
          .flag("--max-iterations", reg).at_least(1).editor("Max iterations").spin(1, 100000)
          .member<R, &Reg::max_iterations>(),
      Row("registration", "tolerance", T::number, "Stop when the update is below this (pixels)")
          .flag("--tolerance", reg).above(0).editor("Tolerance", "px").spin(0.0, 10.0, 5, 0.0005)
          .member<R, &Reg::tolerance>(),
      Row("registration", "bandpass", T::number_pair, "low,high spatial periods kept (pixels)")
          .shape("[low_px, high_px] or null", true).flag("--bandpass", reg).value_name("LOW,HIGH")
          .editor("Periods kept", "px").spin(0.0, 1e5, 1, 0.5)
          .access([](const Job& j) -> json {
                    const auto& r = j.registration;
                    if (r.bandpass_low <= 0 && r.bandpass_high <= 0) return nullptr;
                    return json::array({r.bandpass_low, r.bandpass_high});
                  },
                  [](Job& j, const json& v) {
                    j.registration.bandpass_low = v.is_null() ? 0.0 : v[0].get<double>();
                    j.registration.bandpass_high = v.is_null() ? 0.0 : v[1].get<double>();
                  }),
      Row("registration", "max_shift", T::optional_number, "Bound on consecutive-pair shifts (pixels)")
          .flag("--max-shift", reg).at_least(0).said("positive or null").member<R, &Reg::max_shift>(),
      Row("registration", "uncertainty_rows", T::number,
          "Share of the rows the drift's standard error is measured on, in thin bands (default 0.15; 1: every row; frames under 1024 rows: every row; below 1 the sigma is a sample's, within ~4% of every row's)")
          .flag("--uncertainty-rows", reg).above(0).at_most(1).member<R, &Reg::uncertainty_rows>(),
  };
}

// averaging
std::vector<JobField> averaging_rows() {
  return {
      Row("averaging", "method", T::choice, "Average of the registered frames (clipped: sigma-clipped mean)").choices(enum_names<AverageMethod>())
          .flag("--method,--average", avg).editor("Method").member<A, &Avg::method>(),
      Row("averaging", "clip_sigma", T::number, "Sigma of the clipped mean").flag("--clip-sigma", avg).above(0)
          .editor("Rejection", "sigma").spin(0.0, 100.0, 2, 0.5).enabled_when("averaging.method", "clipped")
          .member<A, &Avg::clip_sigma>(),
      Row("averaging", "interpolation", T::choice, "Warp interpolation (fourier: translation only)")
          .choices(enum_names<Interpolation>()).flag("--interpolation", avg).editor("Interpolation")
          .member<A, &Avg::interpolation>(),
      Row("averaging", "min_quality", T::number, "Exclude frames whose NCC is below").flag("--min-quality", avg)
          .editor("Min quality", "NCC").spin(-1.0, 1.0, 3, 0.05).member<A, &Avg::min_quality>(),
      Row("averaging", "max_sigma", T::number, "Exclude frames whose drift sigma (px) is above; 0: no limit")
          .flag("--max-sigma", avg).at_least(0).editor("Max sigma", "px").spin(0.0, 100.0, 3, 0.01)
          .member<A, &Avg::max_sigma>(),
      Row("averaging", "weights", T::choice, "Frame weights of the mean (inverse-variance: by drift sigma and noise)")
          .choices(enum_names<FrameWeighting>()).flag("--weights", avg).editor("Weights")
          .enabled_when("averaging.method", "mean").member<A, &Avg::weights>(),
      Row("averaging", "exclude_frames", T::frame_list, "Frames to leave out, e.g. 3,17,40")
          .shape("a list of frame numbers").flag("--exclude", avg).value_name("INT,...")
          .member<A, &Avg::exclude_frames>(),
      Row("averaging", "median_tile", T::integer, "Tile edge of the bounded-memory median")
          .flag("--median-tile", avg).at_least(1).member<A, &Avg::median_tile>(),
      Row("averaging", "median_memory_mb", T::number, "Bound on the median's buffers (MB)")
          .flag("--median-memory-mb", avg).above(0).member<A, &Avg::median_memory_mb>(),
      Row("averaging", "drift", T::optional_text,
          "Drift table of an earlier run (drift.csv) or a *_truth.csv (spectrum: register the stack first)")
          .flag("--drift", for_average | for_spectrum).member<A, &Avg::drift>(),
      Row("averaging", "lines", T::optional_text,
          "lines.csv of a --scan-distortion run: average in specimen coordinates with its per-line drift (another detector of the same scan)")
          .flag("--lines", for_average).member<A, &Avg::lines>(),
  };
}

// spectrum
std::vector<JobField> spectrum_rows() {
  return {
      Row("spectrum", "frame", T::integer, "Frame whose power spectrum is written").flag("--frame", spec)
          .at_least(0).member<P, &SpectrumSettings::frame>(),
      Row("spectrum", "max_frames", T::count,
          "Bin the time axis of the 3-D spectrum to at most this many planes (0: every frame)")
          .flag("--spectrum-max-frames", spec).member<P, &SpectrumSettings::max_frames>(),
  };
}

// synth (checked only for the synth command: other commands carry the defaults along)
std::vector<JobField> synth_rows() {
  return {
      Row("synth", "frames", T::count, "Number of frames").flag("--frames", syn).at_least(1).checked_for(syn)
          .member<S, &Syn::frames>(),
      Row("synth", "width", T::integer, "Frame width (pixels)").flag("--width", syn).at_least(8).checked_for(syn)
          .member<S, &Syn::width>(),
      Row("synth", "height", T::integer, "Frame height (pixels)").flag("--height", syn).at_least(8).checked_for(syn)
          .member<S, &Syn::height>(),
      Row("synth", "period", T::number, "Lattice period (pixels)").flag("--period", syn).above(1).said("more than 1 pixel")
          .checked_for(syn)
          .member<S, &Syn::period>(),
      Row("synth", "lattice", T::choice, "Lattice of the synthetic crystal").choices(enum_names<Lattice>()).flag("--lattice", syn)
          .member<S, &Syn::lattice>(),
      Row("synth", "drift_step", T::number, "Random-walk step (pixels, std dev per axis)").flag("--drift-step", syn)
          .at_least(0).checked_for(syn).member<S, &Syn::drift_step>(),
      Row("synth", "drift_linear", T::number_pair, "Linear drift dx,dy per frame (pixels)")
          .shape("[dx, dy] pixels per frame").flag("--drift-linear", syn).value_name("DX,DY")
          .access([](const Job& j) -> json { return json::array({j.synth.drift_linear_x, j.synth.drift_linear_y}); },
                  [](Job& j, const json& v) {
                    j.synth.drift_linear_x = v.is_null() ? 0.0 : v[0].get<double>();
                    j.synth.drift_linear_y = v.is_null() ? 0.0 : v[1].get<double>();
                  }),
      Row("synth", "rotation_step_deg", T::number, "Rotation drift per frame (degrees)").flag("--rotation-step", syn)
          .member<S, &Syn::rotation_step_deg>(),
      Row("synth", "jitter", T::number, "Scan-line jitter (pixels)").flag("--jitter", syn).at_least(0)
          .checked_for(syn).member<S, &Syn::jitter>(),
      Row("synth", "dose", T::number, "Mean counts at a column (<= 0: no noise)").flag("--dose", syn)
          .member<S, &Syn::dose>(),
      Row("synth", "read_noise", T::number, "Gaussian read noise (counts)").flag("--read-noise", syn).at_least(0)
          .checked_for(syn).member<S, &Syn::read_noise>(),
      Row("synth", "vacancy_fraction", T::number, "Fraction of empty sites").flag("--vacancies", syn).at_least(0)
          .below(1).checked_for(syn).member<S, &Syn::vacancy_fraction>(),
      Row("synth", "grain_boundary", T::boolean, "Add a grain boundary").flag("--grain-boundary", syn)
          .member<S, &Syn::grain_boundary>(),
      Row("synth", "seed", T::seed, "Random seed").flag("--seed", syn).member<S, &Syn::seed>(),

      Row("synth", "drift_wobble", T::number, "Sinusoidal drift amplitude per axis (pixels; scanned series only)")
          .flag("--drift-wobble", syn).at_least(0).checked_for(syn).member<S, &Syn::drift_wobble>(),
      Row("synth", "drift_wobble_period", T::number, "Period of the drift wobble (frame times)")
          .flag("--wobble-period", syn).above(0).checked_for(syn).member<S, &Syn::drift_wobble_period>(),
      Row("synth", "scan_hysteresis", T::number, "Fly-back hysteresis: a line's first samples displaced along the fast axis by up to this (pixels, x 0.5-1.5 per frame; scanned series only)")
          .flag("--scan-hysteresis", syn).checked_for(syn).member<S, &Syn::scan_hysteresis>(),
      Row("synth", "scan_hysteresis_length", T::number, "Decay length of the fly-back hysteresis (samples)")
          .flag("--hysteresis-length", syn).above(0).checked_for(syn).member<S, &Syn::scan_hysteresis_length>(),
  };
}

// scan: STEM raster timing (synth scans with it when dwell > 0) and the scan-distortion correction
std::vector<JobField> scan_rows() {
  return {
      Row("scan", "dwell", T::number, "Pixel dwell time (s); 0: unknown (1 us assumed, with a warning)")
          .flag("--scan-dwell", scanned).at_least(0).editor("Dwell time").shown_in("µs", 1e6)
          .spin(0.0, 1e6, 3, 0.1)
          .member<C, &Scan::dwell>(),
      Row("scan", "line_flyback", T::number, "Line fly-back, as a fraction of the line's active time")
          .flag("--line-flyback", scanned).at_least(0).editor("Line fly-back", "of a line").spin(0.0, 100.0, 3, 0.05)
          .member<C, &Scan::line_flyback>(),
      Row("scan", "frame_flyback", T::number, "Frame fly-back, as a fraction of the frame's active time")
          .flag("--frame-flyback", scanned).at_least(0).editor("Frame fly-back", "of a frame").spin(0.0, 100.0, 3, 0.05)
          .member<C, &Scan::frame_flyback>(),
      Row("scan", "direction", T::choice, "Scan direction (rotated90: lines are columns)")
          .choices(enum_names<ScanDirection>()).flag("--scan-direction", scanned).editor("Scan direction")
          .member<C, &Scan::direction>(),
      Row("scan", "rotation", T::number_list, "Scan rotation of each frame (degrees): frame k gets value k mod n, e.g. 0,90 (orthogonal pairs) or 0,90,180,270 (revolving scan)")
          .shape("a list of angles in degrees").flag("--scan-rotation", scanned).value_name("DEG,...")
          .editor("Scan rotation", "deg").placeholder("0,90 or 0,90,180,270; empty: one direction, or the file's")
          .member<C, &Scan::rotation>(),
      Row("scan", "correct_distortion", T::boolean, "Correct the drift during each scanned frame, line by line")
          .flag("--scan-distortion", reg).is_switch().editor("Scan distortion").member<C, &Scan::correct_distortion>(),
      Row("scan", "auto_distortion", T::boolean, "Correct the scan distortion, unasked, of a series whose file records its scan clock (DM DigiScan, Velox Scan)")
          .flag("--auto-scan-distortion", reg).member<C, &Scan::auto_distortion>(),
      Row("scan", "band_lines", T::integer, "Scan lines per band registered against the average")
          .flag("--band-lines", reg).at_least(4).at_most(4096).editor("Band lines").spin(4, 4096)
          .enabled_when("scan.correct_distortion", "true").member<C, &Scan::band_lines>(),
      Row("scan", "rounds", T::integer, "Rounds of band registration and re-averaging; 0: chosen (2 in one direction, 4 in several)")
          .flag("--distortion-rounds", reg).at_least(0).at_most(20).member<C, &Scan::rounds>(),
      Row("scan", "smoothing", T::number, "Curvature penalty of the drift path d(t); 0: chosen per axis from the data")
          .flag("--path-smoothing", reg).at_least(0).member<C, &Scan::smoothing>(),
      Row("scan", "line_jitter", T::boolean, "Estimate each scan line's offset along the fast axis")
          .flag("--line-jitter", reg).member<C, &Scan::line_jitter>(),
      Row("scan", "max_band_offset", T::number, "Bound on a band's move from the rigid drift (px; < half a lattice period)")
          .flag("--max-band-offset", reg).above(0).member<C, &Scan::max_band_offset>(),
      Row("scan", "line_field_knots", T::integer, "Each frame's displacement along the fast axis by place in a line's first samples (fly-back hysteresis): B-spline coefficients; 0: none, else 3 to 64")
          .flag("--line-field-knots", reg).at_least(0).at_most(64).editor("Line field knots").spin(0, 64)
          .member<C, &Scan::line_field_knots>(),
      Row("scan", "line_field_extent", T::number, "The line field's extent: this fraction of each line, from its first sample (at most 0.5)")
          .flag("--line-field-extent", reg).above(0).at_most(0.5).member<C, &Scan::line_field_extent>(),
      Row("scan", "line_field_prior", T::number, "Prior std dev of a frame's line field about the series' shared one (px)")
          .flag("--line-field-prior", reg).above(0).member<C, &Scan::line_field_prior>(),
      Row("scan", "template_filter_noise_scale", T::number, "The template's Wiener filter: its noise power times this; 1: the Wiener filter, 0.5 keeps more of the average (broadband specimens' jitter 2-8% better, lattices' worse)")
          .flag("--template-filter-noise-scale", reg).above(0).member<C, &Scan::template_filter_noise_scale>(),
  };
}

// follow: register a series while it is being written
std::vector<JobField> follow_rows() {
  return {
      Row("follow", "enabled", T::boolean, "Register the series while it is written: frames as they complete (a growing TIFF, a folder or glob)")
          .flag("--follow", reg).is_switch().editor("Follow while written").member<F, &Fol::enabled>(),
      Row("follow", "until_frames", T::count, "Follow: stop after this many frames (0: no bound)")
          .flag("--until-frames", reg).editor("Stop after", "frames; 0: no bound").spin(0, 1e9).member<F, &Fol::until_frames>(),
      Row("follow", "idle_timeout_s", T::number, "Follow: stop when no frame has completed for this long (s)")
          .flag("--idle-timeout", reg).above(0).editor("Idle timeout", "s").spin(0.1, 1e6, 1, 5).member<F, &Fol::idle_timeout_s>(),
      Row("follow", "poll_interval_s", T::number, "Follow: seconds between looks at the file or folder")
          .flag("--poll-interval", reg).above(0).at_most(10).member<F, &Fol::poll_interval_s>(),
      Row("follow", "settle_s", T::number, "Follow: a folder's file unchanged this long (s) counts as complete (closed or renamed files at once)")
          .flag("--settle", reg).at_least(0).member<F, &Fol::settle_s>(),
      Row("follow", "incomplete_timeout_s", T::number, "Follow: a folder's file still incomplete after this long (s) is skipped")
          .flag("--incomplete-timeout", reg).above(0).member<F, &Fol::incomplete_timeout_s>(),
      Row("follow", "average_every_frames", T::count, "Follow: rewrite average.tif after this many new frames")
          .flag("--average-every-frames", reg).at_least(1).editor("Average every", "frames").spin(1, 1e6).member<F, &Fol::average_every_frames>(),
      Row("follow", "average_every_s", T::number, "Follow: or after this many seconds with new frames")
          .flag("--average-every-s", reg).above(0).editor("or every", "s").spin(0.1, 3600, 1, 0.5).member<F, &Fol::average_every_s>(),
  };
}

// execution
std::vector<JobField> execution_rows() {
  return {
      Row("execution", "profile", T::text, "Launch profile recorded in the job (driftscan-launch)")
          .flag("--profile", all).editor("Profile").listed().member<E, &Exe::profile>(),
      Row("execution", "ranks", T::integer, "MPI ranks (recorded by the launcher)").at_least(1)
          .editor("MPI ranks").spin(1, 100000).member<E, &Exe::ranks>(),
      Row("execution", "threads", T::integer, "OpenMP threads per rank").flag("--threads,-t", all).at_least(1)
          .editor("Threads per rank").spin(1, 1024).member<E, &Exe::threads>(),
      Row("execution", "scan_algorithm", T::text, "Global (between ranks) phase of the prefix scan")
          .choices(scan_algorithm_names()).flag("--scan-algorithm", reg).member<E, &Exe::scan_algorithm>(),
      Row("execution", "local_strategy", T::text, "Local (within a rank) phase of the prefix scan")
          .choices(local_strategy_names()).flag("--local-strategy", reg).member<E, &Exe::local_strategy>(),
      Row("execution", "work_stealing", T::boolean, "Threads steal work from their neighbours").flag("--work-stealing", reg)
          .member<E, &Exe::work_stealing>(),
      Row("execution", "frame_cache_mb", T::number, "Decoded-frame cache per rank (MB)").flag("--frame-cache-mb", all)
          .at_least(1).member<E, &Exe::frame_cache_mb>(),
      Row("execution", "memory_budget_mb", T::number, "Memory a rank may use (MB); bounds its caches")
          .flag("--memory-budget-mb", all).at_least(64).member<E, &Exe::memory_budget_mb>(),
      Row("execution", "checkpoint_interval_s", T::number, "Seconds between checkpoints (0: off)")
          .flag("--checkpoint-interval", reg).at_least(0).said("0 (off) or more").member<E, &Exe::checkpoint_interval_s>(),
      Row("execution", "resume", T::boolean, "Continue from the checkpoints in the output folder (any rank count)")
          .flag("--resume", reg).is_switch().member<E, &Exe::resume>(),
  };
}

// signals of a multi-signal input (DM, EMD, SER/EMI)
std::vector<JobField> signal_rows() {
  return {
      Row("", "signal", T::optional_text, "Signal (detector) of the input to read: a name from `info`, or its index; default the first")
          .flag("--signal", reg | avg | spec).top<&Job::signal>(),
      Row("", "apply_to", T::optional_text,
          "register: other signals averaged with the drift found on `signal` (NAME,NAME,... or all): average_<name>.tif each")
          .flag("--apply-to", reg).value_name("NAME,...|all").top<&Job::apply_to>(),
  };
}

// clang-format on

std::vector<JobField> make_table() {
  std::vector<JobField> table;
  for (auto rows : {command_rows, registration_rows, averaging_rows, spectrum_rows, synth_rows, scan_rows, follow_rows,
                    execution_rows, signal_rows}) {
    std::vector<JobField> block = rows();
    table.insert(table.end(), std::make_move_iterator(block.begin()), std::make_move_iterator(block.end()));
  }
  return table;
}

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

const std::vector<JobField>& job_fields() {
  static const std::vector<JobField> table = make_table();
  return table;
}

const std::vector<std::string>& job_blocks() {
  static const std::vector<std::string> blocks{"registration", "averaging", "spectrum", "synth",
                                               "scan",         "follow",    "execution"};
  return blocks;
}

const JobField& job_field(const std::string& path) {
  for (const auto& f : job_fields())
    if (f.path() == path) return f;
  throw std::logic_error("no job field '" + path + "'");
}

bool JobField::has_range() const { return std::isfinite(min) || std::isfinite(max); }

bool JobField::in_range(double v) const {
  if (min_open ? !(v > min) : !(v >= min)) return false;
  if (max_open ? !(v < max) : !(v <= max)) return false;
  return true;
}

std::string JobField::range_text() const {
  if (rule) return rule;
  const bool lo = std::isfinite(min), hi = std::isfinite(max);
  if (lo && hi) {
    if (!min_open && !max_open && min == std::floor(min) && max == std::floor(max))
      return number_text(min) + ".." + number_text(max);
    return "in " + std::string(min_open ? "(" : "[") + number_text(min) + ", " + number_text(max) +
           (max_open ? ")" : "]");
  }
  if (lo) {
    if (min == 0) return min_open ? "positive" : "0 or more";
    return (min_open ? "more than " : "at least ") + number_text(min);
  }
  if (hi) return (max_open ? "below " : "at most ") + number_text(max);
  return "any number";
}

}  // namespace driftscan
