#include "project/line_drift_series.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "driftscan/core/error.hpp"
#include "driftscan/registration/drift_table.hpp"

namespace {
double number(const std::string& s, const std::string& where) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end == s.c_str() || *end != '\0')
    throw driftscan::bad_input(where + ": '" + s + "' is not a number");
  return v;
}
}  // namespace

LineDriftSeries LineDriftSeries::read(const QString& path, std::size_t maxPoints) {
  const std::string file = path.toStdString();
  std::ifstream in(file);
  if (!in) throw driftscan::bad_input(file + ": cannot open the line drift table");
  std::string line;
  if (!std::getline(in, line)) throw driftscan::bad_input(file + ": empty line drift table");
  const std::vector<std::string> names = driftscan::split_csv_fields(line);
  const char* need[5] = {"frame", "t", "dx", "dy", "jitter"};
  std::size_t col[5] = {};
  for (int i = 0; i < 5; ++i) {
    const auto it = std::find(names.begin(), names.end(), need[i]);
    if (it == names.end()) throw driftscan::bad_input(file + ": no '" + need[i] + "' column (not a lines.csv?)");
    col[i] = static_cast<std::size_t>(it - names.begin());
  }
  // The sigma columns, when there (an older table has none).
  std::size_t sig[3] = {};
  bool sigmas = true;
  for (int i = 0; i < 3; ++i) {
    const char* name[3] = {"sigma_dx", "sigma_dy", "sigma_jitter"};
    const auto it = std::find(names.begin(), names.end(), name[i]);
    sigmas = sigmas && it != names.end();
    if (it != names.end()) sig[i] = static_cast<std::size_t>(it - names.begin());
  }
  const std::size_t width = std::max(*std::max_element(col, col + 5), sigmas ? *std::max_element(sig, sig + 3) : 0) + 1;
  // The stride from the file size and the first row's length: the table is
  // read once, never held whole.
  const auto bytes = static_cast<double>(std::filesystem::file_size(file));
  LineDriftSeries s;
  std::size_t row = 0;
  int lastFrame = -1;
  double lastT = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    ++row;
    const std::string where = file + " row " + std::to_string(row + 1);
    const std::vector<std::string> f = driftscan::split_csv_fields(line);
    if (f.size() < width) throw driftscan::bad_input(where + ": " + std::to_string(f.size()) + " fields");
    if (row == 1) {
      const double rows = bytes / static_cast<double>(line.size() + 1);
      s.stride = std::max<std::size_t>(1, static_cast<std::size_t>(rows / static_cast<double>(maxPoints)) + 1);
    }
    const int k = static_cast<int>(number(f[col[0]], where));
    const double t = number(f[col[1]], where);
    if (k != lastFrame) {
      if (k != lastFrame + 1) throw driftscan::bad_input(where + ": frame " + std::to_string(k) + " out of order");
      if (lastFrame >= 0) s.frameLast.push_back(lastT);
      s.frameFirst.push_back(t);
      lastFrame = k;
    }
    lastT = t;
    if ((row - 1) % s.stride == 0) {
      s.t.push_back(t);
      s.frame.push_back(k);
      s.dx.push_back(number(f[col[2]], where));
      s.dy.push_back(number(f[col[3]], where));
      s.jitter.push_back(number(f[col[4]], where));
      if (sigmas) {
        // "nan" where the jitter was not estimated: strtod reads it.
        s.sigmaDx.push_back(std::strtod(f[sig[0]].c_str(), nullptr));
        s.sigmaDy.push_back(std::strtod(f[sig[1]].c_str(), nullptr));
        s.sigmaJitter.push_back(std::strtod(f[sig[2]].c_str(), nullptr));
      }
    }
  }
  if (lastFrame >= 0) s.frameLast.push_back(lastT);
  s.totalLines = row;
  return s;
}
