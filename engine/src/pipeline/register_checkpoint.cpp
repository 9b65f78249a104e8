#include "driftscan/pipeline/register_checkpoint.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "driftscan/core/atomic_file.hpp"
#include "driftscan/core/error.hpp"

namespace driftscan {
namespace fs = std::filesystem;

namespace {
constexpr const char* kMagic = "driftscan-checkpoint-1";

void write_record(std::ostream& out, const Registration& r) {
  auto b = r.to_bytes();
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}
void write_records(std::ostream& out, const std::vector<Registration>& v) {
  for (const auto& r : v) write_record(out, r);
}
void write_records(std::ostream& out, const std::vector<const Registration*>& v) {
  for (const Registration* r : v) write_record(out, *r);
}
std::vector<Registration> read_records(std::istream& in, std::size_t n, const std::string& path) {
  std::vector<Registration> v;
  v.reserve(n);
  std::array<unsigned char, Registration::byte_size> b;
  for (std::size_t i = 0; i < n; ++i) {
    if (!in.read(reinterpret_cast<char*>(b.data()), static_cast<std::streamsize>(b.size())))
      throw bad_input(path + ": checkpoint is truncated");
    v.push_back(Registration::from_bytes(b.data(), b.size()));
  }
  return v;
}
// A frame's uncertainty: the frame, 15 doubles, the singular flag.
void write_uncertainty(std::ostream& out, std::uint64_t frame, const DriftUncertainty& u) {
  {
    const double d[15] = {
        u.sigma_dx,        u.sigma_dy,        u.cov_dxdy,        u.sigma_angle_deg, u.sigma_affine[0],
        u.sigma_affine[1], u.sigma_affine[2], u.sigma_affine[3], u.sigma_affine[4], u.sigma_affine[5],
        u.common_sigma_dx, u.common_sigma_dy, u.common_cov_dxdy, u.noise_variance,  u.reference_noise_variance};
    const char singular = u.singular ? 1 : 0;
    out.write(reinterpret_cast<const char*>(&frame), sizeof frame);
    out.write(reinterpret_cast<const char*>(d), sizeof d);
    out.write(&singular, 1);
  }
}
void write_uncertainty(std::ostream& out, const std::vector<std::pair<std::uint64_t, DriftUncertainty>>& v) {
  for (const auto& [frame, u] : v) write_uncertainty(out, frame, u);
}
std::vector<std::pair<std::uint64_t, DriftUncertainty>> read_uncertainty(std::istream& in, std::size_t n,
                                                                         const std::string& path) {
  std::vector<std::pair<std::uint64_t, DriftUncertainty>> v;
  v.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t frame = 0;
    double d[15];
    char singular = 0;
    if (!in.read(reinterpret_cast<char*>(&frame), sizeof frame) || !in.read(reinterpret_cast<char*>(d), sizeof d) ||
        !in.read(&singular, 1))
      throw bad_input(path + ": checkpoint is truncated");
    DriftUncertainty u;
    u.sigma_dx = d[0];
    u.sigma_dy = d[1];
    u.cov_dxdy = d[2];
    u.sigma_angle_deg = d[3];
    for (std::size_t j = 0; j < 6; ++j) u.sigma_affine[j] = d[4 + j];
    u.common_sigma_dx = d[10];
    u.common_sigma_dy = d[11];
    u.common_cov_dxdy = d[12];
    u.noise_variance = d[13];
    u.reference_noise_variance = d[14];
    u.singular = singular != 0;
    v.emplace_back(frame, u);
  }
  return v;
}
}  // namespace

std::string checkpoint_path(const std::string& out_dir) { return (fs::path(out_dir) / "checkpoint.dsck").string(); }

nlohmann::json checkpoint_fingerprint(const Job& job, const FrameSource& frames) {
  nlohmann::json j = to_json(job);
  return {{"input", fs::absolute(job.input).lexically_normal().string()},
          {"frames", frames.frame_count()},
          {"width", frames.width()},
          {"height", frames.height()},
          {"registration", j["registration"]}};
}

bool fingerprint_fits(const nlohmann::json& stored, const nlohmann::json& expected) {
  if (!stored.is_object() || !expected.is_object()) return false;
  nlohmann::json a = stored, b = expected;
  const auto frames_of = [](const nlohmann::json& j) {
    const auto it = j.find("frames");
    if (it == j.end() || !it->is_number_integer()) return std::size_t(0);
    if (it->is_number_unsigned()) return it->get<std::size_t>();
    return static_cast<std::size_t>(std::max(0LL, it->get<long long>()));
  };
  const std::size_t done = frames_of(a), now = frames_of(b);
  a.erase("frames");
  b.erase("frames");
  // The frames done stay what they were when the series grows (appended frames only).
  return a == b && done >= 1 && done <= now;
}

void save_checkpoint(const RegisterCheckpoint& c, const std::string& path, const CheckpointAdditions* more) {
  static const CheckpointAdditions none;
  const CheckpointAdditions& add = more ? *more : none;
  const std::size_t more_uncertainty = add.uncertainty ? add.uncertainty->size() : 0;
  AtomicFile file(path, "checkpoint");
  std::ostream& out = file.stream();
  nlohmann::json head{{"magic", kMagic},
                      {"fingerprint", c.fingerprint},
                      {"elements", c.elements.size() + add.elements.size()},
                      {"prefix", c.prefix.size() + add.prefix.size()},
                      {"uncertainty", c.uncertainty.size() + more_uncertainty}};
  out << head.dump() << '\n';
  write_records(out, c.elements);
  write_records(out, add.elements);
  write_records(out, c.prefix);
  write_records(out, add.prefix);
  write_uncertainty(out, c.uncertainty);
  for (std::size_t i = 0; i < more_uncertainty; ++i)
    write_uncertainty(out, add.uncertainty_first + i, (*add.uncertainty)[i]);
  file.commit();
}

RegisterCheckpoint read_checkpoint_file(const std::string& path, const nlohmann::json& expected) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw bad_input(path + ": cannot open checkpoint");
  std::string line;
  std::getline(in, line);
  nlohmann::json head;
  try {
    head = nlohmann::json::parse(line);
  } catch (...) {
    throw bad_input(path + ": not a DriftScan checkpoint");
  }
  if (!head.is_object() || head.value("magic", "") != kMagic) throw bad_input(path + ": not a DriftScan checkpoint");
  if (!fingerprint_fits(head["fingerprint"], expected))
    throw bad_input(path +
                    ": checkpoint was made for another input or other registration settings "
                    "(delete it or run without --resume)");
  RegisterCheckpoint c;
  c.fingerprint = head["fingerprint"];
  std::size_t ne = 0, np = 0, nu = 0;
  try {
    ne = head.value("elements", std::size_t(0));
    np = head.value("prefix", std::size_t(0));
    nu = head.value("uncertainty", std::size_t(0));
  } catch (...) {
    throw bad_input(path + ": not a DriftScan checkpoint");
  }
  std::size_t n = c.fingerprint.value("frames", std::size_t(0));
  if (ne > n || np > n || nu > n) throw bad_input(path + ": checkpoint counts do not fit the series");
  c.elements = read_records(in, ne, path);
  c.prefix = read_records(in, np, path);
  c.uncertainty = read_uncertainty(in, nu, path);
  for (const auto& u : c.uncertainty)
    if (u.first >= n) throw bad_input(path + ": checkpoint holds an uncertainty that does not fit the series");
  return c;
}

RegisterCheckpoint load_checkpoint(const std::string& path, const nlohmann::json& expected) {
  RegisterCheckpoint c = read_checkpoint_file(path, expected);
  if (c.prefix.size() > c.elements.size()) throw bad_input(path + ": checkpoint counts do not fit the series");
  for (std::size_t k = 0; k < c.elements.size(); ++k)
    if (c.elements[k].to != k || (k < c.prefix.size() && (c.prefix[k].to != k || c.prefix[k].from != 0)))
      throw bad_input(path + ": not a single-rank checkpoint (its frames are not in order)");
  for (std::size_t k = 0; k < c.uncertainty.size(); ++k)
    if (c.uncertainty[k].first != k || c.prefix.size() != c.elements.size())
      throw bad_input(path + ": not a single-rank checkpoint (its frames are not in order)");
  return c;
}

}  // namespace driftscan
