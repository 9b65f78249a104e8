#include "driftscan/mpi/runtime/job_flags.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "driftscan/core/enum_names.hpp"
#include "driftscan/core/error.hpp"
#include "driftscan/job/job_fields.hpp"

namespace driftscan::mpi {

using nlohmann::json;

// One flag: a row of the job-field table (job_fields.hpp), or --size, which
// sets two fields at once.
struct JobFlag {
  std::string names;      // CLI11 names, e.g. "--output,--out,-o"
  std::string name;       // the first one, for messages and job_flag_table()
  const JobField* field;  // nullptr: --size
  std::string help;
  std::string type_name;  // what --help shows after the flag: INT, FLOAT, ENUM:{…}
  unsigned commands;      // JobCommandBits
  bool is_switch;         // takes no value (sets true)
};

namespace {

// Values are recorded as text while CLI11 parses and converted here, after
// the parse, so a bad value is a bad_input error naming the flag (an error
// event with --progress json), exactly like a bad field in a job file.
[[noreturn]] void bad(const std::string& flag, const std::string& value, const std::string& what) {
  throw bad_input("option " + flag + " '" + value + "': " + what);
}
double to_double(const std::string& v, const std::string& flag) {
  char* end = nullptr;
  double d = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !std::isfinite(d)) bad(flag, v, "not a number");
  return d;
}
long to_long(const std::string& v, const std::string& flag, long lo) {
  char* end = nullptr;
  long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0') bad(flag, v, "not an integer");
  if (n < lo) bad(flag, v, "must be at least " + std::to_string(lo));
  return n;
}
bool to_bool(const std::string& v, const std::string& flag) {
  if (v == "true" || v == "on" || v == "yes" || v == "1") return true;
  if (v == "false" || v == "off" || v == "no" || v == "0") return false;
  bad(flag, v, "expected on or off");
}
std::vector<double> to_list(const std::string& v, const std::string& flag, std::size_t n) {
  std::vector<double> out;
  std::stringstream ss(v);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(to_double(item, flag));
  if (n && out.size() != n) bad(flag, v, "expected " + std::to_string(n) + " comma-separated numbers");
  return out;
}
json whole_numbers(const std::vector<double>& values, const std::string& flag, const std::string& v, const char* what) {
  json out = json::array();
  for (double x : values) {
    if (x < 0 || x != std::floor(x)) bad(flag, v, what);
    out.push_back(static_cast<std::int64_t>(x));
  }
  return out;
}

// The smallest integer a flag accepts: the field's lower bound, else its type's.
long lowest(const JobField& f) {
  if (std::isfinite(f.min)) return static_cast<long>(f.min_open ? std::floor(f.min) + 1 : std::ceil(f.min));
  return f.type == FieldType::integer ? LONG_MIN : 0;
}

// The flag's value in job-file form, what JobField::set takes.
json parse_value(const JobField& f, const std::string& v, const std::string& flag) {
  switch (f.type) {
    case FieldType::text:
    case FieldType::optional_text: return v;  // names (scan_algorithm…) are checked by validate()
    case FieldType::boolean: return to_bool(v, flag);
    case FieldType::integer:
    case FieldType::count:
    case FieldType::seed: return to_long(v, flag, lowest(f));
    case FieldType::number:
    case FieldType::optional_number: return to_double(v, flag);
    case FieldType::choice:
      if (std::find(f.choices.begin(), f.choices.end(), v) == f.choices.end())
        bad(flag, v, "expected " + one_of(f.choices));
      return v;
    case FieldType::rectangle: return whole_numbers(to_list(v, flag, 4), flag, v, "expected non-negative integers");
    case FieldType::number_pair: return to_list(v, flag, 2);
    case FieldType::frame_list: return whole_numbers(to_list(v, flag, 0), flag, v, "expected frame numbers");
    case FieldType::number_list: return to_list(v, flag, 0);
  }
  return v;
}

std::string type_name_of(const JobField& f) {
  if (f.flag_value) return f.flag_value;
  if (!f.choices.empty()) {
    std::string names;
    for (const auto& c : f.choices) names += (names.empty() ? "" : ",") + c;
    return "ENUM:{" + names + "}";
  }
  switch (f.type) {
    case FieldType::boolean: return "BOOLEAN:{on,off}";
    case FieldType::integer: return "INT";
    case FieldType::count:
    case FieldType::seed: return "UINT";
    case FieldType::number:
    case FieldType::optional_number: return "FLOAT";
    default: return "TEXT";
  }
}

std::string first_name(const std::string& names) { return names.substr(0, names.find(',')); }

const std::vector<JobFlag>& table() {
  static const std::vector<JobFlag> flags = [] {
    std::vector<JobFlag> out;
    for (const auto& f : job_fields()) {
      if (!f.flags) continue;
      if (f.path() == "synth.width")
        out.push_back({"--size", "--size", nullptr,
                       "Frame size WxH (pixels), e.g. 512x512 (sets synth.width and synth.height)  [synth.width]",
                       "WxH", f.flag_commands, false});
      out.push_back({f.flags, first_name(f.flags), &f, std::string(f.help) + "  [" + f.path() + "]",
                     f.flag_is_switch ? "" : type_name_of(f), f.flag_commands, f.flag_is_switch});
    }
    return out;
  }();
  return flags;
}

const JobFlag& input_flag() {
  static const JobFlag* input = [] {
    for (const auto& f : table())
      if (f.field && f.field->path() == "input") return &f;
    throw std::logic_error("no --input flag");
  }();
  return *input;
}

void apply(Job& job, const JobFlag& flag, const std::string& value) {
  if (!flag.field) {  // --size WxH
    auto x = value.find_first_of("xX");
    if (x == std::string::npos) bad(flag.name, value, "expected WxH, e.g. 512x512");
    const JobField& width = job_field("synth.width");
    const JobField& height = job_field("synth.height");
    width.set(job, to_long(value.substr(0, x), flag.name, lowest(width)));
    height.set(job, to_long(value.substr(x + 1), flag.name, lowest(height)));
    return;
  }
  flag.field->set(job, parse_value(*flag.field, value, flag.name));
}

}  // namespace

void add_job_flags(CLI::App& app, const std::string& command, const std::shared_ptr<JobFlagValues>& values) {
  values->command = command;
  const unsigned commands = command == "run" ? for_all : job_command_bit(command);
  if (command == "run") {
    app.add_option("job", values->job_file, "Job file (JSON, docs/protocol.md); flags given after it override it")
        ->required();
  } else {
    app.add_option("--job", values->job_file, "Start from this job file; flags override it");
  }
  for (const auto& f : table()) {
    if (!(f.commands & commands)) continue;
    const JobFlag* flag = &f;
    if (f.is_switch) {
      app.add_flag_callback(
          f.names, [values, flag] { values->given.emplace_back(flag, "true"); }, f.help);
    } else {
      // One callback per occurrence keeps the command-line order.
      app.add_option_function<std::string>(
             f.names, [values, flag](const std::string& v) { values->given.emplace_back(flag, v); }, f.help)
          ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
          ->type_name(f.type_name);
    }
  }
  if (command == "register" || command == "average" || command == "spectrum") {
    // The input may also be given as the first positional argument.
    const JobFlag* input = &input_flag();
    app.add_option_function<std::string>(
        "input", [values, input](const std::string& v) { values->given.emplace_back(input, v); },
        "Input series (same as --input)");
  }
  app.add_flag("--print-job", values->print_job, "Print the effective job (JSON) and exit");
}

Job effective_job(const JobFlagValues& values) {
  Job job;
  if (!values.job_file.empty()) {
    job = load_job(values.job_file);
    if (values.command != "run" && job.command != values.command)
      throw bad_input(values.job_file + ": is a '" + job.command + "' job, not '" + values.command + "'");
  } else {
    job.command = values.command;
  }
  for (const auto& [flag, value] : values.given) apply(job, *flag, value);
  validate(job);
  return job;
}

std::vector<std::pair<std::string, std::string>> job_flag_table() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& f : table()) out.emplace_back(f.name, f.field ? f.field->path() : "synth.width");
  return out;
}

}  // namespace driftscan::mpi
