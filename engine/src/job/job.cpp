// Job files: the JSON schema of docs/protocol.md, both ways. Reading is
// strict — an unknown or mistyped field is an error naming the file and the
// field — because a silently ignored typo ("pyramid_level") would run the
// wrong job for hours. Missing fields keep their defaults.
#include "driftscan/job/job.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "driftscan/core/atomic_file.hpp"
#include "driftscan/core/enum_names.hpp"
#include "driftscan/core/error.hpp"
#include "driftscan/core/scan_rotation.hpp"
#include "driftscan/job/job_fields.hpp"

namespace driftscan {
namespace {

using nlohmann::json;

// Reads one object of the job file: each accessor names "source: field
// 'block.key'" in its errors; finish() rejects keys nobody asked for.
class Reader {
 public:
  Reader(const json& j, std::string source, std::string prefix)
      : j_(j), source_(std::move(source)), prefix_(std::move(prefix)) {
    if (!j_.is_object())
      fail_at(prefix_.empty() ? "(top level)" : prefix_.substr(0, prefix_.size() - 1), "must be an object");
  }

  const json* find(const std::string& key) {
    seen_.insert(key);
    auto it = j_.find(key);
    return it == j_.end() ? nullptr : &*it;
  }
  [[noreturn]] void fail(const std::string& key, const std::string& what) const { fail_at(prefix_ + key, what); }

  double number(const std::string& key, const json& v) const {
    if (!v.is_number()) fail(key, "must be a number");
    double d = v.get<double>();
    if (!std::isfinite(d)) fail(key, "must be finite");
    return d;
  }
  // As a JSON integer, so the field's setter reads it with get<int>() and friends.
  json integer(const std::string& key, const json& v, double lo, double hi) const {
    if (!v.is_number()) fail(key, "must be an integer");
    double d = v.get<double>();
    if (d != std::floor(d)) fail(key, "must be an integer");
    if (d < lo || d > hi) fail(key, "is out of range");
    return static_cast<std::int64_t>(d);
  }

  // The value of `f` in the file, checked for type and shape; nullopt when
  // the field is absent (or null where null means "keep the default").
  std::optional<json> value(const JobField& f) {
    const json* v = find(f.key);
    if (!v) return std::nullopt;
    const std::string key = f.key;
    const std::string shape = f.shape ? f.shape : "";
    switch (f.type) {
      case FieldType::text:
        if (!v->is_string()) fail(key, "must be a string");
        return *v;
      case FieldType::optional_text:
        if (!v->is_null() && !v->is_string()) fail(key, "must be a string or null");
        return *v;
      case FieldType::boolean:
        if (!v->is_boolean()) fail(key, "must be true or false");
        return *v;
      case FieldType::integer: return integer(key, *v, -2147483647.0, 2147483647.0);
      case FieldType::count: return integer(key, *v, 0.0, 9.0e15);
      case FieldType::seed: return integer(key, *v, 0.0, 4294967295.0);
      case FieldType::number: return number(key, *v);
      case FieldType::optional_number:
        if (v->is_null()) return json(nullptr);
        return number(key, *v);
      case FieldType::choice: {
        if (!v->is_string()) fail(key, "must be a string");
        const std::string name = v->get<std::string>();
        if (name.empty()) return std::nullopt;  // "": the default
        if (std::find(f.choices.begin(), f.choices.end(), name) == f.choices.end())
          fail(key, "is '" + name + "'; expected " + one_of(f.choices));
        return *v;
      }
      case FieldType::rectangle: {
        if (v->is_null()) return std::nullopt;
        if (!v->is_array() || v->size() != 4) fail(key, "must be " + shape);
        json r = json::array();
        for (const auto& x : *v) r.push_back(integer(key, x, 0, 1e9));
        if (r[2].get<int>() <= 0 || r[3].get<int>() <= 0) fail(key, "needs a positive width and height");
        return r;
      }
      case FieldType::number_pair: {
        if (v->is_null()) return std::nullopt;
        if (!v->is_array() || v->size() != 2) fail(key, "must be " + shape);
        return json::array({number(key, (*v)[0]), number(key, (*v)[1])});
      }
      case FieldType::frame_list: {
        if (v->is_null()) return std::nullopt;
        if (!v->is_array()) fail(key, "must be " + shape);
        json r = json::array();
        for (const auto& x : *v) r.push_back(integer(key, x, 0, 9e15));
        return r;
      }
      case FieldType::number_list: {
        if (v->is_null()) return std::nullopt;
        if (!v->is_array()) fail(key, "must be " + shape);
        json r = json::array();
        for (const auto& x : *v) r.push_back(number(key, x));
        return r;
      }
    }
    return std::nullopt;
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

void read_fields(Reader& r, const std::string& block, Job& job) {
  for (const auto& f : job_fields())
    if (f.block == block)
      if (auto v = r.value(f)) f.set(job, *v);
}

void check(bool ok, const std::string& message) {
  if (!ok) throw bad_input("job: " + message);
}

// The range and the allowed names of every field of `block`, as declared in the table.
void check_fields(const Job& job, const std::string& block) {
  const unsigned command = job_command_bit(job.command);
  for (const auto& f : job_fields()) {
    if (f.block != block) continue;
    if (f.type == FieldType::text && !f.choices.empty()) {
      const std::string v = f.get(job).get<std::string>();
      check(std::find(f.choices.begin(), f.choices.end(), v) != f.choices.end(),
            f.path() + " '" + v + "' is not one of " + one_of(f.choices));
    }
    if (!f.has_range() || !(f.checked_for & command)) continue;
    const json v = f.get(job);
    if (v.is_null()) continue;  // off
    check(f.in_range(v.get<double>()), f.path() + " must be " + f.range_text());
  }
}

}  // namespace

json to_json(const Job& job) {
  json j = json::object();
  j["driftscan_job"] = job.version;
  for (const auto& b : job_blocks()) j[b] = json::object();
  for (const auto& f : job_fields()) {
    json& slot = *f.block ? j[f.block][f.key] : j[f.key];
    json v = f.get(job);
    if (f.type == FieldType::optional_text && v == "") v = nullptr;
    if (f.type == FieldType::optional_number && v.get<double>() <= 0) v = nullptr;
    slot = std::move(v);
  }
  return j;
}

Job job_from_json(const json& j, const std::string& source) {
  Job job;
  Reader top(j, source, "");
  if (const json* v = top.find("driftscan_job"))
    job.version = top.integer("driftscan_job", *v, -2147483647.0, 2147483647.0).get<int>();
  else top.fail("driftscan_job", "is missing (not a DriftScan job file?)");
  if (job.version != 1)
    top.fail("driftscan_job", "is version " + std::to_string(job.version) + "; this build reads version 1");
  read_fields(top, "", job);
  for (const auto& b : job_blocks()) {
    const json* v = top.find(b);
    if (!v || v->is_null()) continue;
    Reader r(*v, source, b + ".");
    read_fields(r, b, job);
    r.finish();
  }
  top.finish();
  return job;
}

Job load_job(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw bad_input(path + ": a folder, not a job file");
  std::ifstream in(path);
  if (!in) throw bad_input(path + ": cannot open job file (" + std::strerror(errno) + ")");
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& e) {
    // A syntax error (parse_error) or a number too large for any type
    // (out_of_range 406); nlohmann's message carries the line and column.
    std::string what = e.what();
    auto pos = what.find("parse error");
    throw bad_input(path + ": not valid JSON: " + (pos == std::string::npos ? what : what.substr(pos)));
  }
  return job_from_json(j, path);
}

void save_job(const Job& job, const std::string& path) {
  // Temporary name in the same folder, then rename: a reader never sees half a file.
  AtomicFile out(path, "job file");
  out.stream() << to_json(job).dump(2) << '\n';
  out.commit();
}

SynthOptions synth_options(const Job& job) {
  SynthOptions synth = job.synth;
  synth.scan_rotation_deg = job.scan.rotation;
  if (job.scan.dwell > 0) {
    synth.scan_dwell = job.scan.dwell;
    synth.scan_line_flyback = job.scan.line_flyback;
    synth.scan_frame_flyback = job.scan.frame_flyback;
    synth.scan_direction = job.scan.direction;
  }
  return synth;
}

void validate(const Job& job) {
  check_fields(job, "");
  if (job.command != "synth") check(!job.input.empty(), "'input' is required for " + job.command);
  check(!job.output.empty(), "'output' (the results folder) is required");

  const auto& r = job.registration;
  check_fields(job, "registration");
  check(r.roi.x >= 0 && r.roi.y >= 0, "registration.roi must start inside the frame");
  check(r.bandpass_low >= 0 && r.bandpass_high >= 0, "registration.bandpass periods must be positive");
  check(r.bandpass_low <= 0 || r.bandpass_high <= 0 || r.bandpass_low <= r.bandpass_high,
        "registration.bandpass must be [low_px, high_px] with low <= high");

  const auto& a = job.averaging;
  check_fields(job, "averaging");
  check(job.command != "average" || !a.drift.empty() || !a.lines.empty(),
        "'average' needs averaging.drift: the drift.csv of an earlier run (or a *_truth.csv), or averaging.lines");
  check(a.drift.empty() || a.lines.empty(), "averaging.drift and averaging.lines are exclusive: give one");
  check(a.interpolation != Interpolation::fourier || r.model == MotionModel::translation,
        "averaging.interpolation 'fourier' needs registration.model 'translation'");

  check_fields(job, "spectrum");
  check_fields(job, "synth");
  check_fields(job, "scan");
  check_fields(job, "follow");
  if (job.command == "synth")
    check_scan_rotations(job.scan.rotation, job.synth.frames, job.synth.width, job.synth.height, "job: ");
  check(!job.follow.enabled || job.command == "register", "follow.enabled is for 'register' only");
  check_fields(job, "execution");
}

ScanTimingSettings ScanSettings::timing() const {
  ScanTimingSettings t;
  t.dwell = dwell > 0 ? dwell : 1e-6;
  t.line_flyback_fraction = line_flyback;
  t.frame_flyback_fraction = frame_flyback;
  t.direction = direction;
  t.rotation_deg = rotation;
  return t;
}

ScanTimingSettings ScanSettings::timing(const RecordedScan& recorded, int width, int height, std::string* note) const {
  ScanTimingSettings t = timing();
  std::string taken;
  auto say = [&](const std::string& what) { taken += (taken.empty() ? "" : ", ") + what; };
  if (dwell <= 0 && recorded.dwell > 0) {
    t.dwell = recorded.dwell;
    say("dwell " + message_number(recorded.dwell * 1e6) + " us");
  }
  if (line_flyback <= 0 && recorded.line_flyback > 0) {
    t.line_flyback = recorded.line_flyback;
    t.line_flyback_fraction = 0.0;
    say("line fly-back " + message_number(recorded.line_flyback * 1e6) + " us");
  }
  if (frame_flyback <= 0 && recorded.frame_time > 0) {
    ScanTimingSettings with = t;
    with.frame_time = recorded.frame_time;
    with.frame_flyback_fraction = 0.0;
    try {
      (void)ScanTiming(with, width, height);
      t = with;
      say("frame time " + message_number(recorded.frame_time) + " s");
    } catch (const Error&) {
      say("not its frame time of " + message_number(recorded.frame_time) + " s (shorter than the frame's lines)");
    }
  }
  if (note) *note = taken.empty() ? "" : "scan timing from the file's " + recorded.source + ": " + taken;
  return t;
}

ScanDistortionSettings ScanSettings::distortion() const {
  ScanDistortionSettings d;
  d.band_lines = band_lines;
  d.max_rounds = rounds;
  d.smoothing = smoothing;
  d.estimate_jitter = line_jitter;
  d.max_band_offset = max_band_offset;
  d.line_field_knots = line_field_knots;
  d.line_field_extent = line_field_extent;
  d.line_field_prior = line_field_prior;
  d.template_filter_noise_scale = template_filter_noise_scale;
  return d;
}

}  // namespace driftscan
