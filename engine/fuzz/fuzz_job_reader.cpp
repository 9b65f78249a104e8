// libFuzzer target for the job-file reader: every input loaded with
// load_job and, when it loads, validated and written back. The acceptable
// outcomes are a Job or driftscan::Error; a job that loads must also survive
// its own round trip (to_json, then job_from_json gives the same JSON), since
// the app and the launcher write jobs with to_json and the engine reads them
// back. Built with -DDRIFTSCAN_FUZZ=ON and clang; run by scripts/fuzz.
//
// With DRIFTSCAN_FUZZ_SEEDS=DIR set, the target writes its seed corpus (the
// default job of each command) and a libFuzzer dictionary of every key, block
// and choice of the job-field table to DIR, then exits: the seeds and the
// dictionary come from the same table the reader walks, so they never go stale.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>

#include "driftscan/core/enum_names.hpp"
#include "driftscan/core/error.hpp"
#include "driftscan/job/job.hpp"
#include "driftscan/job/job_fields.hpp"
#include "fuzz_input.hpp"

namespace {

// A dictionary entry in libFuzzer's syntax: "..." with \" and \\ escaped.
std::string dict_entry(const std::string& token) {
  std::string out = "\"";
  for (char c : token) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

void write_seeds(const std::string& dir) {
  std::set<std::string> tokens = {"{",   "}",     "[",      "]",          ":",
                                  ",",   "null",  "true",   "false",      "-1",
                                  "0",   "1e308", "1e-308", "4294967296", "18446744073709551616",
                                  "0.5", "\"\"",  "NaN"};
  for (const auto& block : driftscan::job_blocks()) tokens.insert("\"" + block + "\"");
  for (const auto& f : driftscan::job_fields()) {
    tokens.insert("\"" + std::string(f.key) + "\"");
    for (const auto& c : f.choices) tokens.insert("\"" + c + "\"");
    tokens.insert(f.default_value().dump());
  }
  std::ofstream dict(dir + "/job.dict");
  for (const auto& t : tokens) dict << dict_entry(t) << '\n';
  for (const auto& command : driftscan::job_command_names()) {
    driftscan::Job job;
    job.command = command;
    job.input = command == "synth" ? "" : "series.tif";
    job.output = "results";
    std::ofstream(dir + "/" + command + ".json") << driftscan::to_json(job).dump(2) << '\n';
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("DRIFTSCAN_FUZZ_SEEDS")) {
    write_seeds(dir);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = driftscan::fuzz::input_file("fuzz-job", data, size);
  driftscan::Job job;
  try {
    job = driftscan::load_job(path);
  } catch (const driftscan::Error&) {
    return 0;  // refused with a message: the expected outcome for most inputs
  }
  try {
    driftscan::validate(job);
  } catch (const driftscan::Error&) {
    // a job that parses but is inconsistent: still written back below, as the app does
  }
  const auto written = driftscan::to_json(job);
  driftscan::Job again;
  try {
    again = driftscan::job_from_json(written, "round trip");
  } catch (const driftscan::Error&) {
    std::abort();  // a job the engine wrote must read back
  }
  if (driftscan::to_json(again) != written) std::abort();  // and read back to the same settings
  return 0;
}
