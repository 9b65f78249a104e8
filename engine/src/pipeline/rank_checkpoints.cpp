#include "driftscan/pipeline/rank_checkpoints.hpp"

#include <algorithm>
#include <filesystem>
#include <regex>

#include "driftscan/core/error.hpp"
#include "driftscan/pipeline/register_checkpoint.hpp"

namespace driftscan {
namespace fs = std::filesystem;

namespace {
const std::regex kCheckpointName(R"(checkpoint(\.rank-[0-9]+)?\.dsck)");
// AtomicFile's temporaries (.NAME.tmp-PID-N), and NAME.tmp.PID of older versions.
const std::regex kCheckpointTemporary(R"(\.checkpoint(\.rank-[0-9]+)?\.dsck\.tmp-.*)"
                                      R"(|checkpoint(\.rank-[0-9]+)?\.dsck\.tmp\..*)");
}  // namespace

std::size_t CheckpointState::element_count() const {
  return static_cast<std::size_t>(
      std::count_if(elements.begin(), elements.end(), [](auto& e) { return e.has_value(); }));
}
std::size_t CheckpointState::output_count() const {
  return static_cast<std::size_t>(std::count_if(outputs.begin(), outputs.end(), [](auto& e) { return e.has_value(); }));
}

std::string rank_checkpoint_path(const std::string& out_dir, int rank) {
  return (fs::path(out_dir) / ("checkpoint.rank-" + std::to_string(rank) + ".dsck")).string();
}

std::vector<std::string> checkpoint_files(const std::string& out_dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (fs::directory_iterator it(out_dir, ec), end; !ec && it != end; it.increment(ec))
    if (std::regex_match(it->path().filename().string(), kCheckpointName)) files.push_back(it->path().string());
  std::sort(files.begin(), files.end());
  return files;
}

CheckpointState load_checkpoints(const std::string& out_dir, const nlohmann::json& fingerprint, std::size_t frames) {
  CheckpointState state(frames);
  for (const std::string& path : checkpoint_files(out_dir)) {
    RegisterCheckpoint c = read_checkpoint_file(path, fingerprint);
    for (const Registration& e : c.elements) {
      // e_0 = (0 -> 0), e_k = (k-1 -> k): anything else is not an element of this series.
      if (e.to >= frames || e.from != (e.to == 0 ? 0 : e.to - 1))
        throw bad_input(path + ": checkpoint holds a pair element that does not fit the series");
      if (!state.elements[e.to]) state.elements[e.to] = e;
    }
    for (const Registration& o : c.prefix) {
      if (o.to >= frames || o.from != 0)
        throw bad_input(path + ": checkpoint holds a scan output that does not fit the series");
      if (!state.outputs[o.to]) state.outputs[o.to] = o;
    }
    for (const auto& [frame, u] : c.uncertainty)
      if (!state.uncertainty[frame]) state.uncertainty[frame] = u;  // frame < frames: checked on reading
    ++state.files;
  }
  return state;
}

namespace {
void remove_matching(const std::string& out_dir, bool keep_serial) {
  std::error_code ec;
  std::vector<fs::path> doomed;
  for (fs::directory_iterator it(out_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (keep_serial && name.find(".rank-") == std::string::npos) continue;
    if (std::regex_match(name, kCheckpointName) || std::regex_match(name, kCheckpointTemporary))
      doomed.push_back(it->path());
  }
  for (const auto& p : doomed) fs::remove(p, ec);
}
}  // namespace

void remove_checkpoints(const std::string& out_dir) { remove_matching(out_dir, false); }
void remove_rank_checkpoints(const std::string& out_dir) { remove_matching(out_dir, true); }

std::vector<OutputGap> missing_outputs(const std::vector<std::optional<Registration>>& outputs) {
  std::vector<OutputGap> gaps;
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    if (outputs[k]) continue;
    if (!gaps.empty() && gaps.back().last + 1 == k) gaps.back().last = k;
    else gaps.push_back({k, k});
  }
  return gaps;
}

std::vector<int> assign_gaps(const std::vector<OutputGap>& gaps, int workers) {
  if (workers < 1) throw failure("assign_gaps: no workers");
  std::vector<std::size_t> order(gaps.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return gaps[a].size() > gaps[b].size(); });
  std::vector<std::size_t> load(static_cast<std::size_t>(workers), 0);
  std::vector<int> worker(gaps.size(), 0);
  for (std::size_t i : order) {
    const auto w = static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    worker[i] = static_cast<int>(w);
    load[w] += gaps[i].size();
  }
  return worker;
}

}  // namespace driftscan
