#pragma once
// The optional sample data (a real STEM series, small vendor-format files):
// the folder named by $DRIFTSCAN_SAMPLE_DATA when the test runs, else the one
// it named when the build was configured (tests/CMakeLists.txt). A test that
// needs a file skips, naming it, when the file is absent: a fresh clone has no
// sample data.
#include <cstdlib>
#include <filesystem>
#include <string>

namespace driftscan::test {

inline std::filesystem::path sample_data_folder() {
  const char* env = std::getenv("DRIFTSCAN_SAMPLE_DATA");
  return std::filesystem::path(env && *env ? env : DRIFTSCAN_SAMPLE_DATA);
}

// The path of a file in the sample data ("stem_abf_series.tif",
// "formats/test-1.dm3"), or "" when it is absent.
inline std::string sample_file(const std::string& name) {
  const std::filesystem::path p = sample_data_folder() / name;
  return std::filesystem::exists(p) ? p.string() : std::string();
}

// Why a test that needs `name` skips.
inline std::string sample_absent(const std::string& name) {
  return "sample data absent: " + (sample_data_folder() / name).string() +
         " (set DRIFTSCAN_SAMPLE_DATA to the sample-data folder to run this test)";
}

}  // namespace driftscan::test
