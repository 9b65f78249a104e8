// Job files: the JSON schema of docs/protocol.md, both ways. Reading is
// strict — an unknown or mistyped field is an error naming the file and the
// field — because a silently ignored typo ("pyramid_level") would run the
// wrong job for hours. Missing fields keep their defaults.
#include "driftscan/job.hpp"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "driftscan/error.hpp"

namespace driftscan {
namespace {

using nlohmann::json;

const char* to_string(AverageMethod m) {
  switch (m) {
    case AverageMethod::mean: return "mean";
    case AverageMethod::median: return "median";
    case AverageMethod::clipped: return "clipped";
  }
  return "mean";
}
const char* to_string(Interpolation i) { return i == Interpolation::fourier ? "fourier" : "cubic"; }
const char* to_string(Lattice l) { return l == Lattice::square ? "square" : "hex"; }

json null_or(bool is_null, json value) { return is_null ? json(nullptr) : std::move(value); }

// Reads one object of the job file: each accessor names "source: field
// 'block.key'" in its errors; finish() rejects keys nobody asked for.
class Reader {
 public:
  Reader(const json& j, std::string source, std::string prefix)
      : j_(j), source_(std::move(source)), prefix_(std::move(prefix)) {
    if (!j_.is_object()) fail_at(prefix_.empty() ? "(top level)" : prefix_.substr(0, prefix_.size() - 1),
                                 "must be an object");
  }

  const json* find(const std::string& key) {
    seen_.insert(key);
    auto it = j_.find(key);
    return it == j_.end() ? nullptr : &*it;
  }
  [[noreturn]] void fail(const std::string& key, const std::string& what) const { fail_at(prefix_ + key, what); }

  void get(const std::string& key, std::string& out) {
    if (auto* v = find(key)) {
      if (!v->is_string()) fail(key, "must be a string");
      out = v->get<std::string>();
    }
  }
  void get_nullable(const std::string& key, std::string& out) {
    if (auto* v = find(key)) {
      if (v->is_null()) out.clear();
      else if (v->is_string()) out = v->get<std::string>();
      else fail(key, "must be a string or null");
    }
  }
  void get(const std::string& key, bool& out) {
    if (auto* v = find(key)) {
      if (!v->is_boolean()) fail(key, "must be true or false");
      out = v->get<bool>();
    }
  }
  void get(const std::string& key, double& out) {
    if (auto* v = find(key)) out = number(key, *v);
  }
  void get(const std::string& key, int& out) {
    if (auto* v = find(key)) out = static_cast<int>(integer(key, *v, -2147483647.0, 2147483647.0));
  }
  void get(const std::string& key, std::size_t& out) {
    if (auto* v = find(key)) out = static_cast<std::size_t>(integer(key, *v, 0.0, 9.0e15));
  }
  void get(const std::string& key, std::uint32_t& out) {
    if (auto* v = find(key)) out = static_cast<std::uint32_t>(integer(key, *v, 0.0, 4294967295.0));
  }
  // An optional number: null (or absent) -> 0, meaning "off".
  void get_nullable(const std::string& key, double& out) {
    if (auto* v = find(key)) out = v->is_null() ? 0.0 : number(key, *v);
  }

  double number(const std::string& key, const json& v) const {
    if (!v.is_number()) fail(key, "must be a number");
    double d = v.get<double>();
    if (!std::isfinite(d)) fail(key, "must be finite");
    return d;
  }
  double integer(const std::string& key, const json& v, double lo, double hi) const {
    if (!v.is_number()) fail(key, "must be an integer");
    double d = v.get<double>();
    if (d != std::floor(d)) fail(key, "must be an integer");
    if (d < lo || d > hi) fail(key, "is out of range");
    return d;
  }

  void finish() const {
    for (auto it = j_.begin(); it != j_.end(); ++it)
      if (!seen_.count(it.key())) fail_at(prefix_ + it.key(), "is not a known field");
  }

  const std::string& source() const { return source_; }
  const std::string& prefix() const { return prefix_; }

 private:
  [[noreturn]] void fail_at(const std::string& field, const std::string& what) const {
    throw bad_input(source_ + ": field '" + field + "' " + what);
  }
  const json& j_;
  std::string source_;
  std::string prefix_;
  std::set<std::string> seen_;
};

template <class F>
void block(Reader& top, const std::string& key, F&& read) {
  if (const json* v = top.find(key)) {
    if (v->is_null()) return;
    Reader r(*v, top.source(), top.prefix() + key + ".");
    read(r);
    r.finish();
  }
}

void check(bool ok, const std::string& message) {
  if (!ok) throw bad_input("job: " + message);
}

}  // namespace

json to_json(const Job& job) {
  const auto& r = job.registration;
  const auto& a = job.averaging;
  const auto& s = job.synth;
  const auto& e = job.execution;
  json j = json::object();
  j["driftscan_job"] = job.version;
  j["command"] = job.command;
  j["input"] = job.input;
  j["output"] = job.output;
  j["registration"] = {
      {"model", to_string(r.model)},
      {"roi", null_or(r.roi.whole_frame(), json::array({r.roi.x, r.roi.y, r.roi.w, r.roi.h}))},
      {"mask", null_or(r.mask.empty(), r.mask)},
      {"pyramid_levels", r.pyramid_levels},
      {"max_iterations", r.max_iterations},
      {"tolerance", r.tolerance},
      {"bandpass", null_or(r.bandpass_low <= 0 && r.bandpass_high <= 0,
                           json::array({r.bandpass_low, r.bandpass_high}))},
      {"max_shift", null_or(r.max_shift <= 0, r.max_shift)},
  };
  j["averaging"] = {
      {"method", to_string(a.method)},
      {"clip_sigma", a.clip_sigma},
      {"interpolation", to_string(a.interpolation)},
      {"min_quality", a.min_quality},
      {"exclude_frames", a.exclude_frames},
      {"median_tile", a.median_tile},
      {"median_memory_mb", a.median_memory_mb},
      {"drift", null_or(a.drift.empty(), a.drift)},
  };
  j["spectrum"] = {{"frame", job.spectrum.frame}, {"max_frames", job.spectrum.max_frames}};
  j["synth"] = {
      {"frames", s.frames},
      {"width", s.width},
      {"height", s.height},
      {"period", s.period},
      {"lattice", to_string(s.lattice)},
      {"drift_step", s.drift_step},
      {"drift_linear", json::array({s.drift_linear_x, s.drift_linear_y})},
      {"rotation_step_deg", s.rotation_step_deg},
      {"jitter", s.jitter},
      {"dose", s.dose},
      {"read_noise", s.read_noise},
      {"vacancy_fraction", s.vacancy_fraction},
      {"grain_boundary", s.grain_boundary},
      {"seed", s.seed},
  };
  j["execution"] = {
      {"profile", e.profile},
      {"ranks", e.ranks},
      {"threads", e.threads},
      {"scan_algorithm", e.scan_algorithm},
      {"local_strategy", e.local_strategy},
      {"work_stealing", e.work_stealing},
      {"frame_cache_mb", e.frame_cache_mb},
      {"checkpoint_interval_s", e.checkpoint_interval_s},
      {"resume", e.resume},
  };
  return j;
}

Job job_from_json(const json& j, const std::string& source) {
  Job job;
  Reader top(j, source, "");
  top.get("driftscan_job", job.version);
  if (!top.find("driftscan_job")) top.fail("driftscan_job", "is missing (not a DriftScan job file?)");
  if (job.version != 1) top.fail("driftscan_job", "is version " + std::to_string(job.version) +
                                                       "; this build reads version 1");
  top.get("command", job.command);
  top.get("input", job.input);
  top.get("output", job.output);

  block(top, "registration", [&](Reader& r) {
    auto& reg = job.registration;
    std::string model;
    r.get("model", model);
    if (!model.empty()) {
      try {
        reg.model = motion_model_from_string(model);
      } catch (const Error&) {
        r.fail("model", "is '" + model + "'; expected translation, rigid or affine");
      }
    }
    if (const json* roi = r.find("roi"); roi && !roi->is_null()) {
      if (!roi->is_array() || roi->size() != 4) r.fail("roi", "must be [x, y, w, h] or null");
      int v[4];
      for (int i = 0; i < 4; ++i) v[i] = static_cast<int>(r.integer("roi", (*roi)[i], 0, 1e9));
      reg.roi = Roi{v[0], v[1], v[2], v[3]};
      if (reg.roi.whole_frame()) r.fail("roi", "needs a positive width and height");
    }
    r.get_nullable("mask", reg.mask);
    r.get("pyramid_levels", reg.pyramid_levels);
    r.get("max_iterations", reg.max_iterations);
    r.get("tolerance", reg.tolerance);
    if (const json* bp = r.find("bandpass"); bp && !bp->is_null()) {
      if (!bp->is_array() || bp->size() != 2) r.fail("bandpass", "must be [low_px, high_px] or null");
      reg.bandpass_low = r.number("bandpass", (*bp)[0]);
      reg.bandpass_high = r.number("bandpass", (*bp)[1]);
    }
    r.get_nullable("max_shift", reg.max_shift);
  });

  block(top, "averaging", [&](Reader& r) {
    auto& av = job.averaging;
    std::string method, interp;
    r.get("method", method);
    if (method == "mean") av.method = AverageMethod::mean;
    else if (method == "median") av.method = AverageMethod::median;
    else if (method == "clipped") av.method = AverageMethod::clipped;
    else if (!method.empty()) r.fail("method", "is '" + method + "'; expected mean, median or clipped");
    r.get("clip_sigma", av.clip_sigma);
    r.get("interpolation", interp);
    if (interp == "cubic") av.interpolation = Interpolation::cubic;
    else if (interp == "fourier") av.interpolation = Interpolation::fourier;
    else if (!interp.empty()) r.fail("interpolation", "is '" + interp + "'; expected cubic or fourier");
    r.get("min_quality", av.min_quality);
    if (const json* ex = r.find("exclude_frames"); ex && !ex->is_null()) {
      if (!ex->is_array()) r.fail("exclude_frames", "must be a list of frame numbers");
      av.exclude_frames.clear();
      for (const auto& f : *ex) av.exclude_frames.push_back(static_cast<std::size_t>(r.integer("exclude_frames", f, 0, 9e15)));
    }
    r.get("median_tile", av.median_tile);
    r.get("median_memory_mb", av.median_memory_mb);
    r.get_nullable("drift", av.drift);
  });

  block(top, "spectrum", [&](Reader& r) {
    r.get("frame", job.spectrum.frame);
    r.get("max_frames", job.spectrum.max_frames);
  });

  block(top, "synth", [&](Reader& r) {
    auto& s = job.synth;
    r.get("frames", s.frames);
    r.get("width", s.width);
    r.get("height", s.height);
    r.get("period", s.period);
    std::string lattice;
    r.get("lattice", lattice);
    if (lattice == "hex") s.lattice = Lattice::hex;
    else if (lattice == "square") s.lattice = Lattice::square;
    else if (!lattice.empty()) r.fail("lattice", "is '" + lattice + "'; expected hex or square");
    r.get("drift_step", s.drift_step);
    if (const json* dl = r.find("drift_linear"); dl && !dl->is_null()) {
      if (!dl->is_array() || dl->size() != 2) r.fail("drift_linear", "must be [dx, dy] pixels per frame");
      s.drift_linear_x = r.number("drift_linear", (*dl)[0]);
      s.drift_linear_y = r.number("drift_linear", (*dl)[1]);
    }
    r.get("rotation_step_deg", s.rotation_step_deg);
    r.get("jitter", s.jitter);
    r.get("dose", s.dose);
    r.get("read_noise", s.read_noise);
    r.get("vacancy_fraction", s.vacancy_fraction);
    r.get("grain_boundary", s.grain_boundary);
    r.get("seed", s.seed);
  });

  block(top, "execution", [&](Reader& r) {
    auto& e = job.execution;
    r.get("profile", e.profile);
    r.get("ranks", e.ranks);
    r.get("threads", e.threads);
    r.get("scan_algorithm", e.scan_algorithm);
    r.get("local_strategy", e.local_strategy);
    r.get("work_stealing", e.work_stealing);
    r.get("frame_cache_mb", e.frame_cache_mb);
    r.get("checkpoint_interval_s", e.checkpoint_interval_s);
    r.get("resume", e.resume);
  });
  top.finish();
  return job;
}

Job load_job(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw bad_input(path + ": cannot open job file (" + std::strerror(errno) + ")");
  json j;
  try {
    j = json::parse(in);
  } catch (const json::parse_error& e) {
    // nlohmann's message carries the line and column.
    std::string what = e.what();
    auto pos = what.find("parse error");
    throw bad_input(path + ": not valid JSON: " + (pos == std::string::npos ? what : what.substr(pos)));
  }
  return job_from_json(j, path);
}

void save_job(const Job& job, const std::string& path) {
  // Temporary name in the same folder, then rename: a reader never sees half a file.
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) throw failure(path + ": cannot write job file (" + std::strerror(errno) + ")");
    out << to_json(job).dump(2) << '\n';
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      throw failure(path + ": cannot write job file (disk full?)");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    std::remove(tmp.c_str());
    throw failure(path + ": cannot write job file (" + std::strerror(err) + ")");
  }
}

void validate(const Job& job) {
  static const std::set<std::string> commands{"register", "average", "spectrum", "synth"};
  check(commands.count(job.command) == 1,
        "command '" + job.command + "' is not one of register, average, spectrum, synth");
  if (job.command != "synth") check(!job.input.empty(), "'input' is required for " + job.command);
  check(!job.output.empty(), "'output' (the results folder) is required");

  const auto& r = job.registration;
  check(r.pyramid_levels >= 1 && r.pyramid_levels <= 12, "registration.pyramid_levels must be 1..12");
  check(r.max_iterations >= 1, "registration.max_iterations must be at least 1");
  check(r.tolerance > 0, "registration.tolerance must be positive");
  check(r.roi.x >= 0 && r.roi.y >= 0, "registration.roi must start inside the frame");
  check(r.bandpass_low >= 0 && r.bandpass_high >= 0, "registration.bandpass periods must be positive");
  check(r.bandpass_low <= 0 || r.bandpass_high <= 0 || r.bandpass_low <= r.bandpass_high,
        "registration.bandpass must be [low_px, high_px] with low <= high");
  check(r.max_shift >= 0, "registration.max_shift must be positive or null");

  const auto& a = job.averaging;
  check(a.clip_sigma > 0, "averaging.clip_sigma must be positive");
  check(a.median_tile >= 1, "averaging.median_tile must be at least 1");
  check(a.median_memory_mb > 0, "averaging.median_memory_mb must be positive");
  check(job.command != "average" || !a.drift.empty(),
        "'average' needs averaging.drift: the drift.csv of an earlier run (or a *_truth.csv)");
  check(a.interpolation != Interpolation::fourier || r.model == MotionModel::translation,
        "averaging.interpolation 'fourier' needs registration.model 'translation'");

  check(job.spectrum.frame >= 0, "spectrum.frame must be 0 or more");

  const auto& s = job.synth;
  if (job.command == "synth") {
    check(s.frames >= 1, "synth.frames must be at least 1");
    check(s.width >= 8 && s.height >= 8, "synth.width and synth.height must be at least 8");
    check(s.period > 1, "synth.period must be more than 1 pixel");
    check(s.drift_step >= 0 && s.jitter >= 0 && s.read_noise >= 0, "synth noise and drift steps must be >= 0");
    check(s.vacancy_fraction >= 0 && s.vacancy_fraction < 1, "synth.vacancy_fraction must be in [0, 1)");
  }

  const auto& e = job.execution;
  static const std::set<std::string> scans{"mpi-scan", "dissemination", "blelloch", "ladner-fischer"};
  static const std::set<std::string> strategies{"reduce-then-scan", "scan-then-map"};
  check(e.ranks >= 1, "execution.ranks must be at least 1");
  check(e.threads >= 1, "execution.threads must be at least 1");
  check(scans.count(e.scan_algorithm) == 1, "execution.scan_algorithm '" + e.scan_algorithm +
                                                "' is not one of mpi-scan, dissemination, blelloch, ladner-fischer");
  check(strategies.count(e.local_strategy) == 1,
        "execution.local_strategy '" + e.local_strategy + "' is not reduce-then-scan or scan-then-map");
  check(e.frame_cache_mb >= 1, "execution.frame_cache_mb must be at least 1");
  check(e.checkpoint_interval_s >= 0, "execution.checkpoint_interval_s must be 0 (off) or more");
}

}  // namespace driftscan
