#include "driftscan/drift_table.hpp"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "driftscan/error.hpp"

namespace driftscan {
namespace {

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(item);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

}  // namespace

DriftTable read_drift_table(const std::string& path, Point centre) {
  std::ifstream in(path);
  if (!in) throw bad_input(path + ": cannot open the drift table");
  std::string line;
  if (!std::getline(in, line)) throw bad_input(path + ": empty drift table");
  std::map<std::string, std::size_t> col;
  auto header = split(line);
  for (std::size_t i = 0; i < header.size(); ++i) col[header[i]] = i;
  for (const char* need : {"frame", "dx", "dy"})
    if (!col.count(need)) throw bad_input(path + ": no '" + need + "' column in the header");
  const bool affine = col.count("a") && col.count("b") && col.count("c") && col.count("d") && col.count("tx") &&
                      col.count("ty");
  const bool rigid = !affine && col.count("angle_deg");

  DriftTable table;
  std::size_t lineno = 1;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line == "\r") continue;
    auto f = split(line);
    auto number = [&](const char* name) {
      std::size_t i = col.at(name);
      const std::string& s = i < f.size() ? f[i] : std::string();
      char* end = nullptr;
      double v = std::strtod(s.c_str(), &end);
      if (s.empty() || (*end != '\0' && *end != '\r') || !std::isfinite(v))
        throw bad_input(path + ":" + std::to_string(lineno) + ": '" + name + "' is not a finite number");
      return v;
    };
    double frame = number("frame");
    if (frame != static_cast<double>(table.to_frame0.size()))
      throw bad_input(path + ":" + std::to_string(lineno) + ": expected frame " +
                      std::to_string(table.to_frame0.size()));
    Transform t;
    if (affine)
      t = Transform{number("a"), number("b"), number("c"), number("d"), number("tx"), number("ty")};
    else if (rigid)
      t = Transform::rigid(number("angle_deg") * M_PI / 180.0, number("dx"), number("dy"), centre);
    else
      t = Transform::translation(number("dx"), number("dy"));
    if (col.count("flags") && col["flags"] < f.size()) {
      std::string flags = f[col["flags"]];
      if (!flags.empty() && flags != "\r" && flags != "0") table.flagged.push_back(table.to_frame0.size());
    }
    table.to_frame0.push_back(t);
  }
  if (table.to_frame0.empty()) throw bad_input(path + ": no frames in the drift table");
  return table;
}

}  // namespace driftscan
