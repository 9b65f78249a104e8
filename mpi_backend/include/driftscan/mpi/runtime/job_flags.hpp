#pragma once
// Command-line flags for job fields, made from the job-field table
// (driftscan/job_fields.hpp): flag names, types and help come from there. Every job
// subcommand (register, average, spectrum, synth, run) declares its flags
// from this table, so `--max-shift 4` means registration.max_shift in every
// command and in `run job.json --max-shift 4` (file first, flags override).
// Flags are recorded while CLI11 parses and applied afterwards, in order.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "driftscan/job/job.hpp"

namespace driftscan::mpi {

struct JobFlag;  // one flag: a row of the job-field table (driftscan/job_fields.hpp), or --size

struct JobFlagValues {
  std::string command;   // the subcommand ("run": taken from the job file)
  std::string job_file;  // `run JOB.json`, or --job on the other commands
  bool print_job = false;
  std::vector<std::pair<const JobFlag*, std::string>> given;  // in command-line order
};

// Declares the flags that concern `command` ("run": all of them), plus
// --print-job and (except for run) --job FILE; values land in *values.
void add_job_flags(CLI::App& app, const std::string& command, const std::shared_ptr<JobFlagValues>& values);

// The effective job: the job file (if any) or defaults, the command, then
// every given flag in order. Validated. Throws driftscan::Error (bad_input)
// naming the flag or the file.
Job effective_job(const JobFlagValues& values);

// For documentation and tests: every flag name with the job field it sets.
std::vector<std::pair<std::string, std::string>> job_flag_table();

}  // namespace driftscan::mpi
