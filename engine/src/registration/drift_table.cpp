#include "driftscan/registration/drift_table.hpp"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "driftscan/core/error.hpp"

namespace driftscan {
std::vector<std::string> split_csv_fields(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(item);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

DriftRecords read_drift_records(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw bad_input(path + ": cannot open the drift table");
  return read_drift_records(in, path);
}

DriftRecords read_drift_records(std::istream& in, const std::string& path) {
  std::string line;
  if (!std::getline(in, line)) throw bad_input(path + ": empty drift table");
  std::map<std::string, std::size_t> col;
  auto header = split_csv_fields(line);
  for (std::size_t i = 0; i < header.size(); ++i) col[header[i]] = i;
  for (const char* need : {"frame", "dx", "dy"})
    if (!col.count(need)) throw bad_input(path + ": no '" + need + "' column in the header");
  DriftRecords table;
  table.has_affine =
      col.count("a") && col.count("b") && col.count("c") && col.count("d") && col.count("tx") && col.count("ty");
  table.has_angle = col.count("angle_deg");
  table.has_quality = col.count("quality");
  table.has_used = col.count("used");
  table.has_sigma = col.count("sigma_dx") && col.count("sigma_dy") && col.count("cov_dxdy");
  table.has_noise_var = col.count("noise_var");

  std::size_t lineno = 1;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line == "\r") continue;
    auto f = split_csv_fields(line);
    // A standard error may be inf (no information), never NaN or negative.
    auto number = [&](const char* name, bool inf_ok = false) {
      std::size_t i = col.at(name);
      const std::string& s = i < f.size() ? f[i] : std::string();
      char* end = nullptr;
      double v = std::strtod(s.c_str(), &end);
      if (s.empty() || (*end != '\0' && *end != '\r') || std::isnan(v) || (!inf_ok && !std::isfinite(v)) ||
          (inf_ok && v < 0))
        throw bad_input(path + ":" + std::to_string(lineno) + ": '" + name + "' is not a " +
                        (inf_ok ? "non-negative number or inf" : "finite number"));
      return v;
    };
    double frame = number("frame");
    if (frame != static_cast<double>(table.frames.size()))
      throw bad_input(path + ":" + std::to_string(lineno) + ": expected frame " + std::to_string(table.frames.size()));
    DriftRecord r;
    r.dx = number("dx");
    r.dy = number("dy");
    if (table.has_angle) r.angle_deg = number("angle_deg");
    if (table.has_affine) {
      r.affine.a = number("a");
      r.affine.b = number("b");
      r.affine.c = number("c");
      r.affine.d = number("d");
      r.affine.tx = number("tx");
      r.affine.ty = number("ty");
    }
    if (table.has_quality) r.quality = number("quality");
    if (table.has_used) r.used = number("used") != 0;
    if (table.has_sigma) {
      r.sigma_dx = number("sigma_dx", true);
      r.sigma_dy = number("sigma_dy", true);
      r.cov_dxdy = number("cov_dxdy");
      if (table.has_noise_var) r.noise_var = number("noise_var", true);
      if (col.count("sigma_flag") && col["sigma_flag"] < f.size()) {
        const std::string& flag = f[col["sigma_flag"]];
        r.sigma_singular = !flag.empty() && flag != "\r";
      }
    }
    if (col.count("flags") && col["flags"] < f.size()) {
      std::string flags = f[col["flags"]];
      r.flagged = !flags.empty() && flags != "\r" && flags != "0";
    }
    table.frames.push_back(r);
  }
  if (table.frames.empty()) throw bad_input(path + ": no frames in the drift table");
  return table;
}

DriftTable read_drift_table(const std::string& path, Point centre) {
  const DriftRecords records = read_drift_records(path);
  DriftTable table;
  for (const DriftRecord& r : records.frames) {
    if (r.flagged) table.flagged.push_back(table.to_frame0.size());
    if (records.has_affine) table.to_frame0.push_back(r.affine);
    else if (records.has_angle)
      table.to_frame0.push_back(Transform::rigid(r.angle_deg * M_PI / 180.0, r.dx, r.dy, centre));
    else table.to_frame0.push_back(Transform::translation(r.dx, r.dy));
  }
  return table;
}

}  // namespace driftscan
