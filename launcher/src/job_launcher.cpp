// JobLauncher: validates the job, picks the backend for the profile's kind
// (local_backend.cpp, ssh_backend.cpp, slurm_backend.cpp) and runs it on a
// background thread; what becomes of a failed launch (one error event, the
// staging folder removed) is decided here, the same for every kind.
#include "driftscan/launch/job_launcher.hpp"

#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <thread>

#include "driftscan/core/error.hpp"
#include "launch_backend.hpp"

namespace driftscan::launch {
namespace fs = std::filesystem;

const char* to_string(LaunchStatus status) {
  switch (status) {
    case LaunchStatus::done: return "done";
    case LaunchStatus::failed: return "failed";
    case LaunchStatus::cancelled: return "cancelled";
  }
  return "failed";
}

namespace {

std::unique_ptr<LaunchBackend> make_backend(LaunchContext& context) {
  if (context.profile.kind == ProfileKind::local) return make_local_backend(context);
  if (context.profile.kind == ProfileKind::ssh) return make_ssh_backend(context);
  return make_slurm_backend(context);
}

// The given staging folder, else a fresh one under $TMPDIR.
std::string prepare_staging(const LaunchOptions& options) {
  if (!options.staging_dir.empty()) {
    fs::create_directories(options.staging_dir);
    return options.staging_dir;
  }
  std::string tmpl = (std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + std::string("/driftscan-launch-XXXXXX");
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) throw failure("cannot create a staging folder in " + tmpl);
  return buf.data();
}

}  // namespace

struct JobLauncher::Impl {
  LaunchContext ctx;
  std::unique_ptr<LaunchBackend> backend;

  std::thread thread;
  mutable std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  LaunchResult result;
  bool started = false;

  void run() {
    LaunchResult r;
    bool launcher_error_emitted = false;
    try {
      ctx.staging = prepare_staging(ctx.options);
      ctx.log("profile '" + ctx.profile.name + "' (" + to_string(ctx.profile.kind) + "), staging in " + ctx.staging);
      r = backend->run();
    } catch (const Error& e) {
      r = LaunchResult{};
      r.status = ctx.cancel_requested ? LaunchStatus::cancelled : LaunchStatus::failed;
      r.exit_code = ctx.cancel_requested ? 4 : e.exit_code();
      r.message = e.what();
      r.result_folder = ctx.job.output;
      if (r.status == LaunchStatus::cancelled) ctx.emit({{"event", "cancelled"}, {"source", "launcher"}});
      else ctx.emit({{"event", "error"}, {"source", "launcher"}, {"message", r.message}, {"code", r.exit_code}});
      launcher_error_emitted = true;
    } catch (const std::exception& e) {
      r = LaunchResult{};
      r.message = e.what();
      r.result_folder = ctx.job.output;
      ctx.emit({{"event", "error"}, {"source", "launcher"}, {"message", r.message}, {"code", 3}});
      launcher_error_emitted = true;
    }
    // Exactly one error event per failed launch: the engine's, or the launcher's.
    if (r.status == LaunchStatus::failed && (ctx.engine_error.empty() || r.message != ctx.engine_error) &&
        !launcher_error_emitted)
      ctx.emit({{"event", "error"}, {"source", "launcher"}, {"message", r.message}, {"code", r.exit_code}});
    if (ctx.options.staging_dir.empty() && !ctx.staging.empty()) {
      std::error_code ec;  // our own temporary folder: job file, batch script, fetched copy
      fs::remove_all(ctx.staging, ec);
    }
    std::lock_guard<std::mutex> lock(mu);
    result = r;
    done = true;
    cv.notify_all();
  }
};

JobLauncher::JobLauncher(Profile profile, Job job, LaunchOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->ctx.profile = std::move(profile);
  impl_->ctx.job = std::move(job);
  impl_->ctx.options = std::move(options);
  impl_->backend = make_backend(impl_->ctx);
}

JobLauncher::~JobLauncher() {
  if (impl_->thread.joinable()) {
    // Only when nobody asked yet: a further request would cancel a follow's finish.
    if (impl_->ctx.cancel_requests == 0) cancel();
    impl_->thread.join();
  }
}

void JobLauncher::on_event(EventCallback callback) { impl_->ctx.callback = std::move(callback); }

void JobLauncher::start() {
  if (impl_->started) throw bad_input("internal: JobLauncher::start() called twice");
  auto& job = impl_->ctx.job;
  const auto& p = impl_->ctx.profile;
  job.execution.profile = p.name;
  job.execution.ranks = p.kind == ProfileKind::slurm ? p.nodes * p.tasks_per_node : p.ranks;
  job.execution.threads = p.kind == ProfileKind::slurm ? p.cpus_per_task : p.threads;
  // Relative paths mean the caller's folder, wherever the engine runs.
  std::error_code ec;
  if (!job.output.empty()) job.output = fs::absolute(job.output, ec).string();
  if (!job.input.empty() && (p.kind == ProfileKind::local || !p.shared_input))
    job.input = fs::absolute(job.input, ec).string();
  validate(job);
  // A followed file the acquisition has not created yet is waited for by the engine; its folder must exist.
  const bool awaited = job.follow.enabled && fs::is_directory(fs::path(job.input).parent_path());
  if (!job.input.empty() && (p.kind == ProfileKind::local || !p.shared_input) && !fs::exists(job.input) && !awaited)
    throw bad_input(job.input + ": input not found");
  impl_->started = true;
  impl_->thread = std::thread([this] { impl_->run(); });
}

void JobLauncher::cancel() {
  ++impl_->ctx.cancel_requests;
  impl_->ctx.cancel_requested = true;
}

bool JobLauncher::finished() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->done;
}

LaunchResult JobLauncher::wait() {
  {
    std::unique_lock<std::mutex> lock(impl_->mu);
    impl_->cv.wait(lock, [&] { return impl_->done; });
  }
  if (impl_->thread.joinable()) impl_->thread.join();
  return impl_->result;
}

LaunchResult JobLauncher::result() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->result;
}

std::vector<std::string> JobLauncher::engine_command(const std::string& job_file) const {
  return impl_->backend->engine_command(job_file);
}

}  // namespace driftscan::launch
