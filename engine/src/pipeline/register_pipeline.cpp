// The serial reference pipeline; see register_pipeline.hpp.
#include "driftscan/pipeline/register_pipeline.hpp"
#include "driftscan/core/omp_threads.hpp"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>

#include "driftscan/core/atomic_file.hpp"
#include "driftscan/core/error.hpp"
#include "driftscan/formats/tiff/tiff_writer.hpp"
#include "driftscan/job/job.hpp"
#include "driftscan/job/output_set.hpp"
#include "driftscan/registration/registration_failure.hpp"
#include "driftscan/registration/sequential_scan.hpp"

namespace driftscan {

namespace {

// Text written under a temporary name in the same folder, then renamed.
template <class Write>
void write_atomically(const std::string& path, Write&& write) {
  AtomicFile file(path, "output file");
  write(file.stream());
  file.commit();
}

// `report` dumped with two-space indentation, each ReportArray streamed in
// at its path, one compact record per line: only one record is ever a JSON
// value in memory.
void write_report(const std::string& path, nlohmann::json report, const std::vector<ReportArray>& arrays) {
  auto placeholder = [](std::size_t i) { return "@driftscan-streamed-array-" + std::to_string(i) + "@"; };
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    nlohmann::json* at = &report;
    for (const auto& key : arrays[i].path) at = &(*at)[key];
    *at = placeholder(i);
  }
  const std::string text = report.dump(2) + "\n";
  write_atomically(path, [&](std::ostream& out) {
    std::size_t pos = 0;
    for (;;) {
      // The next placeholder in the text (keys are sorted, so not in array order).
      std::size_t at = std::string::npos, which = 0;
      for (std::size_t i = 0; i < arrays.size(); ++i) {
        std::size_t p = text.find('"' + placeholder(i) + '"', pos);
        if (p < at) {
          at = p;
          which = i;
        }
      }
      if (at == std::string::npos) break;
      const std::size_t line = text.rfind('\n', at) + 1;
      const std::string indent(text.find_first_not_of(' ', line) - line, ' ');
      out.write(text.data() + pos, static_cast<std::streamsize>(at - pos));
      const ReportArray& a = arrays[which];
      if (a.size == 0) out << "[]";
      else {
        out << "[\n";
        for (std::size_t k = 0; k < a.size; ++k)
          out << indent << "  " << a.record(k).dump() << (k + 1 < a.size ? ",\n" : "\n");
        out << indent << ']';
      }
      pos = at + placeholder(which).size() + 2;
    }
    out.write(text.data() + pos, static_cast<std::streamsize>(text.size() - pos));
  });
}

std::string flag_names(std::uint32_t flags) {
  std::string s;
  auto add = [&](std::uint32_t bit, const char* name) {
    if (flags & bit) s += (s.empty() ? "" : "|") + std::string(name);
  };
  add(kBadFrame, "bad_frame");
  add(kPairFailed, "pair_failed");
  add(kRefineFailed, "refine_failed");
  add(kNotConverged, "not_converged");
  add(kNoPeak, "no_peak");
  add(kNoMatch, "no_match");
  return s;
}

}  // namespace

void ApplicationSummary::add(int iterations) {
  const auto i = static_cast<std::size_t>(std::max(0, iterations));
  if (iterations_histogram.size() <= i) iterations_histogram.resize(i + 1, 0);
  ++iterations_histogram[i];
  ++count;
  iterations_total += i;
}

void ApplicationSummary::add(const ApplicationSummary& other) {
  if (iterations_histogram.size() < other.iterations_histogram.size())
    iterations_histogram.resize(other.iterations_histogram.size(), 0);
  for (std::size_t i = 0; i < other.iterations_histogram.size(); ++i)
    iterations_histogram[i] += other.iterations_histogram[i];
  count += other.count;
  iterations_total += other.iterations_total;
}

std::uint64_t ApplicationSummary::iterations_max() const {
  for (std::size_t i = iterations_histogram.size(); i-- > 0;)
    if (iterations_histogram[i] > 0) return i;
  return 0;
}

ApplicationSummary ApplicationSummary::of(const std::vector<OperatorApplication>& applications) {
  ApplicationSummary s;
  for (const OperatorApplication& a : applications) s.add(a.iterations);
  return s;
}

ReportArray operator_applications_array(const std::vector<OperatorApplication>& applications) {
  return {{"operator_applications"}, applications.size(), [&applications](std::size_t i) {
            const OperatorApplication& a = applications[i];
            return nlohmann::json{{"from", a.from},
                                  {"to", a.to},
                                  {"iterations", a.iterations},
                                  {"seconds", a.seconds},
                                  {"cost", std::isfinite(a.cost) ? a.cost : 1.0},
                                  {"flags", flag_names(a.flags)}};
          }};
}

RegistrationScan sequential_registration_scan() {
  return [](const std::vector<Registration>& x, const RegistrationCombine& op) {
    return sequential_inclusive_scan(x, op);
  };
}

void release_pair_buffers(int threads) {
  // The same team size as the pairs' region: the pool's same threads.
#pragma omp parallel num_threads(std::max(1, threads))
  PairRegistrationPlan::release_thread_buffers();
}

std::vector<Registration> compute_pair_elements(const RegistrationOperator& op, std::size_t begin, std::size_t end,
                                                int threads, Progress* progress, const CancelToken* cancel,
                                                std::size_t progress_offset) {
  if (end < begin) throw failure("compute_pair_elements: empty range");
  std::vector<Registration> out(end - begin);
  std::exception_ptr error;
  std::mutex m;
  std::size_t done = 0;
  const long n = static_cast<long>(end - begin);
#pragma omp parallel for schedule(dynamic, 1) num_threads(std::max(1, threads))
  for (long i = 0; i < n; ++i) {
    {
      std::lock_guard<std::mutex> lock(m);
      if (error) continue;
    }
    try {
      if (cancel) cancel->throw_if_cancelled();
      out[static_cast<std::size_t>(i)] = op.element(begin + static_cast<std::size_t>(i));
      std::lock_guard<std::mutex> lock(m);
      ++done;
      if (progress) progress->advance(progress_offset + done);
    } catch (...) {
      std::lock_guard<std::mutex> lock(m);
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
  return out;
}

std::vector<Registration> scan_registrations(const std::vector<Registration>& elements, const RegistrationOperator& op,
                                             const RegistrationScan& scan,
                                             std::vector<OperatorApplication>& applications, Progress* progress,
                                             const CancelToken* cancel) {
  std::mutex m;
  RegistrationCombine combine = [&](const Registration& a, const Registration& b) {
    if (cancel) cancel->throw_if_cancelled();
    Registration r = op(a, b);
    std::lock_guard<std::mutex> lock(m);
    applications.push_back({r.from, r.to, r.iterations, r.seconds, r.cost, r.flags});
    if (progress) progress->advance(applications.size());
    return r;
  };
  const RegistrationScan& run = scan ? scan : sequential_registration_scan();
  std::vector<Registration> out = run(elements, combine);
  if (out.size() != elements.size())
    throw failure("scan returned " + std::to_string(out.size()) + " results for " + std::to_string(elements.size()) +
                  " frames");
  for (std::size_t k = 0; k < out.size(); ++k)
    if (out[k].from != 0 || out[k].to != k)
      throw failure("scan result " + std::to_string(k) + " is " + std::to_string(out[k].from) + "->" +
                    std::to_string(out[k].to) + ", expected 0->" + std::to_string(k));
  return out;
}

std::vector<std::string> registration_warnings(const std::vector<Registration>& registrations,
                                               std::vector<std::size_t>& excluded) {
  const RegistrationFailures failures = classify_failures(registrations);
  const std::vector<std::size_t> failed = failures.failed();
  excluded.insert(excluded.end(), failed.begin(), failed.end());
  return failures.warnings();
}

void stop_if_registration_failed(const RegistrationFailures& failures, const std::string& input, Progress* progress,
                                 std::vector<std::string>& warnings, const std::function<void()>& write) {
  if (!failures.most_failed()) return;
  for (std::string& w : failures.warnings()) {
    if (progress) progress->log(LogLevel::warning, w);
    warnings.push_back(std::move(w));
  }
  if (write) write();
  throw Error(ErrorKind::registration_failed, failures.failure_message(input));
}

std::vector<DriftUncertainty> uncertainty_phase(const RegistrationOperator& op,
                                                const std::vector<Registration>& registrations, int threads,
                                                std::vector<std::string>& warnings, Progress* progress,
                                                const CancelToken* cancel) {
  if (progress) progress->phase("uncertainty", registrations.size());
  std::vector<DriftUncertainty> u =
      estimate_drift_uncertainty(op, registrations, 0, registrations.size(), threads, progress, cancel);
  // Logged with the run's other warnings by whoever reports them.
  if (std::string w = singular_warning(summarize_uncertainty(u)); !w.empty()) warnings.push_back(std::move(w));
  return u;
}

AverageResult average_registered(const FrameSource& frames, const std::vector<Registration>& registrations,
                                 const AveragingOptions& options, std::vector<std::string>& warnings,
                                 Progress* progress, const CancelToken* cancel,
                                 const std::vector<DriftUncertainty>* uncertainty, const AveragingTeam* team) {
  std::vector<std::size_t> above;
  if (uncertainty && options.max_sigma > 0) {
    // The limit holds for the sigma drift.csv gives (the series' common part
    // included: with_series_common), the one the app's Frames table shows.
    std::vector<double> sigma;
    for (const DriftUncertainty& u : with_series_common(*uncertainty)) sigma.push_back(u.sigma());
    above = frames_above_sigma(sigma, options.max_sigma);
  }
  std::vector<double> weights;
  if (options.weights == FrameWeighting::inverse_variance && uncertainty && uncertainty->size() == registrations.size())
    weights = uncertainty_weights(*uncertainty);
  std::vector<Transform> transforms;
  transforms.reserve(registrations.size());
  for (const Registration& r : registrations) transforms.push_back(r.transform);
  return average_selected(frames, transforms, options, classify_failures(registrations), above, std::move(weights),
                          warnings, progress, cancel, team);
}

AverageResult average_selected(const FrameSource& frames, const std::vector<Transform>& transforms,
                               const AveragingOptions& options, const RegistrationFailures& failures,
                               const std::vector<std::size_t>& above_sigma, std::vector<double> weights,
                               std::vector<std::string>& warnings, Progress* progress, const CancelToken* cancel,
                               const AveragingTeam* team) {
  AveragingOptions opts = options;
  for (std::string& w : failures.warnings()) {
    if (progress) progress->log(LogLevel::warning, w);
    warnings.push_back(std::move(w));
  }
  const std::vector<std::size_t> failed = failures.failed();
  opts.exclude_frames.insert(opts.exclude_frames.end(), failed.begin(), failed.end());
  opts.exclude_frames.insert(opts.exclude_frames.end(), above_sigma.begin(), above_sigma.end());
  if (std::string w = above_sigma_warning(above_sigma, opts.max_sigma); !w.empty()) {
    if (progress) progress->log(LogLevel::warning, w);
    warnings.push_back(std::move(w));
  }
  if (opts.weights == FrameWeighting::inverse_variance) {
    if (weights.size() != transforms.size())
      throw bad_input("averaging.weights inverse-variance needs the drift uncertainty of every frame");
    opts.frame_weights = std::move(weights);
  }
  AverageResult avg = team ? average_series(frames, transforms, opts, *team, progress, cancel)
                           : average_series(frames, transforms, opts, progress, cancel);
  warnings.insert(warnings.end(), avg.warnings.begin(), avg.warnings.end());
  return avg;
}

std::string drift_csv_header(MotionModel model, bool sigmas) {
  std::string s = "frame,dx,dy";
  if (model != MotionModel::translation) s += ",angle_deg";
  if (model == MotionModel::affine) s += ",a,b,c,d,tx,ty";
  if (sigmas) {
    s += ",sigma_dx,sigma_dy,cov_dxdy";
    if (model != MotionModel::translation) s += ",sigma_angle_deg";
    if (model == MotionModel::affine) s += ",sigma_a,sigma_b,sigma_c,sigma_d,sigma_tx,sigma_ty";
    s += ",noise_var,sigma_flag";
  }
  return s + ",iterations,cost,ncc,quality,used,flags\n";
}

std::string drift_csv_row(std::size_t k, const Registration& r, MotionModel model, Point centre, double quality,
                          bool used, const DriftUncertainty* u, double noise_var) {
  std::string s;
  char buf[512];
  Point d = r.transform.displacement(centre);
  std::snprintf(buf, sizeof buf, "%zu,%.6f,%.6f", k, d.x, d.y);
  s += buf;
  if (model != MotionModel::translation) {
    std::snprintf(buf, sizeof buf, ",%.6f", r.transform.angle() * 180.0 / 3.14159265358979323846);
    s += buf;
  }
  if (model == MotionModel::affine) {
    const Transform& t = r.transform;
    std::snprintf(buf, sizeof buf, ",%.9f,%.9f,%.9f,%.9f,%.6f,%.6f", t.a, t.b, t.c, t.d, t.tx, t.ty);
    s += buf;
  }
  if (u) {
    std::snprintf(buf, sizeof buf, ",%.6g,%.6g,%.6g", u->sigma_dx, u->sigma_dy, u->singular ? 0.0 : u->cov_dxdy);
    s += buf;
    if (model != MotionModel::translation) {
      std::snprintf(buf, sizeof buf, ",%.6g", u->sigma_angle_deg);
      s += buf;
    }
    if (model == MotionModel::affine)
      for (double v : u->sigma_affine) {
        std::snprintf(buf, sizeof buf, ",%.6g", v);
        s += buf;
      }
    std::snprintf(buf, sizeof buf, ",%.6g", noise_var);
    s += buf;
    s += u->singular ? ",singular" : ",";
  }
  if (!std::isfinite(quality)) quality = 0.0;
  double ncc = k == 0 ? 1.0 : r.quality;
  std::snprintf(buf, sizeof buf, ",%d,%.6g,%.6f,%.6f,%d,%s\n", r.iterations, std::isfinite(r.cost) ? r.cost : 1.0,
                std::isfinite(ncc) ? ncc : 0.0, quality, used ? 1 : 0, flag_names(r.flags).c_str());
  return s + buf;
}

void write_drift_csv_rows(std::ostream& out, const Registration* block, const DriftUncertainty* uncertainty,
                          std::size_t count, std::size_t first_frame, MotionModel model, Point centre,
                          const AverageResult* average, double frame0_noise) {
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t k = first_frame + i;
    const Registration& r = block[i];
    const double quality = average && k < average->quality.size() ? average->quality[k] : 0.0;
    const bool used =
        average && k < average->used.size() ? static_cast<bool>(average->used[k]) : !(r.flags & kFrameFailed);
    const DriftUncertainty* u = uncertainty ? uncertainty + i : nullptr;
    out << drift_csv_row(k, r, model, centre, quality, used, u, u ? (k == 0 ? frame0_noise : u->noise_variance) : 0.0);
  }
}

void write_drift_csv(const std::string& path, const std::vector<Registration>& registrations, MotionModel model,
                     Point centre, const AverageResult* average, const std::vector<DriftUncertainty>* uncertainty) {
  const bool sigmas = uncertainty && uncertainty->size() == registrations.size();
  const double frame0_noise = sigmas && !uncertainty->empty() ? frame_noise_variances(*uncertainty)[0] : 0.0;
  // Row by row into the file: a long series' table is never one string.
  write_atomically(path, [&](std::ostream& out) {
    out << drift_csv_header(model, sigmas);
    write_drift_csv_rows(out, registrations.data(), sigmas ? uncertainty->data() : nullptr, registrations.size(), 0,
                         model, centre, average, frame0_noise);
  });
}

RegisterOutputs write_register_outputs(OutputSet& set, const FrameSource& frames, const RegistrationSettings& settings,
                                       const AveragingOptions& averaging,
                                       const std::vector<Registration>& registrations,
                                       const ApplicationSummary& applications, const AverageResult& average,
                                       const std::vector<std::string>& warnings, const nlohmann::json& report_extra,
                                       const std::vector<ReportArray>& streamed, const std::string& average_suffix,
                                       const std::vector<DriftUncertainty>* uncertainty) {
  // Staged in the set: nothing is visible under these names before its commit.
  const Point centre{(frames.width() - 1) / 2.0, (frames.height() - 1) / 2.0};
  // No average (most frames failed): none is staged, so the commit leaves
  // none of an earlier run to pass for this one's.
  const bool averaged = !average.average.empty();
  // Written with the series' common part in every frame's sigma (the weights were the frames' own).
  std::optional<std::vector<DriftUncertainty>> written;
  if (uncertainty) written = with_series_common(*uncertainty);
  set.write("drift.csv", [&](const std::string& path) {
    write_drift_csv(path, registrations, settings.model, centre, averaged ? &average : nullptr,
                    written ? &*written : nullptr);
  });
  std::optional<UncertaintySummary> summary;
  if (written && !written->empty()) summary = summarize_uncertainty(*written);
  return write_register_report(set, frames, settings, averaging, registrations.size(), classify_failures(registrations),
                               summary ? &*summary : nullptr, applications, average, warnings, report_extra, streamed,
                               average_suffix);
}

std::string average_sigma_method(const AveragingOptions& averaging) {
  const char* how =
      "standard error of each pixel of the average from the spread of the warped frames that cover it "
      "(the interpolation's smoothing at each frame's sub-pixel phase included): ";
  switch (averaging.method) {
    case AverageMethod::clipped:
      return std::string(how) +
             "every sample's spread about the clipped mean, "
             "sqrt(sum (x - t)^2 / (n kept (n kept - 1))); NaN below 2 kept";
    case AverageMethod::median: return std::string(how) + "sqrt(pi/2) s / sqrt(n) (normal noise); NaN below 2 frames";
    case AverageMethod::mean: break;
  }
  if (averaging.weights == FrameWeighting::inverse_variance || !averaging.frame_weights.empty())
    return std::string(how) +
           "the weighted spread (reliability-weight correction) x sqrt(sum w^2) / sum w; NaN below 2 frames";
  return std::string(how) + "s / sqrt(n); NaN below 2 frames";
}

RegisterOutputs write_register_report(OutputSet& set, const FrameSource& frames, const RegistrationSettings& settings,
                                      const AveragingOptions& averaging, std::size_t registered,
                                      const RegistrationFailures& failures, const UncertaintySummary* uncertainty,
                                      const ApplicationSummary& applications, const AverageResult& average,
                                      const std::vector<std::string>& warnings, const nlohmann::json& report_extra,
                                      const std::vector<ReportArray>& streamed, const std::string& average_suffix) {
  RegisterOutputs files;
  const std::string average_name = "average" + average_suffix + ".tif",
                    coverage_name = "coverage" + average_suffix + ".tif",
                    sigma_name = "sigma" + average_suffix + ".tif";
  files.drift = set.final_path("drift.csv");
  files.average = set.final_path(average_name);
  files.coverage = set.final_path(coverage_name);
  files.sigma = set.final_path(sigma_name);
  files.report = set.final_path(kOutputRecord);
  const bool averaged = !average.average.empty();
  if (averaged) {
    TiffWriteOptions tw;
    tw.format = SampleFormat::float32;
    tw.pixel_size = frames.pixel_size();
    tw.unit = frames.pixel_unit();
    set.write(average_name, [&](const std::string& path) { write_tiff(path, average.average, tw); });
    set.write(coverage_name, [&](const std::string& path) { write_tiff(path, average.coverage, tw); });
    if (!average.sigma.empty())
      set.write(sigma_name, [&](const std::string& path) { write_tiff(path, average.sigma, tw); });
    else files.sigma.clear();
  } else {
    files.average.clear();
    files.coverage.clear();
    files.sigma.clear();
  }

  Job job;
  job.command = "register";
  job.registration = settings;
  job.averaging = averaging;
  nlohmann::json job_json = to_json(job);
  nlohmann::json report;
  report["driftscan_report"] = 1;
  report["command"] = "register";
  report["version"] = DRIFTSCAN_VERSION;
  report["input"] = {{"description", frames.describe()},  {"frames", frames.frame_count()},
                     {"width", frames.width()},           {"height", frames.height()},
                     {"pixel_size", frames.pixel_size()}, {"unit", frames.pixel_unit()}};
  report["settings"] = {{"registration", job_json.value("registration", nlohmann::json::object())},
                        {"averaging", job_json.value("averaging", nlohmann::json::object())}};
  report["drift_convention"] =
      "frame k at pixel (x, y) shows what frame 0 shows at T_{0,k}(x, y); dx,dy = T_{0,k}(c) - c at the frame "
      "centre c = ((width-1)/2, (height-1)/2)";
  std::size_t used = 0;
  nlohmann::json excluded = nlohmann::json::array();
  for (std::size_t k = 0; k < registered; ++k) {
    if (k < average.used.size() && average.used[k]) ++used;
    else excluded.push_back(k);
  }
  report["summary"] = {
      {"operator_applications", applications.count},
      {"iterations_total", applications.iterations_total},
      {"iterations_mean", applications.count == 0 ? 0.0
                                                  : static_cast<double>(applications.iterations_total) /
                                                        static_cast<double>(applications.count)},
      {"iterations_max", applications.iterations_max()},
      {"iterations_histogram", applications.iterations_histogram},
      {"frames_used", used},
      {"frames_excluded", excluded}};
  if (uncertainty) report["uncertainty"] = to_json(*uncertainty);
  if (averaged && !files.sigma.empty())
    report["uncertainty"]["average_sigma" + average_suffix] = {{"file", files.sigma},
                                                               {"method", average_sigma_method(averaging)}};
  report["registration"] = failures.to_json();
  report["status"] = averaged ? "done" : "registration_failed";
  report["warnings"] = warnings;
  report["files"] = {{"drift", files.drift}, {"report", files.report}};
  if (averaged) {
    report["files"]["average" + average_suffix] = files.average;
    report["files"]["coverage" + average_suffix] = files.coverage;
    if (!files.sigma.empty()) report["files"]["sigma" + average_suffix] = files.sigma;
  }
  // Extra files (a corrected average, lines.csv) join the list; other extra blocks are set whole.
  for (auto it = report_extra.begin(); it != report_extra.end(); ++it)
    if (it.key() == "files" && it.value().is_object()) report["files"].update(it.value());
    else report[it.key()] = it.value();
  set.write(kOutputRecord, [&](const std::string& path) { write_report(path, std::move(report), streamed); });
  return files;
}

}  // namespace driftscan
