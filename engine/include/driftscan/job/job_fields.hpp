#pragma once
// Every setting of a job, declared once: where it lives in the job file, its
// type, help text, the range validate() enforces, its command-line flag and
// which subcommands take it, and how the app's editor shows it. The default
// is the Job member's initialiser (default_value() reads it).
//
// job.cpp (JSON both ways, validate), mpi_backend's job_flags.cpp (CLI11
// options) and the app's JobEditor all walk this table, so a new setting is
// one row in job_fields.cpp plus its member in job.hpp (and a line in
// docs/protocol.md). Rules that tie several fields together (the ROI inside
// the frame, band-pass order, `fourier` needs `translation`…) stay in validate().
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "driftscan/job/job.hpp"

namespace driftscan {

// Settings kept as strings in the job (the engine does not know the MPI
// backend's enums), spelled once here for the job file, the flags and the app.
const std::vector<std::string>& job_command_names();     // register, average, spectrum, synth
const std::vector<std::string>& scan_algorithm_names();  // execution.scan_algorithm
const std::vector<std::string>& local_strategy_names();  // execution.local_strategy

enum class FieldType {
  text,           // a string; with `choices`, validate() checks it is one of them
  optional_text,  // a string, null in the file when empty (mask, drift)
  boolean,
  integer,          // int
  count,            // std::size_t
  seed,             // std::uint32_t
  number,           // double
  optional_number,  // double, null in the file when 0 ("off")
  choice,           // an enum, spelled as one of `choices` (enum_names.hpp)
  rectangle,        // Roi: [x, y, w, h], null for the whole frame
  number_pair,      // two numbers [a, b]; `nullable`: null when both are 0 (off)
  frame_list,       // a list of frame numbers
  number_list,      // a list of numbers ([] when empty)
};

// The job commands, as bits: which subcommands take a field's flag, and for
// which commands validate() checks a field's range.
enum JobCommandBits : unsigned {
  for_register = 1,
  for_average = 2,
  for_spectrum = 4,
  for_synth = 8,
  for_all = 15,
};
unsigned job_command_bit(const std::string& command);  // 0 for an unknown command

// How the app's editor shows a field (label == nullptr: not shown).
struct EditorHints {
  const char* label = nullptr;  // "Pyramid levels"
  const char* unit = nullptr;   // shown after the label: "Tolerance (px)"
  // The editor shows value * display_scale in `unit` (dwell: s in the job, µs
  // on screen, as read off the microscope); lo, hi and step are in that unit.
  double display_scale = 1;
  double lo = 0, hi = 0;  // spin box range
  int decimals = 0;
  double step = 1;
  const char* placeholder = nullptr;  // line edits
  bool listed = false;                // a text chosen from names the app supplies (launcher profiles)
  // Enabled only while the field `enabled_by` has the value `enabled_value`.
  const char* enabled_by = nullptr;
  const char* enabled_value = nullptr;
};

struct JobField {
  const char* block;  // "" (top level), "registration", "averaging", "spectrum", "synth", "execution"
  const char* key;    // "max_shift"
  FieldType type;
  const char* help;
  std::vector<std::string> choices;  // choice, and text restricted to names
  bool nullable = false;             // number_pair: null when off
  const char* shape = nullptr;       // list types: the JSON shape, for messages ("[x, y, w, h] or null")

  // Command line: CLI11 names, the first one canonical ("--output,--out,-o"); nullptr: no flag.
  const char* flags = nullptr;
  unsigned flag_commands = 0;        // subcommands that declare the flag (`run` declares every flag)
  bool flag_is_switch = false;       // takes no value, sets true
  const char* flag_value = nullptr;  // placeholder for list values in --help ("X,Y,W,H")

  // validate(): min <= value <= max (open: strict), for the commands in checked_for.
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool min_open = false, max_open = false;
  unsigned checked_for = for_all;
  const char* rule = nullptr;  // how messages say the range, when range_text() would say it less well

  EditorHints editor;

  // The value in its job-file form (enum names, null for "off"); set() takes
  // the same form, already checked for type and shape (null: off/default).
  nlohmann::json (*get)(const Job&) = nullptr;
  void (*set)(Job&, const nlohmann::json&) = nullptr;

  std::string path() const { return *block ? std::string(block) + "." + key : std::string(key); }
  bool has_range() const;
  bool in_range(double value) const;
  std::string range_text() const;  // `rule`, or "at least 1", "1..12", "positive", "in [0, 1)"
  nlohmann::json default_value() const { return get(Job{}); }
};

// In job-file order: top level (command, input, output), then the blocks.
const std::vector<JobField>& job_fields();
const std::vector<std::string>& job_blocks();  // "registration", "averaging", …, in file order
// The field at "block.key" (or a top-level key); throws std::logic_error when there is none.
const JobField& job_field(const std::string& path);

}  // namespace driftscan
