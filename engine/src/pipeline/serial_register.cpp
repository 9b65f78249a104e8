#include "driftscan/pipeline/serial_register.hpp"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <exception>
#include <filesystem>
#include <optional>
#include <utility>

#include "driftscan/core/error.hpp"
#include "driftscan/core/omp_threads.hpp"
#include "driftscan/core/peak_memory.hpp"
#include "driftscan/job/job.hpp"
#include "driftscan/pipeline/phase_timer.hpp"
#include "driftscan/pipeline/rank_checkpoints.hpp"
#include "driftscan/pipeline/register_checkpoint.hpp"
#include "driftscan/registration/drift_uncertainty.hpp"
#include "driftscan/registration/registration_failure.hpp"
#include "driftscan/registration/scan_trace.hpp"

namespace driftscan {
namespace fs = std::filesystem;

namespace {

// One run: the plan, what the checkpoint holds, and what each phase adds to
// the result. The phases are its methods, in the order run() calls them.
class SerialRegister {
 public:
  SerialRegister(const Job& job, const RegisterPlan& plan, const FrameSource& frames, Progress& progress,
                 const CancelToken& cancel, OutputSet& set, RegistrationScan injected)
      : job_(job),
        plan_(plan),
        frames_(frames),
        progress_(progress),
        cancel_(cancel),
        set_(set),
        n_(frames.frame_count()),
        ck_path_(checkpoint_path(job.output)),
        timer_(res_.seconds, &cancel),
        op_(frames, job.registration, plan.threads, prepared_cache_bytes(job, frames.width(), frames.height())),
        injected_(std::move(injected)) {}

  RegisterResult run() {
    const std::clock_t c_start = std::clock();
    resume();
    timed(RegisterPhase::pairs, res_.cpu.pairs, [&] { pairs(); });
    timed(RegisterPhase::scan, res_.cpu.scan, [&] { scan(); });
    timed(RegisterPhase::uncertainty, res_.cpu.uncertainty, [&] { uncertainty(); });
    // What the scan spent on the uncertainty (in_scan_) is the uncertainty's:
    // its CPU, and the wall time the scan waited for it.
    res_.seconds.scan -= in_scan_.on_path, res_.cpu.scan -= in_scan_.cpu;
    res_.seconds.uncertainty += in_scan_.on_path, res_.cpu.uncertainty += in_scan_.cpu;
    op_.release_prepared();  // the pyramids are done with: their memory goes to the averaging
    cancel_.throw_if_cancelled();
    stop_if_failed();
    timed(RegisterPhase::average, res_.cpu.average, [&] {
      const OmpThreadCount guard(plan_.threads);
      res_.average = average_registered(frames_, res_.registrations, job_.averaging, res_.warnings, &progress_,
                                        &cancel_, &res_.uncertainty);
    });
    timed(RegisterPhase::write, res_.cpu.write, [&] { write(); });
    res_.seconds.total = timer_.total();
    res_.cpu.total = cpu_since(c_start);
    return std::move(res_);
  }

 private:
  static double cpu_since(std::clock_t c0) { return static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC; }

  // A phase timed by the wall (the timer) and by the process's CPU time.
  template <class Body>
  void timed(RegisterPhase phase, double& cpu, Body&& body) {
    const std::clock_t c0 = std::clock();
    timer_.run(phase, std::forward<Body>(body));
    cpu = cpu_since(c0);
  }

  void resume() {
    std::error_code ec;
    fs::create_directories(job_.output, ec);
    ck_.fingerprint = checkpoint_fingerprint(job_, frames_);
    if (!plan_.resume) {
      remove_checkpoints(job_.output);  // an earlier run's: never mixed with this one's
      return;
    }
    if (!fs::exists(ck_path_)) {
      progress_.log(LogLevel::warning, "--resume: no checkpoint in " + job_.output + "; starting from the beginning");
      return;
    }
    ck_ = load_checkpoint(ck_path_, ck_.fingerprint);
    // A checkpoint of a finished scan holds the drift itself: the pairs and
    // the scan are not run again.
    scanned_ = ck_.prefix.size() == n_;
    const char* skipped = !scanned_ ? ""
                          : ck_.uncertainty.size() == n_
                              ? " (the scan is complete: pairs and scan skipped, and the uncertainty)"
                              : " (the scan is complete: pairs and scan skipped)";
    progress_.log(LogLevel::info, "resuming from " + ck_path_ + ": " + std::to_string(ck_.elements.size()) +
                                      " pair elements and " + std::to_string(ck_.prefix.size()) + " scan results done" +
                                      skipped);
  }

  void save(bool force) {
    if (plan_.checkpoint_interval_s <= 0 && !force) return;
    if (!force && PhaseTimer::since(last_save_) < plan_.checkpoint_interval_s) return;
    save_checkpoint(ck_, ck_path_);
    last_save_ = PhaseTimer::Clock::now();
  }

  // A cancel keeps what is done: the next --resume starts from there.
  template <class Body>
  void keeping_on_cancel(Body&& body) {
    try {
      body();
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::cancelled && plan_.checkpoint_interval_s > 0) save(true);
      throw;
    }
  }

  void pairs() {
    if (!scanned_) {
      progress_.phase("pairs", n_ - 1);
      keeping_on_cancel([&] {
        // Chunks big enough to keep every thread busy, small enough to save often.
        const std::size_t chunk = std::max<std::size_t>(64, static_cast<std::size_t>(plan_.threads) * 16);
        while (ck_.elements.size() < n_) {
          const std::size_t begin = ck_.elements.size(), end = std::min(n_, begin + chunk);
          auto part =
              compute_pair_elements(op_, begin, end, plan_.threads, &progress_, &cancel_, begin ? begin - 1 : 0);
          ck_.elements.insert(ck_.elements.end(), part.begin(), part.end());
          progress_.advance(ck_.elements.size() - 1);
          save(false);
        }
      });
      release_pair_buffers(plan_.threads);
    }
    res_.elements = ck_.elements;
  }

  // The sequential scan, continued from the saved prefix and saved as it goes.
  // Traced like the distributed one (one worker: this process), so the
  // report's scan_trace and the app's load-balance view exist for every run.
  void scan() {
    trace_.begin(0, 1, 1);
    trace_.details() = {{"algorithm", "sequential"}, {"resumed_outputs", ck_.prefix.size()}};
    if (scanned_) {
      res_.registrations = ck_.prefix;
    } else {
      progress_.phase("scan", n_ - 1);
      // An injected scan (a test's) replaces the checkpointed sequential one.
      const RegistrationScan scan =
          injected_ ? injected_
                    : RegistrationScan([&](const std::vector<Registration>& x, const RegistrationCombine& combine) {
                        return continue_scan(x, combine);
                      });
      keeping_on_cancel([&] {
        res_.registrations = scan_registrations(res_.elements, op_, scan, res_.applications, &progress_, &cancel_);
      });
      // The finished scan is kept at once: an interruption from here on
      // (uncertainty, averaging, writing) resumes with this drift.
      if (plan_.checkpoint_interval_s > 0) save(true);
    }
    trace_.end();
    trace_.collect_local();
  }

  std::vector<Registration> continue_scan(const std::vector<Registration>& x, const RegistrationCombine& combine) {
    std::vector<Registration> out = ck_.prefix;
    out.reserve(x.size());
    if (out.empty()) out.push_back(x[0]);
    begin_in_scan(out);
    while (out.size() < x.size()) {
      const double start = trace_.clock().now();
      // With a second thread, the previous frame's uncertainty runs beside
      // this step (its pyramid is still in the cache: the step prepares the
      // next frame); on one thread, after it.
      step_beside_uncertainty([&] { out.push_back(combine(out.back(), x[out.size()])); });
      const auto k = static_cast<std::int64_t>(out.size() - 1);
      trace_.record(0, ScanRecord{0, 0, 0, k, ScanPhase::final_scan, 0, start, trace_.clock().now()});
      if (!in_scan_.beside) uncertainty_in_scan(out.back());
      else in_scan_.pending = out.back();
      if (plan_.checkpoint_interval_s > 0 && PhaseTimer::since(last_save_) >= plan_.checkpoint_interval_s) {
        ck_.prefix = out;
        save(true);
      }
    }
    if (in_scan_.pending) {  // the last frame's: nothing left to run beside
      const auto t0 = PhaseTimer::Clock::now();
      uncertainty_in_scan(*in_scan_.pending);
      in_scan_.pending.reset();
      in_scan_.on_path += PhaseTimer::since(t0);
    }
    ck_.prefix = out;
    return out;
  }

  // Runs `step`; with the uncertainty beside the scan, the pending frame's
  // uncertainty on a second thread at the same time. What the step waited
  // for it is the uncertainty's share of the scan's wall time.
  template <class Step>
  void step_beside_uncertainty(Step&& step) {
    if (!in_scan_.pending) {
      step();
      return;
    }
    const Registration r = *in_scan_.pending;
    in_scan_.pending.reset();
    std::exception_ptr error;
    double step_seconds = 0.0;
    const auto t0 = PhaseTimer::Clock::now();
#pragma omp parallel sections num_threads(2)
    {
#pragma omp section
      {
        try {
          step();
        } catch (...) {
          error = std::current_exception();
        }
        step_seconds = PhaseTimer::since(t0);
      }
#pragma omp section
      uncertainty_in_scan(r);
    }
    in_scan_.on_path += std::max(0.0, PhaseTimer::since(t0) - step_seconds);
    if (error) std::rethrow_exception(error);
  }

  // Each frame's uncertainty with its scan step, while the operator's
  // cache still holds its prepared pyramid: on big frames only frame 0's and
  // one moving frame's fit the cache, and a phase after the scan prepared
  // every frame a second time (at 4096² with two threads that phase took
  // 2-5 s where this takes 0.7 s). The same call on the same pyramid: the
  // same sigma. The scan's steps are sequential here, so a second thread
  // computes frame k's while the scan steps to k + 1. A resumed scan's
  // frames are not at hand: the phase after the scan computes those.
  void begin_in_scan(const std::vector<Registration>& out) {
    in_scan_.on = out.size() == 1 && !injected_;
    in_scan_.beside = in_scan_.on && plan_.threads > 1;
    in_scan_.pending.reset();
    if (!in_scan_.on) return;
    in_scan_.counts = looks_like_counts(frames_.frame(0));
    in_scan_.centre = {(frames_.width() - 1) / 2.0, (frames_.height() - 1) / 2.0};
    in_scan_.frames.clear();
    uncertainty_in_scan(out[0]);
  }

  // Frame r.to's uncertainty, appended in frame order (one call at a time:
  // beside the scan it is the only one running). Its CPU is the calling
  // thread's, so that beside the scan the scan's own is what is left.
  void uncertainty_in_scan(const Registration& r) {
    if (!in_scan_.on) return;
    const auto t0 = PhaseTimer::Clock::now();
    const double c0 = thread_cpu_seconds();
    try {
      in_scan_.frames.push_back(frame_drift_uncertainty(op_, r, in_scan_.counts, in_scan_.centre));
    } catch (const Error&) {
      in_scan_.on = in_scan_.beside = false;  // the phase after the scan computes them all, and says what is wrong
      in_scan_.frames.clear();
    }
    if (!in_scan_.beside) in_scan_.on_path += PhaseTimer::since(t0);
    in_scan_.cpu += thread_cpu_seconds() - c0;
  }

  static double thread_cpu_seconds() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
  }

  void uncertainty() {
    if (scanned_ && ck_.uncertainty.size() == n_) {
      // Kept with the scan: frame k's record is k's (saved in order below).
      for (const auto& u : ck_.uncertainty) res_.uncertainty.push_back(u.second);
      if (std::string w = singular_warning(summarize_uncertainty(res_.uncertainty)); !w.empty())
        res_.warnings.push_back(std::move(w));
      return;
    }
    if (in_scan_.on && in_scan_.frames.size() == n_) {
      progress_.phase("uncertainty", n_);
      res_.uncertainty = std::move(in_scan_.frames);
      progress_.advance(n_);
      if (std::string w = singular_warning(summarize_uncertainty(res_.uncertainty)); !w.empty())
        res_.warnings.push_back(std::move(w));
    } else {
      res_.uncertainty = uncertainty_phase(op_, res_.registrations, plan_.threads, res_.warnings, &progress_, &cancel_);
    }
    ck_.uncertainty.clear();
    for (std::size_t k = 0; k < n_; ++k) ck_.uncertainty.emplace_back(k, res_.uncertainty[k]);
    if (plan_.checkpoint_interval_s > 0) save(true);
  }

  void stop_if_failed() {
    stop_if_registration_failed(classify_failures(res_.registrations), job_.input, &progress_, res_.warnings, [&] {
      progress_.phase("write", 2);
      // Staged; the caller commits the set on registration_failed too.
      res_.files = write_register_outputs(set_, frames_, job_.registration, job_.averaging, res_.registrations,
                                          ApplicationSummary::of(res_.applications), AverageResult{}, res_.warnings, {},
                                          {operator_applications_array(res_.applications)}, "", &res_.uncertainty);
      progress_.advance(2);
    });
  }

  void write() {
    progress_.phase("write", 4);
    nlohmann::json extra;
    extra["execution"] = {{"threads", plan_.threads},
                          {"ranks", 1},
                          {"scan", injected_ ? "injected" : "sequential"},
                          {"resumed", plan_.resume && !ck_.elements.empty()},
                          {"resumed_scan_complete", scanned_}};
    extra["smoothing_sigma_px"] = op_.smoothing_sigma();
    extra["job"] = to_json(job_);  // the job as run: with what was decided from the file (scan.rotation)
    extra["lattice_vector_px"] = op_.pair_plan().options().lattice_vector;  // 0: not periodic
    extra["timings_s"] = {{"pairs", res_.seconds.pairs},
                          {"scan", res_.seconds.scan},
                          {"uncertainty", res_.seconds.uncertainty},
                          {"average", res_.seconds.average},
                          {"before_write_total", timer_.total()}};
    extra["cpu_s"] = {{"pairs", res_.cpu.pairs},
                      {"scan", res_.cpu.scan},
                      {"uncertainty", res_.cpu.uncertainty},
                      {"average", res_.cpu.average}};
    extra["memory"] = {{"peak_mb", static_cast<double>(peak_resident_bytes()) / (1024.0 * 1024.0)},
                       {"budget_mb", job_.execution.memory_budget_mb}};
    extra["scan_trace"] = trace_.to_json(false);  // its records are streamed (below)
    const auto& records = trace_.records();
    res_.files = write_register_outputs(
        set_, frames_, job_.registration, job_.averaging, res_.registrations, ApplicationSummary::of(res_.applications),
        res_.average, res_.warnings, extra,
        {{{"scan_trace", "records"}, records.size(), [&](std::size_t i) { return ScanTrace::record_json(records[i]); }},
         operator_applications_array(res_.applications)},
        "", &res_.uncertainty);
    progress_.advance(4);
  }

  const Job& job_;
  const RegisterPlan& plan_;
  const FrameSource& frames_;
  Progress& progress_;
  const CancelToken& cancel_;
  OutputSet& set_;
  const std::size_t n_;
  const std::string ck_path_;
  RegisterResult res_;
  PhaseTimer timer_;
  RegistrationOperator op_;
  RegisterCheckpoint ck_;
  ScanTrace trace_;
  PhaseTimer::Clock::time_point last_save_ = PhaseTimer::Clock::now();
  RegistrationScan injected_;
  bool scanned_ = false;  // the checkpoint resumed from holds the whole scan
  // The uncertainty computed in the scan, frame by frame, and its cost.
  struct InScan {
    bool on = false, beside = false, counts = false;
    std::optional<Registration> pending;  // beside the scan: the last step's, its uncertainty not yet computed
    double on_path = 0.0;                 // beside the scan: the wall time the scan waited for it
    Point centre;
    std::vector<DriftUncertainty> frames;
    double cpu = 0.0;
  } in_scan_;
};

}  // namespace

RegisterResult register_serial(const Job& job, const RegisterPlan& plan, const FrameSource& frames, Progress& progress,
                               const CancelToken& cancel, OutputSet& set, const RegistrationScan& scan) {
  const std::size_t n = frames.frame_count();
  if (n < 2) throw bad_input(job.input + ": " + std::to_string(n) + " frame(s): registration needs at least 2 frames");
  return SerialRegister(job, plan, frames, progress, cancel, set, scan).run();
}

RegisterResult register_series(const FrameSource& frames, const RegistrationSettings& settings,
                               const AveragingOptions& averaging, const std::string& out_dir, Progress& progress,
                               const CancelToken& cancel, int threads, const RegistrationScan& scan) {
  Job job;
  job.command = "register";
  job.input = frames.describe().empty() ? std::string("input") : frames.describe();
  job.output = out_dir;
  job.registration = settings;
  job.averaging = averaging;
  job.execution.threads = std::max(1, threads);
  job.execution.resume = false;
  job.execution.checkpoint_interval_s = 0;  // in-process: nothing to resume
  const std::size_t n = frames.frame_count();
  if (n < 2) throw bad_input(job.input + ": " + std::to_string(n) + " frame(s): registration needs at least 2 frames");
  if (std::string why = unusable_frame_reason(frames.frame(0)); !why.empty())
    throw bad_input(job.input + ": frame 0 (the reference of the registration) " + why);
  OutputSet set(out_dir, "register");  // the folder checked before any work
  const RegisterPlan plan = plan_register(job, 1);
  try {
    RegisterResult res = register_serial(job, plan, frames, progress, cancel, set, scan);
    set.commit();
    return res;
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::registration_failed) set.commit();  // drift.csv and report.json: the answer
    throw;
  }
}

}  // namespace driftscan
