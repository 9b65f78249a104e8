// One run at a time in a results folder (results_lock.hpp): a second
// OutputSet into a folder another holds is refused (bad_input, one line
// naming the folder and the holder), from another process too; the lock
// goes with the set (and its file), a kill -9 leaves a file that blocks
// nobody, and a follow's lock is shared by its final set.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "driftscan/core/error.hpp"
#include "driftscan/job/output_set.hpp"
#include "driftscan/job/results_lock.hpp"
#include "scratch_folder.hpp"
#include "tiff_test_files.hpp"

using namespace driftscan;
namespace fs = std::filesystem;

namespace {

using driftscan::test::file_contents;
using driftscan::test::folder_entries;

void put(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

std::string this_host() {
  char host[256] = "";
  ::gethostname(host, sizeof host - 1);
  return host;
}

// The message of the Error `f` throws ("" when it throws none); its kind must be bad_input.
template <class F>
std::string refusal(F f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::bad_input) << e.what();
    return e.what();
  }
  return "";
}

std::string in_use_pattern(const std::string& folder, const std::string& command, long pid) {
  return "results folder " + folder + " is in use by a " + command +
         " run started [0-9]{2}:[0-9]{2}:[0-9]{2} on host " + this_host() + " \\(pid " + std::to_string(pid) +
         "\\); wait for it or choose another --out";
}

}  // namespace

TEST(ResultsLock, ASecondSetIntoTheFolderIsRefusedUntilTheFirstIsGone) {
  tifftest::TempDir dir;
  put(dir.file("report.json"), R"({"command": "register"})");
  {
    OutputSet first(dir.path(), "register");
    EXPECT_TRUE(fs::exists(dir.file(kResultsLockName)));
    const nlohmann::json j = nlohmann::json::parse(file_contents(dir.file(kResultsLockName)));
    EXPECT_EQ(j.at("pid").get<long>(), static_cast<long>(::getpid()));
    EXPECT_EQ(j.at("host").get<std::string>(), this_host());
    EXPECT_EQ(j.at("command").get<std::string>(), "register");
    // Refused whatever the command (the lock is looked at before the report).
    for (const char* command : {"register", "average"}) {
      const std::string message = refusal([&] { OutputSet second(dir.path(), command); });
      EXPECT_TRUE(std::regex_match(message, std::regex(in_use_pattern(dir.path(), "register", ::getpid())))) << message;
    }
    EXPECT_NE(results_folder_holder(dir.path()).find("a register run started"), std::string::npos);
    // The set's commit neither removes the lock file nor counts it among the outputs.
    first.write("drift.csv", [](const std::string& p) { put(p, "new drift"); });
    first.write("report.json", [](const std::string& p) { put(p, R"({"command": "register"})"); });
    first.commit();
    EXPECT_EQ(folder_entries(dir.path()), (std::vector<std::string>{kResultsLockName, "drift.csv", "report.json"}));
    EXPECT_FALSE(is_output_name(kResultsLockName));
  }
  // Released with its file: the folder holds the results only.
  EXPECT_EQ(folder_entries(dir.path()), (std::vector<std::string>{"drift.csv", "report.json"}));
  EXPECT_EQ(results_folder_holder(dir.path()), "");
  OutputSet again(dir.path(), "register");
  EXPECT_TRUE(again.lock_warning().empty());
}

TEST(ResultsLock, AFailedOrRefusedSetReleasesTheLock) {
  tifftest::TempDir dir;
  put(dir.file("report.json"), R"({"command": "register"})");
  // Refused after locking (another command's results): the lock goes with the exception.
  EXPECT_NE(refusal([&] { OutputSet set(dir.path(), "spectrum"); }).find("holds the results of a 'register' run"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(dir.file(kResultsLockName)));
  try {
    OutputSet set(dir.path(), "register");
    set.write("drift.csv", [](const std::string&) { throw failure("disk full"); });
  } catch (const Error&) {
  }
  EXPECT_EQ(folder_entries(dir.path()), (std::vector<std::string>{"report.json"}));
  OutputSet fine(dir.path(), "register");
}

TEST(ResultsLock, AFileLeftByAKilledRunBlocksNobody) {
  tifftest::TempDir dir;
  put(dir.file(kResultsLockName),
      R"({"driftscan_lock": 1, "pid": 999999, "host": "gone", "started_unix": 0, "command": "register"})");
  EXPECT_EQ(results_folder_holder(dir.path()), "");
  {
    OutputSet set(dir.path(), "average");
    const nlohmann::json j = nlohmann::json::parse(file_contents(dir.file(kResultsLockName)));
    EXPECT_EQ(j.at("pid").get<long>(), static_cast<long>(::getpid()));  // taken over
    EXPECT_EQ(j.at("command").get<std::string>(), "average");
  }
  EXPECT_TRUE(folder_entries(dir.path()).empty());
}

TEST(ResultsLock, AnotherProcessIsRefusedUntilItIsKilled) {
  tifftest::TempDir dir;
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(ready[0]);
    int code = 1;
    try {
      auto lock = ResultsLock::acquire(dir.path(), "register");
      code = lock->held() ? 0 : 1;
      (void)!::write(ready[1], &code, sizeof code);
      for (;;) ::pause();  // held until killed
    } catch (...) {
    }
    (void)!::write(ready[1], &code, sizeof code);
    ::_exit(code);
  }
  ::close(ready[1]);
  int code = -1;
  ASSERT_EQ(::read(ready[0], &code, sizeof code), static_cast<ssize_t>(sizeof code));
  ::close(ready[0]);
  ASSERT_EQ(code, 0);
  const std::string message = refusal([&] { OutputSet set(dir.path(), "register"); });
  EXPECT_TRUE(std::regex_match(message, std::regex(in_use_pattern(dir.path(), "register", child)))) << message;
  EXPECT_NE(results_folder_holder(dir.path()).find("(pid " + std::to_string(child) + ")"), std::string::npos);
  // kill -9: the kernel drops the lock; the file stays, and blocks nobody.
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(fs::exists(dir.file(kResultsLockName)));
  EXPECT_EQ(results_folder_holder(dir.path()), "");
  OutputSet set(dir.path(), "register");
  EXPECT_TRUE(set.lock_warning().empty());
}

TEST(ResultsLock, AFollowsLockIsSharedByItsFinalSet) {
  tifftest::TempDir dir;
  std::shared_ptr<ResultsLock> lock = ResultsLock::acquire(dir.path(), "register");
  ASSERT_TRUE(lock->held());
  EXPECT_FALSE(refusal([&] { auto again = ResultsLock::acquire(dir.path(), "register"); }).empty());
  {
    OutputSet set(dir.path(), "register", {}, lock);  // not refused: the same run's
    set.write("report.json", [](const std::string& p) { put(p, R"({"command": "register"})"); });
    set.commit();
  }
  EXPECT_TRUE(fs::exists(dir.file(kResultsLockName)));  // still the follow's
  EXPECT_FALSE(refusal([&] { OutputSet other(dir.path(), "register"); }).empty());
  lock.reset();
  EXPECT_EQ(folder_entries(dir.path()), (std::vector<std::string>{"report.json"}));
}
