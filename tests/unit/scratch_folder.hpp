#pragma once
// Scratch folders and file checks shared by the unit tests that write
// results: a folder of the running test's own (named by prefix, process and
// test, so parallel CTest runs never meet), and a folder's names / a file's
// bytes as the user would see them.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

#include <gtest/gtest.h>

namespace driftscan::test {

class TestScratchFolder {
 public:
  // Removed first if an earlier run left it; created only if `create`
  // (a run's output folder is the engine's to create).
  explicit TestScratchFolder(const std::string& prefix, bool create = false) {
    path = std::filesystem::temp_directory_path() / (prefix + std::to_string(::getpid()) + "_" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(path);
    if (create) std::filesystem::create_directories(path);
  }
  ~TestScratchFolder() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TestScratchFolder(const TestScratchFolder&) = delete;
  TestScratchFolder& operator=(const TestScratchFolder&) = delete;

  std::filesystem::path path;
};

// The names in `dir`, sorted.
inline std::vector<std::string> folder_entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

inline std::string file_contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace driftscan::test
