#include "driftscan/scan_distortion/line_field.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "driftscan/core/atomic_file.hpp"
#include "driftscan/core/cubic_bspline.hpp"
#include "driftscan/core/error.hpp"

namespace driftscan {

LineFieldBasis::LineFieldBasis(int samples, int knots, double extent) : samples_(samples), knots_(knots) {
  if (knots < 3 || !(extent > 0) || extent > samples || extent < 2.0 * knots)
    throw bad_input(
        "scan distortion: a line field needs 3 or more knots over at most the line and 2 samples a knot "
        "(got " +
        std::to_string(knots) + " knots over " + std::to_string(extent) + " of " + std::to_string(samples) +
        " samples)");
  spacing_ = extent / knots;
}

int LineFieldBasis::weights(double s, double w[4]) const {
  const double u = std::max(0.0, s) / spacing_ + 1.0;  // coefficient m is centred on u = m
  const int i = static_cast<int>(std::floor(u));
  bspline_weights(u - i, w);  // coefficients i - 1 .. i + 2
  for (int a = 0; a < 4; ++a)
    if (i - 1 + a < 0 || i - 1 + a >= knots_) w[a] = 0.0;
  return i - 1;
}

std::vector<double> LineFieldBasis::tabulate(const std::vector<double>& c) const {
  if (c.empty() || knots_ == 0) return {};
  std::vector<double> out(static_cast<std::size_t>(samples_), 0.0);
  for (int s = 0; s < samples_ && s < extent() + 1; ++s) {
    double w[4];
    const int i = weights(s, w);
    double v = 0.0;
    for (int a = 0; a < 4; ++a)
      if (w[a] != 0.0) v += w[a] * c[static_cast<std::size_t>(i) + static_cast<std::size_t>(a)];
    out[static_cast<std::size_t>(s)] = v;
  }
  return out;
}

void write_line_field_csv(const std::string& path, const LineFieldBasis& basis,
                          const std::vector<std::vector<double>>& fields) {
  AtomicFile file(path, "line field table");
  std::ostream& out = file.stream();
  out << "frame,knot,sample,dx\n";
  char row[128];
  for (std::size_t k = 0; k < fields.size(); ++k)
    for (std::size_t m = 0; m < fields[k].size(); ++m) {
      std::snprintf(row, sizeof row, "%zu,%zu,%.6f,%.6f\n", k, m, basis.centre(static_cast<int>(m)), fields[k][m]);
      out << row;
    }
  file.commit();
}

LineFieldTable read_line_field_csv(const std::string& path, std::size_t frames, int samples) {
  std::ifstream in(path);
  if (!in) throw bad_input(path + ": cannot be read");
  std::string line;
  if (!std::getline(in, line) || line.rfind("frame,knot,sample,dx", 0) != 0)
    throw bad_input(path + ": not a line field table (the first row must be frame,knot,sample,dx)");
  LineFieldTable table;
  std::vector<double> centres;  // frame 0's
  std::size_t row = 1;
  while (std::getline(in, line)) {
    ++row;
    if (line.empty()) continue;
    char* end = nullptr;
    const char* p = line.c_str();
    const unsigned long k = std::strtoul(p, &end, 10);
    bool ok = end && *end == ',';
    const unsigned long m = ok ? std::strtoul(end + 1, &end, 10) : 0;
    ok = ok && end && *end == ',';
    const double centre = ok ? std::strtod(end + 1, &end) : 0.0;
    ok = ok && end && *end == ',';
    const double v = ok ? std::strtod(end + 1, &end) : 0.0;
    ok = ok && end && (*end == '\0' || *end == '\r');  // nothing after dx
    if (!ok || !std::isfinite(v) || !std::isfinite(centre))
      throw bad_input(path + ":" + std::to_string(row) + ": expected frame,knot,sample,dx (numbers)");
    if (k == table.fields.size() && m == 0) table.fields.emplace_back();
    if (k + 1 != table.fields.size() || m != table.fields.back().size())
      throw bad_input(path + ":" + std::to_string(row) + ": frames and knots must come in order from 0");
    if (k == 0) centres.push_back(centre);
    else if (m >= centres.size() || std::fabs(centre - centres[m]) > 1e-3)
      throw bad_input(path + ":" + std::to_string(row) + ": knot " + std::to_string(m) +
                      "'s sample differs from frame 0's");
    table.fields.back().push_back(v);
  }
  if (frames != 0 && table.fields.size() != frames)
    throw bad_input(path + ": " + std::to_string(table.fields.size()) + " frames, the series has " +
                    std::to_string(frames));
  for (const auto& f : table.fields)
    if (f.size() != table.fields.front().size())
      throw bad_input(path + ": every frame must have the same number of knots");
  if (table.fields.empty()) return table;
  if (centres.size() < 3)
    throw bad_input(path + ": " + std::to_string(centres.size()) + " knot(s) a frame; a line field has 3 or more");
  const int knots = static_cast<int>(centres.size());
  const double spacing = centres[1] - centres[0];
  const double extent = spacing * knots;
  if (samples <= 0 && std::isfinite(extent) && extent > 0 && extent < 1e7)
    samples = static_cast<int>(std::ceil(extent)) + 1;  // through the first sample where it is 0
  try {
    table.basis = LineFieldBasis(samples, knots, extent);
  } catch (const Error& e) {
    throw bad_input(path + ": " + e.what());
  }
  for (int m = 0; m < knots; ++m)
    if (std::fabs(table.basis.centre(m) - centres[static_cast<std::size_t>(m)]) > 1e-3)
      throw bad_input(path + ": knot " + std::to_string(m) + "'s sample does not follow the others' spacing");
  return table;
}

}  // namespace driftscan
