#pragma once
// The sequential reference scan: what every parallel scan must reproduce.
// Generic over the element and the operator, like the parallel ones, so the
// same code scans integers in a test and registrations in production.
#include <cstddef>
#include <vector>

namespace driftscan {

// out[k] = x[0] ⊕ x[1] ⊕ ... ⊕ x[k], evaluated left to right.
template <class T, class Op>
std::vector<T> sequential_inclusive_scan(const std::vector<T>& x, Op op) {
  std::vector<T> out;
  out.reserve(x.size());
  for (std::size_t k = 0; k < x.size(); ++k) out.push_back(k == 0 ? x[0] : op(out.back(), x[k]));
  return out;
}

}  // namespace driftscan
