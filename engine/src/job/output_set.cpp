// A run's outputs staged and committed together: see output_set.hpp.
#include "driftscan/job/output_set.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>

#include <nlohmann/json.hpp>

#include "driftscan/core/atomic_file.hpp"

namespace driftscan {
namespace fs = std::filesystem;

namespace {

// Every name a run of register, average or spectrum writes (average_<signal>.tif,
// coverage_<signal>.tif and sigma_<signal>.tif with --apply-to; the
// *_rigid.tif of a scan-distortion run).
const std::regex kOutputName(R"(report\.json|drift\.csv|quality\.csv|lines\.csv|line_field\.csv)"
                             R"(|(average|coverage|sigma)(_[A-Za-z0-9._-]+)?\.tif|spectrum(_average|3d)?\.tif)");

// The command recorded in DIR/report.json, "" when there is none or it is unreadable.
std::string recorded_command(const fs::path& report) {
  std::ifstream in(report);
  if (!in) return "";
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (!j.is_object()) return "";
  auto it = j.find("command");
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

fs::path canonical_or_self(const fs::path& p) {
  std::error_code ec;
  fs::path c = fs::weakly_canonical(p, ec);
  return ec ? fs::absolute(p).lexically_normal() : c;
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

// Renames are durable only once the folder is synced: done before the
// record appears, so a crash never leaves a record without its files.
void sync_folder(const std::string& folder) {
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

bool is_output_name(const std::string& name) { return std::regex_match(name, kOutputName); }

OutputSet::OutputSet(std::string folder, std::string command, const std::vector<std::string>& inputs,
                     std::shared_ptr<ResultsLock> lock)
    : lock_(std::move(lock)), folder_(std::move(folder)), command_(std::move(command)) {
  std::error_code ec;
  fs::create_directories(folder_, ec);
  if (!fs::is_directory(folder_))
    throw failure(folder_ + ": cannot create the results folder (" +
                  (ec ? ec.message() : std::string("a file of that name exists")) + ")");
  // Another run writing here is refused before anything is looked at.
  if (!lock_) lock_ = ResultsLock::acquire(folder_, command_);
  const fs::path record = fs::path(folder_) / kOutputRecord;
  earlier_record_ = fs::exists(record, ec);
  if (earlier_record_) {
    const std::string other = recorded_command(record);
    if (!other.empty() && other != command_)
      throw bad_input(folder_ + ": holds the results of a '" + other + "' run (" + kOutputRecord + "); write the '" +
                      command_ + "' results to another folder, or remove them first");
  }
  for (fs::directory_iterator it(folder_, ec), end; !ec && it != end; it.increment(ec))
    if (is_output_name(it->path().filename().string())) earlier_outputs_ = true;
  // An input that the commit would replace or remove: refused now, not lost then.
  const fs::path here = canonical_or_self(folder_);
  for (const std::string& input : inputs) {
    if (input.empty()) continue;
    const fs::path in = canonical_or_self(input);
    if (in.parent_path() == here && is_output_name(in.filename().string()))
      throw bad_input(input + ": an input of this run, and an output name in " + folder_ +
                      " that the run would replace: write the results to another folder");
  }
}

OutputSet::~OutputSet() {
  if (committed_) return;
  std::error_code ec;
  for (const Staged& s : staged_) fs::remove(s.temporary, ec);
}

std::string OutputSet::stage(const std::string& name) {
  if (committed_) throw failure(final_path(name) + ": staged after the outputs were committed");
  if (!is_output_name(name)) throw failure(name + ": not an output name of a results folder");
  for (const Staged& s : staged_)
    if (s.name == name) throw failure(final_path(name) + ": written twice in one run");
  staged_.push_back({name, temporary_path_for(final_path(name))});
  return staged_.back().temporary;
}

void OutputSet::write(const std::string& name, const std::function<void(const std::string&)>& write) {
  const std::string path = stage(name);
  try {
    write(path);
  } catch (const Error& e) {
    throw explain(e);
  } catch (const std::exception& e) {
    throw explain(Error(ErrorKind::failure, final_path(name) + ": " + e.what()));
  }
}

std::string OutputSet::final_path(const std::string& name) const { return (fs::path(folder_) / name).string(); }

std::string OutputSet::staged_path(const std::string& name) const {
  for (const Staged& s : staged_)
    if (s.name == name) return s.temporary;
  throw failure(final_path(name) + ": not staged");
}

void OutputSet::commit() {
  if (committed_) return;
  std::error_code ec;
  // 1. All there, or nothing changes.
  const Staged* record = nullptr;
  for (const Staged& s : staged_) {
    if (!fs::is_regular_file(s.temporary, ec))
      throw failure(final_path(s.name) + ": was not written (its temporary " + s.temporary + " is missing); " +
                    what_was_kept());
    if (s.name == kOutputRecord) record = &s;
  }
  if (!record)
    throw failure(folder_ + ": no " + kOutputRecord + " staged: the outputs would not be recognisable as complete");
  // 2. The old record first: from here on the folder says it is incomplete.
  const std::string record_path = final_path(kOutputRecord);
  if (::unlink(record_path.c_str()) != 0 && errno != ENOENT)
    throw failure(record_path + ": cannot remove the earlier record (" + std::strerror(errno) + "); " +
                  what_was_kept());
  // 3. The data files.
  std::size_t renamed = 0;
  for (const Staged& s : staged_) {
    if (&s == record) continue;
    if (std::rename(s.temporary.c_str(), final_path(s.name).c_str()) != 0)
      throw failure(final_path(s.name) + ": cannot rename into place (" + std::strerror(errno) + ") after " +
                    std::to_string(renamed) + " of " + std::to_string(staged_.size() - 1) + " files: " + folder_ +
                    " is incomplete (no " + kOutputRecord + ")");
    ++renamed;
  }
  // 4. An earlier run's files this run does not replace.
  std::vector<fs::path> stale;
  for (fs::directory_iterator it(folder_, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (is_output_name(name) && name != kOutputRecord &&
        std::none_of(staged_.begin(), staged_.end(), [&](const Staged& s) { return s.name == name; }))
      stale.push_back(it->path());
  }
  for (const fs::path& p : stale)
    if (!fs::remove(p, ec) && ec)
      throw failure(p.string() + ": cannot remove this output of an earlier run (" + ec.message() + "): " + folder_ +
                    " is incomplete (no " + kOutputRecord + ")");
  // 5. The record last.
  sync_folder(folder_);
  if (std::rename(record->temporary.c_str(), record_path.c_str()) != 0)
    throw failure(record_path + ": cannot rename into place (" + std::strerror(errno) + "): " + folder_ +
                  " is incomplete (no " + kOutputRecord + ")");
  sync_folder(folder_);
  committed_ = true;
}

bool OutputSet::committed() const { return committed_; }
const std::string& OutputSet::folder() const { return folder_; }
const std::string& OutputSet::lock_warning() const { return lock_->warning(); }

std::string OutputSet::what_was_kept() const {
  if (earlier_record_) return "nothing new written; the results of the earlier run in " + folder_ + " are unchanged";
  if (earlier_outputs_)
    return "nothing new written; the incomplete outputs of an earlier run in " + folder_ + " are unchanged";
  return "nothing written to " + folder_;
}

Error OutputSet::explain(const Error& e) const {
  if (e.kind() == ErrorKind::cancelled) return e;
  std::string message = e.what();
  for (const Staged& s : staged_) replace_all(message, s.temporary, final_path(s.name));
  const std::string kept = what_was_kept();
  if (message.find(kept) != std::string::npos) return Error(e.kind(), message);  // explained already
  return Error(e.kind(), message + "; " + kept);
}

}  // namespace driftscan
