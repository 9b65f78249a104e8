#pragma once
// The pairwise tree over the segment sums of one rank's threads (⌈log2 T⌉
// levels): leaf t is thread t's segment sum, node (l, i) the sum of threads
// i·2^l … (i+1)·2^l − 1, the root the rank's sum. There are no level
// barriers: every node has a one-shot ready flag, set once its value is
// written (for a leaf, also once the thread's segment is final), so a node is
// combined as soon as its two children are known, and a thread assembling
// what precedes its segment waits only for the blocks it needs.
#include <cstddef>
#include <utility>
#include <vector>

#include "driftscan/mpi/runtime/sleeping_barrier.hpp"
#include "driftscan/mpi/scan/scan_partial.hpp"

namespace driftscan::mpi {

template <class T>
class ThreadSumTree {
 public:
  // Only while no thread waits.
  void reset(std::size_t workers) {
    levels_.assign(1, std::vector<ScanPartial<T>>(workers));
    for (std::size_t width = 2; width / 2 < workers; width *= 2) levels_.emplace_back((workers + width - 1) / width);
    base_.assign(levels_.size(), 0);
    for (std::size_t l = 1; l < levels_.size(); ++l) base_[l] = base_[l - 1] + levels_[l - 1].size();
    ready_.reset(base_.back() + levels_.back().size());
  }

  std::size_t workers() const { return levels_[0].size(); }
  // Nodes on `level`.
  std::size_t nodes(std::size_t level) const { return levels_[level].size(); }
  // Write a node only before publishing it; read it only after waiting for it.
  ScanPartial<T>& node(std::size_t level, std::size_t i) { return levels_[level][i]; }
  const ScanPartial<T>& root() const { return levels_.back()[0]; }

  void publish(std::size_t level, std::size_t i) { ready_.set(flag(level, i)); }
  void wait(std::size_t level, std::size_t i) { ready_.wait(flag(level, i)); }
  bool is_ready(std::size_t level, std::size_t i) { return ready_.is_set(flag(level, i)); }

  // The nodes (level, index) that make up threads 0..u−1, in order.
  std::vector<std::pair<std::size_t, std::size_t>> blocks_before(std::size_t u) const {
    std::vector<std::pair<std::size_t, std::size_t>> blocks;
    std::size_t pos = 0;
    for (std::size_t level = levels_.size(); level-- > 0;)
      if ((u >> level) & 1) {
        blocks.emplace_back(level, pos >> level);
        pos += std::size_t(1) << level;
      }
    return blocks;
  }

 private:
  std::size_t flag(std::size_t level, std::size_t i) const { return base_[level] + i; }

  std::vector<std::vector<ScanPartial<T>>> levels_;
  std::vector<std::size_t> base_;  // flag of node (l, i): base_[l] + i
  ReadyFlags ready_;
};

}  // namespace driftscan::mpi
