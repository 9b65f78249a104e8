#include "driftscan/mpi/register/register_checkpoint.hpp"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "driftscan/core/atomic_file.hpp"
#include "driftscan/core/error.hpp"
#include "driftscan/mpi/register/distributed_checkpoint.hpp"
#include "driftscan/mpi/runtime/collectives.hpp"
#include "driftscan/mpi/runtime/command_report.hpp"
#include "driftscan/mpi/runtime/job_input.hpp"
#include "driftscan/mpi/scan/scan_trace.hpp"

namespace driftscan::mpi {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {
constexpr const char* kMagic = "driftscan-checkpoint-1";

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void write_record(std::ostream& out, const Registration& r) {
  auto b = r.to_bytes();
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}
void write_records(std::ostream& out, const std::vector<Registration>& v) {
  for (const auto& r : v) write_record(out, r);
}
void write_records(std::ostream& out, const std::vector<const Registration*>& v) {
  for (const Registration* r : v) write_record(out, *r);
}
std::vector<Registration> read_records(std::istream& in, std::size_t n, const std::string& path) {
  std::vector<Registration> v;
  v.reserve(n);
  std::array<unsigned char, Registration::byte_size> b;
  for (std::size_t i = 0; i < n; ++i) {
    if (!in.read(reinterpret_cast<char*>(b.data()), static_cast<std::streamsize>(b.size())))
      throw bad_input(path + ": checkpoint is truncated");
    v.push_back(Registration::from_bytes(b.data(), b.size()));
  }
  return v;
}
// A frame's uncertainty: the frame, 15 doubles, the singular flag.
void write_uncertainty(std::ostream& out, std::uint64_t frame, const DriftUncertainty& u) {
  {
    const double d[15] = {
        u.sigma_dx,        u.sigma_dy,        u.cov_dxdy,        u.sigma_angle_deg, u.sigma_affine[0],
        u.sigma_affine[1], u.sigma_affine[2], u.sigma_affine[3], u.sigma_affine[4], u.sigma_affine[5],
        u.common_sigma_dx, u.common_sigma_dy, u.common_cov_dxdy, u.noise_variance,  u.reference_noise_variance};
    const char singular = u.singular ? 1 : 0;
    out.write(reinterpret_cast<const char*>(&frame), sizeof frame);
    out.write(reinterpret_cast<const char*>(d), sizeof d);
    out.write(&singular, 1);
  }
}
void write_uncertainty(std::ostream& out, const std::vector<std::pair<std::uint64_t, DriftUncertainty>>& v) {
  for (const auto& [frame, u] : v) write_uncertainty(out, frame, u);
}
std::vector<std::pair<std::uint64_t, DriftUncertainty>> read_uncertainty(std::istream& in, std::size_t n,
                                                                         const std::string& path) {
  std::vector<std::pair<std::uint64_t, DriftUncertainty>> v;
  v.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t frame = 0;
    double d[15];
    char singular = 0;
    if (!in.read(reinterpret_cast<char*>(&frame), sizeof frame) || !in.read(reinterpret_cast<char*>(d), sizeof d) ||
        !in.read(&singular, 1))
      throw bad_input(path + ": checkpoint is truncated");
    DriftUncertainty u;
    u.sigma_dx = d[0];
    u.sigma_dy = d[1];
    u.cov_dxdy = d[2];
    u.sigma_angle_deg = d[3];
    for (std::size_t j = 0; j < 6; ++j) u.sigma_affine[j] = d[4 + j];
    u.common_sigma_dx = d[10];
    u.common_sigma_dy = d[11];
    u.common_cov_dxdy = d[12];
    u.noise_variance = d[13];
    u.reference_noise_variance = d[14];
    u.singular = singular != 0;
    v.emplace_back(frame, u);
  }
  return v;
}
}  // namespace

std::string checkpoint_path(const std::string& out_dir) { return (fs::path(out_dir) / "checkpoint.dsck").string(); }

nlohmann::json checkpoint_fingerprint(const Job& job, const FrameSource& frames) {
  nlohmann::json j = to_json(job);
  return {{"input", fs::absolute(job.input).lexically_normal().string()},
          {"frames", frames.frame_count()},
          {"width", frames.width()},
          {"height", frames.height()},
          {"registration", j["registration"]}};
}

bool fingerprint_fits(const nlohmann::json& stored, const nlohmann::json& expected) {
  if (!stored.is_object() || !expected.is_object()) return false;
  nlohmann::json a = stored, b = expected;
  const auto frames_of = [](const nlohmann::json& j) {
    const auto it = j.find("frames");
    if (it == j.end() || !it->is_number_integer()) return std::size_t(0);
    if (it->is_number_unsigned()) return it->get<std::size_t>();
    return static_cast<std::size_t>(std::max(0LL, it->get<long long>()));
  };
  const std::size_t done = frames_of(a), now = frames_of(b);
  a.erase("frames");
  b.erase("frames");
  // The frames done stay what they were when the series grows (appended frames only).
  return a == b && done >= 1 && done <= now;
}

void save_checkpoint(const RegisterCheckpoint& c, const std::string& path, const CheckpointAdditions* more) {
  static const CheckpointAdditions none;
  const CheckpointAdditions& add = more ? *more : none;
  const std::size_t more_uncertainty = add.uncertainty ? add.uncertainty->size() : 0;
  AtomicFile file(path, "checkpoint");
  std::ostream& out = file.stream();
  nlohmann::json head{{"magic", kMagic},
                      {"fingerprint", c.fingerprint},
                      {"elements", c.elements.size() + add.elements.size()},
                      {"prefix", c.prefix.size() + add.prefix.size()},
                      {"uncertainty", c.uncertainty.size() + more_uncertainty}};
  out << head.dump() << '\n';
  write_records(out, c.elements);
  write_records(out, add.elements);
  write_records(out, c.prefix);
  write_records(out, add.prefix);
  write_uncertainty(out, c.uncertainty);
  for (std::size_t i = 0; i < more_uncertainty; ++i)
    write_uncertainty(out, add.uncertainty_first + i, (*add.uncertainty)[i]);
  file.commit();
}

RegisterCheckpoint read_checkpoint_file(const std::string& path, const nlohmann::json& expected) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw bad_input(path + ": cannot open checkpoint");
  std::string line;
  std::getline(in, line);
  nlohmann::json head;
  try {
    head = nlohmann::json::parse(line);
  } catch (...) {
    throw bad_input(path + ": not a DriftScan checkpoint");
  }
  if (!head.is_object() || head.value("magic", "") != kMagic) throw bad_input(path + ": not a DriftScan checkpoint");
  if (!fingerprint_fits(head["fingerprint"], expected))
    throw bad_input(path +
                    ": checkpoint was made for another input or other registration settings "
                    "(delete it or run without --resume)");
  RegisterCheckpoint c;
  c.fingerprint = head["fingerprint"];
  std::size_t ne = 0, np = 0, nu = 0;
  try {
    ne = head.value("elements", std::size_t(0));
    np = head.value("prefix", std::size_t(0));
    nu = head.value("uncertainty", std::size_t(0));
  } catch (...) {
    throw bad_input(path + ": not a DriftScan checkpoint");
  }
  std::size_t n = c.fingerprint.value("frames", std::size_t(0));
  if (ne > n || np > n || nu > n) throw bad_input(path + ": checkpoint counts do not fit the series");
  c.elements = read_records(in, ne, path);
  c.prefix = read_records(in, np, path);
  c.uncertainty = read_uncertainty(in, nu, path);
  for (const auto& u : c.uncertainty)
    if (u.first >= n) throw bad_input(path + ": checkpoint holds an uncertainty that does not fit the series");
  return c;
}

RegisterCheckpoint load_checkpoint(const std::string& path, const nlohmann::json& expected) {
  RegisterCheckpoint c = read_checkpoint_file(path, expected);
  if (c.prefix.size() > c.elements.size()) throw bad_input(path + ": checkpoint counts do not fit the series");
  for (std::size_t k = 0; k < c.elements.size(); ++k)
    if (c.elements[k].to != k || (k < c.prefix.size() && (c.prefix[k].to != k || c.prefix[k].from != 0)))
      throw bad_input(path + ": not a single-rank checkpoint (its frames are not in order)");
  for (std::size_t k = 0; k < c.uncertainty.size(); ++k)
    if (c.uncertainty[k].first != k || c.prefix.size() != c.elements.size())
      throw bad_input(path + ": not a single-rank checkpoint (its frames are not in order)");
  return c;
}

RegisterResult register_with_checkpoints(const Job& job, const FrameSource& frames, Progress& progress,
                                         const CancelToken& cancel, OutputSet& set) {
  const auto t_start = Clock::now();
  const std::size_t n = frames.frame_count();
  if (n < 2) throw bad_input(job.input + ": " + std::to_string(n) + " frame(s): registration needs at least 2 frames");
  const int threads = std::max(1, job.execution.threads);
  const double interval = job.execution.checkpoint_interval_s;
  const std::string ck_path = checkpoint_path(job.output);
  std::error_code ec;
  fs::create_directories(job.output, ec);

  RegisterCheckpoint ck;
  ck.fingerprint = checkpoint_fingerprint(job, frames);
  if (!job.execution.resume) remove_checkpoints(job.output);  // an earlier run's: never mixed with this one's
  if (job.execution.resume) {
    if (fs::exists(ck_path)) {
      ck = load_checkpoint(ck_path, ck.fingerprint);
      progress.log(LogLevel::info, "resuming from " + ck_path + ": " + std::to_string(ck.elements.size()) +
                                       " pair elements and " + std::to_string(ck.prefix.size()) + " scan results done" +
                                       (ck.prefix.size() != n ? std::string()
                                        : ck.uncertainty.size() == n
                                            ? " (the scan is complete: pairs and scan skipped, and the uncertainty)"
                                            : " (the scan is complete: pairs and scan skipped)"));
    } else {
      progress.log(LogLevel::warning, "--resume: no checkpoint in " + job.output + "; starting from the beginning");
    }
  }
  auto last_save = Clock::now();
  auto save = [&](bool force) {
    if (interval <= 0 && !force) return;
    if (!force && since(last_save) < interval) return;
    save_checkpoint(ck, ck_path);
    last_save = Clock::now();
  };
  // A cancel keeps what is done: the next --resume starts from there.
  auto on_cancel = [&](auto&& body) {
    try {
      body();
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::cancelled && interval > 0) save(true);
      throw;
    }
  };

  RegistrationOperator op(frames, job.registration, 1, prepared_cache_bytes(job));
  RegisterResult res;

  auto t0 = Clock::now();
  // A checkpoint of a finished scan holds the drift itself: the pairs and
  // the scan are not run again.
  const bool scanned = ck.prefix.size() == n;
  if (!scanned) progress.phase("pairs", n - 1);
  if (!scanned)
    on_cancel([&] {
      // Chunks big enough to keep every thread busy, small enough to save often.
      const std::size_t chunk = std::max<std::size_t>(64, static_cast<std::size_t>(threads) * 16);
      while (ck.elements.size() < n) {
        std::size_t begin = ck.elements.size(), end = std::min(n, begin + chunk);
        auto part = compute_pair_elements(op, begin, end, threads, &progress, &cancel, begin ? begin - 1 : 0);
        ck.elements.insert(ck.elements.end(), part.begin(), part.end());
        progress.advance(ck.elements.size() - 1);
        save(false);
      }
    });
  res.elements = ck.elements;
  res.seconds.pairs = since(t0);

  cancel.throw_if_cancelled();
  t0 = Clock::now();
  if (!scanned) progress.phase("scan", n - 1);
  // The sequential scan, continued from the saved prefix and saved as it goes.
  // Traced like the distributed one (one worker: this process), so the
  // report's scan_trace and the app's load-balance view exist for every run.
  ScanTrace trace;
  trace.begin(MPI_COMM_SELF, 1);
  trace.details() = {{"algorithm", "sequential"}, {"resumed_outputs", ck.prefix.size()}};
  RegistrationScan scan = [&](const std::vector<Registration>& x, const RegistrationCombine& combine) {
    std::vector<Registration> out = ck.prefix;
    out.reserve(x.size());
    if (out.empty()) out.push_back(x[0]);
    while (out.size() < x.size()) {
      const double start = trace.clock().now();
      out.push_back(combine(out.back(), x[out.size()]));
      const auto k = static_cast<std::int64_t>(out.size() - 1);
      trace.record(0, ScanRecord{0, 0, 0, k, ScanPhase::final_scan, 0, start, trace.clock().now()});
      if (interval > 0 && since(last_save) >= interval) {
        ck.prefix = out;
        save(true);
      }
    }
    ck.prefix = out;
    return out;
  };
  if (scanned) {
    res.registrations = ck.prefix;
  } else {
    on_cancel(
        [&] { res.registrations = scan_registrations(res.elements, op, scan, res.applications, &progress, &cancel); });
    // The finished scan is kept at once: an interruption from here on
    // (uncertainty, averaging, writing) resumes with this drift.
    if (interval > 0) save(true);
  }
  trace.end();
  trace.gather(MPI_COMM_SELF);
  res.seconds.scan = since(t0);

  cancel.throw_if_cancelled();
  t0 = Clock::now();
  if (scanned && ck.uncertainty.size() == n) {
    // Kept with the scan: frame k's record is k's (saved in order below).
    for (const auto& u : ck.uncertainty) res.uncertainty.push_back(u.second);
    if (std::string w = singular_warning(summarize_uncertainty(res.uncertainty)); !w.empty())
      res.warnings.push_back(std::move(w));
  } else {
    res.uncertainty = uncertainty_phase(op, res.registrations, threads, res.warnings, &progress, &cancel);
    ck.uncertainty.clear();
    for (std::size_t k = 0; k < n; ++k) ck.uncertainty.emplace_back(k, res.uncertainty[k]);
    if (interval > 0) save(true);
  }
  res.seconds.uncertainty = since(t0);

  cancel.throw_if_cancelled();
  stop_if_registration_failed(classify_failures(res.registrations), job.input, &progress, res.warnings, [&] {
    progress.phase("write", 2);
    // Staged; run_register commits the set on registration_failed too.
    res.files = write_register_outputs(set, frames, job.registration, job.averaging, res.registrations,
                                       ApplicationSummary::of(res.applications), AverageResult{}, res.warnings, {},
                                       {operator_applications_array(res.applications)}, "", &res.uncertainty);
    progress.advance(2);
  });
  t0 = Clock::now();
  {
    const int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    try {
      res.average = average_registered(frames, res.registrations, job.averaging, res.warnings, &progress, &cancel,
                                       &res.uncertainty);
    } catch (...) {
      omp_set_num_threads(saved);
      throw;
    }
    omp_set_num_threads(saved);
  }
  res.seconds.average = since(t0);

  cancel.throw_if_cancelled();
  t0 = Clock::now();
  progress.phase("write", 4);
  nlohmann::json extra;
  extra["execution"] = {{"threads", threads},
                        {"ranks", 1},
                        {"scan", "sequential"},
                        {"resumed", job.execution.resume && !ck.elements.empty()},
                        {"resumed_scan_complete", scanned}};
  res.seconds.total = since(t_start);
  extra["timings_s"] = {{"pairs", res.seconds.pairs},
                        {"scan", res.seconds.scan},
                        {"uncertainty", res.seconds.uncertainty},
                        {"average", res.seconds.average},
                        {"before_write_total", res.seconds.total}};
  extra["scan_trace"] = trace.to_json(false);  // its records are streamed (below)
  const auto& records = trace.records();
  res.files = write_register_outputs(
      set, frames, job.registration, job.averaging, res.registrations, ApplicationSummary::of(res.applications),
      res.average, res.warnings, extra,
      {{{"scan_trace", "records"}, records.size(), [&](std::size_t i) { return ScanTrace::record_json(records[i]); }},
       operator_applications_array(res.applications)},
      "", &res.uncertainty);
  progress.advance(4);
  res.seconds.write = since(t0);
  res.seconds.total = since(t_start);
  return res;
}

}  // namespace driftscan::mpi
