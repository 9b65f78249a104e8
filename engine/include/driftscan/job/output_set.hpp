#pragma once
// The outputs of one run, made visible together. Every file of the set is
// written under a hidden temporary name beside its final one (AtomicFile's
// rule, `DIR/.NAME.tmp-PID-N`); commit() renames them into place, and
// `report.json`, the record that the set is complete, comes last:
//   1. every staged file is checked to be there (else nothing changes);
//   2. the old report.json is removed — from here until step 5 the folder
//      has no report.json, so an interruption is recognisable as incomplete;
//   3. the staged files are renamed over their final names;
//   4. the outputs of an earlier run that this one does not produce (a
//      stale coverage.tif, lines.csv, average_rigid.tif, quality.csv, …:
//      every name of output_set_names()) are removed, so runs never mix;
//   5. the folder is synced, and report.json is renamed into place.
// A consumer trusts a folder with report.json: its files are one run's.
// Before commit() nothing is visible under a final name; a set destroyed
// uncommitted (a failure, a cancel) removes what it staged, and the
// outputs of the earlier run stay as they were.
//
// The constructor checks the folder before any work: it refuses (bad_input)
// a folder holding another command's results (its report.json says which),
// and a folder where an input of the run is one of the outputs the commit
// would replace or remove. First of all it locks the folder for the set's
// life (results_lock.hpp): a folder another run is writing is refused
// (bad_input, naming the run); the lock goes when the set does.
//
//   OutputSet set(dir, "average", {job.input, job.averaging.drift});
//   set.write("average.tif", [&](const std::string& path) { write_tiff(path, avg, tw); });
//   set.write("report.json", [&](const std::string& path) { ... });
//   set.commit();
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "driftscan/core/error.hpp"
#include "driftscan/job/results_lock.hpp"

namespace driftscan {

// The record of a complete set.
inline constexpr const char* kOutputRecord = "report.json";

// Whether `name` is one a DriftScan run writes in a results folder
// (report.json, drift.csv, average*.tif, coverage*.tif, quality.csv,
// lines.csv, line_field.csv, spectrum*.tif): what a commit replaces or
// removes.
bool is_output_name(const std::string& name);

class OutputSet {
 public:
  // Creates `folder` if missing and locks it. `inputs`: files the run reads
  // (never replaced). `lock`: the folder's lock when the run took it
  // already (a follow, from its start); else the set takes it.
  OutputSet(std::string folder, std::string command, const std::vector<std::string>& inputs = {},
            std::shared_ptr<ResultsLock> lock = nullptr);
  ~OutputSet();  // removes the staged files unless commit() succeeded, then releases the lock
  OutputSet(const OutputSet&) = delete;
  OutputSet& operator=(const OutputSet&) = delete;

  // The path to write `name` to until the commit (a new temporary; `name`
  // joins the set). Throws when `name` is not an output name or staged twice.
  std::string stage(const std::string& name);
  // Stages `name` and calls write(staged path). An error of the writer is
  // rethrown naming the final file, and saying what was kept (what_was_kept()).
  void write(const std::string& name, const std::function<void(const std::string&)>& write);
  // `name`'s path once committed.
  std::string final_path(const std::string& name) const;
  // Staged so far (and not committed): name, its temporary path.
  std::string staged_path(const std::string& name) const;

  // Makes the set visible (the steps above). Throws failure when a staged
  // file is missing (nothing changed then) or a rename fails (the folder is
  // then left without report.json, and the message says so).
  void commit();
  bool committed() const;

  // For an error message: "nothing new written; the results of the earlier
  // run in DIR are unchanged" (or "…DIR holds no earlier results").
  std::string what_was_kept() const;
  // `e` with the staged paths replaced by the final ones and what was kept
  // appended, once (a cancel is returned unchanged).
  Error explain(const Error& e) const;

  const std::string& folder() const;
  // Empty, or why the folder could not be locked (the run goes on): a warning to log.
  const std::string& lock_warning() const;

 private:
  struct Staged {
    std::string name, temporary;
  };
  std::shared_ptr<ResultsLock> lock_;  // released after the staged files are removed
  std::string folder_, command_;
  std::vector<Staged> staged_;
  bool committed_ = false;
  bool earlier_record_ = false;   // report.json there before this run
  bool earlier_outputs_ = false;  // any output name there before this run
};

}  // namespace driftscan
