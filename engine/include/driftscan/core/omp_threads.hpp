#pragma once
// The OpenMP thread count for a scope: set on construction, the previous
// count restored on destruction (also when the scope is left by an
// exception). omp_set_num_threads is process-wide state; every phase that
// needs its own count takes it through this guard so that no path (a
// cancel, a failed average) leaves another phase running with it.
#include <omp.h>

#include <algorithm>

namespace driftscan {

class OmpThreadCount {
 public:
  explicit OmpThreadCount(int threads) : saved_(omp_get_max_threads()) { omp_set_num_threads(std::max(1, threads)); }
  ~OmpThreadCount() { omp_set_num_threads(saved_); }
  OmpThreadCount(const OmpThreadCount&) = delete;
  OmpThreadCount& operator=(const OmpThreadCount&) = delete;

 private:
  int saved_;
};

}  // namespace driftscan
