// AtomicFile, the one write-to-temporary-then-rename of the project: the
// naming rule, nothing visible under the target's name before commit(), the
// temporary removed when a writer gives up, errors naming the target.
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

#include "driftscan/core/atomic_file.hpp"
#include "driftscan/core/error.hpp"
#include "scratch_folder.hpp"
#include "tiff_test_files.hpp"

using namespace driftscan;
namespace fs = std::filesystem;

namespace {

using driftscan::test::file_contents;
using driftscan::test::folder_entries;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::failure) << e.what();
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(AtomicFile, TemporaryIsHiddenBesideTheTargetAndRenamedOnCommit) {
  tifftest::TempDir dir;
  const std::string path = dir.file("drift.csv");
  AtomicFile file(path, "drift table");
  const fs::path temp(file.temporary_path());
  EXPECT_EQ(temp.parent_path(), fs::path(dir.path()));
  const std::regex rule("\\.drift\\.csv\\.tmp-" + std::to_string(::getpid()) + "-[0-9]+");
  EXPECT_TRUE(std::regex_match(temp.filename().string(), rule)) << temp;
  file.stream() << "frame,dx,dy\n0,0,0\n";
  EXPECT_FALSE(fs::exists(path));
  EXPECT_TRUE(fs::exists(temp));
  file.commit();
  EXPECT_TRUE(file.committed());
  EXPECT_EQ(file_contents(path), "frame,dx,dy\n0,0,0\n");
  EXPECT_EQ(folder_entries(dir.path()), std::vector<std::string>{"drift.csv"});
  file.commit();  // again: nothing happens
  EXPECT_EQ(file_contents(path), "frame,dx,dy\n0,0,0\n");
}

TEST(AtomicFile, LargeBinaryStreamAndDescriptorWritesArrive) {
  tifftest::TempDir dir;
  std::string data(300000, '\0');
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7 % 251);
  {
    AtomicFile file(dir.file("s.bin"));
    file.stream().write(data.data(), static_cast<std::streamsize>(data.size()));  // several buffer loads
    file.commit();
  }
  EXPECT_EQ(file_contents(dir.file("s.bin")), data);
  {
    AtomicFile file(dir.file("d.bin"));
    ASSERT_EQ(::pwrite(file.fd(), data.data() + 10, 5, 3), 5);  // at an offset, as the TIFF writer does
    ASSERT_EQ(::pwrite(file.fd(), data.data(), 3, 0), 3);
    file.commit();
  }
  EXPECT_EQ(file_contents(dir.file("d.bin")), data.substr(0, 3) + data.substr(10, 5));
}

TEST(AtomicFile, AWriterThatGivesUpLeavesTheOldFileAndNoTemporary) {
  tifftest::TempDir dir;
  const std::string path = dir.file("job.json");
  std::ofstream(path) << "old";
  {
    AtomicFile file(path, "job file");
    file.stream() << "new, but never committed";
    file.stream().flush();
  }
  EXPECT_EQ(file_contents(path), "old");
  EXPECT_EQ(folder_entries(dir.path()), std::vector<std::string>{"job.json"});
}

TEST(AtomicFile, ConcurrentWritersOfOneTargetUseTheirOwnTemporaries) {
  tifftest::TempDir dir;
  const std::string path = dir.file("report.json");
  AtomicFile a(path), b(path);
  EXPECT_NE(a.temporary_path(), b.temporary_path());
  a.stream() << "a";
  b.stream() << "b";
  a.commit();
  b.commit();  // the last commit wins, whole
  EXPECT_EQ(file_contents(path), "b");
  EXPECT_EQ(folder_entries(dir.path()), std::vector<std::string>{"report.json"});
}

TEST(AtomicFile, ErrorsNameTheTargetAndTheReason) {
  tifftest::TempDir dir;
  const std::string missing = dir.file("no/such/folder/job.json");
  std::string m = error_of([&] { AtomicFile file(missing, "job file"); });
  EXPECT_NE(m.find(missing + ": cannot write job file"), std::string::npos) << m;
  EXPECT_NE(m.find("No such file or directory"), std::string::npos) << m;

  // A write that fails (file size limit: EFBIG, as a full disk gives ENOSPC)
  // is reported at commit(), and nothing is left behind.
  const std::string path = dir.file("big.dsck");
  struct rlimit old {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  auto previous = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = old;
  small.rlim_cur = 4096;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  m = error_of([&] {
    AtomicFile file(path, "checkpoint");
    file.stream() << std::string(100000, 'x');
    file.commit();
  });
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, previous);
  EXPECT_NE(m.find(path + ": cannot write checkpoint ("), std::string::npos) << m;
  EXPECT_NE(m.find("too large"), std::string::npos) << m;
  EXPECT_TRUE(folder_entries(dir.path()).empty());
}
