// `register --follow`; see follow_register.hpp.
#include "driftscan/mpi/register/follow_register.hpp"
#include "driftscan/core/derotated_source.hpp"
#include "driftscan/core/omp_threads.hpp"
#include "driftscan/core/scan_rotation.hpp"

#include <fcntl.h>
#include <omp.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <filesystem>
#include <future>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "driftscan/core/atomic_file.hpp"
#include "driftscan/core/error.hpp"
#include "driftscan/core/frame_prefix.hpp"
#include "driftscan/formats/growing_series.hpp"
#include "driftscan/formats/tiff/tiff_writer.hpp"
#include "driftscan/job/job.hpp"
#include "driftscan/job/output_set.hpp"
#include "driftscan/job/results_lock.hpp"
#include "driftscan/mpi/runtime/collectives.hpp"
#include "driftscan/mpi/runtime/command_report.hpp"
#include "driftscan/mpi/runtime/job_input.hpp"
#include "driftscan/pipeline/rank_checkpoints.hpp"
#include "driftscan/pipeline/register_checkpoint.hpp"
#include "driftscan/pipeline/register_plan.hpp"

namespace driftscan::mpi {
namespace fs = std::filesystem;
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// A token requested when `outer` has received more than `baseline` requests:
// the first SIGINT ends the follow, a second one cancels the finish that
// follows — also when both came before the finish started.
class LaterCancel {
 public:
  LaterCancel(const CancelToken& outer, unsigned baseline) : outer_(outer), baseline_(baseline) {
    watcher_ = std::thread([this] {
      while (!stop_.load()) {
        if (outer_.requests() > baseline_) token_.request();
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    });
  }
  ~LaterCancel() {
    stop_.store(true);
    watcher_.join();
  }
  LaterCancel(const LaterCancel&) = delete;
  LaterCancel& operator=(const LaterCancel&) = delete;
  const CancelToken& token() const { return token_; }

 private:
  const CancelToken& outer_;
  const unsigned baseline_;
  CancelToken token_;
  std::atomic<bool> stop_{false};
  std::thread watcher_;
};

// drift.csv as the frames arrive: the header (atomically, replacing an
// earlier table), then one write(2) per row, so a reader sees whole rows.
class DriftAppender {
 public:
  DriftAppender(std::string path, const std::string& header) : path_(std::move(path)) {
    AtomicFile file(path_, "drift table");
    file.stream() << header;
    file.commit();
    fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd_ < 0) throw failure(path_ + ": cannot append to the drift table (" + std::strerror(errno) + ")");
  }
  ~DriftAppender() { close(); }
  DriftAppender(const DriftAppender&) = delete;
  DriftAppender& operator=(const DriftAppender&) = delete;
  void append(const std::string& row) {
    std::size_t done = 0;
    while (done < row.size()) {
      const ssize_t w = ::write(fd_, row.data() + done, row.size() - done);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) throw failure(path_ + ": cannot append to the drift table (" + std::strerror(errno) + ")");
      done += static_cast<std::size_t>(w);
    }
  }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  std::string path_;
  int fd_ = -1;
};

// The running mean in frame 0's coordinates (what average.tif shows while
// the follow goes on): sums of the warped frames and their coverage.
class RunningMean {
 public:
  void add(const Frame& f, const Transform& to_frame0, Interpolation interpolation) {
    const Frame w = warp_to_reference(f, to_frame0, interpolation, std::nanf(""));
    if (sum_.empty()) {
      width_ = w.width;
      height_ = w.height;
      sum_.assign(w.pixels.size(), 0.0);
      count_.assign(w.pixels.size(), 0.0);
    }
    for (std::size_t i = 0; i < w.pixels.size(); ++i)
      if (std::isfinite(w.pixels[i])) {
        sum_[i] += w.pixels[i];
        count_[i] += 1.0;
      }
    ++frames_;
  }
  std::size_t frames() const { return frames_; }
  Frame image() const {
    Frame out(width_, height_);
    for (std::size_t i = 0; i < sum_.size(); ++i)
      out.pixels[i] = count_[i] > 0.5 ? static_cast<float>(sum_[i] / count_[i]) : 0.0f;
    return out;
  }

 private:
  int width_ = 0, height_ = 0;
  std::vector<double> sum_, count_;
  std::size_t frames_ = 0;
};

class FollowRun {
 public:
  FollowRun(const Job& job, Progress& progress, const CancelToken& cancel)
      : job_(job), progress_(progress), cancel_(cancel), out_(job.output) {
    GrowingSeriesOptions options;
    options.settle_s = job.follow.settle_s;
    options.incomplete_timeout_s = job.follow.incomplete_timeout_s;
    options.max_frames = job.follow.until_frames;
    options.cache_bytes = static_cast<std::size_t>(std::min(job.execution.frame_cache_mb, 256.0) * 1024.0 * 1024.0);
    series_ = GrowingSeries::open(job.input, options);
    if (has_scan_rotation(job.scan.rotation))  // frames in several directions: taken turned back, as a batch run
      turned_ = std::make_unique<DerotatedSource>(
          std::shared_ptr<const FrameSource>(series_.get(), [](const FrameSource*) {}), job.scan.rotation,
          job.input + ": ", true);
    std::error_code ec;
    fs::create_directories(out_, ec);
    if (ec || !fs::is_directory(out_))
      throw failure(job.output + ": cannot create the results folder (" + ec.message() + ")");
    // Held from now until the final set is committed: a second run into the
    // folder (another follow) is refused at once (results_lock.hpp).
    lock_ = ResultsLock::acquire(job.output, "register");
    if (!lock_->warning().empty()) progress_.log(LogLevel::warning, lock_->warning());
    // An earlier report would make a folder still being written look complete.
    fs::remove(out_ / "report.json", ec);
    ck_path_ = checkpoint_path(job.output);
    if (job.execution.resume) {
      if (!fs::exists(ck_path_))
        progress_.log(LogLevel::warning, "--resume: no checkpoint in " + job.output + "; starting from the beginning");
    } else {
      remove_checkpoints(job.output);  // an earlier run's: never mixed with this one's
    }
  }

  ~FollowRun() { join_worker(); }
  FollowRun(const FollowRun&) = delete;
  FollowRun& operator=(const FollowRun&) = delete;

  FollowResult run() {
    const auto t_start = Clock::now();
    const FollowSettings& f = job_.follow;
    progress_.phase("follow", f.until_frames);
    progress_.log(LogLevel::info, "following " + job_.input +
                                      (f.until_frames ? " until " + std::to_string(f.until_frames) + " frames" : "") +
                                      " (idle timeout " + message_number(f.idle_timeout_s) + " s)");
    auto last_frame = Clock::now();
    try {
      for (;;) {
        if (cancel_.cancelled()) {
          result_.stopped_by = "cancel";
          progress_.log(LogLevel::info, "cancel: following stopped after " + std::to_string(done()) +
                                            " frames; finishing the results (cancel again to abort)");
          break;
        }
        const SeriesGrowth g = series_->poll();
        for (const std::string& w : g.warnings) {
          progress_.log(LogLevel::warning, w);
          warnings_.push_back(w);
        }
        while (done() < series_->frame_count() && !cancel_.cancelled()) take_frame(done());
        if (g.added > 0) last_frame = Clock::now();
        if (f.until_frames > 0 && done() >= f.until_frames) {
          result_.stopped_by = "until_frames";
          break;
        }
        if (since(last_frame) >= f.idle_timeout_s) {
          result_.stopped_by = "idle_timeout";
          const std::string waiting = series_->pending();
          progress_.log(LogLevel::info, "no frame completed for " + message_number(f.idle_timeout_s) +
                                            " s: following stopped after " + std::to_string(done()) + " frames" +
                                            (waiting.empty() ? "" : "; incomplete: " + waiting));
          if (!waiting.empty()) {
            warnings_.push_back(waiting + ": never completed, not registered");
            progress_.log(LogLevel::warning, warnings_.back());
          }
          break;
        }
        if (g.added == 0) std::this_thread::sleep_for(std::chrono::duration<double>(f.poll_interval_s));
      }
    } catch (const Error& e) {
      keep_results();
      const std::string kept = done() > 0
                                   ? "; the " + std::to_string(done()) + " frames registered so far are kept in " +
                                         job_.output + " (drift.csv, average.tif; --resume continues)"
                                   : "";
      throw Error(e.kind(), e.what() + kept);
    }
    follow_seconds_ = since(t_start);
    try {
      finish();
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::cancelled)
        progress_.log(LogLevel::warning, "the finish was cancelled: no report.json; drift.csv (" +
                                             std::to_string(done()) +
                                             " rows), the running average.tif and the "
                                             "checkpoint are kept in " +
                                             job_.output + " (--resume continues)");
      throw;
    }
    result_.frames = done();
    result_.result.seconds.total = since(t_start);
    return std::move(result_);
  }

 private:
  std::size_t done() const { return regs_.size(); }

  // The checkpoint of an earlier run over the first frames of this series
  // (read once frame 0 is in: the fingerprint has the frame size).
  void load_resume() {
    if (!job_.execution.resume || !fs::exists(ck_path_)) return;
    nlohmann::json expected = checkpoint_fingerprint(job_, *series_);
    expected["frames"] = std::numeric_limits<std::size_t>::max();  // whatever it covers: the series still grows
    RegisterCheckpoint ck = read_checkpoint_file(ck_path_, expected);
    std::size_t n = std::min(ck.elements.size(), ck.prefix.size());
    for (std::size_t k = 0; k < n; ++k)
      if (ck.elements[k].to != k || ck.prefix[k].to != k || ck.prefix[k].from != 0) n = std::min(n, k);
    ck.elements.resize(n);
    ck.prefix.resize(n);
    resume_ = std::move(ck);
    result_.resumed = n;
    progress_.log(LogLevel::info, "resuming from " + ck_path_ + ": " + std::to_string(n) +
                                      " frames registered before; the frames after them are registered as they come");
  }

  // The critical path of a frame: its pair, the scan step, its drift row and
  // event. The rest (uncertainty, running mean, average.tif) is the worker's.
  void take_frame(std::size_t k) {
    const auto t0 = Clock::now();
    const FrameSource& frames = taken_frames();
    if (k == 0) start(frames);
    rethrow_worker_error();
    Registration e, r;
    if (k < resume_.prefix.size()) {
      e = resume_.elements[k];
      r = resume_.prefix[k];
    } else if (k == 0) {
      e = r = Registration::identity(0);
    } else {
      // Frame k's pyramid for the scan step is built on another thread while
      // its pair registration runs here: the two are independent, and on two
      // cores the row comes sooner (the same computations, the same results).
      auto prepared = std::async(std::launch::async, [this, k] { op_->prepare_moving(k); });
      try {
        e = op_->element(k);
      } catch (...) {
        prepared.wait();
        throw;
      }
      prepared.get();
      r = (*op_)(regs_.back(), e);
      applications_.push_back({r.from, r.to, r.iterations, r.seconds, r.cost, r.flags});
    }
    elements_.push_back(e);
    regs_.push_back(r);
    const bool usable = !(r.flags & (kBadFrame | kRefineFailed)) &&
                        std::find(job_.averaging.exclude_frames.begin(), job_.averaging.exclude_frames.end(), k) ==
                            job_.averaging.exclude_frames.end();
    drift_->append(drift_csv_row(k, r, job_.registration.model, centre_, 0.0, usable, nullptr, 0.0));
    const Point d = r.transform.displacement(centre_);
    progress_.frame({{"frame", k}, {"dx", d.x}, {"dy", d.y}, {"flags", r.flags}, {"seconds", since(t0)}});
    progress_.advance(k + 1);
    if (k == 0) {
      try {
        start_operator(frames);
      } catch (...) {
        // Bad settings (ROI, mask...): no result to keep or resume from.
        elements_.clear();
        regs_.clear();
        throw;
      }
    }
    {
      std::lock_guard<std::mutex> lock(queue_mu_);
      queue_.push_back({r, usable});
    }
    queue_cv_.notify_one();
    const double interval = job_.execution.checkpoint_interval_s;
    if (interval > 0 && since(last_checkpoint_) >= interval) save_checkpoint_now();
  }

  // With frame 0, before its row (the identity, which needs no operator):
  // drift.csv's header and what frame 0 tells about the series.
  void start(const FrameSource& frames) {
    // The rotations against the frames' size, now that it is known (their count cannot be: the series grows).
    check_scan_rotations(job_.scan.rotation, std::numeric_limits<std::size_t>::max(), series_->width(),
                         series_->height(), job_.input + ": ");
    const Frame f0 = frames.frame(0);
    if (std::string why = unusable_frame_reason(f0); !why.empty())
      throw bad_input(series_->frame_origin(0) + ": frame 0 (the reference of the registration) " + why);
    centre_ = {(frames.width() - 1) / 2.0, (frames.height() - 1) / 2.0};
    counts_ = looks_like_counts(f0);
    load_resume();
    drift_.emplace((out_ / "drift.csv").string(), drift_csv_header(job_.registration.model, false));
    tw_.format = SampleFormat::float32;
    tw_.pixel_size = frames.pixel_size();
    tw_.unit = frames.pixel_unit();
  }

  // Once frame 0's row is out: the operator, with everything it derives from
  // frame 0 — its smoothing, autocorrelation and pyramid — built now, before
  // frame 1 exists (frame 1's row then pays only its own pair registration
  // and refinement); then the worker.
  void start_operator(const FrameSource& frames) {
    // Prepared frames (pyramids) of a few frames: frame 0's is used by every
    // step and stays; the others are each used by one step and its
    // uncertainty, soon after. A bound that does not grow with the series.
    const std::size_t frame_bytes = static_cast<std::size_t>(frames.width()) * frames.height() * sizeof(float);
    // The refinement on the critical path uses the job's threads (--threads 2
    // halves a large frame's latency on two cores).
    op_.emplace(frames, job_.registration, std::max(1, job_.execution.threads),
                std::min(prepared_cache_bytes(job_, frames.width(), frames.height()), 24 * frame_bytes), true);
    worker_ = std::thread([this] { work(); });
  }

  // When the worker next writes average.tif without a new frame: one
  // interval after the last write (or frame 0), while frames are pending in
  // the mean; never otherwise.
  Clock::time_point average_due() const {
    if (since_average_ == 0) return Clock::time_point::max();
    const double every = std::min(job_.follow.average_every_s, 1e6);
    return last_average_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(every));
  }

  // The worker, at a lower priority than the critical path: each frame's
  // drift uncertainty (what the batch run's uncertainty phase computes, the
  // same way) and its share of the running mean; average.tif when due, also
  // between frames (the first one an interval after frame 0, not when a
  // later frame happens to come).
  void work() {
    ::setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), 10);
    for (;;) {
      std::optional<Queued> q;
      {
        std::unique_lock<std::mutex> lock(queue_mu_);
        const auto ready = [&] { return !queue_.empty() || closing_; };
        const Clock::time_point due = average_due();
        if (due == Clock::time_point::max()) queue_cv_.wait(lock, ready);
        else queue_cv_.wait_until(lock, due, ready);
        if (queue_.empty() && closing_) return;
        if (const CancelToken* abort = worker_abort_.load(); abort && abort->cancelled()) return;
        if (!queue_.empty()) {
          q = queue_.front();
          queue_.pop_front();
        }
      }
      try {
        if (q) {
          const RefineInformation info = op_->information(q->r, counts_);
          uncertainty_.push_back(drift_uncertainty(info, q->r.transform, centre_, reference_noise_share(info, counts_),
                                                   common_noise_share(info, counts_),
                                                   fitted_gain_attenuation(info, counts_)));
          if (q->usable) {
            if (mean_.frames() == 0) last_average_ = Clock::now();  // the first write one interval after this
            add_to_running_mean(q->r);
            ++since_average_;
          }
        }
        if (since_average_ > 0 && (since_average_ >= job_.follow.average_every_frames || Clock::now() >= average_due()))
          write_running_average();
      } catch (...) {
        std::lock_guard<std::mutex> lock(queue_mu_);
        worker_error_ = std::current_exception();
        queue_.clear();
        return;
      }
    }
  }

  void rethrow_worker_error() {
    std::lock_guard<std::mutex> lock(queue_mu_);
    if (worker_error_) std::rethrow_exception(worker_error_);
  }

  // Lets the worker finish what is queued, then stops it.
  void join_worker() {
    if (!worker_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(queue_mu_);
      closing_ = true;
    }
    queue_cv_.notify_one();
    worker_.join();
  }

  void write_running_average() {
    if (mean_.frames() == 0) return;
    write_tiff((out_ / "average.tif").string(), mean_.image(), tw_);
    since_average_ = 0;
    last_average_ = Clock::now();
  }

  void save_checkpoint_now() {
    if (regs_.empty()) return;
    RegisterCheckpoint ck;
    ck.fingerprint = checkpoint_fingerprint(job_, *series_);
    ck.fingerprint["frames"] = regs_.size();
    ck.elements = elements_;
    ck.prefix = regs_;
    save_checkpoint(ck, ck_path_);
    last_checkpoint_ = Clock::now();
  }

  // After a failure: what is done stays usable (the running average, the
  // checkpoint for --resume); drift.csv holds every row already.
  void keep_results() {
    try {
      join_worker();
      if (drift_) drift_->close();
      write_running_average();
      save_checkpoint_now();
    } catch (const Error& e) {
      progress_.log(LogLevel::warning, std::string("could not keep the results so far: ") + e.what());
    }
  }

  // The batch pipeline's last phases over the frames taken.
  void finish() {
    // A follow ended by a cancel: every request after that first one cancels
    // the finish. Ended otherwise: requests from now on.
    LaterCancel later(cancel_, result_.stopped_by == "cancel" ? 1U : cancel_.requests());
    const CancelToken& cancel = later.token();
    if (done() < 2)
      throw bad_input(job_.input + ": " + std::to_string(done()) +
                      " complete frame(s) when the follow ended: registration needs at least 2");
    // The worker's backlog (uncertainty, running mean) is drained first; a
    // second cancel meanwhile leaves it, as it does the average below.
    worker_abort_.store(&cancel);
    join_worker();
    worker_abort_.store(nullptr);
    rethrow_worker_error();
    if (drift_) drift_->close();
    save_checkpoint_now();  // kept: --resume of the grown series extends it
    cancel.throw_if_cancelled();
    RegisterResult& res = result_.result;
    res.elements = elements_;
    res.registrations = regs_;
    res.applications = applications_;
    res.uncertainty = uncertainty_;
    res.warnings = warnings_;
    result_.logged_warnings = warnings_.size();
    if (std::string w = singular_warning(summarize_uncertainty(res.uncertainty)); !w.empty())
      res.warnings.push_back(std::move(w));
    // A batch run refuses more rotations than frames; here the count was not
    // known when the run began, so the results stand and the user is told.
    if (const std::size_t n = job_.scan.rotation.size(); n > done()) {
      res.warnings.push_back(job_.input + ": " + std::to_string(n) + " scan rotations were given but only " +
                             std::to_string(done()) + " frames were taken: rotations " + std::to_string(done()) +
                             " to " + std::to_string(n - 1) + " were not used");
      progress_.log(LogLevel::warning, res.warnings.back());
    }
    // The file may show more frames by now than were taken (a Stop mid-file):
    // the results are those of the frames registered.
    // Turned back over the prefix (not a prefix of the turned frames): the
    // averaging then sees the turns and samples frames turned off the pixel
    // grid as recorded, once.
    const FramePrefix recorded_taken(*series_, done());
    std::optional<DerotatedSource> turned_taken;
    if (turned_)
      turned_taken.emplace(std::shared_ptr<const FrameSource>(&recorded_taken, [](const FrameSource*) {}),
                           job_.scan.rotation, job_.input + ": ", true);
    const FrameSource& taken = turned_taken ? static_cast<const FrameSource&>(*turned_taken) : recorded_taken;
    const int threads = std::max(1, job_.execution.threads);
    const auto t0 = Clock::now();
    {
      const OmpThreadCount guard(threads);
      res.average = average_registered(taken, res.registrations, job_.averaging, res.warnings, &progress_, &cancel,
                                       &res.uncertainty);
    }
    res.seconds.average = since(t0);
    cancel.throw_if_cancelled();
    const auto t1 = Clock::now();
    progress_.phase("write", 4);
    nlohmann::json extra;
    extra["execution"] = {{"threads", threads},
                          {"ranks", 1},
                          {"scan", "sequential, followed while written"},
                          {"resumed", result_.resumed > 0},
                          {"resumed_outputs", result_.resumed}};
    extra["follow"] = {{"frames", done()},
                       {"stopped_by", result_.stopped_by},
                       {"skipped", warnings_.size()},
                       {"waits_on_incomplete", series_->incomplete_waits()},
                       {"follow_seconds", follow_seconds_}};
    extra["timings_s"] = {{"follow", follow_seconds_}, {"average", res.seconds.average}};
    extra["job"] = to_json(job_);  // the job as run (the app reads scan.rotation from it)
    // The final set replaces the running drift.csv and average.tif as one,
    // report.json last (output_set.hpp), like a batch run's.
    OutputSet set(job_.output, "register", {job_.input}, lock_);
    res.files = write_register_outputs(set, taken, job_.registration, job_.averaging, res.registrations,
                                       ApplicationSummary::of(res.applications), res.average, res.warnings, extra,
                                       {operator_applications_array(res.applications)}, "", &res.uncertainty);
    set.commit();
    progress_.advance(4);
    res.seconds.write = since(t1);
  }

  std::shared_ptr<ResultsLock> lock_;  // first: released last, once everything else is done
  const Job& job_;
  Progress& progress_;
  const CancelToken& cancel_;
  const fs::path out_;
  std::string ck_path_;
  std::unique_ptr<GrowingSeries> series_;
  std::unique_ptr<DerotatedSource> turned_;  // scan.rotation: the frames turned back into frame 0's orientation
  // What is registered and averaged: the series, or its frames turned back.
  // Frame r.to into the running mean: a frame turned off the pixel grid
  // sampled as recorded through its turn (its turned-back corners are NaN),
  // as the final average does.
  void add_to_running_mean(const Registration& r) {
    if (turned_ && turned_->leaves_corners()) {
      const Transform turn = scan_rotation_transform(turned_->rotation_deg(r.to), series_->width(), series_->height());
      mean_.add(series_->frame(r.to), compose(r.transform, turn), job_.averaging.interpolation);
      return;
    }
    mean_.add(taken_frames().frame(r.to), r.transform, job_.averaging.interpolation);
  }
  const FrameSource& taken_frames() const { return turned_ ? static_cast<const FrameSource&>(*turned_) : *series_; }
  std::optional<RegistrationOperator> op_;
  std::optional<DriftAppender> drift_;
  RegisterCheckpoint resume_;
  Point centre_;
  TiffWriteOptions tw_;
  std::vector<Registration> elements_, regs_;
  std::vector<OperatorApplication> applications_;
  std::vector<DriftUncertainty> uncertainty_;
  std::vector<std::string> warnings_;
  RunningMean mean_;
  std::size_t since_average_ = 0;
  Clock::time_point last_average_ = Clock::now(), last_checkpoint_ = Clock::now();
  double follow_seconds_ = 0.0;
  FollowResult result_;
  bool counts_ = false;  // frame 0 holds counts (its noise model)

  struct Queued {
    Registration r;
    bool usable = false;
  };
  std::thread worker_;
  std::mutex queue_mu_;
  std::condition_variable queue_cv_;
  std::deque<Queued> queue_;
  bool closing_ = false;
  std::atomic<const CancelToken*> worker_abort_{nullptr};  // set while finish() drains the queue
  std::exception_ptr worker_error_;
};

}  // namespace

FollowResult follow_register(const Job& job, Progress& progress, const CancelToken& cancel) {
  FollowRun run(job, progress, cancel);
  return run.run();
}

}  // namespace driftscan::mpi
