#pragma once
// Reading a CSV the engine wrote (drift.csv, *_truth.csv, *_lines_truth.csv)
// as rows of cells, header included — the tests check the files as a user's
// script would see them, not through the engine's own reader.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace driftscan::test {

inline std::vector<std::vector<std::string>> read_csv(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::vector<std::string>> rows;
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) cells.push_back(cell);
    rows.push_back(cells);
  }
  return rows;
}

}  // namespace driftscan::test
