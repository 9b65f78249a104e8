// The job subcommands: register, average, spectrum, synth and `run JOB.json`.
// All share the flag table of job_flags.hpp and the job runner.
#include <filesystem>
#include <iostream>
#include <memory>

#include "driftscan/mpi/jobs/job_runner.hpp"
#include "driftscan/mpi/runtime/command.hpp"
#include "driftscan/mpi/runtime/job_flags.hpp"

namespace driftscan::mpi {
namespace {

// A printed job is run later, from anywhere: its paths are made absolute here
// (the engine reads a job's relative paths against its own working folder).
void make_paths_absolute(Job& job) {
  for (std::string* p : {&job.input, &job.output, &job.registration.mask, &job.averaging.drift, &job.averaging.lines})
    if (!p->empty()) *p = std::filesystem::absolute(*p).lexically_normal().string();
}

Runner job_command(CLI::App& app, const std::string& name) {
  auto values = std::make_shared<JobFlagValues>();
  add_job_flags(app, name, values);
  app.footer(
      "Exit codes: 0 done, 2 bad input or usage, 3 failure during the run, 4 cancelled, 5 registration failed "
      "(most frames share no structure with frame 0; no average written).");
  return [values](RunContext& ctx) {
    Job job = effective_job(*values);
    if (values->print_job) {
      make_paths_absolute(job);
      if (ctx.rank == 0) std::cout << to_json(job).dump(2) << std::endl;
      return 0;
    }
    return run_job(job, ctx);
  };
}

CommandRegistrar reg_register({"register", "Register a series (and average it) with the prefix scan",
                               [](CLI::App& app) { return job_command(app, "register"); }});
CommandRegistrar reg_average({"average", "Average a series with the transforms of a registration",
                              [](CLI::App& app) { return job_command(app, "average"); }});
CommandRegistrar reg_spectrum({"spectrum", "Power spectrum of a frame / the stack",
                               [](CLI::App& app) { return job_command(app, "spectrum"); }});
CommandRegistrar reg_synth({"synth", "Write a synthetic drifting series with its ground truth",
                            [](CLI::App& app) { return job_command(app, "synth"); }});
CommandRegistrar reg_run({"run", "Run a job file (flags after it override its fields)",
                          [](CLI::App& app) { return job_command(app, "run"); }});

}  // namespace
}  // namespace driftscan::mpi
