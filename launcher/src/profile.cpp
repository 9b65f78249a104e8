// Profiles file: {"profiles": [...]}, strict like job files (an unknown
// field is reported, not ignored: a typo in "identity_file" must not
// silently fall back to another key).
#include "driftscan/launch/profile.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "driftscan/core/atomic_file.hpp"
#include "driftscan/core/error.hpp"

namespace driftscan::launch {
namespace {
using nlohmann::json;

std::vector<std::string> strings(const json& j, const std::string& where) {
  if (!j.is_array()) throw bad_input(where + " must be a list of strings");
  std::vector<std::string> out;
  for (const auto& s : j) {
    if (!s.is_string()) throw bad_input(where + " must be a list of strings");
    out.push_back(s.get<std::string>());
  }
  return out;
}
}  // namespace

const char* to_string(ProfileKind kind) {
  switch (kind) {
    case ProfileKind::local: return "local";
    case ProfileKind::ssh: return "ssh";
    case ProfileKind::slurm: return "slurm";
  }
  return "local";
}

json to_json(const Profile& p) {
  json j{{"name", p.name},
         {"kind", to_string(p.kind)},
         {"ranks", p.ranks},
         {"threads", p.threads},
         {"bind_to", p.bind_to},
         {"mpirun", p.mpirun},
         {"mpirun_args", p.mpirun_args}};
  if (p.kind == ProfileKind::local) {
    j["engine"] = p.engine;
    return j;
  }
  j.update({{"host", p.host},
            {"user", p.user},
            {"port", p.port},
            {"identity_file", p.identity_file},
            {"ssh_options", p.ssh_options},
            {"remote_install", p.remote_install},
            {"remote_workdir", p.remote_workdir},
            {"setup_lines", p.setup_lines},
            {"shared_input", p.shared_input},
            {"fetch_results", p.fetch_results},
            {"shared_output", p.shared_output},
            {"connect_timeout_s", p.connect_timeout_s}});
  if (p.kind == ProfileKind::slurm)
    j.update({{"nodes", p.nodes},
              {"tasks_per_node", p.tasks_per_node},
              {"cpus_per_task", p.cpus_per_task},
              {"partition", p.partition},
              {"account", p.account},
              {"time_limit", p.time_limit},
              {"sbatch_lines", p.sbatch_lines},
              {"poll_interval_s", p.poll_interval_s}});
  return j;
}

Profile profile_from_json(const json& j, const std::string& source) {
  if (!j.is_object()) throw bad_input(source + ": a profile must be an object");
  Profile p;
  std::string where = source + ": profile";
  if (auto it = j.find("name"); it != j.end() && it->is_string()) p.name = it->get<std::string>();
  where += " '" + p.name + "'";
  auto field = [&](const std::string& key) { return where + " field '" + key + "'"; };
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    const json& v = *it;
    auto str = [&](std::string& out) {
      if (!v.is_string()) throw bad_input(field(k) + " must be a string");
      out = v.get<std::string>();
    };
    auto integer = [&](int& out, int lo) {
      if (!v.is_number_integer() || v.get<long long>() < lo || v.get<long long>() > 1000000)
        throw bad_input(field(k) + " must be an integer >= " + std::to_string(lo));
      out = v.get<int>();
    };
    auto boolean = [&](bool& out) {
      if (!v.is_boolean()) throw bad_input(field(k) + " must be true or false");
      out = v.get<bool>();
    };
    if (k == "name") str(p.name);
    else if (k == "kind") {
      std::string kind;
      str(kind);
      if (kind == "local") p.kind = ProfileKind::local;
      else if (kind == "ssh") p.kind = ProfileKind::ssh;
      else if (kind == "slurm") p.kind = ProfileKind::slurm;
      else throw bad_input(field(k) + " is '" + kind + "'; expected local, ssh or slurm");
    } else if (k == "ranks") integer(p.ranks, 1);
    else if (k == "threads") integer(p.threads, 1);
    else if (k == "bind_to") str(p.bind_to);
    else if (k == "mpirun") str(p.mpirun);
    else if (k == "mpirun_args") p.mpirun_args = strings(v, field(k));
    else if (k == "engine") str(p.engine);
    else if (k == "host") str(p.host);
    else if (k == "user") str(p.user);
    else if (k == "port") integer(p.port, 0);
    else if (k == "identity_file") str(p.identity_file);
    else if (k == "ssh_options") p.ssh_options = strings(v, field(k));
    else if (k == "remote_install") str(p.remote_install);
    else if (k == "remote_workdir") str(p.remote_workdir);
    else if (k == "setup_lines") p.setup_lines = strings(v, field(k));
    else if (k == "shared_input") boolean(p.shared_input);
    else if (k == "fetch_results") boolean(p.fetch_results);
    else if (k == "shared_output") boolean(p.shared_output);
    else if (k == "connect_timeout_s") integer(p.connect_timeout_s, 1);
    else if (k == "nodes") integer(p.nodes, 1);
    else if (k == "tasks_per_node") integer(p.tasks_per_node, 1);
    else if (k == "cpus_per_task") integer(p.cpus_per_task, 1);
    else if (k == "partition") str(p.partition);
    else if (k == "account") str(p.account);
    else if (k == "time_limit") str(p.time_limit);
    else if (k == "sbatch_lines") p.sbatch_lines = strings(v, field(k));
    else if (k == "poll_interval_s") {
      if (!v.is_number() || v.get<double>() <= 0) throw bad_input(field(k) + " must be a positive number");
      p.poll_interval_s = v.get<double>();
    } else throw bad_input(field(k) + " is not a known field");
  }
  if (p.name.empty()) throw bad_input(source + ": a profile has no 'name'");
  if (p.kind != ProfileKind::local && p.host.empty()) throw bad_input(where + " needs a 'host'");
  return p;
}

std::string default_profiles_path() {
  const char* xdg = std::getenv("XDG_CONFIG_HOME");
  std::string base;
  if (xdg && *xdg) base = xdg;
  else {
    const char* home = std::getenv("HOME");
    base = std::string(home && *home ? home : ".") + "/.config";
  }
  return base + "/driftscan/profiles.json";
}

std::vector<Profile> load_profiles(const std::string& path) {
  std::vector<Profile> out;
  std::ifstream in(path);
  if (in) {
    json j;
    try {
      j = json::parse(in);
    } catch (const json::exception& e) {
      throw bad_input(path + ": not valid JSON: " + e.what());
    }
    if (!j.is_object() || !j.contains("profiles") || !j["profiles"].is_array())
      throw bad_input(path + ": expected {\"profiles\": [ ... ]}");
    for (auto it = j.begin(); it != j.end(); ++it)
      if (it.key() != "profiles") throw bad_input(path + ": field '" + it.key() + "' is not a known field");
    std::set<std::string> names;
    for (const auto& pj : j["profiles"]) {
      out.push_back(profile_from_json(pj, path));
      if (!names.insert(out.back().name).second)
        throw bad_input(path + ": profile '" + out.back().name + "' is defined twice");
    }
  } else if (errno != ENOENT) {
    throw bad_input(path + ": cannot read profiles (" + std::strerror(errno) + ")");
  }
  // `local` always exists so a fresh install runs without any setup.
  bool has_local = false;
  for (const auto& p : out) has_local = has_local || p.name == "local";
  if (!has_local) out.insert(out.begin(), Profile{});
  return out;
}

void save_profiles(const std::vector<Profile>& profiles, const std::string& path) {
  std::filesystem::path target(path);
  std::error_code ec;
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path(), ec);
  json j{{"profiles", json::array()}};
  for (const auto& p : profiles) j["profiles"].push_back(to_json(p));
  AtomicFile file(path, "profiles");
  file.stream() << j.dump(2) << '\n';
  file.commit();
}

const Profile& find_profile(const std::vector<Profile>& profiles, const std::string& name) {
  std::string known;
  for (const auto& p : profiles) {
    if (p.name == name) return p;
    known += (known.empty() ? "" : ", ") + p.name;
  }
  throw bad_input("no launch profile '" + name + "' (known: " + known + "; file " + default_profiles_path() + ")");
}

}  // namespace driftscan::launch
