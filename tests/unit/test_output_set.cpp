// OutputSet: a run's outputs appear together or not at all, report.json
// last; an earlier run's outputs are replaced as a set (its stale files
// removed), or kept whole when the new run fails; folders holding another
// command's results, and inputs among the outputs, are refused up front.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "driftscan/core/error.hpp"
#include "driftscan/job/output_set.hpp"
#include "scratch_folder.hpp"
#include "tiff_test_files.hpp"

using namespace driftscan;
namespace fs = std::filesystem;

namespace {

using driftscan::test::file_contents;
using driftscan::test::folder_entries;

void put(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// An earlier register run's complete set, plus a file that is not an output.
void earlier_run(const tifftest::TempDir& dir) {
  put(dir.file("drift.csv"), "old drift");
  put(dir.file("average.tif"), "old average");
  put(dir.file("coverage.tif"), "old coverage");
  put(dir.file("lines.csv"), "old lines");
  put(dir.file("average_rigid.tif"), "old rigid");
  put(dir.file("report.json"), R"({"command": "register"})");
  put(dir.file("notes.txt"), "mine");
}

const std::vector<std::string> kEarlier{"average.tif", "average_rigid.tif", "coverage.tif", "drift.csv",
                                        "lines.csv",   "notes.txt",         "report.json"};

}  // namespace

TEST(OutputSet, NothingIsVisibleBeforeTheCommitThenTheWholeSetAndNoStaleFile) {
  tifftest::TempDir dir;
  earlier_run(dir);
  OutputSet set(dir.path(), "register");
  set.write("drift.csv", [](const std::string& p) { put(p, "new drift"); });
  set.write("average.tif", [](const std::string& p) { put(p, "new average"); });
  set.write("coverage.tif", [](const std::string& p) { put(p, "new coverage"); });
  set.write("report.json", [](const std::string& p) { put(p, R"({"command": "register", "new": 1})"); });
  // Staged under hidden names; the earlier run's files untouched.
  const std::string staged = set.staged_path("average.tif");
  EXPECT_EQ(fs::path(staged).parent_path(), fs::path(dir.path()));
  EXPECT_EQ(fs::path(staged).filename().string().rfind(".average.tif.tmp-", 0), 0u) << staged;
  EXPECT_EQ(file_contents(dir.file("average.tif")), "old average");
  EXPECT_EQ(file_contents(dir.file("lines.csv")), "old lines");
  set.commit();
  EXPECT_TRUE(set.committed());
  // The new set, the earlier run's other outputs gone, a file that is no
  // output kept (and the run's lock, held until the set goes: results_lock.hpp).
  EXPECT_EQ(folder_entries(dir.path()), (std::vector<std::string>{".driftscan.lock", "average.tif", "coverage.tif",
                                                                  "drift.csv", "notes.txt", "report.json"}));
  EXPECT_EQ(file_contents(dir.file("average.tif")), "new average");
  EXPECT_EQ(file_contents(dir.file("report.json")), R"({"command": "register", "new": 1})");
  EXPECT_EQ(file_contents(dir.file("notes.txt")), "mine");
}

TEST(OutputSet, AFailedWriteKeepsTheEarlierRunWholeAndSaysSo) {
  tifftest::TempDir dir;
  earlier_run(dir);
  std::string message;
  try {
    OutputSet set(dir.path(), "register");
    set.write("drift.csv", [](const std::string& p) { put(p, "new drift"); });
    set.write("average.tif", [](const std::string& p) {
      put(p, "half an aver");
      throw failure(p + ": cannot write TIFF file (No space left on device)");
    });
    set.commit();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::failure);
    message = e.what();
  }
  // The error names the final file, not its temporary, and what was kept.
  EXPECT_EQ(message, dir.file("average.tif") +
                         ": cannot write TIFF file (No space left on device); nothing new written; the results of "
                         "the earlier run in " +
                         dir.path() + " are unchanged");
  EXPECT_EQ(folder_entries(dir.path()), kEarlier);  // no temporary left either
  EXPECT_EQ(file_contents(dir.file("drift.csv")), "old drift");
  EXPECT_EQ(file_contents(dir.file("average.tif")), "old average");
}

TEST(OutputSet, AnEmptyFolderStaysEmptyWhenTheRunFails) {
  tifftest::TempDir dir;
  const std::string out = dir.file("results");
  std::string message;
  try {
    OutputSet set(out, "average");
    set.write("average.tif", [](const std::string& p) { put(p, "a"); });
    set.write("coverage.tif", [](const std::string& p) { put(p, "c"); });
    throw failure("quality.csv: disk full");
  } catch (const Error& e) {
    message = e.what();
  }
  EXPECT_TRUE(folder_entries(out).empty());
  EXPECT_EQ(message, "quality.csv: disk full");  // explain() is the caller's: a bare error stays as it was
}

TEST(OutputSet, ACommitWithAMissingFileOrNoRecordChangesNothing) {
  tifftest::TempDir dir;
  earlier_run(dir);
  {
    OutputSet set(dir.path(), "register");
    const std::string p = set.stage("drift.csv");  // staged, never written
    set.write("report.json", [](const std::string& path) { put(path, "{}"); });
    EXPECT_THROW(set.commit(), Error);
    EXPECT_FALSE(set.committed());
    (void)p;
  }
  EXPECT_EQ(folder_entries(dir.path()), kEarlier);
  {
    OutputSet set(dir.path(), "register");
    set.write("drift.csv", [](const std::string& path) { put(path, "new"); });
    try {
      set.commit();
      ADD_FAILURE() << "committed without report.json";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("no report.json staged"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(folder_entries(dir.path()), kEarlier);
  EXPECT_EQ(file_contents(dir.file("drift.csv")), "old drift");
}

TEST(OutputSet, RefusesAnotherCommandsResultsAndInputsAmongTheOutputs) {
  tifftest::TempDir dir;
  earlier_run(dir);
  try {
    OutputSet set(dir.path(), "average");
    ADD_FAILURE() << "an average into a register folder was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::bad_input);
    EXPECT_EQ(std::string(e.what()), dir.path() +
                                         ": holds the results of a 'register' run (report.json); write the 'average' "
                                         "results to another folder, or remove them first");
  }
  // No record: outputs of an incomplete run, but drift.csv is this run's input.
  fs::remove(dir.file("report.json"));
  try {
    OutputSet set(dir.path(), "average", {dir.file("series.tif"), dir.file("drift.csv")});
    ADD_FAILURE() << "an input among the outputs was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::bad_input);
    EXPECT_NE(std::string(e.what()).find(dir.file("drift.csv") + ": an input of this run"), std::string::npos)
        << e.what();
  }
  OutputSet fine(dir.path(), "average", {dir.file("series.tif")});  // the series is no output name
  EXPECT_EQ(fine.what_was_kept(),
            "nothing new written; the incomplete outputs of an earlier run in " + dir.path() + " are unchanged");
}

TEST(OutputSet, OnlyOutputNamesJoinASet) {
  EXPECT_TRUE(is_output_name("average_HAADF.tif"));
  EXPECT_TRUE(is_output_name("coverage_rigid.tif"));
  EXPECT_TRUE(is_output_name("spectrum3d.tif"));
  EXPECT_TRUE(is_output_name("quality.csv"));
  EXPECT_FALSE(is_output_name("series.tif"));
  EXPECT_FALSE(is_output_name("checkpoint.dsck"));
  EXPECT_FALSE(is_output_name(".average.tif.tmp-1-2"));
  tifftest::TempDir dir;
  OutputSet set(dir.path(), "register");
  EXPECT_THROW(set.stage("series.tif"), Error);
  set.stage("drift.csv");
  EXPECT_THROW(set.stage("drift.csv"), Error);
}
